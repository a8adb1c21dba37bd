"""The personal leaderboard: the board for one visitor's priorities and profile.

A visitor weights the dimensions and may give a profile: a country and, on any of its axes, their group.
The profile is a cell of the batch fit (see `stats.btd`): a model's skill for it is theta plus the
offsets of those groups. So the board rests on each group's effect, measured on all of that group's
raters, never on the few raters who match the visitor on every answer; a profile with no group is cell
(), the fit's baseline rater, which is not the post-stratified pooled board.

For each weighted dimension, the latest snapshot's stored posterior (`FitPosterior`) gives the cell's
score draws; their weighted sum, draw by draw, is the combined score, with its interval, rank interval
and P(best). Dimensions are fitted separately, so their draws are combined as independent. The same
weights on each dimension's pooled board give the comparison the fit report makes.

Nothing about the visitor is stored: the state is the query string. Results are cached under the
normalised query and `board_cache_version`; decoded posteriors and a profile's draws are kept in small
per-process caches, so moving a weight only recombines draws.

Privacy: a group outside `boards.publishable_group_ids` is left out of the profile, with a note; while a
weighted dimension's pooled board is suppressed (too few raters), nothing is shown.
"""

import functools
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from urllib.parse import urlencode

import numpy as np
from django.core.cache import cache

from leaderboard import boards, services
from leaderboard.models import FitPosterior
from leaderboard.selectors import STYLE_VIEWS  # the `style` parameter, as on the leaderboard
from raters.models import Axis, Country, Group
from stats.posterior import ScoreDraws, score_draws
from stats.summaries import DrawSummary, draws_summary
from tournaments.models import Dimension, Tournament

MAX_WEIGHT = 10
DEFAULT_WEIGHT = 5
WEIGHT_PREFIX = "w-"
RESERVED_PARAMS = {"tournament", "country", "style"}
# The fit report covers the models at the top of the board.
REPORTED_MODELS = 3
CACHE_SECONDS = 24 * 3600


# --- What the page shows ------------------------------------------------------------------------------


@dataclass(frozen=True)
class WeightSetting:
    dimension: Dimension
    weight: float  # 0..MAX_WEIGHT, as used
    share: float  # of the combined score; 0 for a dimension left out
    fitted: bool  # the dimension has a fitted board with a stored posterior

    @property
    def param(self) -> str:
        return WEIGHT_PREFIX + self.dimension.slug

    @property
    def display(self) -> str:
        return _number(self.weight)


@dataclass(frozen=True)
class Standing:
    """One model on one weighted dimension, for this profile."""

    dimension: Dimension
    score: float
    score_low: float
    score_high: float
    rank: int
    rank_low: int
    rank_high: int


@dataclass(frozen=True)
class FitReport:
    """Where a model is strong or weak for this profile, relative to the field, and how its rank here
    compares with the pooled board under the same weights."""

    strongest: Standing | None  # None with a single weighted dimension, or no difference between them
    weakest: Standing | None
    rank: int
    pooled_rank: int
    audience: str  # "for people like you", or "with no profile given"

    @property
    def lines(self) -> list[str]:
        lines = []
        if self.strongest is not None:
            best, worst = self.strongest, self.weakest
            if best.rank == 1:
                lines.append(f"Top on {best.dimension.name} {self.audience}.")
            else:
                lines.append(
                    f"Strongest on {best.dimension.name} {self.audience}: "
                    f"rank {best.rank} (could be {best.rank_low} to {best.rank_high})."
                )
            lines.append(
                f"Weakest on {worst.dimension.name}: rank {worst.rank} "
                f"(could be {worst.rank_low} to {worst.rank_high})."
            )
        if self.rank == self.pooled_rank:
            lines.append(f"Same rank as on the pooled board with these weights ({self.rank}).")
        else:
            direction = "higher" if self.rank < self.pooled_rank else "lower"
            lines.append(
                f"Ranks {direction} {self.audience} ({self.rank}) than on the pooled board with these "
                f"weights ({self.pooled_rank})."
            )
        return lines


