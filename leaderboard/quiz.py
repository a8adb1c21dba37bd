"""The judging quiz on the personal leaderboard: a visitor's own board from their own answers.

The visitor judges real battles (a prompt and the two replies, anonymous, in random positions) and
`stats.personalization` turns their answers into their own board, starting from their profile's board.

* Items are battles whose content is already public: the battles of the open data (`exports.
  exported_votes`: finished, counted, so never flagged, never from an excluded rater, never erased, since
  erasure deletes the battles), with an overall verdict and every reply complete.
* The answers live in the address only (``quiz=<item><a|b|t>.<item><a|b|t>...``, an item being the first
  ``CODE_CHARS`` hex digits of the battle's open-data pseudonym, the outcome relative to the battle's
  model A): nothing is stored and no cookie is set, and the address reproduces the board.
* One dimension too, optionally (``qdim=<dimension slug>``): the visitor may also judge each item on one
  other dimension they care about; that verdict follows the overall one in the token
  (``<item><overall><dimension>``, a 14th character; 13-character tokens, the older addresses, have none)
  and moves their own board for that dimension, from that dimension's model.
* The individual-level model is fitted when the tournament's fits are published (`fits_publish` calls
  `quiz_population_publish`) and kept in the shared cache under that overall fit, so no page request
  pays the seconds it takes. The items are read per state of the counted overall votes (their count and
  latest id), so a battle flagged, excluded or erased since the fit leaves the quiz at once.
* Style control, as on the personal board (its `style=controlled` switch): a second model is fitted
  with each battle's reply style as covariates (`Population.fit(features=...)`), so its boards hold
  reply length and formatting equal and each answer is read net of its battle's style. Where no style
  feature varies there is no such model, and the quiz says it uses the board as voted.
"""

from __future__ import annotations

import random
import threading
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from django.core.cache import cache
from django.db.models import Count, Max
from scipy import stats as scipy_stats

from leaderboard.battle_styles import battle_covariates, replies_stored
from leaderboard.boards import publishable_group_ids
from leaderboard.exports import exported_votes, keyed_digest
from leaderboard.models import FitSnapshot
from raters.models import Group, Rater
from stats.personalization import Person, Population
from tournaments.models import Battle, Dimension, LLMModel, Reply, Tournament, Turn, VoteChoice

DIMENSION = "overall"
CODE_CHARS = 12
QUIZ_LENGTH = 10  # the progress bar's length; the visitor may stop before or go on after
MAX_ANSWERS = 40
POPULATION_SECONDS = 7 * 24 * 3600  # a newer fit replaces it long before
OUTCOME_CODES = {"a": "a", "b": "b", "t": "tie"}
CODE_OF_OUTCOME = {v: k for k, v in OUTCOME_CODES.items()}
NO_STYLE_MODEL = (
    "These battles' replies do not differ in style, so there is no style-controlled quiz; "
    "it uses the board as voted."
)
# Fits kept per process: one per tournament state, the newest few.
_KEPT = 4
_cache: dict[tuple, _QuizData] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class Item:
    code: str
    battle_id: int
    model_a: str  # slugs
    model_b: str
    # The battle's style covariates (A minus B, scaled as the style-controlled model's fit); () in the
    # quiz as voted.
    features: tuple[float, ...] = ()


@dataclass
class _QuizData:
    population: Population
    items: dict[str, Item]  # by code
    items_by_pair: dict[tuple[str, str], list[str]]  # sorted slug pair -> codes


@dataclass(frozen=True)
class OwnRow:
    slug: str
    name: str
    rank: int
    score: float  # the visitor's skill, centred, on the log-odds scale
    low: float
    high: float
    p_best: float
    profile_rank: int
    pooled_rank: int


@dataclass(frozen=True)
class Shown:
    """The item on screen: which battle side is on the left, and the conversation in those positions."""

    item: Item
    left_outcome: str  # the outcome code the left button sends: "a" or "b"
    right_outcome: str
    turns: tuple[tuple[str, str, str], ...]  # (message, left reply, right reply)


