"""The rigging detector (stats.rigging): honest raters pass, a rater or a crowd that moves one model's
standing far more than chance is held out with its reason."""

import numpy as np
from scipy import stats as scipy_stats

from stats.rigging import (
    CHANCE_PUSH_SHARE,
    CHANCE_Z2_QUARTILE,
    MAX_OVERDISPERSION,
    MIN_REFERENCE_VOTES_PER_MODEL,
    NETWORK_PUSH_Z,
    VoteLog,
    care_slopes,
    crowd_z,
    excess_table,
    expected_scores,
    fit_reference,
    over_neighbours,
    overdispersion,
    raters_hold_out,
    raters_judge,
    reference_raters,
)

N_MODELS = 12
THETA = np.linspace(1.0, -1.0, N_MODELS)


def honest_votes(rng, n_raters: int, per_rater: int, first_rater: int = 0) -> VoteLog:
    rater = np.repeat(np.arange(first_rater, first_rater + n_raters), per_rater)
    i = rng.integers(0, N_MODELS, len(rater))
    j = (i + rng.integers(1, N_MODELS, len(rater))) % N_MODELS
    p = 1 / (1 + np.exp(-(THETA[i] - THETA[j])))
    return VoteLog(rater, i, j, (rng.random(len(rater)) < p).astype(float))


def joined(*logs: VoteLog) -> VoteLog:
    return VoteLog(*(np.concatenate([getattr(log, f) for log in logs]) for f in ("rater", "i", "j", "score")))


def patient_crowd(rng, target: int, first_rater: int) -> tuple[VoteLog, np.ndarray]:
    """Five hundred raters of two votes each; one vote in five is for ``target`` over one of the two
    models ranked just above it (a campaign for one rank), the rest honest. The votes, and the raters who
    cast a rigged one."""
    rater = np.repeat(np.arange(first_rater, first_rater + 500), 2)
    cover = honest_votes(rng, 500, 2, first_rater=first_rater)
    rigged = rng.random(len(rater)) < 0.2
    opponents = rng.choice([target - 1, target - 2], len(rater))
    votes = VoteLog(
        rater,
        np.where(rigged, target, cover.i),
        np.where(rigged, opponents, cover.j),
        np.where(rigged, 1.0, cover.score),
    )
    return votes, np.unique(rater[rigged])


def true_fit(_log):
    return THETA, -np.inf


def test_it_gives_the_bradley_terry_davidson_expected_score_and_variance():
    mean, var = expected_scores(np.array([0.0, 0.0]), np.log(1.0), np.array([0]), np.array([1]))
    # Equal skills, nu = 1: win, tie and loss each 1/3.
    assert np.isclose(mean[0], 0.5) and np.isclose(var[0], 1 / 3 + 1 / 12 - 0.25)
    mean, var = expected_scores(np.array([1.0, 0.0]), -np.inf, np.array([0]), np.array([1]))
    assert np.isclose(mean[0], 1 / (1 + np.exp(-1))) and np.isclose(var[0], mean[0] * (1 - mean[0]))


def test_it_holds_out_no_honest_rater():
    rng = np.random.default_rng(1)
    log = honest_votes(rng, 2_000, 15)
    network = rng.integers(0, 300, 2_000)
    detection = raters_hold_out(log, fit=true_fit, n_raters=2_000, network=network, arrival=rng.random(2_000))
    assert not detection.held_out.any()


def test_it_holds_out_a_rater_who_votes_for_one_model_whenever_it_appears():
    rng = np.random.default_rng(2)
    honest = honest_votes(rng, 500, 20)
    target = N_MODELS - 2  # a weak model that honestly wins about a quarter of its battles
    opponents = rng.choice([m for m in range(N_MODELS) if m != target], 60)
    rigger = VoteLog(np.full(60, 500), np.full(60, target), opponents, np.ones(60))
    found = raters_judge(joined(honest, rigger), theta=THETA, log_nu=-np.inf, n_raters=501)
    assert set(found) == {500}
    assert found[500].model == target and found[500].z > 5 and found[500].unit == "rater"


