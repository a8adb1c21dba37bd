"""The published boards: what pages, charts, the API, exports and the personal board may show.

Every reader goes through `board_get` and `publishable_group_ids`, so the privacy rule is applied in one
place. Figures come from the batch fit (FitSnapshot/FitScore); the counts beside them (battles, wins,
raters) are taken from the counted votes up to the snapshot's last vote, so they match what was fitted.

Privacy (RELIABILITY E1/E2): a group's board is published only when at least
settings.POPULUS_MIN_GROUP_RATERS distinct raters have counted votes on it, and when no subtraction of
published figures can reveal a smaller set of raters. Counts are additive (the pooled board's battles
minus those of an axis's published groups are the battles of everyone else), so within each axis:

- the suppressed groups that have raters must together hold at least the threshold whenever one of
  them is below it (so there are at least two of them);
- the raters outside the axis's published groups (suppressed groups, people who declined the question,
  raters from other countries) must number none or at least the threshold;

otherwise the axis's next-smallest published group is suppressed too (complementary suppression).

Cache: every cached board figure, rendered page and API response carries `board_cache_version` in its
key; `fits_publish` bumps it when a fit lands.
"""

import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery

from config.errors import InvalidInput
from leaderboard.models import FitBoardCounts, FitScore, FitSnapshot
from raters.models import Group, Rater
from stats.announce import battles_to_announce, leader_index
from tournaments.models import Battle, Dimension, LLMModel, Outcome, Tournament, Vote, VoteChoice
from tournaments.selectors import tournament_is_imported

# What a board says about its leader, on pages, in the API and in the downloads.
LEADER = "leader"
NO_CLEAR_LEADER = "no clear leader yet"
# Versioned entries are never overwritten, only abandoned by a bump; they expire on their own.
CACHE_SECONDS = 24 * 3600


class Status:
    ACTIVE = "active"
    PROVISIONAL = "provisional"
    WITHDRAWN = "withdrawn"
    # Known only from an imported battle log: never rated live here, so never "withdrawn" either.
    IMPORTED = "imported"


@dataclass(frozen=True)
class BoardEntry:
    model_id: int
    slug: str
    name: str
    maker: str
    status: str  # Status.ACTIVE | PROVISIONAL (too few battles on this board) | WITHDRAWN | IMPORTED
    rank: int | None  # shared rank from the snapshot; None if the model is not in the snapshot yet
    rank_low: int | None
    rank_high: int | None
    score: float | None  # expected points vs the field, 95% interval below
    score_low: float | None
    score_high: float | None
    p_best: float | None
    # Skill on Arena's scale (stats.arena_scale: 400 / ln 10, 1000 at the field mean), 95% interval below;
    # None where the snapshot predates it.
    rating: float | None
    rating_low: float | None
    rating_high: float | None
    battles: int  # counted battles on this board up to the snapshot's last vote
    wins: int
    losses: int
    ties: int
    win_rate: float | None  # (wins + ties/2) / battles


@dataclass(frozen=True)
class Board:
    tournament: Tournament
    dimension: Dimension
    group: Group | None  # None = pooled (post-stratified) board
    snapshot: FitSnapshot | None  # None when nothing was fitted yet
    fitted_at: datetime | None
    # True: fewer distinct raters than the privacy threshold (or complementary suppression); then raters
    # is None and entries == [].
    suppressed: bool
    raters: int | None  # distinct raters with counted votes on this board
    entries: list[BoardEntry]  # every model that entered the tournament, ranked first, then unranked
    # True: the style-controlled view (scores with reply length and formatting held equal).
    style_controlled: bool = False
    # An imported battle log (`tournaments.selectors.tournament_is_imported`): its "raters" are the log's
    # judge ids, or one per question id, or a single one when it has neither, so their number says
    # nothing about how many people voted; the pooled board is published whatever it is.
    imported: bool = False

    @property
    def battles(self) -> int:
        """Counted battles on the board (each entry counts its battles, so every battle twice)."""
        return sum(e.battles for e in self.entries) // 2

    @property
    def leader(self) -> BoardEntry | None:
        """The announced leader: the model whose P(best) reached the tournament's leader_threshold on a
        board with at least POPULUS_MIN_ANNOUNCE_BATTLES counted battles (None: no clear leader yet, or
        the board is suppressed or not fitted)."""
        index = leader_index(
            [e.p_best for e in self.entries],
            threshold=self.tournament.leader_threshold,
            battles=self.battles,
            min_battles=settings.POPULUS_MIN_ANNOUNCE_BATTLES,
        )
        return None if index is None else self.entries[index]

    @property
    def leader_status(self) -> str:
        return LEADER if self.leader is not None else NO_CLEAR_LEADER

    @property
    def battles_to_announce(self) -> int | None:
        """Estimated further battles until a leader is announced (stats.announce); 0 once announced,
        None when it cannot be told (fewer than two fitted models, or the top two look equal)."""
        if self.leader is not None:
            return 0
        fitted = sorted((e for e in self.entries if e.score is not None), key=lambda e: -e.score)
        if len(fitted) < 2:
            return None
        first, second = fitted[:2]
        return battles_to_announce(
            p_best=max(e.p_best or 0.0 for e in fitted),
            leader=(first.score, first.score_low, first.score_high),
            runner_up=(second.score, second.score_low, second.score_high),
            battles=self.battles,
            threshold=self.tournament.leader_threshold,
            min_battles=settings.POPULUS_MIN_ANNOUNCE_BATTLES,
        )


