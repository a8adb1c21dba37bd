"""`bench rigging --quick`: every figure printed, from a real (small) run. No database."""

import json

import numpy as np
from django.core.management import call_command

from bench import rigging
from bench.rigging import (
    assigned_stream,
    attack_stream,
    campaign_on_populus,
    honest_practice,
    lift,
    plain_skills,
    rank_of,
    simulate_honest,
    votes_to_move,
)


def test_the_quick_benchmark_prints_every_figure_as_json(capsys):
    call_command("bench", "rigging", "--json", "--quick")
    figures = json.loads(capsys.readouterr().out)
    for key in (
        "min_cost_ratio",
        "attackers_held_out",
        "honest_held_out",
        "riggers_held_out",
        "attackers_held_out_counted",
        "honest_held_out_counted",
    ):
        assert figures[key] >= 0
    rows = {key: value for key, value in figures.items() if key.endswith((".one_rank", ".top_3"))}
    settling = figures["settling"]
    assert settling["publishes"] == rigging.SETTLING_PUBLISHES
    assert settling["rank_rises_settled"] <= settling["rank_rises_plain"]
    assert {key.split(".")[1] for key in rows} == {"one_rank", "top_3"}
    for row in rows.values():
        assert {"plain_votes", "cost_ratio", "attackers_held_out", "honest_held_out", "campaign_z"} <= set(
            row
        )
        assert 0 <= row["attackers_held_out"] <= 1 and 0 <= row["honest_held_out"] <= 1
        assert 0 <= row["attackers_held_out_counted"] <= 1 and 0 <= row["honest_held_out_counted"] <= 1
        assert row["attackers_counted"] <= row["attackers"]
    assert figures["honest_raters_counted"] < figures["honest_raters"]
    for key, row in rows.items():
        if key.endswith(".one_rank"):
            targets = row["targets"]
            assert len(targets) == len(rigging.QUICK_ONE_RANK_TARGET_OFFSETS)
            assert {target["pace"] for target in targets} <= set(rigging.PACES) == set(figures["paces"])
            assert row["attackers"] == sum(target["attackers"] for target in targets)
            assert row["cost_ratio_min"] <= row["cost_ratio"]
    assert figures["min_cost_ratio_any_target"] <= figures["min_cost_ratio"]
    noise = figures["one_rank_honest_noise"]
    one_rank_costs = {
        row["targets"][0]["plain_votes"] for key, row in rows.items() if key.endswith(".one_rank")
    } - {None}
    assert one_rank_costs <= {row["votes"] for row in noise}
    for row in noise:
        assert row["draws"] == rigging.QUICK_NOISE_DRAWS
        for board in ("plain", "populus"):
            assert row[f"{board}_moved"] == row[f"{board}_up"] + row[f"{board}_down"] <= 1
    assert figures["min_cost_ratio"] > 0 and 0 <= figures["honest_held_out"] <= 1
    moves = {key: value for key, value in figures.items() if key.endswith(".move")}
    assert set(moves) == {f"{name}.move" for name in rigging.QUICK_MOVE_ATTACKS}
    for row in moves.values():
        assert len(row["pairs"]) == len(rigging.QUICK_MOVE_TARGET_OFFSETS)
        assert row["plain_votes_median"] > 0 and row["cost_ratio_median"] >= row["cost_ratio_min"] > 0
    assert figures["min_movement_cost_ratio"] > 0
    differ = figures["honest_held_out_shared_networks_differ"]
    assert set(differ) == set(rigging.SHARED_NETWORKS_DIFFER) and all(0 <= v <= 1 for v in differ.values())
    assert 0 < figures["movement_amount_plain"] < 1 and 0 < figures["movement_amount_populus"] < 1


def test_the_simulated_log_has_the_size_and_ties_asked_for():
    honest = simulate_honest(n_models=20, n_votes=20_000, seed=3)
    assert len(honest.log) == 20_000 and honest.log.rater.max() + 1 == honest.n_raters
    ties = (honest.log.score == 0.5).mean()
    assert 0.05 < ties < 0.2
    assert len(np.unique(honest.network)) < honest.n_raters  # some networks are shared


def test_a_perfect_target_only_attacker_always_votes_for_the_target():
    stream = attack_stream(
        "target_only", target=4, rivals=np.array([3]), accuracy=1.0, n_models=10, length=500, seed=0
    )
    assert ((stream.i == 4) | (stream.j == 4)).all()
    assert (np.where(stream.i == 4, stream.score, 1 - stream.score) == 1).all()
    assert rank_of(np.array([3.0, 2.0, 1.0]), 2) == 3


