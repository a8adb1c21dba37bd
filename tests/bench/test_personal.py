"""`bench personal`: personal boards against pooled and profile boards in simulation (small sizes)."""

import json

from django.core.management import call_command


def test_the_quick_benchmark_prints_every_figure_and_the_shrinkage_holds(capsys):
    call_command("bench", "personal", "--json", "--quick")
    figures = json.loads(capsys.readouterr().out)
    for key in (
        "acc_gain_k10",
        "acc_loss_k10_null",
        "adaptive_items_to_match_random_k20",
        "oracle_gain_k10",
        "settings",
    ):
        assert key in figures
    null = figures["settings"]["tau_ind=0.0"]
    assert set(null["by_k"]) == {"k0", "k5", "k10", "k20"}
    # Before any answer the personal board is the profile board; groups beat the pooled board.
    k0 = null["by_k"]["k0"]
    assert k0["acc_adaptive"] == k0["acc_profile"] == k0["acc_random"]
    assert k0["acc_profile"] > k0["acc_pooled"]
    # Without individual tastes, answers must not make the board worse: the shrinkage works.
    assert figures["acc_loss_k10_null"] <= 0.5
    assert max(null["sigma_estimated"]) <= 0.2
    # Each setting is simulated in several worlds, each fitted on its own panel.
    assert len(null["taste_scale"]) == figures["n_worlds"] >= 2
    # No board can beat knowing the visitor's true skills.
    headline = figures["settings"][f"tau_ind={figures['headline_tau_ind']}"]
    assert headline["by_k"]["k10"]["acc_oracle"] >= headline["by_k"]["k10"]["acc_adaptive"]
    assert len(null["tau_adaptive_curve"]) == 21