@dataclass(frozen=True)
class Quiz:
    encoded: str  # the normalised answers, for the address
    answered: int
    length: int
    shown: Shown | None  # None: no item left
    rows: tuple[OwnRow, ...]
    moved: tuple[str, ...]  # sentences about how far the visitor is from the profile and pooled boards
    closest_group: str | None
    problems: tuple[str, ...]
    style_controlled: bool = False  # the model holds reply style equal
    dimension: Dimension | None = None  # the one other dimension the visitor judges, if any
    dimension_answered: int = 0
    dimension_rows: tuple[OwnRow, ...] = ()  # their own board on it

    @property
    def progress(self) -> int:
        return min(self.answered, self.length)


def quiz_data(
    *, tournament: Tournament, style_controlled: bool = False, dimension: str = DIMENSION
) -> _QuizData | None:
    """The fitted individual-level model of a dimension (overall by default) and the items of this
    tournament that have a verdict on it, with the model that holds reply style equal if
    `style_controlled` (None: nothing to judge, or no reply style that varies)."""
    votes = exported_votes(tournament=tournament)
    state = votes.aggregate(n=Count("pk"), last=Max("pk"))
    # A new fit (a new population) or a vote counted, flagged or erased since (new items) starts afresh.
    population_key = _population_key(tournament, style_controlled=style_controlled, dimension=dimension)
    key = (population_key, state["n"], state["last"])
    with _lock:
        if key in _cache:
            return _cache[key]
    data = _quiz_data_built(tournament, style_controlled, dimension)
    with _lock:
        _cache[key] = data
        for old in list(_cache)[:-_KEPT]:
            del _cache[old]
    return data


def _quiz_data_built(tournament: Tournament, style_controlled: bool, dimension: str) -> _QuizData | None:
    if not replies_stored(tournament=tournament):
        return None  # nothing to judge; and no page request fits a model of a whole imported log
    choices = _counted_choices(tournament, dimension)
    if not choices:
        return None
    features = _style_covariates(choices) if style_controlled else None
    if style_controlled and features is None:
        return None
    row_of = {c[0]: k for k, c in enumerate(choices)}  # one overall verdict per battle
    complete = _battles_with_complete_replies([c[0] for c in choices])
    items: dict[str, Item] = {}
    by_pair: dict[tuple[str, str], list[str]] = defaultdict(list)
    battles = Battle.objects.filter(pk__in=complete).only("pk", "public_id")
    pairs = {c[0]: (c[2], c[3]) for c in choices}
    for battle in battles:
        code = item_code(battle)
        items[code] = Item(
            code=code,
            battle_id=battle.pk,
            model_a=pairs[battle.pk][0],
            model_b=pairs[battle.pk][1],
            features=() if features is None else tuple(features[row_of[battle.pk]].tolist()),
        )
        by_pair[tuple(sorted(pairs[battle.pk]))].append(code)
    return _QuizData(
        population=_population_published(tournament, choices, features, dimension),
        items=items,
        items_by_pair={k: sorted(v) for k, v in by_pair.items()},
    )


def _counted_choices(
    tournament: Tournament, dimension: str = DIMENSION
) -> list[tuple[int, int, str, str, str]]:
    """(battle, rater, model A slug, model B slug, outcome) of every counted vote on the dimension."""
    return list(
        VoteChoice.objects.counted()
        .filter(
            vote__battle__tournament=tournament,
            vote__battle__state=Battle.State.VOTED,
            dimension__slug=dimension,
        )
        .values_list(
            "vote__battle_id",
            "vote__battle__rater_id",
            "vote__battle__model_a__slug",
            "vote__battle__model_b__slug",
            "outcome",
        )
    )