def test_on_populus_an_attacker_pays_for_every_battle_after_practice_but_skips_for_free_without():
    theta = np.linspace(1, -1, 20)
    assigned = assigned_stream(
        "omnipresent", target=10, rivals=np.array([9, 8, 7]), accuracy=1.0, theta=theta, length=5_000, seed=1
    )
    free = campaign_on_populus(assigned, per_rater=5, practice=0)
    # With nothing to sit through, each rater leaves at once until a battle of use comes.
    starts = np.r_[0, np.flatnonzero(np.diff(free.rater)) + 1]
    assert assigned.useful[free.battle[starts]].all()
    assert not free.practice.any()

    paid = campaign_on_populus(assigned, per_rater=5, practice=1)
    useful_share = assigned.useful.mean()
    counted = paid.battle[~paid.practice]
    # After its practice vote a rater either leaves or votes the next five battles whatever they are, so
    # beyond each rater's first counted battle the useful share is the stream's own.
    later = counted[np.r_[False, np.diff(paid.rater[~paid.practice]) == 0]]
    assert abs(assigned.useful[later].mean() - useful_share) < 0.05
    # Every rater votes its practice battle first; the battles are taken in the order they come.
    assert (np.diff(paid.battle) > 0).all()
    assert paid.practice[np.r_[0, np.flatnonzero(np.diff(paid.rater)) + 1]].all()


def test_each_honest_raters_first_votes_are_practice():
    honest = simulate_honest(n_models=10, n_votes=2_000, seed=4)
    first = honest_practice(honest, 1)
    assert first.sum() == honest.n_raters
    assert (honest.log.rater[first] == np.arange(honest.n_raters)).all()
    assert not honest_practice(honest, 0).any()


def test_a_campaign_of_no_votes_moves_nothing_and_one_that_never_moves_is_never_enough():
    honest = simulate_honest(n_models=10, n_votes=5_000, seed=5)
    order = np.argsort(-plain_skills(honest.log, 10))
    target, above = int(order[5]), int(order[4])
    stream = attack_stream(
        "target_only", target=target, rivals=order[4:5], accuracy=1.0, n_models=10, length=400, seed=1
    )
    start = plain_skills(honest.log, 10)
    start_gap = start[target] - start[above]
    unmoved = plain_skills(rigging._plain_log(honest, stream, 0), 10)
    assert lift(unmoved, target, above, start_gap) == 0
    moved = plain_skills(rigging._plain_log(honest, stream, 400), 10)
    assert lift(moved, target, above, start_gap) > 0
    assert votes_to_move(lambda votes: start, target=target, above=above, amount=0.01, limit=1_000) is None


def test_votes_to_move_finds_a_known_shift_whether_the_target_rises_or_its_rival_falls():
    base = np.array([1.0, 0.5, 0.4, 0.0])

    def target_rises(votes):
        return base + np.array([0, 0, 0.001, 0]) * votes

    def rival_falls(votes):
        return base - np.array([0, 0.002, 0, 0]) * votes

    # 0.1 of lift at 0.001 a vote: 100 votes (the search stops within 2%).
    assert 98 <= votes_to_move(target_rises, target=2, above=1, amount=0.1, limit=10_000) <= 102
    assert 49 <= votes_to_move(rival_falls, target=2, above=1, amount=0.1, limit=10_000) <= 51
    assert votes_to_move(target_rises, target=2, above=1, amount=0.1, limit=50) is None
    # A limit between two steps (90 and 112 votes) is itself tried: "not within the limit" holds at it.
    assert 98 <= votes_to_move(target_rises, target=2, above=1, amount=0.1, limit=105) <= 102
    assert votes_to_move(target_rises, target=2, above=1, amount=0.1, limit=99) is None


def test_the_search_finds_a_campaign_that_reaches_before_the_check_holds_it_out():
    # As a patient crowd did: the target lifted at 3,072 votes, the crowd held out at 4,096, the target
    # lifted again only with far more. A search by doublings (2,048, then 4,096) reported 20,000 or more.
    def reaches(votes):
        return 3_000 <= votes < 3_900 or votes >= 20_000

    assert 3_000 <= rigging._votes_needed(reaches, 100_000) <= 3_060


