import io
import logging
import math
from array import array
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Max, Min, Q, QuerySet
from django.utils import timezone

from config.bulk import pg_can_skip_triggers, pg_copy, pg_triggers_skipped
from leaderboard.battle_styles import battle_covariates, replies_stored
from leaderboard.boards import board_cache_bump, min_group_raters
from leaderboard.models import (
    AppliedVote,
    FitBoardCounts,
    FitPosterior,
    FitScore,
    FitSnapshot,
    Rating,
)
from leaderboard.quiz import quiz_population_publish
from raters.models import Group, Rater
from raters.selectors import published_rater_q
from stats import poststrat, rigging
from stats.arena_scale import ArenaRatings, arena_ratings
from stats.btd import Counts, Fit, fit_btd
from stats.census import PRESETS
from stats.posterior import (
    ScoreDraws,
    centred_covariance,
    covariance_from_centred,
    fit_restored,
    skill_and_score_draws,
)
from stats.summaries import DrawSummary, draws_summary, rank_margin, settled_ranks
from stats.trueskill import TrueSkillParams, rate_outcome
from tournaments.models import Battle, Dimension, LLMModel, Outcome, Tournament, Vote, VoteChoice
from tournaments.selectors import tournament_is_imported

logger = logging.getLogger(__name__)


def vote_is_counted(*, flagged_reason: str, rater_status: str) -> bool:
    """Whether a vote moves ratings: not when a model gave its identity away (flagged battle), nor when
    quality control excluded the rater. `VoteChoice.objects.counted()` is the same rule as a query."""
    return not flagged_reason and rater_status != Rater.Status.EXCLUDED


def ratings_apply_vote(*, vote_id: int) -> bool:
    """Apply one vote to the live ratings of every dimension, pooled and for each of the rater's groups.

    Exactly once: the applied marker is written in the same transaction as the ratings and is unique per
    vote, so a repeat (a redelivered task, a reconciler pass) changes nothing. Returns whether this call
    handled the vote.
    """
    with transaction.atomic():
        vote = (
            Vote.objects.select_for_update(of=("self",))
            .select_related("battle__rater", "battle__tournament")
            .get(pk=vote_id)
        )
        if AppliedVote.objects.filter(vote=vote).exists():
            return False
        battle = vote.battle
        if not vote_is_counted(flagged_reason=battle.flagged_reason, rater_status=battle.rater.status):
            # A model gave its identity away, or quality control excluded the rater: the vote stays for
            # audit but moves no rating. Replays ask again, so lifting an exclusion brings it back.
            AppliedVote.objects.create(vote=vote, counted=False)
            return True
        group_ids = list(battle.rater.groups.values_list("pk", flat=True))
        choices = list(vote.choices.select_related("dimension"))
        tournament = battle.tournament
        ratings = _locked_ratings(
            tournament=tournament,
            dimension_ids=[c.dimension_id for c in choices],
            group_ids=group_ids,
            model_ids=[battle.model_a_id, battle.model_b_id],
        )
        now = timezone.now()
        for choice in choices:
            for group_id in [None, *group_ids]:
                rating_a = ratings[(choice.dimension_id, group_id, battle.model_a_id)]
                rating_b = ratings[(choice.dimension_id, group_id, battle.model_b_id)]
                _update_pair(
                    rating_a,
                    rating_b,
                    outcome=choice.outcome,
                    params=tournament.trueskill_params(draw_probability=choice.dimension.draw_probability),
                )
                rating_a.updated_at = rating_b.updated_at = now
        Rating.objects.bulk_update(ratings.values(), ["mu", "sigma", "wins", "losses", "ties", "updated_at"])
        AppliedVote.objects.create(vote=vote)
    return True


def _locked_ratings(
    *, tournament, dimension_ids: list[int], group_ids: list[int], model_ids: list[int]
) -> dict:
    """Every rating row the vote touches, created if missing and locked in primary-key order so that
    concurrent writers cannot deadlock."""
    Rating.objects.bulk_create(
        [
            Rating(
                dimension_id=d,
                group_id=g,
                model_id=m,
                mu=tournament.trueskill_mu,
                sigma=tournament.trueskill_sigma,
            )
            for d in dimension_ids
            for g in [None, *group_ids]
            for m in model_ids
        ],
        ignore_conflicts=True,
    )
    rows = (
        Rating.objects.select_for_update()
        .filter(dimension_id__in=dimension_ids, model_id__in=model_ids)
        .filter(Q(group__isnull=True) | Q(group_id__in=group_ids))
        .order_by("pk")
    )
    return {(r.dimension_id, r.group_id, r.model_id): r for r in rows}


