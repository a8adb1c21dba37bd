"""bench.parallel: seeds over fresh processes give what a plain loop gives, and leave the environment as
they found it."""

import os

from bench.parallel import seeds_map


def test_it_runs_the_tasks_in_order_over_processes_and_restores_the_blas_settings(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert seeds_map(abs, [-3, 1, -2], processes=2) == [3, 1, 2]
    assert seeds_map(abs, [-3, 1, -2], processes=1) == [3, 1, 2]
    assert os.environ["OMP_NUM_THREADS"] == "4"
    assert "OPENBLAS_NUM_THREADS" not in os.environ