@dataclass(frozen=True)
class PersonalRow:
    model_id: int
    slug: str
    name: str
    maker: str
    status: str  # boards.Status: provisional or withdrawn on any weighted dimension's pooled board
    rank: int | None  # None: not on every weighted dimension's fitted board yet
    rank_low: int | None
    rank_high: int | None
    score: float | None  # weighted expected points against the field, 95% interval below
    score_low: float | None
    score_high: float | None
    p_best: float | None
    pooled_rank: int | None
    standings: tuple[Standing, ...]
    report: FitReport | None


@dataclass(frozen=True)
class PersonalBoard:
    tournament: Tournament
    country: Country | None
    profile_given: tuple[Group, ...]  # valid groups the visitor gave, in axis order
    profile: tuple[Group, ...]  # those the board uses (publishable ones)
    weights: tuple[WeightSetting, ...]  # every dimension, in order
    rows: tuple[PersonalRow, ...]
    problems: tuple[str, ...]  # input that could not be used, and what was used instead
    notes: tuple[str, ...]  # what the board leaves out, and why
    suppressed: bool  # too few raters on a weighted dimension's pooled board: no figures
    fitted_at: datetime | None  # the oldest of the snapshots combined
    publishable_group_ids: frozenset[int]
    # From the style-controlled fits (scores with reply length and formatting held equal).
    style_controlled: bool = False

    @property
    def query(self) -> str:
        """The normalised query string: the whole state, for links and the address bar."""
        params = [("tournament", self.tournament.slug)]
        if self.country:
            params.append(("country", self.country.code))
        params += [(group.axis.slug, group.slug) for group in self.profile_given]
        params += [(w.param, w.display) for w in self.weights]
        if self.style_controlled:
            params.append(("style", "controlled"))
        return urlencode(params)

    @property
    def ranked(self) -> bool:
        return any(row.rank is not None for row in self.rows)

    @property
    def audience(self) -> str:
        return "for people like you" if self.profile else "with no profile given"

    @property
    def combines_dimensions(self) -> bool:
        """More than one dimension weighted: the page then says how their uncertainties are combined."""
        return sum(1 for w in self.weights if w.share) > 1

    def with_problem(self, problem: str) -> "PersonalBoard":
        return replace(self, problems=(problem, *self.problems))


@dataclass(frozen=True)
class AxisChoice:
    axis: Axis
    options: tuple[tuple[Group, bool], ...]  # each group, and whether it may be used
    selected: Group | None


# --- Reading the request ------------------------------------------------------------------------------


def personal_tournament(*, slug: str | None) -> tuple[Tournament | None, str | None]:
    """The named tournament, or the newest; an unknown name falls back to the newest, with a problem
    to show, so that a stale link still opens a board."""
    newest = Tournament.objects.order_by("-created_at").first()
    if not slug:
        return newest, None
    named = Tournament.objects.filter(slug=slug).first()
    if named is not None:
        return named, None
    return newest, f"There is no tournament called '{_shown(slug)}'; showing the newest instead."


def personal_params(*, query: Mapping[str, str]) -> dict:
    """Split a query string into `personal_board` arguments (as given; `personal_board` validates):
    `w-<dimension>` weights, `country`, and `<axis>=<group>` for the profile."""
    axis_slugs = set(Axis.objects.values_list("slug", flat=True)) - RESERVED_PARAMS
    return {
        "tournament_slug": query.get("tournament") or None,
        "country": query.get("country") or None,
        "weights": {
            key.removeprefix(WEIGHT_PREFIX): value
            for key, value in query.items()
            if key.startswith(WEIGHT_PREFIX)
        },
        "profile": {key: value for key, value in query.items() if key in axis_slugs and value},
        "style": query.get("style") or None,
    }


def profile_choices(*, board: PersonalBoard) -> list[AxisChoice]:
    """The profile selects for the board's country: every group of each axis, marked when too few raters
    allow it to be used."""
    if board.country is None:
        return []
    selected = {group.axis_id: group for group in board.profile_given}
    return [
        AxisChoice(
            axis=axis,
            options=tuple((group, group.pk in board.publishable_group_ids) for group in axis.groups.all()),
            selected=selected.get(axis.pk),
        )
        for axis in board.country.axes.prefetch_related("groups")
    ]


# --- The board ----------------------------------------------------------------------------------------