def test_it_sees_votes_against_a_rival_in_battles_without_the_target():
    rng = np.random.default_rng(3)
    honest = honest_votes(rng, 500, 20)
    rival = 1
    opponents = rng.choice([m for m in range(N_MODELS) if m != rival], 60)
    rigger = VoteLog(np.full(60, 500), np.full(60, rival), opponents, np.zeros(60))
    found = raters_judge(joined(honest, rigger), theta=THETA, log_nu=-np.inf, n_raters=501)
    assert set(found) == {500} and found[500].model == rival and found[500].z < -5


def test_it_judges_small_raters_together_with_their_network_and_their_arrival_burst():
    rng = np.random.default_rng(4)
    honest = honest_votes(rng, 500, 20)
    target = N_MODELS - 2
    crowd = np.arange(500, 560)  # sixty raters of two votes each, far below the 20-vote threshold
    rater = np.repeat(crowd, 2)
    opponents = rng.choice([m for m in range(N_MODELS) if m != target], len(rater))
    sybils = VoteLog(rater, np.full(len(rater), target), opponents, np.ones(len(rater)))
    log = joined(honest, sybils)
    alone = raters_judge(log, theta=THETA, log_nu=-np.inf, n_raters=560)
    assert not alone
    network = np.r_[np.arange(500), np.full(60, 10_000)]
    by_network = raters_judge(log, theta=THETA, log_nu=-np.inf, n_raters=560, network=network)
    assert set(by_network) == set(crowd) and {f.unit for f in by_network.values()} == {"network"}
    arrival = np.r_[rng.uniform(0, 3600 * 99, 500), np.full(60, 3600 * 100 + 5.0)]  # honest ones before
    by_burst = raters_judge(log, theta=THETA, log_nu=-np.inf, n_raters=560, arrival=arrival)
    assert set(by_burst) == set(crowd) and {f.unit for f in by_burst.values()} == {"burst"}


def test_it_refits_without_the_held_out_raters_and_looks_again():
    rng = np.random.default_rng(5)
    honest = honest_votes(rng, 300, 20)
    target = N_MODELS - 1
    rigger = VoteLog(
        np.full(200, 300), np.full(200, target), rng.integers(0, N_MODELS - 1, 200), np.ones(200)
    )
    fits = []

    def counting_fit(log):
        fits.append(len(log))
        return THETA, -np.inf

    detection = raters_hold_out(joined(honest, rigger), fit=counting_fit, n_raters=301)
    assert detection.held_out[300] and detection.held_out.sum() == 1
    assert fits[0] == len(honest) + 200 and fits[1] == len(honest)


def test_it_spares_honest_newcomers_who_arrive_alone_in_a_flagged_hour():
    rng = np.random.default_rng(6)
    target = N_MODELS - 2
    newcomer = VoteLog(np.array([0]), np.array([target]), np.array([0]), np.array([1.0]))  # an upset
    crowd = np.arange(1, 61)
    rater = np.repeat(crowd, 2)
    opponents = rng.choice([m for m in range(N_MODELS) if m != target], len(rater))
    sybils = VoteLog(rater, np.full(len(rater), target), opponents, np.ones(len(rater)))
    network = np.r_[0, 1 + np.arange(60) % 6]  # the crowd: ten raters on each of six networks
    arrival = np.full(61, 3600 * 7 + 1.0)
    found = raters_judge(
        joined(newcomer, sybils), theta=THETA, log_nu=-np.inf, n_raters=61, network=network, arrival=arrival
    )
    assert set(found) == set(crowd)


def assert_block_sums_vote_by_vote(block: int, side_of, table=excess_table) -> tuple:
    """Each model's column in ``block`` of the ``table`` (the excess table unless given) is, rater by
    rater, the sum over their votes of (side[i] - side[j]) times the residual, and its variance that of
    (side[i] - side[j])^2 times each vote's; ``side_of(m, theta)`` gives that column's side of every
    model. Returns the log and theta."""
    rng = np.random.default_rng(7)
    log = honest_votes(rng, 5, 30)
    theta = rng.normal(0, 1, N_MODELS)
    excess, variance = table(log, theta, np.log(0.3), 5)
    mean, var = expected_scores(theta, np.log(0.3), log.i, log.j)
    for m in range(N_MODELS):
        side = side_of(m, theta)
        coef = side[log.i] - side[log.j]
        for rater in range(5):
            mine = log.rater == rater
            column = block * N_MODELS + m
            assert np.isclose(excess[rater, column], (coef * (log.score - mean))[mine].sum())
            assert np.isclose(variance[rater, column], (coef**2 * var)[mine].sum())
    return log, theta