def _update_pair(rating_a: Rating, rating_b: Rating, *, outcome: str, params: TrueSkillParams) -> None:
    (rating_a.mu, rating_a.sigma), (rating_b.mu, rating_b.sigma) = rate_outcome(
        (rating_a.mu, rating_a.sigma), (rating_b.mu, rating_b.sigma), outcome=outcome, params=params
    )
    if outcome == Outcome.TIE:
        rating_a.ties += 1
        rating_b.ties += 1
    else:
        winner, loser = (rating_a, rating_b) if outcome == Outcome.A else (rating_b, rating_a)
        winner.wins += 1
        loser.losses += 1


def ratings_apply_pending(*, up_to_vote_id: int | None = None, tournament_id: int | None = None) -> int:
    """Apply every vote not yet applied, oldest first, so ratings follow vote order. Returns how many."""
    pending = Vote.objects.filter(applied__isnull=True).order_by("pk")
    if up_to_vote_id is not None:
        pending = pending.filter(pk__lte=up_to_vote_id)
    if tournament_id is not None:
        pending = pending.filter(battle__tournament_id=tournament_id)
    return sum(ratings_apply_vote(vote_id=vote_id) for vote_id in pending.values_list("pk", flat=True))


REPLAY_CHUNK = 20_000


def ratings_replay(*, tournament_id: int, new_votes_from: int | None = None) -> int:
    """Rebuild every live rating of a tournament from its vote log, in vote order, honouring every
    exclusion (flagged battles, excluded raters; erased raters' votes are gone). Returns the votes
    replayed.

    The whole log is replayed in memory with the closed-form kernel and written back in bulk, in one
    transaction: readers see the old ratings until the new ones commit. It runs on the ratings queue,
    the single writer, so no vote is applied while it runs.

    Memory does not grow with the log but for two compact arrays (a vote id and a flag per vote, 9
    bytes): the votes stream from the database in vote order, a chunk at a time, each choice on a row
    of its own. Held as Python tuples, an Arena-scale log of 1.7 million votes took 1.36 GB.

    `new_votes_from`: the first id of the votes the caller wrote in its still open transaction (an
    import, whose votes take ids from that one on). No other transaction can see or delete those votes,
    so their applied markers are written without a foreign-key check each where the role allows it
    (`config.bulk`); the markers of older votes are checked as usual.
    """
    tournament = Tournament.objects.get(pk=tournament_id)
    groups_of = _groups_by_rater(Battle.objects.filter(tournament=tournament).values("rater_id"))
    rows = (
        Vote.objects.filter(battle__tournament=tournament)
        .order_by("pk")
        .values_list(
            "pk",
            "battle__model_a_id",
            "battle__model_b_id",
            "battle__rater_id",
            "battle__flagged_reason",
            "battle__rater__status",
            # A vote's choices, one row each (a vote without any: one row of None).
            "choices__dimension_id",
            "choices__outcome",
            "choices__dimension__draw_probability",
        )
        .iterator(chunk_size=REPLAY_CHUNK)
    )
    params_by_probability: dict[float, TrueSkillParams] = {}
    state: dict[tuple, Rating] = {}
    vote_ids, counted_flags = array("q"), bytearray()
    last_vote_id, counted = None, False
    for (
        vote_id,
        model_a,
        model_b,
        rater_id,
        flagged_reason,
        rater_status,
        dimension_id,
        outcome,
        p_draw,
    ) in rows:
        if vote_id != last_vote_id:
            last_vote_id = vote_id
            counted = vote_is_counted(flagged_reason=flagged_reason, rater_status=rater_status)
            vote_ids.append(vote_id)
            counted_flags.append(counted)
        if not counted or dimension_id is None:
            continue
        params = params_by_probability.get(p_draw)
        if params is None:
            params = params_by_probability[p_draw] = tournament.trueskill_params(draw_probability=p_draw)
        for group_id in [None, *groups_of.get(rater_id, ())]:
            rating_a, rating_b = (
                _replay_rating(state, tournament, dimension_id, group_id, model)
                for model in (model_a, model_b)
            )
            _update_pair(rating_a, rating_b, outcome=outcome, params=params)
    with transaction.atomic():
        Rating.objects.filter(dimension__tournament=tournament).delete()
        AppliedVote.objects.filter(vote__battle__tournament=tournament).delete()
        Rating.objects.bulk_create(state.values(), batch_size=2000)
        new_from = len(vote_ids) if new_votes_from is None else bisect_left(vote_ids, new_votes_from)
        _applied_votes_write(vote_ids[:new_from], counted_flags[:new_from])
        with pg_triggers_skipped(
            new_from < len(vote_ids) and connection.vendor == "postgresql" and pg_can_skip_triggers()
        ):
            _applied_votes_write(vote_ids[new_from:], counted_flags[new_from:])
    return len(vote_ids)


