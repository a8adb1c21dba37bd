"""stats.personalization: one person's board, shrunk to their groups, moved by their own answers."""

import math
import subprocess
import sys

import numpy as np
import pytest

from stats.personalization import Person, Population, _raters_log_marginal, _Stacked, _Votes, davidson

MODELS = [f"m{k}" for k in range(6)]


def simulated_votes(*, individual_sd: float, n_raters: int, votes_each: int, seed: int):
    rng = np.random.default_rng(seed)
    theta = np.linspace(-1.0, 1.0, len(MODELS))
    offsets = {"left": np.array([0.6, -0.6, 0, 0, 0, 0]), "right": np.array([-0.6, 0.6, 0, 0, 0, 0])}
    votes = []
    for rater in range(n_raters):
        group = "left" if rater % 2 else "right"
        skills = theta + offsets[group] + rng.normal(0.0, individual_sd, len(MODELS))
        for _ in range(votes_each):
            i, j = rng.choice(len(MODELS), 2, replace=False)
            outcome = ("a", "tie", "b")[rng.choice(3, p=davidson(skills[i] - skills[j], math.log(0.3)))]
            votes.append((rater, MODELS[i], MODELS[j], outcome, (group,)))
    return votes


@pytest.fixture(scope="module")
def population():
    return Population.fit(simulated_votes(individual_sd=0.0, n_raters=120, votes_each=10, seed=1), seed=3)


def test_it_starts_a_visitor_on_their_profile_board(population):
    left, right = population.person(("left",)), population.person(("right",))
    assert left.ranking() == [population.models[k] for k in np.argsort(-population.profile_skills(("left",)))]
    # The group offsets of the simulation put m0 ahead of m1 on the left and behind it on the right.
    assert left.ranking().index("m0") < left.ranking().index("m1")
    assert right.ranking().index("m0") > right.ranking().index("m1")
    plug_in = population.predict_board(population.profile_skills(("left",)), "m5", "m0")
    predicted = left.predict("m5", "m0")
    assert set(predicted) == {"a", "tie", "b"}
    assert math.isclose(sum(predicted.values()), 1.0)
    # Averaging over what we do not know about the visitor makes the prediction less sure, not reversed.
    assert 0.5 < predicted["a"] < plug_in["a"]


def test_it_moves_a_visitor_little_after_three_answers_and_a_lot_after_twenty():
    votes = simulated_votes(individual_sd=0.0, n_raters=120, votes_each=10, seed=2)
    population = Population.fit(votes, seed=1, sigma=0.8)
    person = population.person(("left",))
    before = person.skills()[0]
    moves = []
    for answer in range(20):
        person.observe("m0", MODELS[1 + answer % 5], "a")
        moves.append(person.skills()[0] - before)
    assert 0 < moves[2] < 0.5 * moves[19]
    assert person.ranking()[0] == "m0"
    assert person.p_best()["m0"] > 0.9
    # Without room for individual taste (sigma near zero) only the fit's own uncertainty is left.
    stubborn = Population.fit(votes, seed=1, sigma=0.01).person(("left",))
    for answer in range(20):
        stubborn.observe("m0", MODELS[1 + answer % 5], "a")
    assert stubborn.skills()[0] - before < 0.2 * moves[19]


def test_it_estimates_how_much_individuals_vary_beyond_their_groups():
    same = Population.fit(simulated_votes(individual_sd=0.0, n_raters=150, votes_each=30, seed=4))
    varied = Population.fit(simulated_votes(individual_sd=1.2, n_raters=150, votes_each=30, seed=4))
    assert same.sigma <= 0.15
    assert varied.sigma >= 0.6
    assert varied.n_raters_for_sigma == 150
    assert max(varied.sigma_search, key=varied.sigma_search.get) == varied.sigma


