"""`manage.py bench web`: the leaderboard page and the board API under concurrent load, against a trivial
Django view on the same server in the same run.

What runs:
- a scratch PostgreSQL database (created here, dropped at the end) on the server DATABASE_URL names (the
  usual local address by default), migrated, seeded with the demo (`seed_demo`), filled with generated
  raters in every group and their votes on every dimension, and fitted (`fits_publish`);
- the production server command (gunicorn, workers and threads as docker-compose.yml's web service) on a
  free loopback port, with config/settings/bench.py: production's middleware, PostgreSQL with
  persistent connections, the Redis cache under a key prefix of its own (removed at the end);
- `wrk` on loopback, with a small Lua script for the p95 wrk does not print, against three addresses in
  turn: /bench/trivial (a view that does nothing), /leaderboard/ and /api/v1/boards/. Each round visits
  all three, in a rotating order; figures are medians over the rounds, so a burst of load from elsewhere
  on a shared machine skews one round, not the result.

Then the moment a fit lands: the boards' version is bumped (`board_cache_bump`, as a fit does), and once
every server process has seen it, a burst of as many simultaneous requests as the server has threads
asks for the leaderboard page. Its slowest answer is set against one lone request after another bump,
which is one render: the page is rendered once however many ask (config.answer_cache).

Every address is checked to answer 200 with a real board before it is measured, and any non-2xx answer
or socket error under load fails the benchmark: an error page is never what gets timed.
"""

import contextlib
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis
from psycopg import sql

from leaderboard.boards import SITE_VERSION_RECHECK_SECONDS

BASE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/populus"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
# As docker-compose.yml's web service.
WORKERS, THREADS = 3, 4
TARGETS = {"trivial": "/bench/trivial", "leaderboard": "/leaderboard/", "api": "/api/v1/boards/"}
# Short slices, many rounds: load from elsewhere on a shared machine then falls on every address alike.
FULL = {
    "raters": 1000,
    "votes_per_rater": 10,
    "rounds": 9,
    "seconds": 5,
    "connections": 16,
    "wrk_threads": 2,
    "fit_rounds": 7,
}
QUICK = {
    "raters": 120,
    "votes_per_rater": 4,
    "rounds": 2,
    "seconds": 2,
    "connections": 8,
    "wrk_threads": 1,
    "fit_rounds": 1,
}
# Every server process has seen a new boards version after this long.
VERSION_SEEN_SECONDS = SITE_VERSION_RECHECK_SECONDS + 0.5
GOALS = {"leaderboard_ratio": 0.8, "p95_ratio": 2.0}

# wrk prints p50/75/90/99 only; this reports the p95 too, as one line of JSON.
WRK_REPORT = """
done = function(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    "BENCH_JSON {\\"requests\\": %d, \\"duration_us\\": %d, \\"p50_us\\": %d, \\"p95_us\\": %d, " ..
    "\\"p99_us\\": %d, \\"socket_errors\\": %d, \\"non_2xx\\": %d}\\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(95),
    latency:percentile(99), errors.connect + errors.read + errors.write + errors.timeout, errors.status))
end
"""


class BenchError(RuntimeError):
    """The benchmark could not run honestly; the message says why."""


def run(*, quick: bool) -> dict:
    sizes = QUICK if quick else FULL
    wrk = shutil.which("wrk")
    if wrk is None:
        raise BenchError("bench web needs wrk on PATH (Debian: apt-get install wrk).")
    with _scratch_database() as database_url, _scratch_cache() as (cache_url, prefix):
        env = _server_env(database_url, cache_url, prefix)
        data = _seed(env, sizes)
        with _server(env) as base_url, tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
            script.write(WRK_REPORT)
            script.flush()
            page_bytes = _check_answers(base_url)
            # A diagnostic beside the three the issue asks for: the trivial view answering as many bytes
            # as the page, which tells the cost of the page's size from the cost of making it.
            paths = {**TARGETS, "trivial_page_sized": f"{TARGETS['trivial']}?bytes={page_bytes}"}
            load = _Load(wrk, script.name, base_url, sizes)
            for path in paths.values():  # warm the caches and the workers' connections
                load.measure(path, seconds=1)
            rounds = [_round(load, paths, index) for index in range(sizes["rounds"])]
            fits = [_fit_round(env, base_url) for _ in range(sizes["fit_rounds"])]
    return _summary(rounds, fits, sizes=sizes, data=data, wrk=wrk)


# --- The scratch database, cache and server -----------------------------------------------------------