@dataclass(frozen=True)
class PairResult:
    """Counted results between two models on one board, from the first model's side."""

    wins: int
    losses: int
    ties: int

    @property
    def battles(self) -> int:
        return self.wins + self.losses + self.ties

    @property
    def win_rate(self) -> float | None:
        return (self.wins + self.ties / 2) / self.battles if self.battles else None

    @property
    def tie_rate(self) -> float | None:
        return self.ties / self.battles if self.battles else None


@dataclass(frozen=True)
class RaterCounts:
    """Distinct raters with counted votes, pooled and per group, and which groups may be published."""

    pooled: int
    by_group: dict[int, int]
    publishable: frozenset[int]
    imported: bool = False  # an imported log's: see Board.imported

    def published(self, group: Group | None) -> bool:
        """Whether the board of this group (None: the pooled board) may show figures.

        The small-group rule protects the people in Populus's panels and their demographic groups. An
        imported log's raters are no one's panel members and have no groups (group boards stay empty and
        withheld), and its votes are already public in the log, so its pooled board is published with any
        number of raters."""
        if group is None:
            return self.pooled >= min_group_raters() or (self.imported and self.pooled > 0)
        return group.pk in self.publishable


# --- Reading boards ---------------------------------------------------------------------------------


def board_get(
    *,
    dimension: Dimension,
    group: Group | None = None,
    snapshot: FitSnapshot | None = None,
    style_controlled: bool = False,
) -> Board:
    """The latest snapshot's board (or the given snapshot's), with suppression applied; with
    ``style_controlled`` its style-controlled view (no scores where the snapshot has none)."""
    tournament = dimension.tournament
    if snapshot is None:
        snapshot = snapshot_latest(dimension=dimension)
    elif snapshot.dimension_id != dimension.pk:
        raise InvalidInput(f"Snapshot {snapshot.pk} is not a fit of the dimension '{dimension.slug}'.")
    cutoff = snapshot_cutoff(snapshot)
    counts = rater_counts(tournament=tournament, dimension=dimension, up_to_vote_id=cutoff)
    raters = counts.pooled if group is None else counts.by_group.get(group.pk, 0)
    suppressed = not counts.published(group)
    common = {
        "tournament": tournament,
        "dimension": dimension,
        "group": group,
        "snapshot": snapshot,
        "fitted_at": snapshot.created_at if snapshot else None,
        "style_controlled": style_controlled,
    }
    if suppressed:
        return Board(**common, suppressed=True, raters=None, entries=[], imported=counts.imported)
    return Board(
        **common,
        imported=counts.imported,
        suppressed=False,
        raters=raters,
        entries=_entries(tournament, dimension, group, snapshot, cutoff, style_controlled),
    )


@dataclass(frozen=True)
class StyleEffect:
    """A style coefficient with its 95% interval: the change in log-odds of winning per typical
    difference in that feature between the two replies (positive: raters favour more of it)."""

    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class GroupStyleEffect:
    group: Group
    effect: StyleEffect  # the group's own coefficient (global + the group's offset)
    offset: StyleEffect  # how far it is from the global one

    @property
    def differs(self) -> bool:
        """Whether the group's offset interval excludes 0."""
        return self.offset.low > 0 or self.offset.high < 0


