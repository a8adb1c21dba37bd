"""`manage.py bench scale`: an Arena-scale battle log end to end, through the real commands.

For each size (1.7 million battles and 10% of that; `--quick`: 3,000 and 300), in a scratch PostgreSQL
database of its own (created, migrated and dropped here): a generated log (`bench.arena_log`: 130 models,
uneven pairs, about 30% ties, no judge ids) goes through `import_battles --create`, then `fit`, then a real
server (gunicorn, production settings, Redis cache under a key prefix of its own) answers its first board
API request and, after the cache version is bumped again, its first leaderboard page request. Each
command runs in its own process under `/usr/bin/time`, so peak memory is that process's.

Figures per size: import_rows_per_s (the rows, as the import command reports them), import_total_s (the
command from start to end: rows and live ratings), fit_s and fit_peak_mb (the `fit` command), and
api_board_cold_ms, page_cold_ms, page_kb. `growth` compares the sizes: seconds per million battles at each
size, which stay flat when cost grows linearly.
"""

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from django.conf import settings
from psycopg import sql

from bench.arena_log import arena_log_write
from bench.web import BenchError, _scratch_cache, _server, _server_env

FULL_BATTLES = 1_700_000
SIZES = {"full": FULL_BATTLES, "tenth": FULL_BATTLES // 10}
QUICK_SIZES = {"quick": 3_000, "quick_tenth": 300}
MODELS = 130
TOURNAMENT = "arena-bench"
DATABASE_PREFIX = os.environ.get("BENCH_SCALE_DATABASE_PREFIX", "populus_bench_scale")
TIME = "/usr/bin/time"
BASE_DIR = Path(settings.BASE_DIR)


def run(*, quick: bool = False, sizes: dict[str, int] | None = None) -> dict:
    """Measure every size (largest last, so a failure shows early). `sizes` overrides the defaults, e.g.
    {"tenth": 170_000} alone."""
    if not Path(TIME).exists():
        raise BenchError(f"bench scale needs {TIME} (Debian: apt-get install time) for peak memory.")
    chosen = sizes or (QUICK_SIZES if quick else SIZES)
    results = {}
    for name, battles in sorted(chosen.items(), key=lambda item: item[1]):
        results[name] = _one_size(battles)
        # Each size's figures as soon as they are in: a long run stopped later still leaves them.
        print(f"bench scale {name}: {json.dumps(results[name])}", file=sys.stderr, flush=True)
    summary = {"models": MODELS, "sizes": results}
    ordered = sorted(results.values(), key=lambda figures: figures["battles"])
    if len(ordered) > 1:
        small, large = ordered[0], ordered[-1]
        summary["growth"] = {
            "battles_ratio": large["battles"] / small["battles"],
            "import_total_s_ratio": large["import_total_s"] / small["import_total_s"],
            "fit_s_ratio": large["fit_s"] / small["fit_s"],
            "import_s_per_million": {
                name: figures["import_total_s"] / figures["battles"] * 1e6
                for name, figures in results.items()
            },
        }
    # The headline figures are the largest size's.
    summary.update({key: value for key, value in ordered[-1].items() if key != "battles"})
    return summary


def _one_size(battles: int) -> dict:
    with (
        tempfile.TemporaryDirectory(prefix="populus-bench-scale-") as workdir,
        _scratch_database(battles) as database_url,
        _scratch_cache() as (cache_url, prefix),
    ):
        log = Path(workdir) / "battles.jsonl"
        generated = arena_log_write(log, battles=battles, models=MODELS)
        env = _server_env(database_url, cache_url, prefix)
        _timed(env, "migrate", "--noinput")
        started = time.monotonic()
        imported = _timed(
            env, "import_battles", str(log), "--tournament", TOURNAMENT, "--create", "--name", "Arena bench"
        )
        import_total_s = time.monotonic() - started
        match = re.search(r"Took ([\d.]+) s for the rows \(([\d,]+) rows/s\) and ([\d.]+) s", imported["out"])
        if match is None or f"Imported {battles:,} battle(s)" not in imported["out"]:
            raise BenchError(f"import_battles did not import the log:\n{imported['out'][-2000:]}")
        started = time.monotonic()
        fitted = _timed(env, "fit", "--tournament", TOURNAMENT)
        fit_s = time.monotonic() - started
        with _server(env) as base_url:
            api_ms, _ = _cold_get(base_url + f"/api/v1/boards/?tournament={TOURNAMENT}&dimension=overall")
            _bump(env)
            page_ms, page = _cold_get(base_url + f"/leaderboard/?tournament={TOURNAMENT}&dimension=overall")
        if b"<table" not in page:
            raise BenchError("The leaderboard page shows no board table.")
        return {
            "battles": battles,
            "tie_share": round(generated["tie_share"], 3),
            "import_rows_per_s": round(float(match.group(2).replace(",", ""))),
            "import_rows_s": float(match.group(1)),
            "import_ratings_s": float(match.group(3)),
            "import_total_s": round(import_total_s, 1),
            "import_peak_mb": imported["peak_mb"],
            "fit_s": round(fit_s, 1),
            "fit_peak_mb": fitted["peak_mb"],
            "api_board_cold_ms": round(api_ms),
            "page_cold_ms": round(page_ms),
            "page_kb": round(len(page) / 1024, 1),
        }


@contextlib.contextmanager
def _scratch_database(battles: int):
    server = urlsplit(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/populus"))
    name = f"{DATABASE_PREFIX}_{battles}_{os.getpid()}"
    admin = urlunsplit((server.scheme, server.netloc, "/postgres", "", ""))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit((server.scheme, server.netloc, f"/{name}", "", ""))
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def _timed(env: dict, *args: str) -> dict:
    """A manage.py command in its own process, with its peak resident memory."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        result = subprocess.run(  # noqa: S603 (our own interpreter and manage.py, fixed arguments)
            [TIME, "-f", "%M", "-o", report.name, sys.executable, str(BASE_DIR / "manage.py"), *args],
            cwd=BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise BenchError(f"manage.py {args[0]} failed:\n{result.stderr[-3000:]}")
        peak_kb = int(report.read().strip().splitlines()[-1])
    return {"out": result.stdout, "err": result.stderr, "peak_mb": round(peak_kb / 1024)}


def _bump(env: dict) -> None:
    """A new board version, as a fit landing makes: the page's first request is then as cold as the API's."""
    call = (
        "from leaderboard.boards import board_cache_bump; from tournaments.models import Tournament; "
        f"board_cache_bump(tournament_id=Tournament.objects.get(slug={TOURNAMENT!r}).pk)"
    )
    _timed(env, "shell", "-c", call)
    time.sleep(1.5)  # web processes re-read the site version at most once a second


def _cold_get(url: str) -> tuple[float, bytes]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as response:  # noqa: S310 (loopback http only)
        body = response.read()
        if response.status != 200:
            raise BenchError(f"{url} answered {response.status}.")
    return (time.perf_counter() - started) * 1000, body
