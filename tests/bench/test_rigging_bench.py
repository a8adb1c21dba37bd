"""`bench rigging --quick`: every figure printed, from a real (small) run. No database."""

import json

import numpy as np
from django.core.management import call_command

from bench.rigging import (
    assigned_stream,
    attack_stream,
    campaign_on_populus,
    honest_practice,
    rank_of,
    simulate_honest,
)


def test_the_quick_benchmark_prints_every_figure_as_json(capsys):
    call_command("bench", "rigging", "--json", "--quick")
    figures = json.loads(capsys.readouterr().out)
    for key in ("min_cost_ratio", "attackers_held_out", "honest_held_out"):
        assert key in figures
    rows = {key: value for key, value in figures.items() if isinstance(value, dict)}
    assert {key.split(".")[1] for key in rows} == {"one_rank", "top_3"}
    for row in rows.values():
        assert {"plain_votes", "cost_ratio", "attackers_held_out", "honest_held_out"} <= set(row)
        assert 0 <= row["attackers_held_out"] <= 1 and 0 <= row["honest_held_out"] <= 1
    assert figures["min_cost_ratio"] > 0 and 0 <= figures["honest_held_out"] <= 1


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