def quiz_population_publish(*, tournament: Tournament, dimension: str = DIMENSION) -> Population | None:
    """Fit the individual-level model of a dimension (seconds: the taste covariance's EM and
    cross-validation), and the one that holds reply style equal where style varies, and keep them in the
    shared cache under the tournament's latest fit of that dimension. `fits_publish` calls it for each
    dimension it fits, so no page request pays for the fits. Returns the model as voted; None: no
    counted vote on the dimension, or no replies to judge."""
    if not replies_stored(tournament=tournament):
        # An imported battle log: no item to judge, and no individual taste to learn from one anonymous
        # judge per question; at Arena scale this fit alone took minutes and gigabytes.
        return None
    choices = _counted_choices(tournament, dimension)
    if not choices:
        return None
    features = _style_covariates(choices)
    if features is not None:
        _population_fitted(tournament, choices, features, dimension)
    return _population_fitted(tournament, choices, None, dimension)


def _style_covariates(choices) -> np.ndarray | None:
    """Each choice's battle's style covariates, a row per choice; None where no style feature varies."""
    features, names, _ = battle_covariates(battle_ids=[c[0] for c in choices])
    return features if names else None


def _population_published(
    tournament: Tournament, choices, features: np.ndarray | None = None, dimension: str = DIMENSION
) -> Population:
    kept = cache.get(_population_key(tournament, style_controlled=features is not None, dimension=dimension))
    if kept is not None:
        return kept
    # Nothing kept for this fit (votes before the first fit, or the cache was emptied): fit it once here.
    return _population_fitted(tournament, choices, features, dimension)


def _population_fitted(
    tournament: Tournament, choices, features: np.ndarray | None = None, dimension: str = DIMENSION
) -> Population:
    publishable = publishable_group_ids(tournament=tournament)
    slugs = dict(Group.objects.filter(pk__in=publishable).values_list("pk", "slug"))
    groups = defaultdict(list)
    for rater_id, group_id in Rater.groups.through.objects.filter(
        rater_id__in={c[1] for c in choices}, group_id__in=slugs
    ).values_list("rater_id", "group_id"):
        groups[rater_id].append(slugs[group_id])
    population = Population.fit(
        ((rater, a, b, outcome, tuple(groups[rater])) for _, rater, a, b, outcome in choices),
        features=features,
        seed=tournament.pk,
    )
    key = _population_key(tournament, style_controlled=features is not None, dimension=dimension)
    cache.set(key, population, timeout=POPULATION_SECONDS)
    return population


def _population_key(
    tournament: Tournament, *, style_controlled: bool = False, dimension: str = DIMENSION
) -> str:
    """The shared cache key of the population: one per published fit of the tournament's dimension, and
    view (as voted, or with reply style held equal)."""
    latest = (
        FitSnapshot.objects.filter(tournament=tournament, dimension__slug=dimension)
        .order_by("-created_at", "-pk")
        .values_list("pk", flat=True)
        .first()
    )
    # The overall key has no dimension in it: the one it had before the other dimensions had models.
    named = "" if dimension == DIMENSION else f":{dimension}"
    return f"populus:quiz-population:{tournament.pk}:{latest}{named}" + (":style" if style_controlled else "")


def item_code(battle: Battle) -> str:
    """The battle's code in quiz addresses: stable across requests and processes, and unlike any
    pseudonym of the open data (those change with every download)."""
    return keyed_digest("populus.quiz.item", str(battle.public_id))[:CODE_CHARS]


def quiz_encoded_for_rater(*, rater: Rater, tournament: Tournament) -> str:
    """A panel rater's own counted overall votes in this tournament, encoded as quiz answers (the ones
    that are quiz items), so that the personal page shows their own board from their own votes."""
    data = quiz_data(tournament=tournament)
    if data is None:
        return ""
    codes = {item.battle_id: code for code, item in data.items.items()}
    choices = (
        VoteChoice.objects.counted()
        .filter(vote__battle__rater=rater, vote__battle__tournament=tournament, dimension__slug=DIMENSION)
        .order_by("vote_id")
        .values_list("vote__battle_id", "outcome")
    )
    answers = [
        codes[battle_id] + CODE_OF_OUTCOME[outcome] for battle_id, outcome in choices if battle_id in codes
    ]
    return ".".join(answers[:MAX_ANSWERS])


