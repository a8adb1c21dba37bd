"""The published-ratings fit (stats.btd, stats.posterior) on simulated votes. No database."""

import math

import numpy as np
import pytest

from bench.fit import fit_benchmark
from stats.btd import Counts, _hessian, _objective, _problem, fit_bt_logistic, fit_bt_plain, fit_btd
from stats.posterior import skills_for
from stats.summaries import field_scores, settled_ranks, shared_ranks

# Two axes of two groups each (0, 1 and 2, 3), every combination, either axis declinable, so that
# cell () is occupied and theta is pinned by data, not by the priors.
CELLS = [(), (0,), (1,), (2,), (3,), (0, 2), (0, 3), (1, 2), (1, 3)]
N_GROUPS = 4


def simulate_votes(rng, theta, offsets, log_nu, n_votes, cells=CELLS):
    """Single votes (cell, i, j, outcome) drawn from the Bradley-Terry-Davidson model."""
    n = len(theta)
    cell = rng.integers(len(cells), size=n_votes)
    i = rng.integers(n, size=n_votes)
    j = (i + rng.integers(1, n, size=n_votes)) % n
    membership = np.zeros((len(cells), offsets.shape[1]))
    for k, groups in enumerate(cells):
        membership[k, list(groups)] = 1.0
    table = theta[None, :] + membership @ offsets.T
    half_gap = 0.5 * (table[cell, i] - table[cell, j])
    weights = np.column_stack([np.exp(half_gap), np.exp(-half_gap), np.full(n_votes, math.exp(log_nu))])
    cumulative = np.cumsum(weights / weights.sum(axis=1, keepdims=True), axis=1)
    outcome = (rng.random(n_votes)[:, None] > cumulative[:, :2]).sum(axis=1)
    names = ("i", "j", "tie")
    return [(cells[c], int(a), int(b), names[o]) for c, a, b, o in zip(cell, i, j, outcome, strict=True)]


def centred(values, axis=0):
    values = np.asarray(values, dtype=float)
    return values - values.mean(axis=axis, keepdims=True)


def truth(rng, n_models=8, offset_sd=0.0):
    theta = centred(rng.normal(0.0, 0.7, n_models))
    offsets = (
        centred(rng.normal(0.0, offset_sd, (n_models, N_GROUPS))) if offset_sd else np.zeros((n_models, 4))
    )
    return theta, offsets, math.log(0.6)


@pytest.fixture(scope="module")
def simulated():
    """8 models, 40,000 votes, groups that disagree (offsets with sd 0.4)."""
    rng = np.random.default_rng(11)
    theta, offsets, log_nu = truth(rng, offset_sd=0.4)
    counts = Counts.from_votes(simulate_votes(rng, theta, offsets, log_nu, 40_000), 8)
    return theta, offsets, log_nu, counts, fit_btd(counts, n_models=8, n_groups=N_GROUPS)


def test_it_recovers_known_skills_and_the_tie_parameter(simulated):
    theta, _, log_nu, _, fit = simulated
    assert fit.converged
    z = (fit.theta - theta) / fit.theta_se()
    assert np.abs(z).max() < 4
    assert (np.abs(z) < 1.96).sum() >= 6  # the Laplace 95% intervals cover most models
    assert abs(fit.log_nu - log_nu) < 4 * fit.log_nu_se()
    assert fit.theta_se().max() < 0.1


def test_it_covers_the_true_skills_with_the_global_board_intervals(simulated):
    theta, _, _, _, fit = simulated
    board = skills_for(fit, [((), 1.0)])
    covered = sum(row.skill_low <= t <= row.skill_high for row, t in zip(board, theta, strict=True))
    assert covered >= 6
    assert np.allclose([row.skill for row in board], fit.theta)


def test_it_recovers_group_offsets_when_groups_disagree(simulated):
    _, offsets, _, _, fit = simulated
    z = (fit.offsets - offsets) / fit.offsets_se()
    assert np.abs(z).max() < 4.5
    assert np.corrcoef(fit.offsets.ravel(), offsets.ravel())[0, 1] > 0.9


def test_it_shrinks_offsets_to_zero_when_groups_agree():
    rng = np.random.default_rng(12)
    theta, offsets, log_nu = truth(rng)
    counts = Counts.from_votes(simulate_votes(rng, theta, offsets, log_nu, 40_000), 8)
    set_tau = fit_btd(counts, n_models=8, n_groups=N_GROUPS, group_prior_sd=0.5)
    assert np.abs(set_tau.offsets / set_tau.offsets_se()).max() < 4
    estimated = fit_btd(counts, n_models=8, n_groups=N_GROUPS, group_prior_sd="estimate")
    assert estimated.group_prior_sd.max() <= 0.05
    assert np.abs(estimated.offsets).max() < 0.03
    assert max(estimated.tau_search, key=estimated.tau_search.get) == estimated.group_prior_sd[0]