def test_it_sums_each_models_excess_over_the_models_above_it_vote_by_vote():
    def side_of(m, theta):
        above = theta > theta[m]
        return np.where(np.arange(N_MODELS) == m, 1.0, np.where(above, -1.0, 0.0))

    assert_block_sums_vote_by_vote(1, side_of)


def test_it_catches_an_attacker_who_spreads_small_losses_over_every_rival_above_the_target():
    rng = np.random.default_rng(8)
    honest = honest_votes(rng, 500, 20)
    target = 9
    rivals = np.arange(target)  # every model above it
    # In each battle with a rival, the rival loses to a model ranked below the target.
    i = rng.choice(rivals, 150)
    j = rng.integers(target + 1, N_MODELS, 150)
    rigger = VoteLog(np.full(150, 500), i, j, np.zeros(150))
    found = raters_judge(joined(honest, rigger), theta=THETA, log_nu=-np.inf, n_raters=501)
    assert set(found) == {500} and found[500].over_above


def over_two_neighbours(neighbour_side: float):
    """``side_of`` for the block over the two neighbours above, each neighbour counting ``neighbour_side``."""

    def side_of(m, theta):
        rank = np.argsort(np.argsort(-theta))
        if rank[m] <= 2:  # nothing beyond its excess over every model above it
            return np.zeros(N_MODELS)
        neighbour = (rank < rank[m]) & (rank >= rank[m] - 2)
        return np.where(np.arange(N_MODELS) == m, 1.0, np.where(neighbour, neighbour_side, 0.0))

    return side_of


def test_it_sums_each_models_excess_over_its_two_neighbours_above_vote_by_vote():
    log, theta = assert_block_sums_vote_by_vote(2, over_two_neighbours(-1.0))
    excess, variance = excess_table(log, theta, np.log(0.3), 5, neighbours=0)
    assert not excess[:, 2 * N_MODELS :].any() and not variance[:, 2 * N_MODELS :].any()


def over_the_mean_of_neighbours(log, theta, log_nu, n_raters):
    """Each model's excess over the mean of its two neighbours above, from the excess table's own block."""
    excess, variance = excess_table(log, theta, log_nu, n_raters)
    own = slice(0, N_MODELS)
    return over_neighbours(log, theta, log_nu, excess[:, own], variance[:, own], mean=True)


def test_over_the_mean_of_its_neighbours_each_counts_half_vote_by_vote():
    assert_block_sums_vote_by_vote(0, over_two_neighbours(-0.5), table=over_the_mean_of_neighbours)


def test_it_catches_a_small_campaign_for_one_rank_that_no_single_model_shows():
    rng = np.random.default_rng(12)
    honest = honest_votes(rng, 500, 20)
    target, neighbours, cover = 6, (5, 4), 80
    # Nine battles each: the target beats a model below it, and each of the two models just above it
    # loses to one (each alone z < 4), among 80 honest-looking votes between the top four and the bottom five.
    campaign_i = np.repeat([target, *neighbours], 9)
    campaign_score = np.r_[np.ones(9), np.zeros(18)]
    cover_i, cover_j = rng.integers(0, 4, cover), rng.integers(7, N_MODELS, cover)
    p = 1 / (1 + np.exp(-(THETA[cover_i] - THETA[cover_j])))
    rigger = VoteLog(
        np.full(27 + cover, 500),
        np.r_[campaign_i, cover_i],
        np.r_[rng.integers(7, N_MODELS, 27), cover_j],
        np.r_[campaign_score, (rng.random(cover) < p).astype(float)],
    )
    log = joined(honest, rigger)
    found = raters_judge(log, theta=THETA, log_nu=-np.inf, n_raters=501)
    assert set(found) == {500} and found[500].model == target and found[500].over_neighbours
    assert not raters_judge(log, theta=THETA, log_nu=-np.inf, n_raters=501, neighbours=0)