def personal_board(
    *,
    tournament: Tournament,
    weights: Mapping[str, float | str],
    profile: Mapping[str, str],
    country: str | None,
    style: str | None = None,
) -> PersonalBoard:
    """The tournament's board for these dimension weights (slug -> 0..10) and this profile (axis slug ->
    group slug, all in `country`), from the style-controlled fits with `style` "controlled". Input that
    cannot be used is named in `problems` and replaced by the default (equal weights, no group, the
    board as voted), so a stale or mistyped link still shows a board."""
    problems: list[str] = []
    notes: list[str] = []
    dimensions = list(tournament.dimensions.order_by("position"))
    weight_of = _weights_checked(dimensions, weights, problems)
    style_controlled = _style_checked(style, problems)
    country_obj = _country_checked(country, profile, problems)
    given = _profile_checked(country_obj, profile, problems)
    publishable = frozenset(boards.publishable_group_ids(tournament=tournament))
    used = []
    for group in given:
        if group.pk in publishable:
            used.append(group)
        else:
            notes.append(f"Not enough raters in {_group_label(group)} yet; showing the board without it.")

    weighted = [d for d in dimensions if weight_of[d.pk] > 0]
    fitted = _fitted_snapshots(tournament, weighted, notes, style_controlled=style_controlled)
    total = sum(weight_of[pk] for pk in fitted)
    settings = tuple(
        WeightSetting(
            dimension=d,
            weight=weight_of[d.pk],
            share=weight_of[d.pk] / total if d.pk in fitted else 0.0,
            fitted=d.pk in fitted,
        )
        for d in dimensions
    )
    suppressed = any(_pooled_suppressed(tournament, snapshot) for snapshot in fitted.values())
    common = {
        "tournament": tournament,
        "country": country_obj,
        "profile_given": tuple(given),
        "profile": tuple(used),
        "weights": settings,
        "problems": tuple(problems),
        "publishable_group_ids": publishable,
        "fitted_at": min((s.created_at for s in fitted.values()), default=None),
        "suppressed": suppressed,
        "style_controlled": style_controlled,
    }
    if suppressed or not fitted:
        if suppressed:
            notes.append("Not enough raters yet to publish this tournament's boards.")
        return PersonalBoard(**common, rows=(), notes=tuple(notes))
    rows, fit_notes = _rows_cached(
        tournament, [fitted[d.pk] for d in dimensions if d.pk in fitted], settings, used, style_controlled
    )
    return PersonalBoard(**common, rows=rows, notes=(*notes, *fit_notes))


def _fitted_snapshots(
    tournament: Tournament, weighted: list[Dimension], notes: list[str], *, style_controlled: bool
) -> dict:
    """The latest snapshot of each weighted dimension that has a stored posterior (of the
    style-controlled fit, with `style_controlled`), by dimension pk."""
    latest = {s.dimension_id: s for s in boards.snapshots_latest(tournament=tournament)}
    with_posterior = set(
        FitPosterior.objects.filter(
            snapshot__in=[latest[d.pk] for d in weighted if d.pk in latest]
        ).values_list("snapshot_id", flat=True)
    )
    fitted = {}
    for dimension in weighted:
        snapshot = latest.get(dimension.pk)
        if snapshot is None:
            notes.append(f"{dimension.name} has no fitted board yet; it is left out.")
        elif snapshot.pk not in with_posterior:
            notes.append(
                f"{dimension.name} was last fitted before personal boards existed; it joins at its next fit."
            )
        elif style_controlled and posterior_get(snapshot.pk, style_controlled=True) is None:
            notes.append(
                f"{dimension.name} has no style-controlled fit (no difference in reply style to measure); "
                "it is left out."
            )
        else:
            fitted[dimension.pk] = snapshot
    return fitted


def _pooled_suppressed(tournament: Tournament, snapshot) -> bool:
    """The rule `boards.board_get` applies to a pooled board, from the same cached counts."""
    counts = boards.rater_counts(
        tournament=tournament, dimension=snapshot.dimension, up_to_vote_id=boards.snapshot_cutoff(snapshot)
    )
    return not counts.published(None)


# --- Validation ---------------------------------------------------------------------------------------