@dataclass(frozen=True)
class StyleCoefficient:
    feature: str
    effect: StyleEffect
    groups: list[GroupStyleEffect]  # publishable groups only


def style_coefficients(*, snapshot: FitSnapshot | None) -> list[StyleCoefficient]:
    """The snapshot's style coefficients, each group's only where that group may be published."""
    if snapshot is None or not snapshot.style:
        return []
    publishable = publishable_group_ids(tournament=snapshot.tournament)
    groups = Group.objects.select_related("axis__country").in_bulk(publishable)

    def effect(values: dict) -> StyleEffect:
        return StyleEffect(estimate=values["estimate"], low=values["low"], high=values["high"])

    return [
        StyleCoefficient(
            feature=item["feature"],
            effect=effect(item),
            groups=[
                GroupStyleEffect(group=groups[g["group_id"]], effect=effect(g), offset=effect(g["offset"]))
                for g in item["groups"]
                if g["group_id"] in groups
            ],
        )
        for item in snapshot.style["coefficients"]
    ]


def publishable_group_ids(*, tournament: Tournament) -> set[int]:
    """Groups whose figures may be published anywhere (pages, charts, API, exports, personal board).

    A group qualifies when it is publishable on the latest board of every fitted dimension (so nothing
    fitted on too few raters leaks through a view that mixes dimensions); before any fit, on the counted
    votes so far."""
    latest = snapshots_latest(tournament=tournament)
    if not latest:
        return set(rater_counts(tournament=tournament).publishable)
    publishable = None
    for snapshot in latest:
        ids = rater_counts(
            tournament=tournament, dimension=snapshot.dimension, up_to_vote_id=snapshot_cutoff(snapshot)
        ).publishable
        publishable = set(ids) if publishable is None else publishable & ids
    return publishable


def board_pair_results(
    *,
    dimension: Dimension,
    group: Group | None = None,
    up_to_vote_id: int | None = None,
    among: set[int] | None = None,
) -> dict[tuple[int, int], PairResult]:
    """Counted results of every pair that met on a board, keyed both ways round ((a, b) and (b, a));
    with `among`, only the pairs of those models.

    Callers publishing group figures must check the group is publishable first (board_get does)."""
    tallies: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0, 0])
    stored = _stored_pairs(dimension, group, up_to_vote_id)
    if stored is not None:
        for model_a, model_b, a_wins, b_wins, ties in stored:
            if among is not None and (model_a not in among or model_b not in among):
                continue
            for first, second, wins, losses in (
                (model_a, model_b, a_wins, b_wins),
                (model_b, model_a, b_wins, a_wins),
            ):
                tally = tallies[(first, second)]
                tally[0] += wins
                tally[1] += losses
                tally[2] += ties
        return {pair: PairResult(*tally) for pair, tally in tallies.items()}
    if among is not None:
        full = board_pair_results(dimension=dimension, group=group, up_to_vote_id=up_to_vote_id)
        return {pair: result for pair, result in full.items() if pair[0] in among and pair[1] in among}
    for model_a, model_b, outcome, count in _board_outcomes(dimension, group, up_to_vote_id):
        winner_side = {Outcome.A: 0, Outcome.B: 1}.get(outcome)
        for first, second, side in ((model_a, model_b, 0), (model_b, model_a, 1)):
            tally = tallies[(first, second)]
            if winner_side is None:
                tally[2] += count
            elif winner_side == side:
                tally[0] += count
            else:
                tally[1] += count
    return {pair: PairResult(*tally) for pair, tally in tallies.items()}


def snapshot_latest(*, dimension: Dimension) -> FitSnapshot | None:
    return FitSnapshot.objects.filter(dimension=dimension).order_by("-created_at", "-pk").first()


def snapshots_latest(*, tournament: Tournament) -> list[FitSnapshot]:
    """The latest snapshot of each fitted dimension of a tournament, in the dimensions' display order."""
    latest_of_dimension = (
        FitSnapshot.objects.filter(dimension=OuterRef("dimension"))
        .order_by("-created_at", "-pk")
        .values("pk")[:1]
    )
    return list(
        FitSnapshot.objects.filter(tournament=tournament, pk=Subquery(latest_of_dimension))
        .select_related("dimension")
        .order_by("dimension__position", "dimension_id")
    )