def test_everyone_is_judged_against_a_fit_of_the_raters_nearly_alone_on_their_network():
    rng = np.random.default_rng(9)
    log = honest_votes(rng, 400, 10)
    network = np.r_[np.arange(300), np.full(100, 999)]  # 300 alone, 100 behind one network
    assert reference_raters(network, 400, 3).tolist() == [True] * 300 + [False] * 100
    fitted = []

    def recording_fit(kept):
        fitted.append(set(np.unique(kept.rater).tolist()))
        return THETA, -np.inf

    raters_hold_out(log, fit=recording_fit, n_raters=400, network=network)
    assert fitted[0] == set(range(300))
    # Were the reference raters to cast too few of the votes, every rater would be one.
    fitted.clear()
    raters_hold_out(log, fit=recording_fit, n_raters=400, network=np.r_[np.arange(50), np.full(350, 999)])
    assert fitted[0] == set(range(400))


def test_a_campaign_that_outvotes_the_reference_raters_cannot_make_everyone_the_reference():
    rng = np.random.default_rng(11)
    alone = honest_votes(rng, 300, 40)  # 12,000 votes from raters alone on their networks
    crowd = honest_votes(rng, 100, 310, first_rater=300)  # 31,000 behind one network: 72% of the votes
    log = joined(alone, crowd)
    network = np.r_[np.arange(300), np.full(100, 999)]
    assert alone.i.size >= MIN_REFERENCE_VOTES_PER_MODEL * N_MODELS
    assert fit_reference(log, network, 400, 3).tolist() == [True] * 300 + [False] * 100


def test_in_a_flagged_crowd_it_peels_off_each_group_that_pushes_its_own_model():
    rng = np.random.default_rng(10)
    honest = honest_votes(rng, 500, 20)
    crowd = np.arange(500, 560)
    rater = np.repeat(crowd, 2)
    # Half the crowd has model 10 beat model 11, the other half model 1 beat model 0: no model, alone or
    # against the models above it, is moved by both halves.
    pushes_low = rater < 530
    i = np.where(pushes_low, 10, 1)
    j = np.where(pushes_low, 11, 0)
    sybils = VoteLog(rater, i, j, np.ones(len(rater)))
    network = np.r_[np.arange(500), np.full(60, 10_000)]
    log = joined(honest, sybils)
    once = raters_judge(log, theta=THETA, log_nu=-np.inf, n_raters=560, network=network, peels=1)
    assert len(once) == 30
    peeled = raters_judge(log, theta=THETA, log_nu=-np.inf, n_raters=560, network=network)
    assert set(peeled) == set(crowd)
    assert peeled[500].model in (10, 11) and peeled[559].model in (0, 1)


def test_in_an_arrival_hour_it_judges_the_raters_who_came_with_others_from_their_own_network():
    rng = np.random.default_rng(13)
    target = N_MODELS - 2
    newcomers = honest_votes(rng, 200, 20)  # alone on their networks, in the same hour as the crowd
    crowd = np.arange(200, 209)  # three raters on each of three networks, two votes each
    rater = np.repeat(crowd, 2)
    opponents = rng.choice([m for m in range(N_MODELS) if m != target], len(rater))
    sybils = VoteLog(rater, np.full(len(rater), target), opponents, np.ones(len(rater)))
    network = np.r_[np.arange(200), 1_000 + np.arange(9) % 3]
    arrival = np.full(209, 3600 * 7 + 1.0)
    found = raters_judge(
        joined(newcomers, sybils), theta=THETA, log_nu=-np.inf, n_raters=209, network=network, arrival=arrival
    )
    # No network's three raters are enough alone; the honest hour around them would drown them.
    assert set(found) == set(crowd) and {f.unit for f in found.values()} == {"burst"}