def _weights_checked(dimensions, weights: Mapping[str, float | str], problems: list[str]) -> dict[int, float]:
    """Weights by dimension pk. No weights at all: equal weights. Some given: the rest are 0."""
    by_slug = {d.slug: d for d in dimensions}
    for slug in weights:
        if slug not in by_slug:
            problems.append(
                f"This tournament has no dimension called '{_shown(slug)}'; that weight is ignored."
            )
    known = {slug: value for slug, value in weights.items() if slug in by_slug}
    result = {d.pk: (0.0 if known else float(DEFAULT_WEIGHT)) for d in dimensions}
    for slug, raw in known.items():
        dimension = by_slug[slug]
        value = _number_or_none(raw)
        if value is None or not 0 <= value <= MAX_WEIGHT:
            problems.append(
                f"The weight for {dimension.name} must be a number from 0 to {MAX_WEIGHT}, "
                f"not '{_shown(raw)}'; using {DEFAULT_WEIGHT}."
            )
            value = float(DEFAULT_WEIGHT)
        result[dimension.pk] = value
    if dimensions and not any(result.values()):
        problems.append("Every weight is 0; using equal weights.")
        result = dict.fromkeys(result, float(DEFAULT_WEIGHT))
    return result


def _style_checked(raw: str | None, problems: list[str]) -> bool:
    if (raw or "") in STYLE_VIEWS:
        return STYLE_VIEWS[raw or ""]
    problems.append(f"There is no style view called '{_shown(raw)}'; showing the board as voted.")
    return False


def _number_or_none(raw: float | str) -> float | None:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _country_checked(code: str | None, profile: Mapping[str, str], problems: list[str]) -> Country | None:
    """The named country; without one, the country of the profile's groups if they share one."""
    if code:
        country = Country.objects.filter(code__iexact=code.strip()).first()
        if country is not None:
            return country
        problems.append(f"There is no country with the code '{_shown(code)}'.")
    countries = set(
        Group.objects.filter(slug__in=profile.values()).values_list("axis__country_id", flat=True).distinct()
    )
    return Country.objects.get(pk=countries.pop()) if len(countries) == 1 else None


def _profile_checked(country: Country | None, profile: Mapping[str, str], problems: list[str]) -> list[Group]:
    """The profile's groups, one per axis of the country, in axis order; the rest named in problems."""
    found = {
        g.slug: g for g in Group.objects.filter(slug__in=profile.values()).select_related("axis__country")
    }
    groups = []
    for axis_slug, slug in profile.items():
        group = found.get(slug)
        if group is None:
            problems.append(f"There is no group called '{_shown(slug)}'; it is left out.")
        elif country is None or group.axis.country_id != country.pk:
            where = country.name if country else "the country given"
            problems.append(f"'{group.label}' ({group.slug}) is not a group in {where}; it is left out.")
        elif group.axis.slug != axis_slug:
            problems.append(f"'{group.label}' is not an answer to {axis_slug}; it is left out.")
        else:
            groups.append(group)
    return sorted(groups, key=lambda g: g.axis.position)


def _shown(raw) -> str:
    """Input echoed in a message, cut short: a link can carry anything."""
    text = str(raw)
    return text if len(text) <= 40 else text[:40] + "…"


def _group_label(group: Group) -> str:
    return f"{group.axis.country.name} · {group.axis.label} {group.label}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}".rstrip("0")


# --- The numbers: draws, combined and summarised ------------------------------------------------------


@dataclass(frozen=True)
class _Numbers:
    model_ids: tuple[int, ...]  # models on every combined board, in the order of the arrays
    combined: DrawSummary
    pooled: DrawSummary  # the same weights on each dimension's pooled board
    by_dimension: dict[int, DrawSummary]  # dimension pk -> this profile's board on it


def _rows_cached(
    tournament: Tournament, snapshots: list, settings, used: list[Group], style_controlled: bool
):
    """The ranked rows and the notes that go with them, cached under the normalised query (snapshots,
    shares, the profile's groups, the style view) and the board version, so a fit landing starts
    afresh."""
    share = {w.dimension.pk: w.share for w in settings}
    parts = tuple((s.dimension_id, s.pk, share[s.dimension_id]) for s in snapshots)
    normalised = repr(
        ([(d, s, round(w, 9)) for d, s, w in parts], sorted(g.pk for g in used), style_controlled)
    )
    digest = hashlib.sha256(normalised.encode()).hexdigest()[:32]
    version = boards.board_cache_version(tournament_id=tournament.pk)
    key = f"populus:personal:{tournament.pk}:{version}:{digest}"
    cached = cache.get(key)
    if cached is None:
        cached = _rows_computed(snapshots, parts, settings, used, style_controlled)
        cache.set(key, cached, timeout=CACHE_SECONDS)
    return cached


