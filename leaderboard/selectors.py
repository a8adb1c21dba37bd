"""Reads for the public pages: which board a request names, and the figures and charts around a board.

Every published figure comes through `leaderboard.boards`, where suppression lives: group figures are
shown only for groups it says are publishable on that snapshot.
"""

from collections import defaultdict
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count, Q
from django.utils.safestring import SafeString, mark_safe

from config.errors import NotFound
from leaderboard import charts
from leaderboard.boards import (
    Board,
    BoardEntry,
    PairResult,
    Status,
    StyleCoefficient,
    board_get,
    board_pair_results,
    counted_choices,
    min_group_raters,
    publishable_group_ids,
    rater_counts,
    snapshot_cutoff,
    snapshot_latest,
    snapshots_latest,
    style_coefficients,
    tournament_entrants,
)
from leaderboard.models import FitScore, FitSnapshot
from raters.models import Group, Rater
from stats import rigging
from tournaments.models import Battle, Dimension, LLMModel, Outcome, Tournament
from tournaments.selectors import ModelReliability, model_reliability

HISTORY_SNAPSHOTS = 20
SAME_MODEL = "\u2013"  # an en dash in the diagonal of the matrices
# How many models the leaderboard page's matrices show (the `top` query parameter); every model on the
# separate matrices page.
MATRIX_TOP_CHOICES = (10, 20, 50)
MATRIX_TOP_DEFAULT = 20


def board_choices(*, tournament_slug: str | None, dimension_slug: str | None, group_slug: str | None):
    """Resolve the board named by query parameters, falling back to sensible defaults.

    Returns (tournament, dimension, group) or None when there is no tournament at all; unknown slugs
    raise `NotFound` with a message naming what was not found.
    """
    tournament = tournament_named(slug=tournament_slug)
    if tournament is None:
        return None
    dimension = dimension_named(tournament=tournament, slug=dimension_slug)
    group = None
    if group_slug:
        group = Group.objects.select_related("axis__country").filter(slug=group_slug).first()
        if group is None:
            raise NotFound(f"There is no group called '{group_slug}'.")
    return tournament, dimension, group


def tournament_named(*, slug: str | None) -> Tournament | None:
    """The named tournament (`NotFound` if there is none of that name), else the newest; None when no
    tournament exists at all."""
    tournaments = Tournament.objects.order_by("-created_at", "-pk")
    if not slug:
        return tournaments.first()
    tournament = tournaments.filter(slug=slug).first()
    if tournament is None:
        raise NotFound(f"There is no tournament called '{slug}'.")
    return tournament


def dimension_named(*, tournament: Tournament, slug: str | None) -> Dimension | None:
    """The named dimension, or by default Overall (else the first); None if the tournament has none."""
    dimensions = tournament.dimensions.order_by("position")
    if not slug:
        return dimensions.filter(slug="overall").first() or dimensions.first()
    dimension = dimensions.filter(slug=slug).first()
    if dimension is None:
        raise NotFound(f"This tournament has no dimension called '{slug}'.")
    return dimension


@dataclass(frozen=True)
class GroupOption:
    slug: str
    label: str
    publishable: bool


def group_sections(
    *, tournament: Tournament, dimension: Dimension | None
) -> list[tuple[str, list[GroupOption]]]:
    """Groups for the board selector, as ("Country · Axis", options) in display order, each marked with
    whether its board on this dimension has figures."""
    if dimension is not None:
        snapshot = snapshot_latest(dimension=dimension)
        publishable = rater_counts(
            tournament=tournament, dimension=dimension, up_to_vote_id=snapshot_cutoff(snapshot)
        ).publishable
    else:
        publishable = frozenset()
    sections: dict[str, list[GroupOption]] = {}
    for group in Group.objects.select_related("axis__country"):
        sections.setdefault(f"{group.axis.country.name} · {group.axis.label}", []).append(
            GroupOption(slug=group.slug, label=group.label, publishable=group.pk in publishable)
        )
    return list(sections.items())


def group_title(group: Group) -> str:
    return f"{group.axis.country.code} {group.axis.label.lower()} {group.label}"