def taste_spreads(*, tournament: Tournament, dimension: str = DIMENSION) -> list[tuple[str, float]] | None:
    """Per model (name, sd of individual tastes beyond the groups), most disputed first: how much people
    disagree about it that a group average hides. None before any counted vote on the dimension."""
    spread = _spread_by_slug(tournament, dimension)
    if spread is None:
        return None
    names = dict(LLMModel.objects.filter(slug__in=spread).values_list("slug", "name"))
    return sorted(((names.get(slug, slug), sd) for slug, sd in spread.items()), key=lambda row: -row[1])


@dataclass(frozen=True)
class ModelSpread:
    """How much people disagree about one model beyond their groups, for its page."""

    sd: float  # of individual tastes, on the fit's log-odds scale
    rank: int  # 1: the most disputed model of the tournament on this dimension
    of: int
    median: float  # the median model's sd, for scale


def model_taste_spread(*, tournament: Tournament, dimension: str, model_slug: str) -> ModelSpread | None:
    """The model's spread of individual tastes on a dimension, and where it stands among the models; None
    before any counted vote on the dimension or if the model has none."""
    spread = _spread_by_slug(tournament, dimension)
    if not spread or model_slug not in spread:
        return None
    ordered = sorted(spread.values(), reverse=True)
    return ModelSpread(
        sd=spread[model_slug],
        rank=ordered.index(spread[model_slug]) + 1,
        of=len(ordered),
        median=float(np.median(ordered)),
    )


def _spread_by_slug(tournament: Tournament, dimension: str) -> dict[str, float] | None:
    # The published model alone, from the shared cache, when it is there: a page that shows the spreads
    # need not read the quiz's items.
    population = cache.get(_population_key(tournament, dimension=dimension))
    if population is None:
        data = quiz_data(tournament=tournament, dimension=dimension)
        if data is None:
            return None
        population = data.population
    return population.taste_spread()


def _battles_with_complete_replies(battle_ids: list[int]) -> set[int]:
    """Battles with at least one turn, every turn with both replies done and non-empty."""
    turns = defaultdict(int)
    for battle_id in Turn.objects.filter(battle_id__in=battle_ids).values_list("battle_id", flat=True):
        turns[battle_id] += 1
    replies = defaultdict(int)
    for battle_id in (
        Reply.objects.filter(turn__battle_id__in=battle_ids, state=Reply.State.DONE)
        .exclude(content="")
        .values_list("turn__battle_id", flat=True)
    ):
        replies[battle_id] += 1
    return {battle_id for battle_id, n in turns.items() if replies[battle_id] == 2 * n}


@dataclass(frozen=True)
class Answer:
    code: str
    outcome: str  # overall: "a", "b" or "tie", relative to the battle's model A
    dimension_outcome: str | None = None  # on the visitor's one other dimension, if they gave it

    @property
    def token(self) -> str:
        extra = CODE_OF_OUTCOME[self.dimension_outcome] if self.dimension_outcome else ""
        return self.code + CODE_OF_OUTCOME[self.outcome] + extra


def quiz_answers_parsed(*, encoded: str, data: _QuizData) -> tuple[list[Answer], list[str]]:
    """The answers in the address (``<item><overall>[<dimension>]`` tokens), dropping what cannot be
    used (with a problem)."""
    answers: list[Answer] = []
    problems: list[str] = []
    for token in encoded.split(".") if encoded else []:
        code, verdicts = token[:CODE_CHARS], token[CODE_CHARS:]
        outcomes = [OUTCOME_CODES.get(verdict) for verdict in verdicts]
        if not 1 <= len(outcomes) <= 2 or None in outcomes or code not in data.items:
            problems.append(
                "An answer in this link is not about a published battle any more; it was left out."
            )
        elif any(code == seen.code for seen in answers):
            continue
        else:
            answers.append(Answer(code, outcomes[0], outcomes[1] if len(outcomes) == 2 else None))
    return answers[:MAX_ANSWERS], problems[:1]