def _applied_votes_write(vote_ids: Sequence[int], counted: Sequence[int]) -> None:
    """One applied-vote row per replayed vote: a COPY on PostgreSQL (an import replays millions)."""
    if not vote_ids:
        return
    if connection.vendor != "postgresql":
        AppliedVote.objects.bulk_create(
            (
                AppliedVote(vote_id=vote_id, counted=bool(flag))
                for vote_id, flag in zip(vote_ids, counted, strict=True)
            ),
            batch_size=2000,
        )
        return
    now = timezone.now().isoformat()
    pg_copy(
        model=AppliedVote,
        columns=["vote_id", "counted", "applied_at"],
        lines=(
            f"{vote_id}\t{'t' if flag else 'f'}\t{now}\n"
            for vote_id, flag in zip(vote_ids, counted, strict=True)
        ),
    )


def _replay_rating(state: dict, tournament: Tournament, dimension_id: int, group_id, model_id: int) -> Rating:
    key = (dimension_id, group_id, model_id)
    if key not in state:
        state[key] = Rating(
            dimension_id=dimension_id,
            group_id=group_id,
            model_id=model_id,
            mu=tournament.trueskill_mu,
            sigma=tournament.trueskill_sigma,
        )
    return state[key]


# --- Published ratings: the batch fit -----------------------------------------------------------------

FIT_DRAWS = 2000
FIT_GROUP_PRIOR_SD = 0.5


def tournaments_with_votes() -> list[int]:
    return list(Vote.objects.values_list("battle__tournament_id", flat=True).distinct())


def fits_publish(
    *,
    tournament_id: int,
    dimension_slugs: Sequence[str] | None = None,
    on_dimension: Callable[[Dimension], None] | None = None,
) -> list[FitSnapshot]:
    """Fit every dimension of a tournament (or those named) on the counted votes and store a snapshot per
    dimension: the pooled board (post-stratified to the census) and one board per group with data.
    `on_dimension` is told each dimension as its fit starts. The rigging check runs first, so raters it
    holds out are left out of every board (not on an imported battle log, published as its source
    recorded it)."""
    tournament = Tournament.objects.get(pk=tournament_id)
    if not tournament_is_imported(tournament=tournament):
        # An imported log's raters are someone else's judge ids, all created in one import (so in one
        # "arrival hour" to the check), with no network: the check would judge the import, not people.
        raters_rigging_hold_out(tournament_id=tournament_id)
    dimensions = tournament.dimensions.order_by("position")
    if dimension_slugs is not None:
        dimensions = dimensions.filter(slug__in=dimension_slugs)
    snapshots = []
    for dimension in dimensions:
        # A dimension nobody has voted on has nothing to publish.
        if _published_choices(dimension).exists():
            if on_dimension:
                on_dimension(dimension)
            snapshots.append(_fit_dimension(tournament, dimension))
    for snapshot in snapshots:
        # Personal boards start from the new fit; the quiz's model of each dimension is fitted here, not
        # on a page request.
        quiz_population_publish(tournament=tournament, dimension=snapshot.dimension.slug)
    board_cache_bump(tournament_id=tournament_id)
    return snapshots


def _published_choices(dimension: Dimension):
    """Counted choices of raters the rigging check has not held out (and, where the study counts only
    reconciled raters, whom the panel approved), outside practice battles: what published boards are
    fitted on."""
    return VoteChoice.objects.counted().filter(
        published_rater_q("vote__battle__rater__"), dimension=dimension, vote__battle__practice=False
    )