# --- The leaderboard page ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Matrix:
    """Head-to-head results between the models of a board, in board order."""

    entries: list[BoardEntry]
    rows: list[list[PairResult | None]]  # rows[i][j]: model i against model j
    win_rate_chart: SafeString
    battles_chart: SafeString
    of: int = 0  # models with battles on the board; the matrix shows the first len(entries) of them

    @property
    def partial(self) -> bool:
        return len(self.entries) < self.of

    @property
    def table_rows(self) -> list[tuple[BoardEntry, list[tuple[BoardEntry, PairResult | None]]]]:
        return [
            (a, list(zip(self.entries, row, strict=True)))
            for a, row in zip(self.entries, self.rows, strict=True)
        ]


@dataclass(frozen=True)
class History:
    labels: list[str]  # one per snapshot, oldest first
    suppressed: list[bool]
    rows: list[tuple[str, list[int | None]]]  # (model name, rank per snapshot)
    chart: SafeString


@dataclass(frozen=True)
class GroupRanks:
    """Rank of each model on each group's board: where groups disagree."""

    groups: list[Group]
    publishable: list[bool]
    rows: list[tuple[BoardEntry, list[int | None], int | None]]  # (pooled entry, rank per group, spread)
    chart: SafeString

    @property
    def columns(self) -> list[tuple[Group, bool]]:
        return list(zip(self.groups, self.publishable, strict=True))

    @property
    def table_rows(self) -> list[tuple[BoardEntry, list[tuple[int | None, bool]], int | None]]:
        return [
            (entry, list(zip(ranks, self.publishable, strict=True)), spread)
            for entry, ranks, spread in self.rows
        ]


@dataclass(frozen=True)
class BoardPage:
    board: Board
    intervals: SafeString | None = None
    matrix: Matrix | None = None
    history: History | None = None
    group_ranks: GroupRanks | None = None
    entrants: list[LLMModel] = field(default_factory=list)


def matrix_top_parse(value: str | None) -> int:
    """How many models the page's matrices show: one of MATRIX_TOP_CHOICES, else the default."""
    try:
        top = int(value or "")
    except ValueError:
        return MATRIX_TOP_DEFAULT
    return top if top in MATRIX_TOP_CHOICES else MATRIX_TOP_DEFAULT


def board_page(
    *,
    dimension: Dimension,
    group: Group | None,
    style_controlled: bool = False,
    matrix_top: int | None = None,
) -> BoardPage:
    """A board with its charts. A suppressed board has no charts, only the list of entrants' names. The
    matrices and the rank history show the board's first `matrix_top` models (every model when None):
    two n-by-n matrices of 130 models weigh megabytes, so the page shows the leaders and a separate page
    the whole field."""
    board = board_get(dimension=dimension, group=group, style_controlled=style_controlled)
    group_ranks = rank_by_group(dimension=dimension)
    if board.suppressed:
        return BoardPage(
            board=board,
            group_ranks=group_ranks,
            entrants=tournament_entrants(tournament=dimension.tournament),
        )
    return BoardPage(
        board=board,
        intervals=interval_chart(board),
        matrix=pair_matrix(board, top=matrix_top),
        history=rank_history(dimension=dimension, group=group, top=matrix_top),
        group_ranks=group_ranks,
    )


def board_title(board: Board) -> str:
    who = group_title(board.group) if board.group else "everyone (post-stratified)"
    view = ", style-controlled" if board.style_controlled else ""
    return f"{board.dimension.name}, {who}{view}"


STYLE_VIEWS = {"": False, "default": False, "controlled": True}


def style_view(value: str | None) -> bool:
    """The `style` query parameter: "controlled" for the style-controlled view, empty or "default" for
    the default one; anything else is not found."""
    if (value or "") not in STYLE_VIEWS:
        raise NotFound(f"There is no style view called '{value}': use 'controlled' or 'default'.")
    return STYLE_VIEWS[value or ""]