def test_the_raters_marginal_over_every_model_is_the_one_over_the_models_they_met():
    """Every rater is solved over every model at once; a model a rater never met must add nothing, so
    the batched marginal equals the per-rater one over only the models met (as it was computed before)."""
    met = _Votes(
        a=np.array([0, 1, 0]),
        b=np.array([1, 2, 2]),
        constant=np.array([0.5, -0.5, 0.0]),
        mean_gap=np.array([0.2, -0.1, 0.4]),
    )
    models_of_six = np.array([0, 3, 5])  # the same votes, the models numbered among six
    spread = _Votes(
        a=models_of_six[met.a], b=models_of_six[met.b], constant=met.constant, mean_gap=met.mean_gap
    )
    for sigma in (0.05, 0.5, 2.0):
        alone, _ = _raters_log_marginal(_Stacked.of([met]), sigma, math.log(0.3), np.zeros((1, 3)))
        among_six, modes = _raters_log_marginal(_Stacked.of([spread]), sigma, math.log(0.3), np.zeros((1, 6)))
        assert among_six == pytest.approx(alone, abs=1e-9)
        assert modes[0, [1, 2, 4]] == pytest.approx(0.0)
    # Two raters solved together: the sum of each solved alone.
    both, _ = _raters_log_marginal(_Stacked.of([met, met]), 0.5, math.log(0.3), np.zeros((2, 3)))
    assert both == pytest.approx(
        2 * _raters_log_marginal(_Stacked.of([met]), 0.5, math.log(0.3), np.zeros((1, 3)))[0]
    )


def test_it_chooses_a_close_uncertain_pair_over_a_foregone_one(population):
    person = population.person(("left",))
    # m5 beats m0 on every board; m2 and m3 are close: the answer on m2-m3 is the informative one.
    assert person.choose([("m5", "m0"), ("m2", "m3")]) == 1
    assert person.choose([("m2", "m3"), ("m0", "m5")]) == 0


def test_it_gives_the_same_board_for_the_same_answers(population):
    first, second = population.person(("right",)), population.person(("right",))
    for person in (first, second):
        person.observe("m1", "m4", "a")
        person.observe("m2", "m3", "tie")
    assert first.p_best() == second.p_best()
    assert math.isclose(sum(first.p_best().values()), 1.0)
    candidates = [("m0", "m1"), ("m2", "m5"), ("m3", "m4")]
    assert first.choose(candidates) == second.choose(candidates)


def test_it_rejects_unknown_outcomes_and_models(population):
    person = population.person()
    with pytest.raises(ValueError):
        person.observe("m0", "m1", "i")
    with pytest.raises(ValueError):
        person.observe("m0", "nobody", "a")
    with pytest.raises(ValueError):
        Population.fit([(1, "m0", "m1", "win", ())])


def test_it_imports_without_django_settings():
    code = "import sys, stats.personalization as p; assert 'django' not in sys.modules; print(p.Population)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_it_learns_which_models_people_disagree_about():
    rng = np.random.default_rng(5)
    theta = np.linspace(-1.0, 1.0, len(MODELS))
    votes = []
    for rater in range(200):
        # People disagree only about m2: for some it is the best model, for others the worst.
        skills = theta + np.array([0, 0, rng.normal(0.0, 1.5), 0, 0, 0])
        for _ in range(30):
            i, j = rng.choice(len(MODELS), 2, replace=False)
            outcome = ("a", "tie", "b")[rng.choice(3, p=davidson(skills[i] - skills[j], math.log(0.3)))]
            votes.append((rater, MODELS[i], MODELS[j], outcome, ()))
    spread = Population.fit(votes, seed=1).taste_spread()
    assert max(spread, key=spread.get) == "m2"
    assert spread["m2"] > 2 * max(v for m, v in spread.items() if m != "m2")
    isotropic = Population.fit(votes, seed=1, taste="isotropic").taste_spread()
    assert max(isotropic.values()) - min(isotropic.values()) < 1e-9


def test_it_sizes_tastes_by_how_well_they_predict_raters_own_held_out_votes():
    same = Population.fit(simulated_votes(individual_sd=0.0, n_raters=150, votes_each=20, seed=6), seed=2)
    varied = Population.fit(simulated_votes(individual_sd=1.2, n_raters=150, votes_each=20, seed=6), seed=2)
    for population in (same, varied):
        search = population.taste_scale_search
        assert population.taste_scale == max(search, key=search.get)
    # Without individual tastes the cross-validation keeps a visitor (almost) on their profile board;
    # with them it keeps a taste of a real size.
    assert same.taste_scale <= 0.5
    assert varied.taste_scale >= 0.5
    assert min(varied.taste_spread().values()) > 2 * max(same.taste_spread().values())
    unscaled = Population.fit(
        simulated_votes(individual_sd=1.2, n_raters=150, votes_each=20, seed=6), seed=2, taste_scale_grid=()
    )
    assert unscaled.taste_scale == 1.0
    floor = 0.02**2 * np.eye(len(MODELS))  # keeps the prior invertible when the scale is 0
    assert np.allclose(varied.taste, varied.taste_scale * unscaled.taste + floor)