def _rows_computed(snapshots: list, parts: tuple, settings, used: list[Group], style_controlled: bool):
    notes = []
    cells = {}
    for snapshot in snapshots:
        in_fit = set(posterior_get(snapshot.pk, style_controlled=style_controlled).group_ids)
        cells[snapshot.pk] = tuple(g.pk for g in used if g.pk in in_fit)
        notes += [
            f"No votes from {_group_label(g)} on {snapshot.dimension.name} yet; that part leaves it out."
            for g in used
            if g.pk not in in_fit
        ]
    numbers = _numbers(parts, cells, style_controlled)
    entries: dict[int, list] = {}
    for snapshot in snapshots:
        for entry in boards.board_get(dimension=snapshot.dimension, snapshot=snapshot).entries:
            entries.setdefault(entry.model_id, []).append(entry)
    audience = "for people like you" if used else "with no profile given"
    return _rows(numbers, settings, entries, audience), tuple(notes)


def _numbers(parts: tuple, cells: dict[int, tuple[int, ...]], style_controlled: bool) -> _Numbers:
    """Each dimension's board for the profile and the pooled board, of the default fits or of the
    style-controlled ones, combined with the dimensions' shares."""
    posteriors = {s: posterior_get(s, style_controlled=style_controlled) for _, s, _ in parts}
    model_ids = tuple(sorted(set.intersection(*(set(p.model_ids) for p in posteriors.values()))))
    cell_draws = {s: _cell_draws(s, cells[s], style_controlled) for _, s, _ in parts}
    n_draws = min(
        min(len(d.draws) for d in cell_draws.values()), min(len(p.pooled.draws) for p in posteriors.values())
    )
    point, draws = np.zeros(len(model_ids)), np.zeros((n_draws, len(model_ids)))
    pooled_point, pooled_draws = np.zeros_like(point), np.zeros_like(draws)
    by_dimension = {}
    for dimension_id, snapshot_id, share in parts:
        posterior, own = posteriors[snapshot_id], cell_draws[snapshot_id]
        columns = [posterior.model_ids.index(m) for m in model_ids]
        dimension_point, dimension_draws = own.point[columns], own.draws[:n_draws, columns].astype(float)
        point += share * dimension_point
        draws += share * dimension_draws
        pooled_point += share * posterior.pooled.point[columns]
        pooled_draws += share * posterior.pooled.draws[:n_draws, columns].astype(float)
        by_dimension[dimension_id] = draws_summary(dimension_point, dimension_draws)
    return _Numbers(
        model_ids=model_ids,
        combined=draws_summary(point, draws),
        pooled=draws_summary(pooled_point, pooled_draws),
        by_dimension=by_dimension,
    )


@functools.lru_cache(maxsize=16)
def posterior_get(snapshot_id: int, *, style_controlled: bool = False) -> services.Posterior | None:
    """A snapshot's stored posterior (of its default or its style-controlled fit), decoded once per
    process (posteriors never change)."""
    data = FitPosterior.objects.filter(snapshot_id=snapshot_id).values_list("data", flat=True).first()
    return None if data is None else services.posterior_decode(data, style_controlled=style_controlled)


@functools.lru_cache(maxsize=48)
def _cell_draws(snapshot_id: int, group_ids: tuple[int, ...], style_controlled: bool = False) -> ScoreDraws:
    """A profile's score draws on one snapshot: the board of cell `group_ids`, seeded like the snapshot's
    own boards. Kept in float32, which is ample for draws and halves the memory."""
    fit = posterior_get(snapshot_id, style_controlled=style_controlled).cell_fit(group_ids)
    cell = tuple(range(len(group_ids)))  # the groups' numbers inside the cell's fit
    draws = score_draws(fit, [(cell, 1.0)], n_draws=services.FIT_DRAWS, seed=snapshot_id)
    return ScoreDraws(point=draws.point, draws=draws.draws.astype(np.float32))