def interval_chart(board: Board) -> SafeString | None:
    ranked = [e for e in board.entries if e.score is not None]
    if not ranked:
        return None
    rows = [
        charts.Interval(
            label=f"{e.rank}. {e.name}",
            estimate=e.score,
            low=e.score_low,
            high=e.score_high,
            muted=e.status not in (Status.ACTIVE, Status.IMPORTED),
        )
        for e in board.entries
    ]
    return mark_safe(  # noqa: S308 - charts escape every piece of text they write
        charts.interval_plot(
            rows,
            chart_id="chart-intervals",
            title=f"Scores with 95% intervals: {board_title(board)}",
            description="Each model's expected points against the whole field (a win counts 1, a tie 1/2), "
            "with a bar over its 95% interval; lighter rows are provisional or withdrawn. "
            "The board table gives the same figures.",
        )
    )


def pair_matrix(board: Board, *, top: int | None = None) -> Matrix | None:
    """Head-to-head matrices of the board's models with battles, in board order; the first `top` only
    when given."""
    played = [e for e in board.entries if e.battles]
    entries = played[:top] if top else played
    if len(entries) < 2:
        return None
    results = board_pair_results(
        dimension=board.dimension,
        group=board.group,
        up_to_vote_id=snapshot_cutoff(board.snapshot),
        among={e.model_id for e in entries},
    )
    rows = [[results.get((a.model_id, b.model_id)) if a != b else None for b in entries] for a in entries]
    names = [e.name for e in entries]
    most = max((r.battles for row in rows for r in row if r), default=1)
    win_cells = [
        [
            charts.Cell(
                shade=r.win_rate,
                text=f"{r.win_rate:.0%}",
                tooltip=f"{a.name} vs {b.name}: won {r.wins}, lost {r.losses}, tied {r.ties}",
            )
            if r and r.battles
            else charts.Cell(
                shade=None, text=SAME_MODEL if a == b else "", tooltip=f"{a.name} vs {b.name}: no battles"
            )
            for b, r in zip(entries, row, strict=True)
        ]
        for a, row in zip(entries, rows, strict=True)
    ]
    count_cells = [
        [
            charts.Cell(
                shade=r.battles / most, text=str(r.battles), tooltip=f"{a.name} vs {b.name}: {r.battles}"
            )
            if r and r.battles
            else charts.Cell(shade=None, text=SAME_MODEL if a == b else "0")
            for b, r in zip(entries, row, strict=True)
        ]
        for a, row in zip(entries, rows, strict=True)
    ]
    title = board_title(board)
    return Matrix(
        entries=entries,
        rows=rows,
        win_rate_chart=mark_safe(  # noqa: S308 - charts escape every piece of text they write
            charts.grid(
                names,
                names,
                win_cells,
                chart_id="chart-win-rates",
                title=f"Win rate of each row model against each column model: {title}",
                description="Share of points the row model took against the column model (ties count "
                "half); blue above 50%, orange below. The table below gives the same figures.",
                diverging=True,
            )
        ),
        battles_chart=mark_safe(  # noqa: S308
            charts.grid(
                names,
                names,
                count_cells,
                chart_id="chart-battles",
                title=f"Battles between each pair of models: {title}",
                description="Counted battles for each pair; darker cells had more.",
            )
        ),
        of=len(played),
    )


def rank_history(*, dimension: Dimension, group: Group | None, top: int | None = None) -> History | None:
    """Ranks on one board over the latest snapshots, oldest first; a snapshot at which the group was not
    publishable leaves a gap. With `top`, only the models first in the latest fit's order."""
    snapshots = list(
        FitSnapshot.objects.filter(dimension=dimension).order_by("-created_at", "-pk")[:HISTORY_SNAPSHOTS]
    )[::-1]
    if not snapshots:
        return None
    tournament = dimension.tournament
    shown = []
    for snapshot in snapshots:
        counts = rater_counts(
            tournament=tournament, dimension=dimension, up_to_vote_id=snapshot_cutoff(snapshot)
        )
        shown.append(counts.published(group))
    ranks: dict[int, dict[int, int]] = defaultdict(dict)
    for snapshot_id, model_id, rank in FitScore.objects.filter(
        snapshot__in=[s for s, ok in zip(snapshots, shown, strict=True) if ok],
        group=group,
        style_controlled=False,
    ).values_list("snapshot_id", "model_id", "rank"):
        ranks[model_id][snapshot_id] = rank
    names = dict(LLMModel.objects.filter(pk__in=ranks).values_list("pk", "name"))
    latest = snapshots[-1].pk
    order = sorted(ranks, key=lambda m: (ranks[m].get(latest, 10**6), names[m]))
    rows = [(names[m], [ranks[m].get(s.pk) for s in snapshots]) for m in (order[:top] if top else order)]
    labels = [f"{s.created_at:%d %b %H:%M}" for s in snapshots]
    chart = charts.rank_lines(
        [charts.Series(label=name, values=values) for name, values in rows],
        labels,
        chart_id="chart-history",
        title=f"Rank over the last {len(snapshots)} fits",
        description="Each line follows one model's shared rank from fit to fit, rank 1 at the top; a gap "
        "means the board was not published at that fit. The table below gives the same figures.",
    )
    return History(
        labels=labels,
        suppressed=[not ok for ok in shown],
        rows=rows,
        chart=mark_safe(chart),  # noqa: S308 - charts escape every piece of text they write
    )


