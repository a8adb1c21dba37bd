"""The closed-form TrueSkill kernel against the trueskill package's rate_1vs1. No database."""

import math
import random

import pytest
import trueskill

from bench.ratings import replay_benchmark
from stats.trueskill import TrueSkillParams, normal_cdf, normal_ppf, rate_1vs1

CASES = 6_000


def package_env(params: TrueSkillParams) -> trueskill.TrueSkill:
    return trueskill.TrueSkill(params.mu, params.sigma, params.beta, params.tau, params.draw_probability)


def package_rate(a, b, *, drawn, params):
    env = package_env(params)
    new_a, new_b = trueskill.rate_1vs1(env.create_rating(*a), env.create_rating(*b), drawn=drawn, env=env)
    return (new_a.mu, new_a.sigma), (new_b.mu, new_b.sigma)


def largest_difference(ours, theirs) -> float:
    return max(
        abs(x - y) for mine, ref in zip(ours, theirs, strict=True) for x, y in zip(mine, ref, strict=True)
    )


def random_case(rng: random.Random):
    """Mostly the package's default beta and tau; a third with beta in [1, 8] and tau in [0, 0.5]; a
    quarter pit mu near 0 against mu near 50 with small sigmas (an upset when the low one wins)."""
    if rng.random() < 2 / 3:
        beta, tau = 25 / 6, 25 / 300
    else:
        beta, tau = rng.uniform(1.0, 8.0), rng.uniform(0.0, 0.5)
    params = TrueSkillParams(beta=beta, tau=tau, draw_probability=rng.uniform(0.01, 0.8))
    if rng.random() < 0.25:
        low, high = (
            (rng.uniform(0.0, 2.0), rng.uniform(0.5, 1.0)),
            (rng.uniform(48.0, 50.0), rng.uniform(0.5, 1.0)),
        )
        a, b = (low, high) if rng.random() < 0.5 else (high, low)
    else:
        a = (rng.uniform(0.0, 50.0), rng.uniform(0.5, 12.0))
        b = (rng.uniform(0.0, 50.0), rng.uniform(0.5, 12.0))
    return a, b, rng.random() < 0.4, params


def test_it_agrees_with_the_package_on_thousands_of_random_games():
    rng = random.Random(20240531)
    worst, draws, upsets = 0.0, 0, 0
    for _ in range(CASES):
        a, b, drawn, params = random_case(rng)
        ours = rate_1vs1(a, b, drawn=drawn, params=params)
        worst = max(worst, largest_difference(ours, package_rate(a, b, drawn=drawn, params=params)))
        draws += drawn
        upsets += not drawn and b[0] - a[0] > 40
    print(f"largest |mu| or |sigma| difference over {CASES} games: {worst:.3g}")
    assert draws > CASES // 4 and upsets > CASES // 20
    # Required: 1e-6. Measured: ~1e-11 (rounding; see the kernel's docstring).
    assert worst < 1e-9


def test_it_agrees_with_the_package_at_the_extremes_of_the_representable_range():
    """beta = 1, sigma = 0.5: a 50-point gap is ~30 standard deviations of the difference."""
    params = TrueSkillParams(beta=1.0, draw_probability=0.3)
    worst = 0.0
    for step in range(-100, 101):
        gap = step / 2
        a, b = (25 + gap / 2, 0.5), (25 - gap / 2, 0.5)
        for drawn in (False, True):
            ours = rate_1vs1(a, b, drawn=drawn, params=params)
            worst = max(worst, largest_difference(ours, package_rate(a, b, drawn=drawn, params=params)))
    assert worst < 1e-9


@pytest.mark.parametrize("drawn", [False, True])
@pytest.mark.parametrize("winner_mu", [0.0, 50.0])
def test_it_raises_where_the_package_cannot_rate_the_game(winner_mu, drawn):
    """beta = 0.3 makes a 50-point gap ~60 standard deviations: Phi underflows (an upset or a draw)
    or the correction W underflows to 0 (the favourite wins)."""
    params = TrueSkillParams(beta=0.3)
    winner, loser = (winner_mu, 0.5), (50.0 - winner_mu, 0.5)
    with pytest.raises(FloatingPointError):
        package_rate(winner, loser, drawn=drawn, params=params)
    with pytest.raises(FloatingPointError):
        rate_1vs1(winner, loser, drawn=drawn, params=params)


def test_it_gives_swapped_results_for_a_draw_with_the_players_swapped():
    rng = random.Random(7)
    for _ in range(1_000):
        a, b, _, params = random_case(rng)
        new_a, new_b = rate_1vs1(a, b, drawn=True, params=params)
        assert rate_1vs1(b, a, drawn=True, params=params) == (new_b, new_a)