@contextlib.contextmanager
def _scratch_database():
    server = urlsplit(os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL))
    name = f"populus_bench_{os.getpid()}_{secrets.token_hex(3)}"
    admin = urlunsplit((server.scheme, server.netloc, "/postgres", "", ""))  # libpq takes postgres://
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit((server.scheme, server.netloc, f"/{name}", "", ""))
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@contextlib.contextmanager
def _scratch_cache():
    """The shared Redis server's cache database, under a key prefix no one else uses; its keys go after."""
    base = urlsplit(os.environ.get("REDIS_URL", DEFAULT_REDIS_URL))
    url = urlunsplit((base.scheme, base.netloc, f"/{os.environ.get('CACHE_REDIS_DB', '1')}", "", ""))
    prefix = f"populus-bench-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        yield url, prefix
    finally:
        client = redis.Redis.from_url(url)
        for keys in _batched(client.scan_iter(match=f"{prefix}:*", count=1000), 500):
            client.delete(*keys)


def _batched(items, size: int):
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _server_env(database_url: str, cache_url: str, prefix: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.bench",
        DATABASE_URL=database_url,
        CACHE_URL=cache_url,
        CACHE_KEY_PREFIX=prefix,
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        PANEL_ID_HMAC_KEY=secrets.token_urlsafe(32),
    )
    return env


def _manage(env: dict, *args: str) -> str:
    result = subprocess.run(  # noqa: S603 (our own interpreter and manage.py, fixed arguments)
        [sys.executable, str(BASE_DIR / "manage.py"), *args],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise BenchError(f"manage.py {args[0]} failed:\n{result.stderr[-3000:]}")
    return result.stdout


def _seed(env: dict, sizes: dict) -> dict:
    _manage(env, "migrate", "--noinput")
    _manage(env, "seed_demo")
    call = "import json; from leaderboard.demo_votes import demo_votes_seed; print(json.dumps("
    call += f"demo_votes_seed(raters={sizes['raters']}, votes_per_rater={sizes['votes_per_rater']})))"
    output = _manage(env, "shell", "-c", call)
    return json.loads(output.strip().splitlines()[-1])


@contextlib.contextmanager
def _server(env: dict):
    port = _free_port()
    gunicorn = Path(sys.executable).with_name("gunicorn")
    command = [
        str(gunicorn),
        "config.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(WORKERS),
        "--threads",
        str(THREADS),
        "--timeout",
        "60",
    ]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, cwd=BASE_DIR, env=env, stdout=log, stderr=log)  # noqa: S603
        try:
            base_url = f"http://127.0.0.1:{port}"
            _wait_until_up(base_url, process, log)
            yield base_url
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_up(base_url: str, process: subprocess.Popen, log) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            raise BenchError(f"gunicorn exited:\n{log.read().decode(errors='replace')[-3000:]}")
        with contextlib.suppress(OSError):
            if _get(base_url + TARGETS["trivial"])[0] == 200:
                return
        time.sleep(0.2)
    raise BenchError("gunicorn did not answer within 60 s.")


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 (loopback http only)
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _check_answers(base_url: str) -> int:
    """Each address answers 200 with the real thing, so what is timed is never an error page. Returns
    the leaderboard page's size in bytes."""
    page_bytes = 0
    for name, path in TARGETS.items():
        status, body = _get(base_url + path)
        if status != 200:
            raise BenchError(f"{path} answered {status}.")
        if name == "api":
            board = json.loads(body)
            if board["suppressed"] or not board["entries"] or board["entries"][0]["rank"] is None:
                raise BenchError(f"{path} is not a fitted, published board: {body[:300]!r}")
        if name == "leaderboard":
            if b"<table" not in body:
                raise BenchError(f"{path} shows no board table.")
            page_bytes = len(body)
    return page_bytes


# --- Load ----------------------------------------------------------------------------------------------