def _fit_dimension(tournament: Tournament, dimension: Dimension) -> FitSnapshot:
    choices = _published_choices(dimension)
    columns = ("vote__battle__rater_id", "vote__battle__model_a_id", "vote__battle__model_b_id", "outcome")
    styled = replies_stored(tournament=tournament)
    if styled:
        # The style fit needs every vote with its battle; the counts below are summed from those same
        # rows, so the votes are read once.
        votes = list(choices.values_list(*columns, "vote_id", "vote__battle_id"))
        rows = _summed_per_rater_and_pair(votes)
    else:
        # Counted in the database per (rater, ordered pair, outcome): a few thousand rows where the log
        # has millions, which is what keeps a fit of a whole Arena log to seconds and a few hundred MB.
        rows = list(
            choices.values_list(*columns)
            .annotate(n=Count("pk"), first=Min("vote_id"), last=Max("vote_id"))
            .order_by()
        )
    model_ids = sorted(
        set(tournament.llm_models.values_list("pk", flat=True)) | {r[1] for r in rows} | {r[2] for r in rows}
    )
    model_index = {model_id: index for index, model_id in enumerate(model_ids)}
    groups_of = _groups_by_rater({r[0] for r in rows})
    group_ids = sorted({g for groups in groups_of.values() for g in groups})
    group_index = {group_id: index for index, group_id in enumerate(group_ids)}

    def cell_of(rater_id: int) -> tuple[int, ...]:
        return tuple(sorted(group_index[g] for g in groups_of.get(rater_id, ())))

    cell_index: dict[tuple[int, ...], int] = {}
    count_rows = []
    for rater_id, model_a, model_b, outcome, n, _first, _last in rows:
        cell_at = cell_index.setdefault(cell_of(rater_id), len(cell_index))
        count_rows.append(
            (cell_at, model_index[model_a], model_index[model_b], n * (outcome == "a"), n * (outcome == "b"),
             n * (outcome not in ("a", "b")))
        )  # fmt: skip
    counts = Counts(cells=list(cell_index), rows=count_rows).aggregated(len(model_ids))
    fit = fit_btd(
        counts,
        n_models=len(model_ids),
        n_groups=len(group_ids),
        group_prior_sd=FIT_GROUP_PRIOR_SD,
        with_groups=bool(group_ids),
    )
    style_fit, style = (
        _style_fit(votes, cell_of=cell_of, model_index=model_index, group_ids=group_ids, start=fit)
        if styled
        else (None, {})
    )
    population, method = _pooled_population(groups_of, group_index)
    previous = _published_ranks(dimension, model_ids)
    margin_share = settings.POPULUS_RANK_MARGIN_PERCENT / 100
    # One transaction: readers see a snapshot with all its boards and its posterior, or not at all.
    with transaction.atomic():
        snapshot = FitSnapshot.objects.create(
            tournament=tournament,
            dimension=dimension,
            first_vote_id=min((r[5] for r in rows), default=None),
            last_vote_id=max((r[6] for r in rows), default=None),
            votes=sum(r[4] for r in rows),
            settings={
                "group_prior_sd": FIT_GROUP_PRIOR_SD,
                "draws": FIT_DRAWS,
                "pooled": method,
                "rank_margin": margin_share,
            },
            tie_parameter=math.exp(fit.log_nu),
            style=style,
        )
        populations = [(None, population)] + [
            (group_id, [((group_index[group_id],), 1.0)]) for group_id in group_ids
        ]
        # Every board is summarised from its draws as skills_for would, with the snapshot's seed; the
        # style-controlled boards use the same populations and seed, so the two views differ only by the
        # style control.
        pooled = {}  # per view, kept with the posterior: personal boards compare against them
        for board_fit, style_controlled in ((fit, False), (style_fit, True)):
            if board_fit is None:
                continue
            for group_id, cells in populations:
                skills, draws = skill_and_score_draws(board_fit, cells, n_draws=FIT_DRAWS, seed=snapshot.pk)
                if group_id is None:
                    pooled[style_controlled] = draws
                summary = draws_summary(draws.point, draws.draws)
                low, high = summary.low, summary.high
                rank = settled_ranks(
                    low,
                    high,
                    previous.get((group_id, style_controlled), np.zeros(len(model_ids))),
                    margin=rank_margin(low, high, margin_share),
                )
                FitScore.objects.bulk_create(
                    _fit_scores(
                        snapshot,
                        group_id,
                        model_ids,
                        replace(summary, rank=rank),
                        arena_ratings(skills.point, skills.draws),
                        style_controlled=style_controlled,
                    )
                )
        FitBoardCounts.objects.bulk_create(
            FitBoardCounts(snapshot=snapshot, group_id=group_id, raters=raters, pairs=pairs)
            for group_id, (raters, pairs) in _board_counts(rows, groups_of).items()
        )
        FitPosterior.objects.create(
            snapshot=snapshot,
            data=posterior_encode(
                fit=fit,
                model_ids=model_ids,
                group_ids=group_ids,
                pooled=pooled[False],
                style_fit=style_fit,
                style_pooled=pooled.get(True),
            ),
            format=POSTERIOR_FORMAT,
        )
        _posteriors_prune(dimension)
    return snapshot


def _published_ranks(dimension: Dimension, model_ids: list[int]) -> dict[tuple, np.ndarray]:
    """The ranks the dimension's latest snapshot published, per board (group, style-controlled), in the
    order of ``model_ids``: what the new snapshot's ranks settle from. 0 where a model was not shown."""
    latest = FitSnapshot.objects.filter(dimension=dimension).order_by("-created_at", "-pk").first()
    if latest is None:
        return {}
    position = {model_id: index for index, model_id in enumerate(model_ids)}
    ranks: dict[tuple, np.ndarray] = defaultdict(lambda: np.zeros(len(model_ids), dtype=int))
    for group_id, style_controlled, model_id, rank in latest.scores.values_list(
        "group_id", "style_controlled", "model_id", "rank"
    ):
        if model_id in position:
            ranks[(group_id, style_controlled)][position[model_id]] = rank
    return dict(ranks)