def rank_by_group(*, dimension: Dimension) -> GroupRanks | None:
    """Each model's rank on every group's board of the latest fit, in the pooled board's order, with the
    spread of its ranks over the published groups. Groups not publishable show no figures."""
    pooled = board_get(dimension=dimension)
    if pooled.snapshot is None or pooled.suppressed:
        return None
    counts = rater_counts(
        tournament=dimension.tournament, dimension=dimension, up_to_vote_id=snapshot_cutoff(pooled.snapshot)
    )
    countries = {
        country_id
        for country_id, group_id in Group.objects.values_list("axis__country_id", "pk")
        if counts.by_group.get(group_id)
    }
    groups = list(Group.objects.filter(axis__country_id__in=countries).select_related("axis__country"))
    publishable = [g.pk in counts.publishable for g in groups]
    ranks = {
        (group_id, model_id): rank
        for group_id, model_id, rank in FitScore.objects.filter(
            snapshot=pooled.snapshot, group_id__in=counts.publishable, style_controlled=False
        ).values_list("group_id", "model_id", "rank")
    }
    rows = []
    for entry in pooled.entries:
        if entry.rank is None:
            continue
        group_ranks = [
            ranks.get((g.pk, entry.model_id)) if ok else None
            for g, ok in zip(groups, publishable, strict=True)
        ]
        known = [r for r in group_ranks if r is not None]
        rows.append((entry, group_ranks, max(known) - min(known) if known else None))
    if not rows or not groups:
        return None
    worst = max([1, *(r for _, ranks_, _ in rows for r in ranks_ if r is not None)])
    cells = [
        [
            charts.Cell(
                shade=1 - (rank - 1) / max(worst - 1, 1),
                text=str(rank),
                tooltip=f"{entry.name}: rank {rank} among raters in {group_title(g)}",
            )
            if rank is not None
            else charts.Cell(
                shade=None,
                text="" if ok else "n/a",
                tooltip=f"{group_title(g)}: " + ("no rank" if ok else "not enough raters yet"),
            )
            for g, ok, rank in zip(groups, publishable, group_ranks, strict=True)
        ]
        for entry, group_ranks, _ in rows
    ]
    column_labels = [
        group_title(g) + ("" if ok else " (not enough raters)")
        for g, ok in zip(groups, publishable, strict=True)
    ]
    chart = charts.grid(
        [f"{entry.rank}. {entry.name}" for entry, _, _ in rows],
        column_labels,
        cells,
        chart_id="chart-group-ranks",
        title=f"Rank by group: {dimension.name}",
        description="Each model's shared rank on each group's own board (darker is better). Groups marked "
        "n/a have not enough raters yet. The table below gives the same ranks and each model's spread.",
    )
    return GroupRanks(
        groups=groups,
        publishable=publishable,
        rows=rows,
        chart=mark_safe(chart),  # noqa: S308 - charts escape every piece of text they write
    )


def tournament_choices() -> list[Tournament]:
    return list(Tournament.objects.order_by("-created_at", "-pk"))


# --- The model page -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupScore:
    group: Group
    score: FitScore | None  # None when the group is not publishable or has no fit
    publishable: bool