def test_it_asks_about_the_contenders_for_the_best_before_the_also_rans(population):
    # A visitor whose board is evenly spaced: m0-m1 and m4-m5 are equally close and equally uncertain, and
    # only m4 and m5 may be this person's best.
    person = Person(population, (), np.linspace(-1.0, 1.0, len(MODELS)), 0.64 * np.eye(len(MODELS)))
    assert person.choose([("m0", "m1"), ("m4", "m5")]) == 1
    assert person.choose([("m5", "m4"), ("m1", "m0")]) == 0
    # The doubt an answer removes counts every pair's order; weighing the top is what breaks the tie.
    weights = person._pair_weights()
    now, pairs = person._expected_doubt(weights), (np.array([0, 4]), np.array([1, 5]))
    bottom, top = now - person._expected_doubt(weights, *pairs)
    assert 0 < bottom < top
    unweighted = np.ones_like(weights)
    bottom, top = person._expected_doubt(unweighted) - person._expected_doubt(unweighted, *pairs)
    assert math.isclose(bottom, top, rel_tol=1e-6)


def styled_votes(*, n_raters: int, votes_each: int, seed: int):
    """Votes on equally good models where m0's replies are always the longer and raters prefer longer
    replies, the left group twice as much: the board as voted lifts m0 for its style alone. Returns the
    votes and each vote's style covariate (the length difference, A minus B)."""
    rng = np.random.default_rng(seed)
    preference = {"left": 1.2, "right": 0.6}
    votes, features = [], []
    for rater in range(n_raters):
        group = "left" if rater % 2 else "right"
        for _ in range(votes_each):
            i, j = rng.choice(len(MODELS), 2, replace=False)
            length = 1.0 if i == 0 else -1.0 if j == 0 else rng.uniform(-0.5, 0.5)
            p = davidson(preference[group] * length, math.log(0.3))
            votes.append((rater, MODELS[i], MODELS[j], ("a", "tie", "b")[rng.choice(3, p=p)], (group,)))
            features.append([length])
    return votes, np.array(features)


@pytest.fixture(scope="module")
def styled():
    votes, features = styled_votes(n_raters=200, votes_each=15, seed=6)
    as_voted = Population.fit(votes, seed=1, sigma=0.3)
    return as_voted, Population.fit(votes, features=features, seed=1, sigma=0.3)


def test_it_holds_reply_style_equal_given_each_votes_style(styled):
    as_voted, controlled = styled
    assert as_voted.n_features == 0 and controlled.n_features == 1
    assert as_voted.pooled_skills()[0] > 0.4  # m0 lifted by its long replies
    assert abs(controlled.pooled_skills()[0]) < 0.2
    assert abs(controlled.profile_skills(("left",))[0]) < 0.25
    # The left group's taste for length is the stronger one.
    assert controlled.style_gap(("left",), [1.0]) > controlled.style_gap(("right",), [1.0]) > 0.3
    assert controlled.style_gap(("left",), None) == 0.0


def test_it_reads_a_visitors_answer_net_of_its_replies_style(styled):
    _, controlled = styled
    start = controlled.person(("left",)).skills()[0]
    moved = {}
    for length in (1.0, 0.0, -1.0):
        person = controlled.person(("left",))
        person.observe("m0", "m1", "a", features=[length])
        moved[length] = person.skills()[0] - start
    # Preferring m0's reply says most about m0 when that reply was the shorter one, least when longer.
    assert moved[-1.0] > moved[0.0] > moved[1.0] > 0
    unstyled = controlled.person(("left",))
    unstyled.observe("m0", "m1", "a")
    assert unstyled.skills()[0] - start == pytest.approx(moved[0.0])
    with pytest.raises(ValueError, match="style covariates"):
        controlled.person(("left",)).observe("m0", "m1", "a", features=[1.0, 0.0])


def test_it_learns_the_same_tastes_whether_raters_are_solved_together_or_a_few_at_a_time(monkeypatch):
    # Raters' posteriors are solved in batches bounded in memory; where the batches fall must not matter.
    votes = simulated_votes(individual_sd=0.5, n_raters=60, votes_each=8, seed=4)
    together = Population.fit(votes, seed=2)
    monkeypatch.setattr("stats.personalization._BATCH_ENTRIES", 7 * len(MODELS) ** 2)  # 7 raters a batch
    in_batches = Population.fit(votes, seed=2)
    assert in_batches.taste_scale == together.taste_scale
    np.testing.assert_allclose(in_batches.taste, together.taste, atol=1e-7)