def _summed_per_rater_and_pair(votes) -> list[tuple]:
    """The counting query's rows (rater, model A, model B, outcome, votes, first vote, last vote) summed
    from single votes (rater, model A, model B, outcome, vote, battle)."""
    summed: dict[tuple, list[int]] = {}
    for rater_id, model_a, model_b, outcome, vote_id, _battle_id in votes:
        entry = summed.setdefault((rater_id, model_a, model_b, outcome), [0, vote_id, vote_id])
        entry[0] += 1
        entry[1] = min(entry[1], vote_id)
        entry[2] = max(entry[2], vote_id)
    return [(*key, n, first, last) for key, (n, first, last) in summed.items()]


def _board_counts(rows, groups_of: dict[int, list[int]]) -> dict[int | None, tuple[int, list[list[int]]]]:
    """Each board's distinct raters and pair results (see FitBoardCounts), from the fit's rows counted per
    (rater, ordered pair, outcome): the pooled board (None) and every group with raters."""
    raters: dict[int | None, set[int]] = defaultdict(set)
    pairs: dict[int | None, dict[tuple[int, int], list[int]]] = defaultdict(
        lambda: defaultdict(lambda: [0, 0, 0])
    )
    column = {"a": 0, "b": 1}
    for rater_id, model_a, model_b, outcome, n, _first, _last in rows:
        for board in (None, *groups_of.get(rater_id, ())):
            raters[board].add(rater_id)
            pairs[board][(model_a, model_b)][column.get(outcome, 2)] += n
    return {
        board: (len(raters[board]), [[a, b, *tally] for (a, b), tally in sorted(pairs[board].items())])
        for board in raters
    }


def _fit_scores(
    snapshot: FitSnapshot,
    group_id: int | None,
    model_ids,
    board: DrawSummary,
    ratings: ArenaRatings,
    *,
    style_controlled: bool = False,
):
    return [
        FitScore(
            rating=ratings.point[m],
            rating_low=ratings.low[m],
            rating_high=ratings.high[m],
            snapshot=snapshot,
            style_controlled=style_controlled,
            group_id=group_id,
            model_id=model_id,
            score=board.point[m],
            score_low=board.low[m],
            score_high=board.high[m],
            rank=board.rank[m],
            rank_low=board.rank_low[m],
            rank_high=board.rank_high[m],
            p_best=board.p_best[m],
        )
        for m, model_id in enumerate(model_ids)
    ]


# --- Style control ------------------------------------------------------------------------------------

Z_95 = 1.959963984540054


def _style_fit(votes, *, cell_of, model_index, group_ids: Sequence[int], start: Fit):
    """The fit with style covariates on the same votes (rater, model A, model B, outcome, vote, battle),
    one row per battle, and its coefficients for the snapshot; (None, {}) when no style feature varies
    (every battle alike, or too few battles). It starts from `start`, the default fit of the same votes,
    which is nearer its mode than zero (the mode is the same either way)."""
    features, names, scales = battle_covariates(battle_ids=[row[5] for row in votes])
    if not names:
        return None, {}
    n_models = len(model_index)
    side = {"a": "i", "b": "j"}
    counts = Counts.from_votes(
        [(cell_of(r), model_index[a], model_index[b], side.get(o, "tie")) for r, a, b, o, *_ in votes],
        n_models,
        aggregate=False,
    )
    fit = fit_btd(
        Counts(cells=counts.cells, rows=counts.rows, features=features),
        n_models=n_models,
        n_groups=len(group_ids),
        group_prior_sd=FIT_GROUP_PRIOR_SD,
        with_groups=bool(group_ids),
        start=start,
    )
    return fit, _style_summary(fit, names, scales, group_ids)


def _interval(estimate: float, variance: float) -> dict[str, float]:
    half = Z_95 * math.sqrt(max(variance, 0.0))
    return {"estimate": float(estimate), "low": float(estimate - half), "high": float(estimate + half)}