class _Load:
    def __init__(self, wrk: str, script: str, base_url: str, sizes: dict):
        self.wrk, self.script, self.base_url, self.sizes = wrk, script, base_url, sizes

    def measure(self, path: str, *, seconds: int) -> dict:
        command = [
            self.wrk,
            f"-t{self.sizes['wrk_threads']}",
            f"-c{self.sizes['connections']}",
            f"-d{seconds}s",
            "--timeout",
            "10s",
            "-s",
            self.script,
            self.base_url + path,
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60, check=False)  # noqa: S603
        line = next((ln for ln in result.stdout.splitlines() if ln.startswith("BENCH_JSON ")), None)
        if result.returncode != 0 or line is None:
            raise BenchError(f"wrk failed on {path}:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
        raw = json.loads(line.removeprefix("BENCH_JSON "))
        if raw["non_2xx"] or raw["socket_errors"]:
            raise BenchError(
                f"{path} under load: {raw['non_2xx']} non-2xx answers, {raw['socket_errors']} socket errors."
            )
        return {
            "rps": raw["requests"] / (raw["duration_us"] / 1e6),
            "p50_ms": raw["p50_us"] / 1000,
            "p95_ms": raw["p95_us"] / 1000,
            "p99_ms": raw["p99_us"] / 1000,
            "requests": raw["requests"],
        }


def _round(load: _Load, paths: dict[str, str], index: int) -> dict:
    names = list(paths)
    order = names[index % len(names) :] + names[: index % len(names)]
    return {name: load.measure(paths[name], seconds=load.sizes["seconds"]) for name in order}


def _fit_round(env: dict, base_url: str) -> dict:
    """One lone request after a fit, then a burst of simultaneous ones after the next."""
    url = base_url + TARGETS["leaderboard"]
    _fit_lands(env)
    lone_ms = _timed_get(url)
    _fit_lands(env)
    with ThreadPoolExecutor(WORKERS * THREADS) as pool:
        burst_ms = sorted(pool.map(lambda _: _timed_get(url), range(WORKERS * THREADS)))
    return {"lone_ms": lone_ms, "burst_max_ms": burst_ms[-1], "burst_median_ms": statistics.median(burst_ms)}


def _fit_lands(env: dict) -> None:
    call = "from leaderboard.boards import board_cache_bump; from tournaments.models import Tournament; "
    call += "[board_cache_bump(tournament_id=pk) for pk in Tournament.objects.values_list('pk', flat=True)]"
    _manage(env, "shell", "-c", call)
    time.sleep(VERSION_SEEN_SECONDS)


def _timed_get(url: str) -> float:
    started = time.perf_counter()
    status, _ = _get(url)
    if status != 200:
        raise BenchError(f"{url} answered {status} after a fit.")
    return (time.perf_counter() - started) * 1000


def _summary(rounds: list[dict], fits: list[dict], *, sizes: dict, data: dict, wrk: str) -> dict:
    medians = {
        name: {
            figure: statistics.median(r[name][figure] for r in rounds)
            for figure in ("rps", "p50_ms", "p95_ms", "p99_ms")
        }
        for name in rounds[0]
    }
    trivial = medians["trivial"]
    round_ratios = [
        {name: r[name]["rps"] / r["trivial"]["rps"] for name in ("leaderboard", "api")} for r in rounds
    ]
    result = {
        "leaderboard_ratio": medians["leaderboard"]["rps"] / trivial["rps"],
        "api_ratio": medians["api"]["rps"] / trivial["rps"],
        "leaderboard_p95_ms": medians["leaderboard"]["p95_ms"],
        "api_p95_ms": medians["api"]["p95_ms"],
        "trivial_p95_ms": trivial["p95_ms"],
        "leaderboard_p95_ratio": medians["leaderboard"]["p95_ms"] / trivial["p95_ms"],
        "api_p95_ratio": medians["api"]["p95_ms"] / trivial["p95_ms"],
        # The page against the trivial view answering as many bytes: what is left is the page's own work.
        "leaderboard_vs_page_sized_trivial": medians["leaderboard"]["rps"]
        / medians["trivial_page_sized"]["rps"],
        "leaderboard_rps": medians["leaderboard"]["rps"],
        "api_rps": medians["api"]["rps"],
        "trivial_rps": trivial["rps"],
        # After a fit: the slowest of a burst of simultaneous first visitors against one lone render.
        "fit_burst_max_ms": statistics.median(f["burst_max_ms"] for f in fits),
        "fit_burst_median_ms": statistics.median(f["burst_median_ms"] for f in fits),
        "fit_lone_render_ms": statistics.median(f["lone_ms"] for f in fits),
        "fit_burst_ratio": statistics.median(f["burst_max_ms"] / f["lone_ms"] for f in fits),
        "fits": fits,
        "round_ratios": round_ratios,
        # The same figures as the median of each round's own ratio: a second view of the noise.
        "leaderboard_ratio_of_rounds": statistics.median(r["leaderboard"] for r in round_ratios),
        "api_ratio_of_rounds": statistics.median(r["api"] for r in round_ratios),
        "medians": medians,
        "rounds": rounds,
        "goals": GOALS,
        "setup": {
            "server": f"gunicorn config.wsgi:application --workers {WORKERS} --threads {THREADS} on loopback",
            "settings": "config.settings.bench (production middleware, DEBUG off)",
            "database": "PostgreSQL, scratch database created and dropped by the benchmark",
            "cache": "Redis, under a key prefix of the run's own",
            "load": f"{_wrk_version(wrk)}: {sizes['wrk_threads']} thread(s), {sizes['connections']} "
            f"connections, {sizes['seconds']} s per address per round, {sizes['rounds']} rounds, rotating",
            "fit_bursts": f"{sizes['fit_rounds']} round(s) of {WORKERS * THREADS} simultaneous requests",
            "paths": TARGETS,
            "cpus": os.cpu_count(),
            "data": data,
        },
    }
    result["meets_goals"] = (
        result["leaderboard_ratio"] >= GOALS["leaderboard_ratio"]
        and result["leaderboard_p95_ratio"] <= GOALS["p95_ratio"]
    )
    return result


def _wrk_version(wrk: str) -> str:
    result = subprocess.run([wrk, "-v"], capture_output=True, text=True, check=False)  # noqa: S603
    return (result.stdout or result.stderr).split(" [")[0].strip() or "wrk"


# --- Seed data (runs inside the bench server's settings, through `manage.py shell`) --------------------