def test_it_estimates_a_wide_tau_when_groups_disagree(simulated):
    _, _, _, counts, _ = simulated
    estimated = fit_btd(counts, n_models=8, n_groups=N_GROUPS, group_prior_sd="estimate")
    assert 0.2 <= estimated.group_prior_sd[0] <= 0.75


def test_it_has_an_analytic_gradient_and_hessian_matching_finite_differences(simulated):
    _, _, _, counts, fit = simulated
    problem = problem_for_derivative_checks(counts, n_models=8, n_groups=N_GROUPS)
    x = fit.packed() + np.random.default_rng(3).normal(0.0, 0.2, len(fit.packed()))
    assert_derivatives_match_finite_differences(problem, x)


def problem_for_derivative_checks(counts: Counts, *, n_models: int, n_groups: int, with_groups: bool = True):
    """The fit's problem as the derivative checks set it up: ties on, a wide prior, every tau 0.5."""
    return _problem(
        counts,
        n_models=n_models,
        n_groups=n_groups,
        with_groups=with_groups,
        tie_model=True,
        theta_prior_sd=10.0,
        tau=np.full(n_groups, 0.5),
    )


def assert_derivatives_match_finite_differences(problem, x: np.ndarray) -> None:
    """The analytic gradient and Hessian of the negative log-posterior agree with central differences."""
    _, grad = _objective(x, problem)
    step = 1e-5
    basis = np.eye(len(x))
    numeric_grad = np.array(
        [
            (_objective(x + step * e, problem)[0] - _objective(x - step * e, problem)[0]) / (2 * step)
            for e in basis
        ]
    )
    numeric_hessian = np.array(
        [
            (_objective(x + step * e, problem)[1] - _objective(x - step * e, problem)[1]) / (2 * step)
            for e in basis
        ]
    )
    assert np.abs(numeric_grad - grad).max() < 1e-5 * np.abs(grad).max()
    assert np.abs(numeric_hessian - _hessian(x, problem)).max() < 1e-6 * np.abs(numeric_hessian).max()


def test_it_equals_plain_bradley_terry_without_groups_and_ties(simulated):
    _, _, _, counts, _ = simulated
    bt_path = fit_btd(
        counts, n_models=8, n_groups=N_GROUPS, with_groups=False, tie_model=False, theta_prior_sd=None
    )
    assert bt_path.log_nu == -math.inf
    assert np.abs(bt_path.theta - fit_bt_plain(counts, 8)).max() < 1e-6


def test_it_agrees_with_the_arena_style_logistic_fit(simulated):
    _, _, _, counts, _ = simulated
    plain = fit_bt_plain(counts, 8)
    assert np.abs(fit_bt_logistic(counts, 8) - plain).max() < 1e-4
    assert np.abs(fit_bt_logistic(counts, 8, gtol=1e-12, ftol=1e-15) - plain).max() < 1e-6


def test_it_gives_the_same_fit_on_sufficient_statistics_as_vote_by_vote():
    rng = np.random.default_rng(13)
    theta, offsets, log_nu = truth(rng, n_models=5, offset_sd=0.3)
    votes = simulate_votes(rng, theta, offsets, log_nu, 3_000)
    aggregated = Counts.from_votes(votes, 5)
    one_by_one = Counts.from_votes(votes, 5, aggregate=False)
    assert len(one_by_one.rows) == 3_000
    assert len(aggregated.rows) <= len(CELLS) * 10
    a = fit_btd(aggregated, n_models=5, n_groups=N_GROUPS)
    b = fit_btd(one_by_one, n_models=5, n_groups=N_GROUPS)
    assert np.abs(a.packed() - b.packed()).max() < 1e-8
    assert np.abs(a.covariance - b.covariance).max() < 1e-8


def test_it_finds_the_same_mode_with_lbfgs(simulated):
    _, _, _, counts, fit = simulated
    lbfgs = fit_btd(counts, n_models=8, n_groups=N_GROUPS, method="L-BFGS-B")
    assert lbfgs.converged
    assert np.abs(lbfgs.packed() - fit.packed()).max() < 1e-4


def test_it_gives_shared_ranks_by_the_interval_rule():
    low = np.array([0.70, 0.66, 0.50, 0.40, 0.41, 0.10])
    high = np.array([0.80, 0.72, 0.68, 0.45, 0.60, 0.39])
    # 0 and 1 overlap; 2 overlaps 1 but not 0; 3 sits wholly below 0, 1 and 2 but overlaps 4;
    # 4 overlaps 2 and 3; 5 is below everyone.
    assert shared_ranks(low, high).tolist() == [1, 1, 2, 4, 3, 6]