def _style_summary(fit: Fit, names, scales, group_ids: Sequence[int]) -> dict:
    """Per feature: the global coefficient (log-odds of winning per typical difference, i.e. per unit of
    the scaled normalised difference) and, per group, that group's coefficient (global + offset) and its
    offset, each with a 95% interval from the Laplace posterior."""
    k = fit.n_features
    covariance = fit.style_covariance()
    coefficients = []
    for f, name in enumerate(names):
        groups = []
        for g, group_id in enumerate(group_ids if fit.with_groups else []):
            o = k * (1 + g) + f
            offset = fit.style_offsets[f, g]
            groups.append(
                {
                    "group_id": group_id,
                    **_interval(
                        fit.style[f] + offset, covariance[f, f] + covariance[o, o] + 2 * covariance[f, o]
                    ),
                    "offset": _interval(offset, covariance[o, o]),
                }
            )
        coefficients.append({"feature": name, **_interval(fit.style[f], covariance[f, f]), "groups": groups})
    return {"features": list(names), "scales": [float(x) for x in scales], "coefficients": coefficients}


def _groups_by_rater(rater_ids: Iterable[int] | QuerySet) -> dict[int, list[int]]:
    """Each rater's groups (for raters given as ids or as a query of their ids)."""
    groups: dict[int, list[int]] = {}
    for rater_id, group_id in Rater.groups.through.objects.filter(rater_id__in=rater_ids).values_list(
        "rater_id", "group_id"
    ):
        groups.setdefault(rater_id, []).append(group_id)
    return groups


def _pooled_population(groups_of: dict[int, list[int]], group_index: dict[int, int]):
    """Cells and weights for the pooled board: within each country, raters' full cells (one group on
    every axis) raked to the census margins; countries weighted by their share of those raters.

    Falls back to the sample's own cell mix, and says so, where the census cannot be matched (a census
    category nobody in the sample belongs to, or no census preset for the country)."""
    groups = {g.pk: g for g in Group.objects.filter(pk__in=group_index).select_related("axis__country")}
    full_cells: dict[str, Counter] = defaultdict(Counter)
    for group_ids in groups_of.values():
        country = groups[group_ids[0]].axis.country if group_ids else None
        if country is None or len(group_ids) != country.axes.count():
            continue
        ordered = sorted((groups[g] for g in group_ids), key=lambda g: g.axis.position)
        full_cells[country.code][tuple(g.pk for g in ordered)] += 1
    total = sum(sum(cells.values()) for cells in full_cells.values())
    if total == 0:
        return [((), 1.0)], "global skill only (no rater with a full cell yet)"
    population, notes, small_notes = [], [], set()
    threshold = min_group_raters()
    for code, cells in sorted(full_cells.items()):
        weights, note = _country_weights(code, cells, groups)
        # The note is public (API, snapshots, boards.json, methods page): it names a country only where
        # at least as many raters as a board needs are in it, and never a category.
        if sum(cells.values()) >= threshold:
            notes.append(f"{code}: {note}")
        else:
            small_notes.add(note)
        share = sum(cells.values()) / total
        population += [
            (tuple(sorted(group_index[g] for g in cell)), share * weight) for cell, weight in weights.items()
        ]
    if small_notes:
        notes.append(f"countries with fewer than {threshold} raters: {', '.join(sorted(small_notes))}")
    return population, "; ".join(notes)


def _country_weights(code: str, cells: Counter, groups: dict) -> tuple[dict[tuple, float], str]:
    sample_total = sum(cells.values())
    sample = {cell: count / sample_total for cell, count in cells.items()}
    preset = PRESETS.get(code)
    if preset is None:
        return sample, "sample weights (no census preset)"
    axes = [groups[g].axis.slug for g in next(iter(cells))]
    by_labels = {tuple(groups[g].label for g in cell): cell for cell in cells}
    try:
        margins = {position: preset[axis].shares for position, axis in enumerate(axes)}
        raked = poststrat.rake({labels: sample[cell] for labels, cell in by_labels.items()}, margins)
    except (KeyError, ValueError) as error:
        # The reason names categories and cells, some perhaps with a rater or two: for operators only.
        logger.warning(
            "Census margins of %s not matchable, pooled board uses sample weights: %s", code, error
        )
        return sample, "sample weights (census not matchable for some categories)"
    return {
        by_labels[labels]: weight for labels, weight in raked.items() if weight > 0
    }, "raked to census margins"


# --- Stored posteriors: what a personal board needs from a fit -------------------------------------------

# Posteriors kept per dimension: the latest, and a couple more for readers still on an earlier snapshot.
# At 50 models and 22 groups one is about 2.6 MB, so keeping every hourly fit's would add up.
POSTERIORS_KEPT = 3
POSTERIOR_FORMAT = 1