def test_a_campaign_as_large_as_the_honest_log_holds_out_no_honest_rater_and_most_attackers():
    honest = simulate_honest(n_models=20, n_votes=20_000, seed=0)
    order = np.argsort(-plain_skills(honest.log, 20))
    target = int(order[10])
    assigned = assigned_stream(
        "omnipresent",
        target=target,
        rivals=order[:10][::-1],
        accuracy=1.0,
        theta=honest.theta,
        length=60_000,
        seed=2,
    )
    campaign = campaign_on_populus(assigned, per_rater=1, practice=1)
    shares = {}
    for name, detector in (("earlier", rigging.EARLIER_DETECTOR), ("now", None)):
        _, attackers_held, attackers, honest_held = rigging._populus_board(
            honest, assigned, campaign, 20_000, networks=5, practice=1, detector=detector
        )
        shares[name] = (attackers_held.sum() / attackers, honest_held.mean())
    # Judged against a fit of every vote, which the campaign drags, honest crowds looked rigged.
    assert shares["earlier"][1] > 0.05
    assert shares["now"][1] <= 0.01 and shares["now"][0] >= 0.9 > shares["earlier"][0]


def test_the_campaign_judged_as_one_crowd_shows_a_large_campaign_and_not_a_few_votes():
    honest = simulate_honest(n_models=20, n_votes=20_000, seed=0)
    order = np.argsort(-plain_skills(honest.log, 20))
    assigned = assigned_stream(
        "omnipresent",
        target=int(order[10]),
        rivals=order[7:10][::-1],
        accuracy=1.0,
        theta=honest.theta,
        length=20_000,
        seed=2,
    )
    campaign = campaign_on_populus(assigned, per_rater=5, practice=1)
    few = rigging.campaign_z(honest, assigned, campaign, 10, networks=5)
    many = rigging.campaign_z(honest, assigned, campaign, 3_000, networks=5)
    assert 0 < few < 5 < 10 < many


def test_riggers_are_the_attackers_who_cast_a_counted_vote_of_use_on_the_target():
    theta = np.linspace(1, -1, 20)
    assigned = assigned_stream(
        "target_only", target=10, rivals=np.array([9]), accuracy=0.7, theta=theta, length=3_000, seed=3
    )
    holds_target = (assigned.log.i == 10) | (assigned.log.j == 10)
    assert np.array_equal(assigned.on_target, holds_target)
    # The identifier misreads some battles as holding the target: of use to the attacker, not on target.
    assert (assigned.useful & ~holds_target).any()
    campaign = campaign_on_populus(assigned, per_rater=3, practice=1)
    votes = len(campaign.battle)
    rigged = rigging.riggers(assigned, campaign, votes)
    misread_only = 0
    for rater in range(campaign.rater.max() + 1):
        mine = campaign.rater == rater
        counted_use = assigned.useful[campaign.battle[mine]] & ~campaign.practice[mine]
        on_target = holds_target[campaign.battle[mine]]
        assert rigged[rater] == (counted_use & on_target).any()
        misread_only += counted_use.any() and not rigged[rater]
    # Raters who sat through their practice battle and left, or whose only vote of use was a misread
    # battle's, cast nothing that moves the target.
    assert misread_only > 0
    assert 0 < rigged.sum() < len(rigged)
    assert not rigging.riggers(assigned, campaign, 0).any()


def test_fresh_honest_raters_join_the_log_as_new_raters_drawn_the_same_way():
    honest = simulate_honest(n_models=10, n_votes=3_000, seed=7)
    grown = rigging.with_fresh_honest(honest, n_votes=2_000, seed=1)
    assert rigging.with_fresh_honest(honest, n_votes=0, seed=1) is honest
    assert len(grown.log) == 5_000 and (grown.log.rater[:3_000] == honest.log.rater).all()
    new = grown.log.rater[3_000:]
    assert new.min() == honest.n_raters and new.max() + 1 == grown.n_raters
    assert len(grown.network) == len(grown.arrival) == grown.n_raters
    # New raters are either behind one of the log's shared networks or alone on a network of their own.
    fresh_networks = grown.network[honest.n_raters :]
    shared = fresh_networks < 500
    assert 0 < shared.mean() < 0.6
    assert not np.isin(fresh_networks[~shared], honest.network).any()
    assert 0.05 < (grown.log.score[3_000:] == 0.5).mean() < 0.2