@dataclass(frozen=True)
class DimensionSummary:
    dimension: Dimension
    entry: BoardEntry | None  # the model on the pooled board; None when it is suppressed
    board_battles: int  # all counted battles on the pooled board
    fitted_at: object
    controlled: BoardEntry | None = None  # the model on the style-controlled pooled board

    @property
    def style_shift(self) -> float | None:
        """How far the score moves under style control (controlled minus as voted); None without both."""
        if self.entry is None or self.controlled is None:
            return None
        if self.entry.score is None or self.controlled.score is None:
            return None
        return self.controlled.score - self.entry.score

    @property
    def tie_rate(self) -> float | None:
        return self.entry.ties / self.entry.battles if self.entry and self.entry.battles else None

    @property
    def share(self) -> float | None:
        """Share of the board's battles this model fought in (its sampling rate)."""
        return self.entry.battles / self.board_battles if self.entry and self.board_battles else None


@dataclass(frozen=True)
class HeadToHead:
    opponent: BoardEntry
    result: PairResult


@dataclass(frozen=True)
class ModelPage:
    model: LLMModel
    tournament: Tournament
    tournaments: list[Tournament]
    dimension: Dimension
    summaries: list[DimensionSummary]
    groups: list[GroupScore]
    group_chart: SafeString | None
    head_to_head: list[HeadToHead]
    status: str | None
    reliability: ModelReliability


def model_for_page(
    *, slug: str, tournament_slug: str | None
) -> tuple[LLMModel, Tournament, list[Tournament]]:
    """The model and the tournament to show it in (the named one, else the latest it entered)."""
    model = LLMModel.objects.filter(slug=slug).first()
    if model is None:
        raise NotFound(f"There is no model called '{slug}'.")
    entered = [
        t for t in tournament_choices() if any(m.pk == model.pk for m in tournament_entrants(tournament=t))
    ]
    if not entered:
        raise NotFound(f"The model '{slug}' has not entered any tournament.")
    if tournament_slug:
        chosen = next((t for t in entered if t.slug == tournament_slug), None)
        if chosen is None:
            raise NotFound(f"The model '{slug}' has not entered a tournament called '{tournament_slug}'.")
        return model, chosen, entered
    return model, entered[0], entered


def model_page(
    *, model: LLMModel, tournament: Tournament, tournaments: list[Tournament], dimension: Dimension
) -> ModelPage:
    summaries = []
    for each in tournament.dimensions.order_by("position"):
        board = board_get(dimension=each)
        entry = next((e for e in board.entries if e.model_id == model.pk), None)
        controlled = None
        if board.snapshot is not None and board.snapshot.style and not board.suppressed:
            controlled_board = board_get(dimension=each, snapshot=board.snapshot, style_controlled=True)
            controlled = next((e for e in controlled_board.entries if e.model_id == model.pk), None)
        summaries.append(
            DimensionSummary(
                dimension=each,
                entry=entry,
                board_battles=board.battles,
                fitted_at=board.fitted_at,
                controlled=controlled,
            )
        )
    pooled = next(s for s in summaries if s.dimension == dimension)
    groups, group_chart = _model_groups(model, dimension, pooled)
    return ModelPage(
        model=model,
        tournament=tournament,
        tournaments=tournaments,
        dimension=dimension,
        summaries=summaries,
        groups=groups,
        group_chart=group_chart,
        head_to_head=_head_to_head(model, dimension),
        status=pooled.entry.status if pooled.entry else None,
        reliability=model_reliability(tournament=tournament).get(
            model.pk, ModelReliability(model_id=model.pk, battles=0, void=0, replies=0, cut_off=0)
        ),
    )