def snapshot_cutoff(snapshot: FitSnapshot | None) -> int | None:
    """The last vote a board's counts include: the snapshot's, or None (every counted vote so far)."""
    if snapshot is None:
        return None
    return snapshot.last_vote_id or 0


def tournament_entrants(*, tournament: Tournament) -> list[LLMModel]:
    """Every model that entered the tournament: those in it now and any that ever met in its battles
    (so a withdrawn model stays listed)."""
    in_battles = Battle.objects.filter(tournament=tournament)
    return list(
        LLMModel.objects.filter(
            Q(tournaments=tournament)
            | Exists(in_battles.filter(model_a=OuterRef("pk")))
            | Exists(in_battles.filter(model_b=OuterRef("pk")))
        )
        .distinct()
        .order_by("name")
    )


def model_status(*, model: LLMModel, current_ids: set[int], battles: int) -> str:
    """Withdrawn: no longer in the tournament, or switched off. Provisional: too few battles on the
    board for its score to mean much yet. Imported: a model known only from an imported log (it is
    inactive because nothing can be sent to it, not because it left)."""
    if model.is_imported:
        return Status.PROVISIONAL if battles < settings.POPULUS_PROVISIONAL_BATTLES else Status.IMPORTED
    if model.pk not in current_ids or not model.is_active or model.disabled_reason:
        return Status.WITHDRAWN
    if battles < settings.POPULUS_PROVISIONAL_BATTLES:
        return Status.PROVISIONAL
    return Status.ACTIVE


def min_group_raters() -> int:
    threshold = settings.POPULUS_MIN_GROUP_RATERS
    if threshold < 1:
        raise ImproperlyConfigured(f"POPULUS_MIN_GROUP_RATERS must be at least 1, not {threshold}.")
    return threshold


def _model_totals(results: dict[tuple[int, int], PairResult]) -> dict[int, list[int]]:
    """Wins, losses and ties of each model over all its pairs."""
    totals: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    for (model_id, _opponent), result in results.items():
        total = totals[model_id]
        total[0] += result.wins
        total[1] += result.losses
        total[2] += result.ties
    return dict(totals)


def _entries(tournament, dimension, group, snapshot, cutoff, style_controlled=False) -> list[BoardEntry]:
    scores = (
        {
            s.model_id: s
            for s in FitScore.objects.filter(
                snapshot=snapshot, group=group, style_controlled=style_controlled
            )
        }
        if snapshot
        else {}
    )
    # Each model's totals are cached, not the pairs: a few hundred numbers where a 130-model board has
    # 17,000 pairs, whose pickling alone took a third of a second.
    totals = defaultdict(
        lambda: [0, 0, 0],
        _cached(
            tournament.pk,
            f"totals:{dimension.pk}:{group.pk if group else 'pooled'}:{cutoff}",
            lambda: _board_totals(dimension, group, cutoff),
            cacheable=cutoff is not None,
        ),
    )
    models = {m.pk: m for m in tournament_entrants(tournament=tournament)}
    missing = set(scores) - set(models)
    models.update({m.pk: m for m in LLMModel.objects.filter(pk__in=missing)})
    current_ids = set(tournament.llm_models.values_list("pk", flat=True))
    entries = []
    for model in models.values():
        wins, losses, ties = totals[model.pk]
        battles = wins + losses + ties
        score = scores.get(model.pk)
        entries.append(
            BoardEntry(
                model_id=model.pk,
                slug=model.slug,
                name=model.name,
                maker=model.maker,
                status=model_status(model=model, current_ids=current_ids, battles=battles),
                rank=score.rank if score else None,
                rank_low=score.rank_low if score else None,
                rank_high=score.rank_high if score else None,
                score=score.score if score else None,
                score_low=score.score_low if score else None,
                score_high=score.score_high if score else None,
                p_best=score.p_best if score else None,
                rating=score.rating if score else None,
                rating_low=score.rating_low if score else None,
                rating_high=score.rating_high if score else None,
                battles=battles,
                wins=wins,
                losses=losses,
                ties=ties,
                win_rate=(wins + ties / 2) / battles if battles else None,
            )
        )
    entries.sort(key=lambda e: (e.rank is None, e.rank or 0, -(e.score or 0), e.name))
    return entries