@dataclass(frozen=True)
class Posterior:
    """One snapshot's fit as stored: the mode, the covariance of the centred parameters, and the pooled
    board's score draws. Ids are database ids, in the fit's own order."""

    model_ids: tuple[int, ...]
    group_ids: tuple[int, ...]
    theta: np.ndarray  # (models,)
    offsets: np.ndarray  # (models, groups)
    log_nu: float
    with_groups: bool
    tie_model: bool
    centred_covariance: np.ndarray  # float32, symmetric; see centred_covariance
    pooled: ScoreDraws

    def cell_fit(self, group_ids: Sequence[int]) -> Fit:
        """The posterior of theta, the offsets of these groups (database ids; in the returned fit they are
        groups 0, 1, ... in the order given) and log nu, every other group integrated out. Any board of
        cells made of these groups is the same as under the whole fit."""
        position = {group_id: index for index, group_id in enumerate(self.group_ids)}
        missing = [g for g in group_ids if g not in position]
        if missing or len(set(group_ids)) != len(group_ids):
            raise ValueError(f"groups {list(group_ids)} are not distinct groups of this fit")
        n = len(self.model_ids)
        index = list(range(n))
        for group_id in group_ids:
            start = n * (1 + position[group_id])
            index.extend(range(start, start + n))
        if self.tie_model:
            index.append(len(self.centred_covariance) - 1)
        covariance = covariance_from_centred(
            self.centred_covariance[np.ix_(index, index)], n_models=n, blocks=1 + len(group_ids)
        )
        return fit_restored(
            theta=self.theta,
            offsets=self.offsets[:, [position[g] for g in group_ids]],
            log_nu=self.log_nu,
            covariance=covariance,
            tie_model=self.tie_model,
            with_groups=self.with_groups,
        )


def posterior_encode(
    *,
    fit: Fit,
    model_ids: Sequence[int],
    group_ids: Sequence[int],
    pooled,
    style_fit: Fit | None = None,
    style_pooled=None,
) -> bytes:
    """The FitPosterior archive. The covariance goes in as its centred form, upper triangle, float32:
    centred entries are on the scale of the real uncertainties, so float32 keeps them to about 1e-7
    relative; the mode and the pooled board's point scores stay float64.

    With `style_fit` (and its pooled board's draws), the style-controlled fit goes in beside the default
    one under keys prefixed STYLE_PREFIX, as the posterior of its skills alone: the style coefficients
    are integrated out (their rows and columns dropped from the covariance), since a board holds style
    equal. Both parts then have the same layout and are read the same way."""
    arrays = {
        "model_ids": np.asarray(model_ids, dtype=np.int64),
        "group_ids": np.asarray(group_ids, dtype=np.int64),
        "flags": np.array([fit.with_groups, fit.tie_model]),
        **_posterior_arrays(fit, pooled),
    }
    if style_fit is not None:
        arrays.update(
            {STYLE_PREFIX + key: value for key, value in _posterior_arrays(style_fit, style_pooled).items()}
        )
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


# Keys of the style-controlled fit in a FitPosterior archive.
STYLE_PREFIX = "style_"


def _posterior_arrays(fit: Fit, pooled) -> dict[str, np.ndarray]:
    centred = centred_covariance(fit)
    skills = fit.n_models * (1 + fit.n_groups * fit.with_groups)
    kept = np.r_[np.arange(skills), [len(centred) - 1] if fit.tie_model else []].astype(np.intp)
    centred = centred[np.ix_(kept, kept)]
    return {
        "theta": fit.theta,
        "offsets": fit.offsets,
        "log_nu": np.float64(fit.log_nu),
        "covariance": centred[np.triu_indices(len(centred))].astype(np.float32),
        "pooled_point": pooled.point,
        "pooled_draws": pooled.draws.astype(np.float32),
    }


def posterior_decode(data: bytes, *, style_controlled: bool = False) -> Posterior | None:
    """The default fit's posterior, or with `style_controlled` the style-controlled one's (None when the
    snapshot has none: no style feature varied, or it was fitted before they were stored)."""
    prefix = STYLE_PREFIX if style_controlled else ""
    with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as archive:
        if prefix + "theta" not in archive.files:
            return None
        upper = archive[prefix + "covariance"]
        size = (math.isqrt(8 * len(upper) + 1) - 1) // 2  # len(upper) = size (size + 1) / 2
        rows, columns = np.triu_indices(size)
        covariance = np.empty((size, size), dtype=np.float32)
        covariance[rows, columns] = upper
        covariance[columns, rows] = upper
        with_groups, tie_model = (bool(flag) for flag in archive["flags"])
        return Posterior(
            model_ids=tuple(int(m) for m in archive["model_ids"]),
            group_ids=tuple(int(g) for g in archive["group_ids"]),
            theta=archive[prefix + "theta"],
            offsets=archive[prefix + "offsets"],
            log_nu=float(archive[prefix + "log_nu"]),
            with_groups=with_groups,
            tie_model=tie_model,
            centred_covariance=covariance,
            pooled=ScoreDraws(point=archive[prefix + "pooled_point"], draws=archive[prefix + "pooled_draws"]),
        )