def test_it_gives_p_best_summing_to_one_and_ordered_rank_intervals(simulated):
    *_, fit = simulated
    board = skills_for(fit, [((0,), 0.5), ((1, 3), 0.5)], n_draws=500)
    assert sum(row.p_best for row in board) == pytest.approx(1.0)
    for row in board:
        assert 1 <= row.rank_low <= row.rank_high <= 8
        assert row.score_low <= row.score <= row.score_high
    ranks = shared_ranks([r.score_low for r in board], [r.score_high for r in board])
    assert [row.rank for row in board] == ranks.tolist()


def test_it_scores_a_model_that_always_wins_near_one():
    votes = [((), 0, j, "i") for j in range(1, 5) for _ in range(300)]
    votes += [
        ((), i, j, outcome) for i in range(1, 5) for j in range(i + 1, 5) for outcome in ("i", "j", "tie")
    ] * 50
    fit = fit_btd(Counts.from_votes(votes, 5), n_models=5, n_groups=0)
    board = skills_for(fit, [((), 1.0)])
    assert board[0].score > 0.97
    assert board[0].rank == 1 and board[0].rank_high == 1
    assert board[0].p_best == 1.0


def test_it_scores_each_pairs_points_summing_to_one():
    skills = np.array([0.3, -1.0, 2.0, 0.0])
    for log_nu in (-math.inf, 0.0, 2.0):
        assert field_scores(skills, log_nu).sum() == pytest.approx(len(skills) / 2)
    assert field_scores(np.zeros(3), 0.0) == pytest.approx([0.5, 0.5, 0.5])


def test_it_rejects_malformed_input():
    with pytest.raises(ValueError, match="bad pair"):
        Counts.from_votes([((), 1, 1, "i")], 3)
    with pytest.raises(ValueError, match="outcome"):
        Counts.from_votes([((), 0, 1, "win")], 3)
    counts = Counts.from_votes([((5,), 0, 1, "i")], 3)
    with pytest.raises(ValueError, match="group ids"):
        fit_btd(counts, n_models=3, n_groups=2)
    fit = fit_btd(Counts.from_votes([((), 0, 1, "i"), ((), 1, 2, "tie")], 3), n_models=3, n_groups=0)
    with pytest.raises(ValueError, match="sum to 1"):
        skills_for(fit, [((), 0.5)])


def test_it_runs_the_fit_benchmark_at_small_size():
    result = fit_benchmark(n_models=20, n_battles=50_000, n_groups=22, seed=1)
    assert result["n_battles"] == 50_000
    assert result["fit_converged"]
    assert result["fit_speedup"] > 0
    assert result["fit_max_abs_diff"] < 1e-3
    assert result["sample_score_max_abs_error"] < 0.05


def test_field_scores_stay_exact_and_finite_at_extreme_skills_and_tie_parameters():
    """Draws on little data put log nu in the thousands; the fast form must agree with the log-space
    definition there and in the ordinary range."""
    rng = np.random.default_rng(3)
    for skill_sd, log_nu_sd in [(1, 1), (10, 50_000), (150, 50_000), (1_000, 5)]:
        skills = rng.normal(0, skill_sd, (200, 8))
        log_nu = rng.normal(0, log_nu_sd, 200)
        half_gap = 0.5 * (skills[:, :, None] - skills[:, None, :])
        nu = log_nu[:, None, None]
        log_points = np.logaddexp(half_gap, nu - np.log(2)) - np.logaddexp(
            np.logaddexp(half_gap, -half_gap), nu
        )
        expected = (np.exp(log_points).sum(axis=-1) - 0.5) / 7
        assert np.allclose(field_scores(skills, log_nu), expected, rtol=0, atol=1e-10)


def test_settled_ranks_rise_only_when_the_model_above_overlaps_by_the_margin():
    # Model 0 lies above model 1 by 0.01: the plain rule ranks them 1 and 2.
    low, high = np.array([0.61, 0.40]), np.array([0.80, 0.60])
    assert shared_ranks(low, high).tolist() == [1, 2]
    # Shown 1 and 2 before, model 1 stays second while the two overlap by less than the margin...
    nudged_high = np.array([0.80, 0.62])
    assert shared_ranks(low, nudged_high).tolist() == [1, 1]
    assert settled_ranks(low, nudged_high, [1, 2], margin=0.05).tolist() == [1, 2]
    # ...and shares rank 1 once they overlap by more.
    assert settled_ranks(low, np.array([0.80, 0.67]), [1, 2], margin=0.05).tolist() == [1, 1]
    # Falling needs no margin: shown level before, model 1 is second as soon as the plain rule says so.
    assert settled_ranks(low, high, [1, 1], margin=0.05).tolist() == [1, 2]
    # With no margin, or for a model new to the board (previous rank 0), it is the plain rule.
    assert settled_ranks(low, nudged_high, [1, 2], margin=0.0).tolist() == [1, 1]
    assert settled_ranks(low, nudged_high, [0, 0], margin=0.05).tolist() == [1, 1]