# --- Rows and the fit report --------------------------------------------------------------------------


def _rows(numbers: _Numbers, settings, entries: dict[int, list], audience: str) -> tuple[PersonalRow, ...]:
    """Ranked models first (with the fit report for the top ones), then every other entrant, so no
    model that entered the tournament is hidden. `entries` are each model's pooled board entries."""
    weighted = [w for w in settings if w.share > 0]
    combined, pooled = numbers.combined, numbers.pooled
    order = sorted(range(len(numbers.model_ids)), key=lambda k: (combined.rank[k], -combined.point[k]))
    rows = []
    for position, k in enumerate(order):
        model_id = numbers.model_ids[k]
        standings = tuple(_standing(w.dimension, numbers.by_dimension[w.dimension.pk], k) for w in weighted)
        figures = {
            "rank": int(combined.rank[k]),
            "rank_low": int(combined.rank_low[k]),
            "rank_high": int(combined.rank_high[k]),
            "score": float(combined.point[k]),
            "score_low": float(combined.low[k]),
            "score_high": float(combined.high[k]),
            "p_best": float(combined.p_best[k]),
            "pooled_rank": int(pooled.rank[k]),
            "standings": standings,
            "report": (
                _report(standings, numbers, weighted, k, audience) if position < REPORTED_MODELS else None
            ),
        }
        rows.append(_row(model_id, entries.get(model_id, []), figures))
    ranked = set(numbers.model_ids)
    unranked = sorted((m for m in entries if m not in ranked), key=lambda m: entries[m][0].name)
    rows += [_row(model_id, entries[model_id], UNRANKED) for model_id in unranked]
    return tuple(rows)


# A model not on every weighted dimension's fitted board yet (new to the tournament) is listed unranked.
UNRANKED = {
    **dict.fromkeys(
        (
            "rank",
            "rank_low",
            "rank_high",
            "score",
            "score_low",
            "score_high",
            "p_best",
            "pooled_rank",
            "report",
        )
    ),
    "standings": (),
}


def _row(model_id: int, entries: list, figures: dict) -> PersonalRow:
    """A row with the model's names from the pooled boards; its status is the worst of them."""
    first = entries[0] if entries else None
    statuses = {e.status for e in entries}
    worst = (boards.Status.WITHDRAWN, boards.Status.PROVISIONAL)
    return PersonalRow(
        model_id=model_id,
        slug=first.slug if first else "",
        name=first.name if first else f"Model {model_id}",
        maker=first.maker if first else "",
        status=next((s for s in worst if s in statuses), boards.Status.ACTIVE),
        **figures,
    )


def _standing(dimension: Dimension, summary: DrawSummary, k: int) -> Standing:
    return Standing(
        dimension=dimension,
        score=float(summary.point[k]),
        score_low=float(summary.low[k]),
        score_high=float(summary.high[k]),
        rank=int(summary.rank[k]),
        rank_low=int(summary.rank_low[k]),
        rank_high=int(summary.rank_high[k]),
    )


def _report(standings: tuple[Standing, ...], numbers: _Numbers, weighted, k: int, audience: str) -> FitReport:
    """Strongest and weakest weighted dimension by the model's standing relative to the field there (its
    score in standard deviations of the field's scores, so dimensions with many ties, whose scores
    bunch near 1/2, compare fairly with the others)."""
    strongest = weakest = None
    if len(standings) > 1:
        relative = [_relative(numbers.by_dimension[w.dimension.pk].point, k) for w in weighted]
        strongest = standings[int(np.argmax(relative))]
        weakest = standings[int(np.argmin(relative))]
        if strongest is weakest:
            strongest = weakest = None
    return FitReport(
        strongest=strongest,
        weakest=weakest,
        rank=int(numbers.combined.rank[k]),
        pooled_rank=int(numbers.pooled.rank[k]),
        audience=audience,
    )


def _relative(points: np.ndarray, k: int) -> float:
    spread = float(points.std())
    return (float(points[k]) - float(points.mean())) / spread if spread > 0 else 0.0