def test_it_judges_every_rater_behind_a_shared_network_in_one_crowd():
    rng = np.random.default_rng(14)
    target = N_MODELS - 2
    alone = honest_votes(rng, 1_000, 15)  # the reference: one rater per network
    # Honest raters behind 40 shared networks, and a patient crowd: ten raters on each of 50
    # networks, one new rater per network per hour, each now and then voting the target over one of
    # the two models ranked just above it (a campaign for one rank).
    shared = honest_votes(rng, 600, 6, first_rater=1_000)
    sybils, riggers = patient_crowd(rng, target, first_rater=1_600)
    network = np.r_[np.arange(1_000), 5_000 + rng.integers(0, 40, 600), 9_000 + np.arange(500) % 50]
    arrival = np.r_[rng.uniform(0, 3600 * 100, 1_600), 3600 * 100 + 3600 * (np.arange(500) // 50)]
    log = joined(alone, shared, sybils)
    judged = {"theta": THETA, "log_nu": -np.inf, "n_raters": 2_100, "network": network, "arrival": arrival}
    found = raters_judge(log, **judged)
    # No network alone and no arrival hour shows the crowd: only all shared networks together do.
    assert {f.unit for f in found.values()} == {"networks"}
    assert not raters_judge(log, **judged, crowd_of_networks=False)
    # Networks are taken until the rest of the crowd is unremarkable, not only until it is unflagged.
    assert np.isin(riggers, list(found)).mean() > 0.6
    assert not any(rater < 1_600 for rater in found)


def test_the_crowd_of_networks_passes_shared_networks_that_all_differ_from_raters_alone():
    # Raters behind shared networks may differ from those alone on theirs for reasons no campaign
    # explains: here all of them are less careful (skill differences at 80%), too little for any one
    # network of a dozen raters to show, plain in all 250 networks together. It moves each model's
    # excess over the sum of its two neighbours' with the model's distance from the middle, and its
    # excess over their mean hardly at all: the crowd of networks is judged on the second.
    rng = np.random.default_rng(15)
    alone = honest_votes(rng, 1_000, 15)
    rater = np.repeat(np.arange(1_000, 4_000), 20)
    i = rng.integers(0, N_MODELS, len(rater))
    j = (i + rng.integers(1, N_MODELS, len(rater))) % N_MODELS
    careless = 1 / (1 + np.exp(-0.8 * (THETA[i] - THETA[j])))
    shared = VoteLog(rater, i, j, (rng.random(len(rater)) < careless).astype(float))
    network = np.r_[np.arange(1_000), 5_000 + np.arange(3_000) % 250]
    log = joined(alone, shared)

    def together(excess, variance):
        return crowd_z(excess, variance, np.arange(1_000, 4_000))

    assert np.abs(together(*excess_table(log, THETA, -np.inf, 4_000))).max() > 10  # they do differ
    over_sum = together(*excess_table(log, THETA, -np.inf, 4_000))[2 * N_MODELS :]
    assert np.abs(over_sum).max() > 6  # over the sum of the neighbours too
    assert np.abs(together(*over_the_mean_of_neighbours(log, THETA, -np.inf, 4_000))).max() < 4
    assert not raters_judge(log, theta=THETA, log_nu=-np.inf, n_raters=4_000, network=network)


def test_overdispersion_is_one_under_chance_and_not_moved_by_a_campaign_on_a_few_models():
    assert np.isclose(CHANCE_Z2_QUARTILE, scipy_stats.chi2.ppf(0.25, 1), atol=1e-5)
    assert np.isclose(CHANCE_PUSH_SHARE, scipy_stats.norm.sf(NETWORK_PUSH_Z), atol=1e-5)
    chance = np.random.default_rng(16).normal(size=(200, 60))
    # About 1 (a quartile of 60 columns runs a few percent high).
    assert 0.95 < np.median(np.quantile(chance**2, 0.25, axis=1) / CHANCE_Z2_QUARTILE) < 1.15
    # z spread 1.3 times as wide: 1.69.
    assert 1.5 < np.median(overdispersion(1.3 * chance, votes=10_000)) < 1.9
    campaign = chance.copy()
    campaign[:, :3] = 20.0  # a target and its two neighbours, far beyond chance
    assert np.median(overdispersion(campaign, votes=10_000) / overdispersion(chance, votes=10_000)) < 1.05


def test_overdispersion_is_capped_so_a_crowd_cannot_buy_its_way_past_the_threshold():
    # A crowd that votes some fixed order in all its other battles spreads its columns as wide as it
    # likes; were that not capped, it could grow any push on its target past unseen.
    wide = 50 * np.random.default_rng(17).normal(size=(10, 60))
    assert (overdispersion(wide, votes=10_000) == MAX_OVERDISPERSION).all()
    # Under ten votes a model its spread is mostly noise, and is not read at all.
    assert (overdispersion(wide, votes=599) == 1.0).all()


def test_a_big_honest_network_with_a_taste_of_its_own_passes():
    # Three hundred honest raters behind one network (a campus, say) who all like the even-numbered
    # models a little better (a quarter of a skill unit): their network's z reaches about 6 on some
    # model, as a campaign's would, but it spreads over every model, which a campaign for one rank does
    # not, and the check judges the network against its own spread.
    rng = np.random.default_rng(19)  # 25 of the 28 seeds from 18 to 47 whose network is flagged without it
    alone = honest_votes(rng, 1_000, 15)
    rater = np.repeat(np.arange(1_000, 1_300), 20)
    i = rng.integers(0, N_MODELS, len(rater))
    j = (i + rng.integers(1, N_MODELS, len(rater))) % N_MODELS
    skill = THETA + 0.25 * np.where(np.arange(N_MODELS) % 2, -1, 1)
    taste = VoteLog(
        rater, i, j, (rng.random(len(rater)) < 1 / (1 + np.exp(-(skill[i] - skill[j])))).astype(float)
    )
    network = np.r_[np.arange(1_000), np.full(300, 5_000)]
    judged = {"theta": THETA, "log_nu": -np.inf, "n_raters": 1_300, "network": network}
    log = joined(alone, taste)
    assert "network" in {f.unit for f in raters_judge(log, **judged, overdispersed=False).values()}
    assert not raters_judge(log, **judged)


def test_care_slopes_are_how_the_expected_score_moves_as_skill_differences_widen():
    log = VoteLog(np.zeros(3, dtype=int), np.array([0, 3, 11]), np.array([5, 2, 0]), np.zeros(3))
    _, var = expected_scores(THETA, -np.inf, log.i, log.j)
    # Bradley-Terry without ties: d/dk of p(k (theta_i - theta_j)) at k = 1 is the difference times p(1 - p).
    assert np.allclose(care_slopes(THETA, -np.inf, log), (THETA[log.i] - THETA[log.j]) * var)
    with_ties = care_slopes(THETA, np.log(0.3), log)
    wider, _ = expected_scores(1.01 * THETA, np.log(0.3), log.i, log.j)
    assert np.allclose(
        with_ties, (wider - expected_scores(THETA, np.log(0.3), log.i, log.j)[0]) / 0.01, rtol=0.02
    )


def big_network_of(score_of, seed: int, raters: int) -> tuple[VoteLog, dict]:
    """A thousand honest raters alone on their networks and ``raters`` raters of 20 votes behind one
    network, whose votes ``score_of(rng, i, j)`` gives; the log and ``raters_judge``'s arguments."""
    rng = np.random.default_rng(seed)
    alone = honest_votes(rng, 1_000, 15)
    rater = np.repeat(np.arange(1_000, 1_000 + raters), 20)
    i = rng.integers(0, N_MODELS, len(rater))
    j = (i + rng.integers(1, N_MODELS, len(rater))) % N_MODELS
    network = np.r_[np.arange(1_000), np.full(raters, 5_000)]
    judged = {"theta": THETA, "log_nu": -np.inf, "n_raters": 1_000 + raters, "network": network}
    return joined(alone, VoteLog(rater, i, j, score_of(rng, i, j))), judged


def test_a_big_honest_network_less_careful_than_the_rest_passes():
    # A thousand raters behind one network who all tell models apart less surely (skill differences at
    # 80%): every model's excess moves with its distance from the middle, which no campaign for one
    # model does, and summed over models above it that is past the threshold for many. The check takes
    # the network's own care out of its columns first.
    def careless(rng, i, j):
        return (rng.random(len(i)) < 1 / (1 + np.exp(-0.8 * (THETA[i] - THETA[j])))).astype(float)

    log, judged = big_network_of(careless, seed=0, raters=1_000)
    assert "network" in {f.unit for f in raters_judge(log, **judged, careless_networks=False).values()}
    assert not raters_judge(log, **judged)


def test_an_omnipresent_campaign_on_a_big_network_is_not_taken_for_care():
    # Every model above the target loses to those below it, in a network of 150 raters: read as care,
    # that is k - 1 of about -3, skill differences not shrunk but turned over. Only up to MAX_CARE is
    # taken out, and every one of its raters is still held out (without the cap, 6 stay on the board).
    target = 7

    def omnipresent(rng, i, j):
        score = (rng.random(len(i)) < 1 / (1 + np.exp(-(THETA[i] - THETA[j])))).astype(float)
        score[(i < target) & (j != target)] = 0.0
        score[(j < target) & (i != target)] = 1.0
        return score

    log, judged = big_network_of(omnipresent, seed=0, raters=150)
    assert len(raters_judge(log, **judged)) == 150


def test_the_crowd_of_networks_weighs_each_network_by_its_own_spread():
    # Four big honest networks (250 raters each, offices say), each with a small taste of its own (sd 0.1
    # of a skill unit per model): none is held out alone, judged against its own spread, but together
    # their tastes lean on some model and its neighbours as a campaign's would. Each network's votes weigh
    # in the crowd's variance as widely as that network spreads, so that lean is not taken for one.
    rng = np.random.default_rng(14)  # of seeds 0-59, the crowd took honest networks on 4 without it, 1 with
    alone = honest_votes(rng, 1_000, 15)
    rater = np.repeat(np.arange(1_000, 2_000), 20)
    network_of = (rater - 1_000) // 250
    taste = rng.normal(0.0, 0.1, (4, N_MODELS))
    i = rng.integers(0, N_MODELS, len(rater))
    j = (i + rng.integers(1, N_MODELS, len(rater))) % N_MODELS
    gap = THETA[i] - THETA[j] + taste[network_of, i] - taste[network_of, j]
    offices = VoteLog(rater, i, j, (rng.random(len(rater)) < 1 / (1 + np.exp(-gap))).astype(float))
    network = np.r_[np.arange(1_000), 5_000 + np.arange(1_000) // 250]
    judged = {"theta": THETA, "log_nu": -np.inf, "n_raters": 2_000, "network": network}
    log = joined(alone, offices)
    assert {f.unit for f in raters_judge(log, **judged, overdispersed=False).values()} == {"networks"}
    assert not raters_judge(log, **judged)


def test_it_counts_the_networks_that_each_push_a_model_a_little_where_their_sum_drowns():
    # The patient crowd of fifty networks, among 3,000 honest raters behind 300 shared networks: summed
    # with all of them its push is lost in their noise, but far more of its networks than chance would
    # give each push the target over its neighbours past z = 2.
    rng = np.random.default_rng(21)  # of seeds 20-29, flagged on 3, none by the sum
    target = N_MODELS - 2
    alone = honest_votes(rng, 1_000, 15)
    shared = honest_votes(rng, 3_000, 10, first_rater=1_000)
    sybils, riggers = patient_crowd(rng, target, first_rater=4_000)
    network = np.r_[np.arange(1_000), 5_000 + rng.integers(0, 300, 3_000), 9_000 + np.arange(500) % 50]
    log = joined(alone, shared, sybils)
    judged = {"theta": THETA, "log_nu": -np.inf, "n_raters": 4_500, "network": network}
    assert not raters_judge(log, **judged, pushing_networks=False)
    found = raters_judge(log, **judged)
    assert {(f.unit, f.model, f.over_neighbours) for f in found.values()} == {("pushing", target, True)}
    assert np.isin(riggers, list(found)).mean() > 0.2
    assert sum(rater < 4_000 for rater in found) <= 0.01 * 3_000