def _model_groups(model, dimension, pooled: DimensionSummary) -> tuple[list[GroupScore], SafeString | None]:
    snapshot = snapshot_latest(dimension=dimension)
    if snapshot is None or pooled.entry is None:
        return [], None
    counts = rater_counts(
        tournament=dimension.tournament, dimension=dimension, up_to_vote_id=snapshot_cutoff(snapshot)
    )
    scores = {
        s.group_id: s
        for s in FitScore.objects.filter(
            snapshot=snapshot, model=model, group_id__in=counts.publishable, style_controlled=False
        )
    }
    groups = [
        GroupScore(group=g, score=scores.get(g.pk), publishable=g.pk in counts.publishable)
        for g in Group.objects.select_related("axis__country")
        if counts.by_group.get(g.pk) or g.pk in scores
    ]
    entry = pooled.entry
    rows = [charts.Interval("All raters", entry.score, entry.score_low, entry.score_high)] + [
        charts.Interval(group_title(g.group), g.score.score, g.score.score_low, g.score.score_high)
        for g in groups
        if g.score is not None
    ]
    if entry.score is None:
        return groups, None
    chart = charts.interval_plot(
        rows,
        chart_id="chart-model-groups",
        title=f"{model.name}: score by group on {dimension.name}",
        description="The model's expected points against the field for all raters and for each group with "
        "enough raters, with 95% intervals. The table gives the same figures.",
    )
    return groups, mark_safe(chart)  # noqa: S308 - charts escape every piece of text they write


def _head_to_head(model, dimension) -> list[HeadToHead]:
    board = board_get(dimension=dimension)
    if board.suppressed:
        return []
    results = board_pair_results(dimension=dimension, up_to_vote_id=snapshot_cutoff(board.snapshot))
    return [
        HeadToHead(opponent=e, result=results.get((model.pk, e.model_id), PairResult(0, 0, 0)))
        for e in board.entries
        if e.model_id != model.pk
    ]


# --- The methodology page -------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupRaters:
    group: Group
    raters: int | None  # None: not published
    reason: str  # why not: "fewer than N" or "withheld"


@dataclass(frozen=True)
class DimensionTies:
    dimension: Dimension
    votes: int
    ties: int
    snapshot: FitSnapshot | None

    @property
    def tie_rate(self) -> float | None:
        return self.ties / self.votes if self.votes else None


STYLE_FEATURE_NAMES = {
    "length": "Length",
    "headers": "Headers",
    "list_items": "List items",
    "bold": "Bold text",
    "code_blocks": "Code blocks",
    "cut_off": "Cut off",
}


@dataclass(frozen=True)
class DimensionStyle:
    """What sways votes on one dimension: its style coefficients, for everyone and by group."""

    dimension: Dimension
    coefficients: list[StyleCoefficient]
    chart: SafeString


def dimension_style(*, dimension: Dimension, snapshot: FitSnapshot | None) -> DimensionStyle | None:
    """The latest fit's style coefficients with a chart: every feature for everyone, and each
    publishable group whose offset from everyone has an interval excluding 0."""
    coefficients = style_coefficients(snapshot=snapshot)
    if not coefficients:
        return None
    rows = []
    for c in coefficients:
        name = STYLE_FEATURE_NAMES.get(c.feature, c.feature)
        rows.append(charts.Interval(f"{name}: everyone", c.effect.estimate, c.effect.low, c.effect.high))
        rows += [
            charts.Interval(f"{name}: {group_title(g.group)}", g.effect.estimate, g.effect.low, g.effect.high)
            for g in c.groups
            if g.differs
        ]
    chart = charts.interval_plot(
        rows,
        chart_id=f"chart-style-{dimension.slug}",
        title=f"What sways votes on {dimension.name}: style coefficients with 95% intervals",
        description="Change in the log-odds of winning per typical difference between the two replies in "
        "each feature (above 0: raters favour the reply with more of it), for everyone and for each group "
        "whose preference differs from everyone's. The table beside gives every group's figures.",
        domain=(0.0, 0.0),
    )
    return DimensionStyle(
        dimension=dimension,
        coefficients=coefficients,
        chart=mark_safe(chart),  # noqa: S308 - charts escape every piece of text they write
    )


@dataclass(frozen=True)
class Methodology:
    tournament: Tournament
    threshold: int
    provisional_battles: int
    pooled_raters: int | None
    groups: list[GroupRaters]
    ties: list[DimensionTies]
    excluded_raters: int
    flagged_battles: int
    reliability: list[tuple[LLMModel, ModelReliability]]
    held_out_raters: int = 0
    studies: list = field(default_factory=list)  # the tournament's studies, with their entry friction
    style: list[DimensionStyle] = field(default_factory=list)


