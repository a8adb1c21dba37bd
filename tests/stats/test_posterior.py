"""What the personal board takes from the fit, without a database: score draws, their summaries, and a
posterior stored compactly and restored."""

import numpy as np
import pytest

from leaderboard.services import posterior_decode, posterior_encode
from stats.btd import Counts, fit_btd
from stats.posterior import centred_covariance, covariance_from_centred, fit_restored, score_draws, skills_for
from stats.summaries import draws_summary
from tests.stats.test_btd import simulate_votes

# Two axes of two groups (0, 1 and 2, 3); nobody declines, so cell () is pinned only by the priors.
CELLS = [(0, 2), (0, 3), (1, 2), (1, 3)]
N_MODELS = 6


@pytest.fixture(scope="module")
def fit():
    rng = np.random.default_rng(5)
    theta = np.linspace(-0.8, 0.8, N_MODELS)
    offsets = np.zeros((N_MODELS, 4))
    offsets[:, 1] = np.linspace(0.9, -0.9, N_MODELS)  # group 1 reverses the order
    votes = simulate_votes(rng, theta, offsets, np.log(0.5), 6000, cells=CELLS)
    return fit_btd(Counts.from_votes(votes, N_MODELS), n_models=N_MODELS, n_groups=4)


def test_it_summarises_score_draws_exactly_as_skills_for(fit):
    population = [((0, 2), 0.3), ((1, 3), 0.7)]
    rows = skills_for(fit, population, seed=11)
    draws = score_draws(fit, population, seed=11)
    summary = draws_summary(draws.point, draws.draws)
    assert draws.draws.shape == (2000, N_MODELS)
    for m, row in enumerate(rows):
        assert (summary.point[m], summary.low[m], summary.high[m]) == (
            row.score,
            row.score_low,
            row.score_high,
        )
        assert (summary.rank[m], summary.rank_low[m], summary.rank_high[m]) == (
            row.rank,
            row.rank_low,
            row.rank_high,
        )
        assert summary.p_best[m] == row.p_best


def test_it_keeps_draw_summaries_honest_for_a_weighted_sum(fit):
    """A combined score's interval comes from combining draw by draw, so it is narrower than adding the
    two intervals end to end, and P(best) still sums to one."""
    first = score_draws(fit, [((0, 2), 1.0)], seed=1)
    second = score_draws(fit, [((1, 3), 1.0)], seed=2)
    combined = draws_summary(0.5 * first.point + 0.5 * second.point, 0.5 * first.draws + 0.5 * second.draws)
    one, two = draws_summary(first.point, first.draws), draws_summary(second.point, second.draws)
    end_to_end = 0.5 * (one.high - one.low) + 0.5 * (two.high - two.low)
    assert ((combined.high - combined.low) < end_to_end).all()
    assert combined.p_best.sum() == pytest.approx(1.0)
    assert (combined.rank_low <= combined.rank_high).all()


def test_a_centred_covariance_with_shifts_added_back_gives_the_same_centred_posterior(fit):
    centred = centred_covariance(fit)
    restored = fit_restored(
        theta=fit.theta,
        offsets=fit.offsets,
        log_nu=fit.log_nu,
        covariance=covariance_from_centred(centred.astype(np.float32), n_models=N_MODELS, blocks=5),
    )
    np.testing.assert_allclose(restored.theta_se(), fit.theta_se(), rtol=1e-5)
    np.testing.assert_allclose(restored.offsets_se(), fit.offsets_se(), rtol=1e-5)
    assert restored.log_nu_se() == pytest.approx(fit.log_nu_se(), rel=1e-5)
    np.linalg.cholesky(restored.covariance)  # positive definite again


def test_it_restores_a_stored_posterior_that_draws_the_same_boards(fit):
    pooled = score_draws(fit, [((0, 2), 0.5), ((1, 3), 0.5)], seed=3)
    data = posterior_encode(
        fit=fit, model_ids=[10, 11, 12, 13, 14, 15], group_ids=[7, 8, 9, 20], pooled=pooled
    )
    posterior = posterior_decode(data)
    assert posterior.model_ids == (10, 11, 12, 13, 14, 15) and posterior.group_ids == (7, 8, 9, 20)
    np.testing.assert_array_equal(posterior.theta, fit.theta)
    np.testing.assert_array_equal(posterior.offsets, fit.offsets)
    np.testing.assert_array_equal(posterior.pooled.draws, pooled.draws.astype(np.float32))
    assert np.allclose(posterior.centred_covariance, posterior.centred_covariance.T)

    # The cell of groups 8 and 20 (fit groups 1 and 3): same point scores, intervals within draw noise.
    expected = skills_for(fit, [((1, 3), 1.0)], seed=4)
    cell_fit = posterior.cell_fit([8, 20])
    assert cell_fit.n_groups == 2
    got = skills_for(cell_fit, [((0, 1), 1.0)], seed=4)
    for want, have in zip(expected, got, strict=True):
        assert have.score == pytest.approx(want.score, abs=1e-12)
        width = want.score_high - want.score_low
        assert abs(have.score_low - want.score_low) < 0.1 * width
        assert abs(have.score_high - want.score_high) < 0.1 * width
        assert abs(have.p_best - want.p_best) < 0.05


def test_group_one_reverses_the_order_in_its_cells(fit):
    """The fixture's premise, which the storage test relies on to compare boards that differ."""
    normal = score_draws(fit, [((0, 2), 1.0)]).point
    reversed_ = score_draws(fit, [((1, 2), 1.0)]).point
    assert np.argmax(normal) == N_MODELS - 1 and np.argmax(reversed_) == 0


def test_it_refuses_groups_the_stored_fit_does_not_have(fit):
    pooled = score_draws(fit, [((0, 2), 1.0)], seed=0)
    posterior = posterior_decode(
        posterior_encode(fit=fit, model_ids=range(6), group_ids=[1, 2, 3, 4], pooled=pooled)
    )
    with pytest.raises(ValueError, match="not distinct groups of this fit"):
        posterior.cell_fit([99])
    with pytest.raises(ValueError, match="not distinct groups of this fit"):
        posterior.cell_fit([1, 1])