def test_it_moves_mu_towards_the_winner_and_shrinks_sigma():
    params = TrueSkillParams()
    (winner_mu, winner_sigma), (loser_mu, loser_sigma) = rate_1vs1(
        (params.mu, params.sigma), (params.mu, params.sigma), drawn=False, params=params
    )
    assert winner_mu > params.mu > loser_mu
    assert winner_sigma < params.sigma and loser_sigma < params.sigma
    rng = random.Random(11)
    strict = 0
    for _ in range(1_000):
        a, b, _, params = random_case(rng)
        (new_a_mu, new_a_sigma), (new_b_mu, new_b_sigma) = rate_1vs1(a, b, drawn=False, params=params)
        # The dynamics widen sigma to hypot(sigma, tau) (above sigma if sigma is tiny), the game narrows
        # it. A certain win (the favourite ahead by many standard deviations of the performance
        # difference) changes nothing to the last bit, so the strict checks skip it.
        widened_a, widened_b = math.hypot(a[1], params.tau), math.hypot(b[1], params.tau)
        assert new_a_mu >= a[0] and new_b_mu <= b[0]
        assert new_a_sigma <= widened_a * (1 + 1e-15) and new_b_sigma <= widened_b * (1 + 1e-15)
        c = math.sqrt(2 * params.beta**2 + widened_a**2 + widened_b**2)
        if (a[0] - b[0]) / c < 5:
            strict += 1
            assert new_a_mu > a[0] and new_b_mu < b[0]
            assert new_a_sigma < widened_a and new_b_sigma < widened_b
    assert strict > 500


def test_it_pulls_a_draw_together():
    params = TrueSkillParams()
    (strong_mu, _), (weak_mu, _) = rate_1vs1((30.0, 4.0), (20.0, 4.0), drawn=True, params=params)
    assert 30.0 > strong_mu > weak_mu > 20.0


def test_it_defaults_to_the_packages_parameters():
    params, env = TrueSkillParams(), trueskill.TrueSkill()
    assert (params.mu, params.sigma, params.beta, params.tau, params.draw_probability) == (
        trueskill.MU,
        trueskill.SIGMA,
        trueskill.BETA,
        trueskill.TAU,
        trueskill.DRAW_PROBABILITY,
    )
    assert (params.mu, params.sigma, params.beta, params.tau, params.draw_probability) == (
        env.mu,
        env.sigma,
        env.beta,
        env.tau,
        env.draw_probability,
    )
    assert params.numerics == "package"


def test_it_computes_and_caches_the_packages_draw_margin():
    env = trueskill.TrueSkill()
    for step in range(100):
        probability = step / 100
        params = TrueSkillParams(draw_probability=probability)
        assert params.draw_margin == pytest.approx(trueskill.calc_draw_margin(probability, 2, env), abs=1e-13)
    params = TrueSkillParams()
    assert params.draw_margin is params.draw_margin
    assert "draw_margin" in vars(params)


def test_it_inverts_both_normal_cdfs():
    for numerics in ("package", "exact"):
        for q in (1e-12, 0.001, 0.3, 0.5, 0.55, 0.9, 0.999):
            assert normal_cdf(normal_ppf(q, numerics), numerics) == pytest.approx(q, rel=1e-12)
    assert normal_cdf(1.0) == pytest.approx(0.8413447460685429, rel=1e-15)
    assert normal_ppf(0.975) == pytest.approx(1.959963984540054, rel=1e-14)


def test_it_differs_from_the_package_with_the_exact_normal_cdf():
    """Why numerics="package" is the default: the true Phi moves results by ~1e-7 to ~1e-4."""
    rng = random.Random(3)
    worst = 0.0
    for _ in range(500):
        a, b, drawn, params = random_case(rng)
        exact = TrueSkillParams(
            params.mu, params.sigma, params.beta, params.tau, params.draw_probability, "exact"
        )
        ours = rate_1vs1(a, b, drawn=drawn, params=exact)
        worst = max(worst, largest_difference(ours, package_rate(a, b, drawn=drawn, params=params)))
    assert 1e-8 < worst < 1e-3


@pytest.mark.parametrize(
    "fields",
    [
        {"sigma": 0.0},
        {"beta": -1.0},
        {"tau": -0.1},
        {"draw_probability": 1.0},
        {"draw_probability": -0.1},
        {"numerics": "scipy"},
    ],
)
def test_it_rejects_invalid_parameters(fields):
    with pytest.raises(ValueError):
        TrueSkillParams(**fields)


def test_it_replays_votes_faster_than_the_package_with_the_same_result():
    result = replay_benchmark(votes=2_000, repeats=1)
    assert result["votes"] == 2_000
    assert result["replay_speedup"] > 1
    assert result["replay_max_abs_diff"] < 1e-6