def quiz_dimension(*, tournament: Tournament, slug: str | None) -> tuple[Dimension | None, str | None]:
    """The one other dimension the visitor asked to judge (``qdim``), or None, with a problem to show
    when the name is not one of the tournament's other dimensions."""
    if not slug:
        return None, None
    dimension = tournament.dimensions.exclude(slug=DIMENSION).filter(slug=slug).first()
    if dimension is None:
        return None, f"This tournament has no dimension called “{slug}” to judge; the quiz asks overall only."
    return dimension, None


def quiz_build(
    *,
    tournament: Tournament,
    groups: tuple[str, ...],
    encoded: str,
    item: str | None,
    answer: str | None,
    style_controlled: bool = False,
    dimension: Dimension | None = None,
    dimension_answer: str | None = None,
) -> Quiz | None:
    """The quiz for this visitor: their answers so far (plus the one just given), the next item, and
    their own board; from the model that holds reply style equal with `style_controlled` (the personal
    board's switch), or as voted, with a note, where there is none. With `dimension`, the visitor also
    judges that dimension (`dimension_answer`, optional per item) and gets their own board on it."""
    data = quiz_data(tournament=tournament, style_controlled=style_controlled)
    unstyled = []
    if data is None and style_controlled:
        data, style_controlled = quiz_data(tournament=tournament), False
        unstyled = [NO_STYLE_MODEL]
    if data is None or not data.items:
        return None
    answers, problems = quiz_answers_parsed(encoded=encoded, data=data)
    if item and answer in OUTCOME_CODES and item in data.items and all(item != a.code for a in answers):
        on_dimension = OUTCOME_CODES.get(dimension_answer or "") if dimension else None
        answers = [*answers, Answer(item, OUTCOME_CODES[answer], on_dimension)][:MAX_ANSWERS]
    person = data.population.person(groups)
    for given in answers:
        answered = data.items[given.code]
        person.observe(answered.model_a, answered.model_b, given.outcome, features=answered.features or None)
    encoded = ".".join(given.token for given in answers)
    shown = _next_item(data, person, {given.code for given in answers}, encoded)
    names = dict(LLMModel.objects.filter(slug__in=data.population.models).values_list("slug", "name"))
    dimension_rows, dimension_answered = (), 0
    if dimension is not None:
        dimension_rows, dimension_answered = _dimension_board(
            tournament, dimension, groups, answers, style_controlled, names
        )
    return Quiz(
        encoded=encoded,
        answered=len(answers),
        length=QUIZ_LENGTH,
        shown=shown,
        rows=_own_rows(data.population, person, names),
        moved=_moved(data.population, person, names) if answers else (),
        closest_group=_closest_group(data.population, person) if answers else None,
        problems=(*unstyled, *problems),
        style_controlled=style_controlled,
        dimension=dimension,
        dimension_answered=dimension_answered,
        dimension_rows=dimension_rows,
    )


def _dimension_board(
    tournament: Tournament,
    dimension: Dimension,
    groups: tuple[str, ...],
    answers: list[Answer],
    style_controlled: bool,
    names: dict[str, str],
) -> tuple[tuple[OwnRow, ...], int]:
    """The visitor's own board on their one other dimension, from that dimension's model and their
    verdicts on it (an item whose battle has no counted verdict on the dimension moves nothing), and
    how many verdicts it used. Empty while the dimension has no model (nobody has voted on it)."""
    data = quiz_data(tournament=tournament, style_controlled=style_controlled, dimension=dimension.slug)
    if data is None and style_controlled:
        data = quiz_data(tournament=tournament, dimension=dimension.slug)
    if data is None:
        return (), 0
    person = data.population.person(groups)
    used = 0
    for given in answers:
        answered = data.items.get(given.code)
        if given.dimension_outcome and answered is not None:
            features = answered.features or None
            person.observe(answered.model_a, answered.model_b, given.dimension_outcome, features=features)
            used += 1
    return _own_rows(data.population, person, names), used