def test_honest_votes_move_the_target_rank_never_when_none_are_added_and_always_when_many_are():
    honest = simulate_honest(n_models=10, n_votes=2_000, seed=6)
    target = int(np.argsort(-plain_skills(honest.log, 10))[5])
    rows = rigging.one_rank_honest_noise(
        honest,
        rank={name: lambda board: rank_of(board[0], target, board[1]) for name in ("plain", "populus")},
        sizes=(0, 20_000),
        draws=3,
        seed=1,
        practice=1,
    )
    none, many = rows
    assert none["votes"] == 0 and none["plain_moved"] == none["populus_moved"] == 0
    # Ten times the log narrows every interval: the shown rank changes in every draw, on both boards.
    assert many["plain_moved"] == many["populus_moved"] == 1
    assert many["plain_up"] + many["plain_down"] == 1


def test_the_counted_shares_leave_out_raters_who_voted_only_practice_battles():
    theta = np.linspace(1, -1, 20)
    assigned = assigned_stream(
        "target_only", target=10, rivals=np.array([9]), accuracy=1.0, theta=theta, length=3_000, seed=3
    )
    campaign = campaign_on_populus(assigned, per_rater=3, practice=1)
    n_attackers = campaign.rater.max() + 1
    counted = rigging.with_counted_vote(campaign.rater, campaign.practice, n_attackers)
    votes_per_rater = np.bincount(campaign.rater, minlength=n_attackers)
    # A rater of this campaign either leaves after its practice vote or votes three more battles.
    assert (counted == (votes_per_rater > 1)).all() and 0 < counted.sum() < n_attackers
    honest = simulate_honest(n_models=10, n_votes=2_000, seed=4)
    honest_counted = rigging.with_counted_vote(honest.log.rater, honest_practice(honest, 1), honest.n_raters)
    assert (honest_counted == (np.bincount(honest.log.rater) > 1)).all()
    assert rigging.with_counted_vote(honest.log.rater, honest_practice(honest, 0), honest.n_raters).all()


def test_a_patient_attacker_sends_one_new_rater_per_network_per_hour_and_a_hasty_one_the_cap():
    honest = simulate_honest(n_models=10, n_votes=2_000, seed=4)
    theta = np.linspace(1, -1, 10)
    assigned = assigned_stream(
        "target_only", target=5, rivals=np.array([4]), accuracy=1.0, theta=theta, length=3_000, seed=3
    )
    campaign = campaign_on_populus(assigned, per_rater=1, practice=1)
    votes = len(campaign.battle)
    for pace, per_network_hour in ((1, 1), (rigging.NEW_RATERS_PER_NETWORK_HOUR, 20)):
        _, network, arrival, n_attackers = rigging._with_campaign(
            honest, assigned, campaign, votes, networks=5, pace=pace
        )
        attackers = slice(honest.n_raters, None)
        hour = (arrival[attackers] // 3600).astype(int)
        busiest = np.unique(np.c_[network[attackers], hour], axis=0, return_counts=True)[1].max()
        assert busiest == per_network_hour
        assert n_attackers > 100 and len(np.unique(network[attackers])) == 5


def test_settling_ranks_costs_nothing_without_a_margin_and_stops_every_rise_with_a_huge_one():
    honest = simulate_honest(n_models=12, n_votes=6_000, seed=2)
    plain = rigging.settling_cost(honest, publishes=6, margin_share=0.0, practice=1)
    assert plain["shown_differs_from_plain"] == 0 and plain["largest_rank_difference"] == 0
    assert plain["rank_changes_settled"] == plain["rank_changes_plain"] > 0
    assert plain["rank_rises_settled"] == plain["rank_rises_plain"] > 0
    stuck = rigging.settling_cost(honest, publishes=6, margin_share=100.0, practice=1)
    assert stuck["rank_rises_settled"] == 0 < stuck["shown_differs_from_plain"]


def test_raters_behind_shared_networks_can_be_made_less_careful_than_those_alone():
    plain = simulate_honest(n_models=20, n_votes=20_000, seed=3)
    careless = simulate_honest(n_models=20, n_votes=20_000, seed=3, shared_differ=(0.5, 0.0))
    assert np.array_equal(plain.network, careless.network) and np.array_equal(plain.log.i, careless.log.i)

    def better_wins(honest, behind_shared: bool) -> float:
        log = honest.log
        votes = (honest.network[log.rater] < 500) == behind_shared
        decided = votes & (log.score != 0.5)
        better = honest.theta[log.i] > honest.theta[log.j]
        return float(((log.score == 1.0) == better)[decided].mean())

    assert better_wins(careless, True) < better_wins(plain, True) - 0.05
    assert better_wins(careless, False) == better_wins(plain, False)
