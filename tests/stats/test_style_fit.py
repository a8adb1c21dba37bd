"""The Bradley-Terry-Davidson fit with style covariates (stats.btd with Counts.features). No database."""

from types import SimpleNamespace

import numpy as np
import pytest

from bench.fit import STYLE_GROUP, simulate_style_battles, style_world
from stats.btd import (
    Counts,
    _BlockPreconditioner,
    _centred,
    _conjugate_gradients,
    _hessian,
    _objective,
    fit_btd,
)
from stats.posterior import centred_covariance, covariance_from_centred, fit_restored, skills_for
from tests.stats.test_btd import assert_derivatives_match_finite_differences, problem_for_derivative_checks

N_GROUPS = 5  # bench.fit.STYLE_AXES


@pytest.fixture(scope="module")
def planted():
    rng = np.random.default_rng(5)
    sworld = style_world(10, rng)
    counts = simulate_style_battles(sworld, 60_000, rng)
    return sworld, counts, fit_btd(counts, n_models=10, n_groups=N_GROUPS)


@pytest.mark.parametrize("with_groups", [True, False])
def test_it_has_an_analytic_gradient_and_hessian_matching_finite_differences_with_features(with_groups):
    rng = np.random.default_rng(1)
    counts = simulate_style_battles(style_world(5, rng), 400, rng)
    problem = problem_for_derivative_checks(counts, n_models=5, n_groups=N_GROUPS, with_groups=with_groups)
    size = (5 + 4) * (1 + N_GROUPS * with_groups) + 1
    x = rng.normal(0.0, 0.3, size)
    assert_derivatives_match_finite_differences(problem, x)


def test_it_sums_style_terms_per_cell_whatever_the_row_order_and_with_empty_cells():
    rng = np.random.default_rng(2)
    counts = simulate_style_battles(style_world(5, rng), 400, rng)
    # The rows come in random cell order; drop the first and the last cell's rows so two cells have none.
    empty = (counts.rows[:, 0] == 0) | (counts.rows[:, 0] == len(counts.cells) - 1)
    sparse_counts = Counts(cells=counts.cells, rows=counts.rows[~empty], features=counts.features[~empty])
    problem = problem_for_derivative_checks(sparse_counts, n_models=5, n_groups=N_GROUPS)
    assert (np.diff(problem.cell) >= 0).all()
    assert_derivatives_match_finite_differences(problem, rng.normal(0.0, 0.3, (5 + 4) * (1 + N_GROUPS) + 1))


def test_it_recovers_the_planted_global_and_group_style_coefficients(planted):
    sworld, _, fit = planted
    assert fit.converged
    se = np.sqrt(np.diag(fit.style_covariance())[:4])
    assert np.abs(fit.style - sworld.style).max() < 4 * se.max()
    assert np.abs(fit.style - sworld.style).max() < 0.1
    group = fit.style + fit.style_offsets[:, STYLE_GROUP]
    assert np.abs(group - (sworld.style + sworld.style_offsets[:, STYLE_GROUP])).max() < 0.15
    others = [g for g in range(N_GROUPS) if g != STYLE_GROUP]
    assert np.abs(fit.style_offsets[:, others]).max() < 0.12


def test_it_ranks_by_skill_with_style_held_equal(planted):
    sworld, counts, fit = planted
    raw = fit_btd(Counts(cells=counts.cells, rows=counts.rows), n_models=10, n_groups=N_GROUPS)
    truth = sworld.world.theta
    assert np.abs(fit.theta - truth).max() < np.abs(raw.theta - truth).max()
    assert np.abs(fit.theta - truth).max() < 0.15


def test_it_does_not_depend_on_which_side_is_labelled_a(planted):
    _, counts, fit = planted
    rows = counts.rows[:, [0, 2, 1, 4, 3, 5]]
    swapped = fit_btd(
        Counts(cells=counts.cells, rows=rows, features=-counts.features), n_models=10, n_groups=5
    )
    assert np.abs(swapped.packed() - fit.packed()).max() < 1e-6


def test_it_keeps_rows_with_features_apart_and_orients_them():
    counts = Counts(cells=[()], rows=[[0, 1, 0, 1, 0, 0], [0, 0, 1, 0, 1, 0]], features=[[0.5], [0.25]])
    oriented = counts.aggregated(2)
    assert oriented.rows.tolist() == [[0, 0, 1, 0, 1, 0], [0, 0, 1, 0, 1, 0]]
    assert oriented.features.ravel().tolist() == [-0.5, 0.25]