# The figures of the last full `manage.py bench rigging` run, quoted on the methodology page; rerun the
# benchmark and update them together when the defences change.
RIGGING_MEASURED = {
    "date": "2026-11-27",
    "models": 60,
    "votes": "200,000",
    "min_cost_ratio": 10.5,
    "summary": "That is the worst case over two simulated logs, three mid-table models and six attacks. "
    "Lifting a model one shown rank took 1 to 828 votes on the plain board, and here at least 10 times as "
    "many in every case; the median over the three models was at least 30 times for every attack. The "
    "cheapest was a few raters voting for the model whenever a 90%-accurate identifier spotted it: 2,051 "
    "votes against 196. A patient crowd spread over 50 networks, one new rater per network per hour, which "
    "no single network or hour shows, stands out by how many networks push the same model, and is held "
    "out: before the check counted them it lifted a model with 3.1 times the plain board's votes. "
    "Carrying a model into the top 3 took at least 10.6 times as many (not reached within 400,000 votes). "
    "Over every campaign the check held out 99% of the attacking raters who cast a counted vote, and at "
    "most 1% of honest raters (in the largest campaign, twice the honest log; under 0.1% in the one-rank "
    "ones). On 72 honest logs where the raters behind shared networks differ from those alone on theirs "
    "(less careful, or with tastes of their own), at most 0.05% of honest raters were held out.",
}


def rigging_facts() -> dict:
    """What the methodology page says about the defences: their settings and the measured cost."""
    return {
        "z_threshold": rigging.DEFAULT_Z_THRESHOLD,
        "staff_failure_limit": settings.AXES_FAILURE_LIMIT,
        "rank_margin_percent": settings.POPULUS_RANK_MARGIN_PERCENT,
        "measured": RIGGING_MEASURED,
    }


def methodology_figures(*, tournament: Tournament) -> Methodology:
    """Live figures for the methodology page, as of each dimension's latest fit (so they match the
    boards); before any fit, as of now."""
    threshold = min_group_raters()
    latest = {s.dimension_id: s for s in snapshots_latest(tournament=tournament)}
    cutoff = max((snapshot_cutoff(s) for s in latest.values()), default=None)
    counts = rater_counts(tournament=tournament, up_to_vote_id=cutoff)
    publishable = publishable_group_ids(tournament=tournament)
    groups = []
    for group in Group.objects.select_related("axis__country"):
        raters = counts.by_group.get(group.pk, 0)
        if group.pk in publishable:
            groups.append(GroupRaters(group=group, raters=raters, reason=""))
        else:
            reason = (
                f"fewer than {threshold}" if raters < threshold else "withheld to protect a smaller group"
            )
            groups.append(GroupRaters(group=group, raters=None, reason=reason))
    ties, styles = [], []
    for dimension in tournament.dimensions.order_by("position"):
        snapshot = latest.get(dimension.pk)
        tally = counted_choices(dimension, snapshot_cutoff(snapshot)).aggregate(
            votes=Count("pk"), ties=Count("pk", filter=Q(outcome=Outcome.TIE))
        )
        ties.append(DimensionTies(dimension=dimension, snapshot=snapshot, **tally))
        style = dimension_style(dimension=dimension, snapshot=snapshot)
        if style is not None:
            styles.append(style)
    return Methodology(
        tournament=tournament,
        threshold=threshold,
        provisional_battles=settings.POPULUS_PROVISIONAL_BATTLES,
        pooled_raters=counts.pooled if counts.published(None) else None,
        groups=groups,
        ties=ties,
        excluded_raters=Rater.objects.filter(
            study__tournament=tournament, status=Rater.Status.EXCLUDED
        ).count(),
        flagged_battles=Battle.objects.filter(tournament=tournament).exclude(flagged_reason="").count(),
        reliability=_reliability_rows(tournament),
        held_out_raters=Rater.objects.filter(study__tournament=tournament, held_out_at__isnull=False).count(),
        studies=list(tournament.studies.order_by("name")),
        style=styles,
    )


def _reliability_rows(tournament: Tournament) -> list[tuple[LLMModel, ModelReliability]]:
    rates = model_reliability(tournament=tournament)
    models = LLMModel.objects.filter(pk__in=rates).order_by("name", "slug")
    return [(model, rates[model.pk]) for model in models]
