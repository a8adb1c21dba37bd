"""`bench scale --quick`: a generated Arena log goes through the real import_battles --create, fit, a
real server's first API and page answers, at two sizes; the figures come back with the keys the issue asks
for, and the scratch databases are gone afterwards."""

import io
import json
import math

import psycopg
import pytest
from django.core.management import CommandError, call_command

from bench import scale
from bench.arena_log import arena_log_write

KEYS = {
    "import_rows_per_s",
    "import_total_s",
    "fit_s",
    "fit_peak_mb",
    "api_board_cold_ms",
    "page_cold_ms",
    "page_kb",
}


def scratch_databases() -> list[str]:
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as connection:
        rows = connection.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", [scale.DATABASE_PREFIX + "%"]
        )
        return [name for (name,) in rows]


def test_the_quick_benchmark_runs_a_log_through_the_real_commands_at_two_sizes():
    before = scratch_databases()
    result = scale.run(quick=True)
    assert set(result["sizes"]) == set(scale.QUICK_SIZES)
    for name, figures in result["sizes"].items():
        assert set(figures) >= KEYS, name
        assert figures["battles"] == scale.QUICK_SIZES[name]
        assert all(figures[key] > 0 for key in KEYS), figures
        assert 0.2 < figures["tie_share"] < 0.4
    assert set(result) >= KEYS
    assert result["growth"]["battles_ratio"] == 10
    assert scratch_databases() == before


def test_the_generated_log_is_arena_shaped(tmp_path):
    path = tmp_path / "log.jsonl"
    facts = arena_log_write(path, battles=20_000, models=30, seed=3)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 20_000 and set(rows[0]) == {"model_a", "model_b", "winner", "anony", "tstamp"}
    assert math.isclose(sum(row["winner"] == "tie" for row in rows) / len(rows), facts["tie_share"])
    assert 0.25 < facts["tie_share"] < 0.35
    pairs: dict[frozenset, int] = {}
    for row in rows:
        key = frozenset((row["model_a"], row["model_b"]))
        pairs[key] = pairs.get(key, 0) + 1
    counts = sorted(pairs.values())
    assert counts[-1] > 20 * counts[len(counts) // 10]  # the busiest pairs far busier than the quiet ones
    assert all(row["model_a"] != row["model_b"] for row in rows)


def test_sizes_picks_which_sizes_to_measure(monkeypatch):
    asked = []
    monkeypatch.setattr(scale, "run", lambda **kwargs: asked.append(kwargs) or {"models": 130})
    call_command("bench", "scale", "--sizes", "tenth", stdout=io.StringIO())
    call_command("bench", "scale", "--sizes", "full, tenth", stdout=io.StringIO())
    assert asked == [
        {"quick": False, "sizes": {"tenth": 170_000}},
        {"quick": False, "sizes": {"full": 1_700_000, "tenth": 170_000}},
    ]
    with pytest.raises(CommandError, match="Unknown size huge"):
        call_command("bench", "scale", "--sizes", "huge")
    with pytest.raises(CommandError, match="without --quick"):
        call_command("bench", "scale", "--sizes", "tenth", "--quick")
    with pytest.raises(CommandError, match="`bench scale` alone"):
        call_command("bench", "web", "--sizes", "tenth")