def _posteriors_prune(dimension: Dimension) -> None:
    kept = list(
        FitSnapshot.objects.filter(dimension=dimension)
        .order_by("-created_at", "-pk")
        .values_list("pk", flat=True)[:POSTERIORS_KEPT]
    )
    FitPosterior.objects.filter(snapshot__dimension=dimension).exclude(snapshot_id__in=kept).delete()


# --- Rigging check ------------------------------------------------------------------------------------

RIGGING_DIMENSION = "overall"
RIGGING_UNITS = {
    "rater": "judged alone",
    "network": "judged with the other raters from the same network, against that network's own spread",
    "burst": "judged with the other raters who arrived in the same hour with others from their network",
    "networks": (
        "judged with every rater behind a shared network, their network among those that pushed hardest"
    ),
    "pushing": (
        "judged with every rater behind a shared network, their network one of unusually many that each "
        "pushed it the same way; the z is of how many did"
    ),
}


def _btd_counts(log: rigging.VoteLog, n_models: int) -> Counts:
    rows = np.column_stack(
        [np.zeros(len(log)), log.i, log.j, log.score == 1.0, log.score == 0.0, log.score == 0.5]
    )
    return Counts(cells=[()], rows=rows).aggregated(n_models)


def rigging_reason(finding: rigging.Finding, model_name: str) -> str:
    """What staff read on the quality page about why a rater is held out."""
    direction = "up" if finding.z > 0 else "down"
    if finding.over_above:
        moved = f"{model_name} {direction} against the models ranked above it"
    elif finding.over_neighbours:
        moved = f"{model_name} {direction} against the two models ranked just above it"
    else:
        moved = f"{model_name} {direction}"
    return (
        f"Overall verdicts moved {moved} far more than chance "
        f"(z = {finding.z:.1f}, {RIGGING_UNITS[finding.unit]})."
    )


def raters_rigging_hold_out(*, tournament_id: int) -> int:
    """Hold out of published boards every rater whose overall verdicts move one model's standing far more
    than chance (`stats.rigging`), alone or with the raters sharing their network or arrival hour, or
    with every rater behind a shared network, with the reason staff see. Raters staff restored
    are never held out again. Returns how many were newly held out."""
    rows = list(
        VoteChoice.objects.counted()
        .filter(dimension__slug=RIGGING_DIMENSION, vote__battle__tournament_id=tournament_id)
        .values_list(
            "vote__battle__rater_id", "vote__battle__model_a_id", "vote__battle__model_b_id", "outcome"
        )
    )
    if not rows:
        return 0
    rater_ids = sorted({r[0] for r in rows})
    model_ids = sorted({r[1] for r in rows} | {r[2] for r in rows})
    rater_index = {pk: n for n, pk in enumerate(rater_ids)}
    model_index = {pk: n for n, pk in enumerate(model_ids)}
    log = rigging.VoteLog(
        [rater_index[r[0]] for r in rows],
        [model_index[r[1]] for r in rows],
        [model_index[r[2]] for r in rows],
        [{"a": 1.0, "b": 0.0}.get(r[3], 0.5) for r in rows],
    )
    raters = Rater.objects.in_bulk(rater_ids)
    fingerprints = {}
    network = np.array(
        [
            fingerprints.setdefault(raters[pk].network_fingerprint or f"rater:{pk}", len(fingerprints))
            for pk in rater_ids
        ]
    )
    arrival = np.array([raters[pk].created_at.timestamp() for pk in rater_ids])

    def fit(kept: rigging.VoteLog) -> tuple[np.ndarray, float]:
        result = fit_btd(
            _btd_counts(kept, len(model_ids)), n_models=len(model_ids), n_groups=0, with_groups=False
        )
        return result.theta, result.log_nu

    detection = rigging.raters_hold_out(
        log, fit=fit, n_raters=len(rater_ids), network=network, arrival=arrival
    )
    names = dict(LLMModel.objects.filter(pk__in=model_ids).values_list("pk", "name"))
    held = 0
    now = timezone.now()
    for index, finding in detection.findings.items():
        rater = raters[rater_ids[index]]
        if rater.held_out_at or rater.restored_by:
            continue
        reason = rigging_reason(finding, names.get(model_ids[finding.model], "a model"))
        held += Rater.objects.filter(pk=rater.pk, held_out_at__isnull=True, restored_by="").update(
            held_out_at=now, held_out_reason=reason[:300]
        )
    return held