def _next_item(data: _QuizData, person: Person, used: set[str], encoded: str) -> Shown | None:
    if len(used) >= MAX_ANSWERS:
        return None
    open_pairs = [pair for pair, codes in data.items_by_pair.items() if any(c not in used for c in codes)]
    if not open_pairs:
        return None
    pair = open_pairs[person.choose(open_pairs)]
    # Which battle of the pair, and which side on the left, are random but fixed by the answers so far,
    # so that reloading the address shows the same item.
    rng = random.Random(f"{encoded}|{data.population.seed}")  # noqa: S311 - a display choice, not a secret
    item = data.items[rng.choice([c for c in data.items_by_pair[pair] if c not in used])]
    flipped = rng.random() < 0.5
    left, right = ("b", "a") if flipped else ("a", "b")
    replies = defaultdict(dict)
    for turn_id, side, content in Reply.objects.filter(turn__battle_id=item.battle_id).values_list(
        "turn_id", "side", "content"
    ):
        replies[turn_id][side] = content
    turns = tuple(
        (message, replies[turn_id].get(left, ""), replies[turn_id].get(right, ""))
        for turn_id, message in Turn.objects.filter(battle_id=item.battle_id)
        .order_by("index")
        .values_list("pk", "message")
    )
    return Shown(item=item, left_outcome=left, right_outcome=right, turns=turns)


def _ranks(skills: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(-skills, kind="stable"), kind="stable") + 1


def _own_rows(population: Population, person: Person, names: dict[str, str]) -> tuple[OwnRow, ...]:
    skills, errors, p_best = person.skills(), person.standard_errors(), person.p_best()
    profile_ranks = _ranks(person.prior_mean)
    pooled_ranks = _ranks(population.pooled_skills())
    ranks = _ranks(skills)
    rows = [
        OwnRow(
            slug=slug,
            name=names.get(slug, slug),
            rank=int(ranks[k]),
            score=float(skills[k]),
            low=float(skills[k] - 1.96 * errors[k]),
            high=float(skills[k] + 1.96 * errors[k]),
            p_best=p_best[slug],
            profile_rank=int(profile_ranks[k]),
            pooled_rank=int(pooled_ranks[k]),
        )
        for k, slug in enumerate(population.models)
    ]
    return tuple(sorted(rows, key=lambda row: row.rank))


def _tau(x: np.ndarray, y: np.ndarray) -> float:
    return float(scipy_stats.kendalltau(x, y).statistic)


def _moved(population: Population, person: Person, names: dict[str, str]) -> tuple[str, ...]:
    """How far the visitor's board is from their profile's and the pooled board, in words."""
    skills = person.skills()
    profile = person.prior_mean - person.prior_mean.mean()
    pooled = population.pooled_skills()
    sentences = [
        f"Your order agrees with your profile's board at Kendall τ = {_tau(skills, profile):.2f} and with "
        f"the pooled board at τ = {_tau(skills, pooled):.2f} (1: the same order)."
    ]
    shift = skills - profile
    k = int(np.argmax(np.abs(shift)))
    # A log-odds shift of 0.5 is about 12 points of win probability against an equal model.
    if abs(shift[k]) >= 0.5:
        direction = "higher" if shift[k] > 0 else "lower"
        sentences.append(
            f"You rate {names.get(population.models[k], population.models[k])} much {direction} "
            "than people like you."
        )
    return tuple(sentences)


def _closest_group(population: Population, person: Person) -> str | None:
    """The group whose board (that group alone) is nearest to the visitor's, by squared distance."""
    if not population.groups:
        return None
    skills = person.skills()
    distances = {g: float(((population.profile_skills((g,)) - skills) ** 2).sum()) for g in population.groups}
    slug = min(distances, key=distances.get)
    group = Group.objects.select_related("axis").filter(slug=slug).first()
    return f"{group.axis.label}: {group.label}" if group else slug