def counted_choices(dimension: Dimension, up_to_vote_id: int | None = None) -> QuerySet:
    """The dimension's counted choices, up to a vote (a snapshot's cutoff) when one is given."""
    choices = VoteChoice.objects.counted().filter(dimension=dimension)
    return choices if up_to_vote_id is None else choices.filter(vote_id__lte=up_to_vote_id)


def _board_outcomes(dimension, group, up_to_vote_id) -> QuerySet:
    choices = counted_choices(dimension, up_to_vote_id)
    if group is not None:
        choices = choices.filter(vote__battle__rater__groups=group)
    return (
        choices.values_list("vote__battle__model_a_id", "vote__battle__model_b_id", "outcome")
        .annotate(count=Count("pk"))
        .order_by()
    )


# --- Who may be published ---------------------------------------------------------------------------


def rater_counts(
    *, tournament: Tournament, dimension: Dimension | None = None, up_to_vote_id: int | None = None
) -> RaterCounts:
    """Distinct raters with counted votes (on one dimension, or on any) up to a vote, and the groups
    that may be published on that basis. Cached per board version when a cutoff is given."""
    name = f"raters:{dimension.pk if dimension else 'any'}:{up_to_vote_id}"
    return _cached(
        tournament.pk,
        name,
        lambda: _rater_counts(tournament, dimension, up_to_vote_id),
        cacheable=up_to_vote_id is not None,
    )


def _stored_pairs(dimension: Dimension, group: Group | None, up_to_vote_id: int | None) -> list | None:
    """The board's pairs as its fit stored them (FitBoardCounts.pairs), or None when none were stored."""
    stored = _stored_snapshot(dimension, up_to_vote_id)
    if stored is None:
        return None
    pairs = FitBoardCounts.objects.filter(snapshot_id=stored, group=group).values_list("pairs", flat=True)
    return next(iter(pairs), [])


def _board_totals(
    dimension: Dimension, group: Group | None, up_to_vote_id: int | None
) -> dict[int, list[int]]:
    """Each model's wins, losses and ties on the board, straight from the stored pairs where a fit
    stored them (no per-pair objects: a 130-model board has 17,000 pairs)."""
    stored = _stored_pairs(dimension, group, up_to_vote_id)
    if stored is None:
        results = board_pair_results(dimension=dimension, group=group, up_to_vote_id=up_to_vote_id)
        return _model_totals(results)
    totals: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    for model_a, model_b, a_wins, b_wins, ties in stored:
        first, second = totals[model_a], totals[model_b]
        first[0] += a_wins
        first[1] += b_wins
        first[2] += ties
        second[0] += b_wins
        second[1] += a_wins
        second[2] += ties
    return dict(totals)


def _stored_snapshot(dimension: Dimension | None, up_to_vote_id: int | None) -> int | None:
    """The latest snapshot of the dimension fitted up to this vote that stored its boards' counts."""
    if dimension is None or up_to_vote_id is None:
        return None
    return (
        FitSnapshot.objects.filter(dimension=dimension, last_vote_id=up_to_vote_id)
        .filter(Exists(FitBoardCounts.objects.filter(snapshot=OuterRef("pk"), group__isnull=True)))
        .order_by("-created_at", "-pk")
        .values_list("pk", flat=True)
        .first()
    )


def _rater_counts(tournament, dimension, up_to_vote_id) -> RaterCounts:
    stored = _stored_snapshot(dimension, up_to_vote_id)
    if stored is not None:
        by_board = dict(FitBoardCounts.objects.filter(snapshot_id=stored).values_list("group_id", "raters"))
        pooled = by_board.pop(None, 0)
        return _rater_counts_of(tournament, pooled, by_board)
    if dimension is not None:
        rater_ids = counted_choices(dimension, up_to_vote_id).values("vote__battle__rater_id")
    else:
        votes = Vote.objects.counted().filter(battle__tournament=tournament)
        if up_to_vote_id is not None:
            votes = votes.filter(pk__lte=up_to_vote_id)
        rater_ids = votes.values("battle__rater_id")
    rater_ids = rater_ids.distinct().order_by()
    pooled = rater_ids.count()
    by_group = dict(
        Rater.groups.through.objects.filter(rater_id__in=rater_ids)
        .values_list("group_id")
        .annotate(raters=Count("rater_id", distinct=True))
        .order_by()
    )
    return _rater_counts_of(tournament, pooled, by_group)