def test_it_finds_no_style_effect_where_none_was_planted():
    rng = np.random.default_rng(8)
    sworld = style_world(8, rng, planted=False)
    fit = fit_btd(simulate_style_battles(sworld, 30_000, rng), n_models=8, n_groups=N_GROUPS)
    se = np.sqrt(np.diag(fit.style_covariance())[:4])
    assert (np.abs(fit.style) < 3.5 * se).all()


def test_it_makes_style_controlled_boards_and_restores_them_from_a_stored_posterior(planted):
    _, _, fit = planted
    restored = fit_restored(
        theta=fit.theta,
        offsets=fit.offsets,
        log_nu=fit.log_nu,
        covariance=covariance_from_centred(centred_covariance(fit), n_models=10, blocks=1 + N_GROUPS),
        style=fit.style,
        style_offsets=fit.style_offsets,
    )
    assert restored.n_features == 4
    population = [((), 0.5), ((STYLE_GROUP,), 0.5)]
    original = skills_for(fit, population, n_draws=400)
    again = skills_for(restored, population, n_draws=400)
    assert [row.rank for row in original] == [row.rank for row in again]
    assert max(abs(a.score_low - b.score_low) for a, b in zip(original, again, strict=True)) < 0.02


def test_it_estimates_one_tau_for_skill_and_style_offsets(planted):
    _, counts, _ = planted
    fit = fit_btd(counts, n_models=10, n_groups=N_GROUPS, group_prior_sd="estimate", tau_grid=(0.1, 0.3, 1.0))
    assert set(fit.tau_search) == {0.1, 0.3, 1.0}
    assert fit.n_features == 4


@pytest.mark.parametrize("method", ["trust-exact", "L-BFGS-B"])
def test_it_finds_the_same_mode_and_covariance_with_scipys_solvers(planted, method):
    _, counts, fit = planted
    other = fit_btd(counts, n_models=10, n_groups=N_GROUPS, method=method)
    assert other.converged
    assert np.abs(other.packed() - fit.packed()).max() < 1e-5
    assert np.abs(other.covariance - fit.covariance).max() < 1e-5 * np.abs(fit.covariance).max()


def test_it_reaches_the_same_mode_started_from_the_fit_without_style(planted):
    _, counts, fit = planted
    plain = fit_btd(Counts(cells=counts.cells, rows=counts.rows), n_models=10, n_groups=N_GROUPS)
    warm = fit_btd(counts, n_models=10, n_groups=N_GROUPS, start=plain)
    assert warm.converged
    assert np.abs(warm.packed() - fit.packed()).max() < 1e-7


def test_its_preconditioned_conjugate_gradients_solve_a_newton_system_in_a_few_steps():
    rng = np.random.default_rng(4)
    counts = simulate_style_battles(style_world(12, rng), 20_000, rng)
    problem = problem_for_derivative_checks(counts, n_models=12, n_groups=N_GROUPS)
    # A centred point (the solver's iterates are), so the gradient has no part along the common shifts.
    x = _centred(problem, rng.normal(0.0, 0.3, (12 + 4) * (1 + N_GROUPS) + 1))
    hessian = _hessian(x, problem)
    rhs = -_objective(x, problem)[1]
    step, products = _conjugate_gradients(
        hessian, rhs, _BlockPreconditioner(hessian, problem), 1e-10 * np.linalg.norm(rhs)
    )
    assert products <= 20  # 10 of 97 unknowns, where unpreconditioned conjugate gradients take 88
    assert np.allclose(step, np.linalg.solve(hessian, rhs), rtol=1e-7, atol=1e-10)


def test_its_preconditioner_drops_the_style_coupling_where_its_schur_complement_is_not_positive():
    # Two models that met each other only (a graph Laplacian, so the block-diagonal part halves the
    # curvature of their difference) and one style coefficient strongly tied to that difference: the
    # Hessian is positive definite, its block-diagonal Schur complement is not.
    hessian = np.array([[1.01, -1.0, 1.0], [-1.0, 1.01, -1.0], [1.0, -1.0, 1.5]])
    preconditioner = _BlockPreconditioner(hessian, SimpleNamespace(n_models=2, blocks=1))
    assert preconditioner.coupling is None
    rhs = np.array([1.0, -1.0, 0.5])  # no part along the skills' common shift, as in a fit
    step, _ = _conjugate_gradients(hessian, rhs, preconditioner, 1e-12)
    assert np.allclose(step, np.linalg.solve(hessian, rhs))