def _rater_counts_of(tournament: Tournament, pooled: int, by_group: dict[int, int]) -> RaterCounts:
    axes: dict[int, list[int]] = defaultdict(list)
    for group_id, axis_id in Group.objects.values_list("pk", "axis_id"):
        axes[axis_id].append(group_id)
    publishable = publishable_groups(
        counts=by_group, pooled=pooled, axes=list(axes.values()), threshold=min_group_raters()
    )
    return RaterCounts(
        pooled=pooled,
        by_group=by_group,
        publishable=frozenset(publishable),
        imported=tournament_is_imported(tournament=tournament),
    )


def publishable_groups(
    *, counts: dict[int, int], pooled: int, axes: list[list[int]], threshold: int
) -> set[int]:
    """The suppression rule on plain numbers: group raters, the pooled raters, the groups of each axis.

    A group is published when it has at least `threshold` raters and is not needed to hide another
    (see the module docstring)."""
    if pooled < threshold:
        return set()
    publishable = set()
    for axis_groups in axes:
        published = sorted(
            (g for g in axis_groups if counts.get(g, 0) >= threshold), key=lambda g: (counts[g], g)
        )
        hidden = [g for g in axis_groups if 0 < counts.get(g, 0) < threshold]
        needs_cover = bool(hidden)
        while published:
            hidden_raters = sum(counts[g] for g in hidden)
            outside = pooled - sum(counts[g] for g in published)
            small_group_exposed = needs_cover and hidden_raters < threshold
            if not small_group_exposed and not 0 < outside < threshold:
                break
            hidden.append(published.pop(0))  # the smallest published group gives cover
        publishable.update(published)
    return publishable


# --- Cache versions -----------------------------------------------------------------------------------


SITE_VERSION_KEY = "populus:boards:version:site"
SITE_VERSION_RECHECK_SECONDS = 1.0
_site_version_memo: tuple[int | None, float] = (None, 0.0)


def _version_key(tournament_id: int) -> str:
    return f"populus:boards:version:{tournament_id}"


def board_cache_version(*, tournament_id: int) -> int:
    """Part of every cache key and ETag of board data. Starts from the clock, so a version lost with the
    cache never comes back as a number used before."""
    return _version(_version_key(tournament_id))


def boards_site_version() -> int:
    """Bumped with every tournament's version: for cached pages that may show any tournament (the page
    is cached before it knows which tournament a request names).

    Read from the cache at most once per SITE_VERSION_RECHECK_SECONDS in each process, so a cached page
    costs no cache round trip: a fit landing in another process (the ratings worker) reaches every web
    process within that time, and the process that bumps the version sees it at once."""
    global _site_version_memo
    version, read_at = _site_version_memo
    now = time.monotonic()
    if version is None or now - read_at > SITE_VERSION_RECHECK_SECONDS:
        version = _version(SITE_VERSION_KEY)
        _site_version_memo = (version, now)
    return version


def boards_site_version_forget() -> None:
    """Drop this process's memo of the site version (tests do, when they clear the cache)."""
    global _site_version_memo
    _site_version_memo = (None, 0.0)


def board_cache_bump(*, tournament_id: int) -> None:
    """Called when a fit lands. Bumped now and again once the transaction commits, so that a reader who
    filled the cache from the old rows in between does not keep them."""
    _bump(tournament_id)
    transaction.on_commit(lambda: _bump(tournament_id))


def _version(key: str) -> int:
    version = cache.get(key)
    if version is None:
        cache.add(key, time.time_ns(), timeout=None)
        version = cache.get(key)
    return version


def _bump(tournament_id: int) -> None:
    for key in (_version_key(tournament_id), SITE_VERSION_KEY):
        try:
            cache.incr(key)
        except ValueError:  # lost with the cache: start again from the clock
            cache.add(key, time.time_ns(), timeout=None)
    boards_site_version_forget()


def _cached(tournament_id: int, name: str, compute, *, cacheable: bool = True):
    if not cacheable:
        return compute()
    key = f"populus:boards:{tournament_id}:{board_cache_version(tournament_id=tournament_id)}:{name}"
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, timeout=CACHE_SECONDS)
    return value
