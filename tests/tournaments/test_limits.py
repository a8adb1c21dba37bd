"""`tournaments.limits.ModelLimiter` against the real Redis, and `complete` held to its limits end to end
against the loopback fake model server. Every test writes under its own key prefix and deletes it after."""

import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.fake_llm import Delay, FakeLLM, Reply, Status
from tournaments.limits import Lease, ModelLimiter
from tournaments.providers import ChatMessage, ProviderConfig, ProviderError, complete

MODEL = "limited-model"
PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def redis_client(settings) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(settings.REDIS_URL)
    yield client
    client.close()


@pytest.fixture
def limiter(redis_client: redis.Redis) -> Iterator[ModelLimiter]:
    limiter = ModelLimiter(redis_client, prefix=f"test:limits:{uuid.uuid4().hex}")
    yield limiter
    for key in redis_client.scan_iter(match=f"{limiter.prefix}:*"):
        redis_client.delete(key)


def run_in_threads(count: int, work: Callable[[], None]) -> None:
    """Run `work` in `count` threads started together; re-raise the first failure."""
    start = threading.Barrier(count)
    failures: list[BaseException] = []

    def run() -> None:
        try:
            start.wait()
            work()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    if failures:
        raise failures[0]


def most_in_any_window(times: list[float], window: float) -> int:
    """The largest number of `times` inside any half-open span [t, t + window)."""
    times = sorted(times)
    return max(sum(1 for u in times[i:] if u < t + window) for i, t in enumerate(times))


# --- Concurrency ------------------------------------------------------------------------------------------


def test_it_caps_how_many_hold_a_slot_at_once_across_threads(limiter: ModelLimiter) -> None:
    lock = threading.Lock()
    holding = 0
    most = 0

    def work() -> None:
        nonlocal holding, most
        for _ in range(3):
            with limiter.acquire(
                MODEL, max_concurrency=3, requests_per_minute=0, wait_seconds=10, lease_seconds=10
            ):
                with lock:
                    holding += 1
                    most = max(most, holding)
                time.sleep(0.05)
                with lock:
                    holding -= 1

    run_in_threads(8, work)

    assert most == 3
    assert limiter.holders(MODEL) == 0


def test_it_frees_the_slot_of_a_holder_that_never_released_it_after_its_lease(limiter: ModelLimiter) -> None:
    killed = limiter.try_acquire(MODEL, max_concurrency=1, requests_per_minute=0, lease_seconds=0.5)
    assert killed is not None
    started = time.monotonic()

    assert limiter.try_acquire(MODEL, max_concurrency=1, requests_per_minute=0, lease_seconds=5) is None
    with limiter.acquire(MODEL, max_concurrency=1, requests_per_minute=0, wait_seconds=3, lease_seconds=5):
        waited = time.monotonic() - started

    assert 0.3 < waited < 1.5


def test_it_shares_slots_between_processes_and_frees_a_killed_process_slot(
    limiter: ModelLimiter, settings
) -> None:
    holder = (
        "import sys, time, redis\n"
        "from tournaments.limits import ModelLimiter\n"
        "limiter = ModelLimiter(redis.Redis.from_url(sys.argv[1]), prefix=sys.argv[2])\n"
        "lease = limiter.try_acquire(\n"
        "    sys.argv[3], max_concurrency=1, requests_per_minute=0, lease_seconds=1\n"
        ")\n"
        "print('held' if lease else 'refused', flush=True)\n"
        "time.sleep(60)\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", holder, settings.REDIS_URL, limiter.prefix, MODEL],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "held"
        assert limiter.try_acquire(MODEL, max_concurrency=1, requests_per_minute=0, lease_seconds=5) is None
        process.kill()
        process.wait(timeout=10)
        killed_at = time.monotonic()

        with limiter.acquire(
            MODEL, max_concurrency=1, requests_per_minute=0, wait_seconds=5, lease_seconds=5
        ):
            assert time.monotonic() - killed_at < 1.5
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def test_it_gives_the_slot_back_when_the_block_raises(limiter: ModelLimiter) -> None:
    with (
        pytest.raises(RuntimeError),
        limiter.acquire(MODEL, max_concurrency=1, requests_per_minute=0, wait_seconds=1, lease_seconds=60),
    ):
        raise RuntimeError("the request failed")

    assert limiter.holders(MODEL) == 0
    assert limiter.try_acquire(MODEL, max_concurrency=1, requests_per_minute=0, lease_seconds=60) is not None


def test_it_keeps_separate_limits_per_model(limiter: ModelLimiter) -> None:
    assert limiter.try_acquire("model-a", max_concurrency=1, requests_per_minute=1, lease_seconds=60)

    assert limiter.try_acquire("model-b", max_concurrency=1, requests_per_minute=1, lease_seconds=60)
    assert limiter.try_acquire("model-a", max_concurrency=1, requests_per_minute=1, lease_seconds=60) is None


# --- Request rate -----------------------------------------------------------------------------------------


def test_it_caps_requests_in_any_sliding_window_across_threads(limiter: ModelLimiter) -> None:
    granted: list[Lease] = []
    seen_at: list[float] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(2):
            with (
                limiter.acquire(
                    MODEL,
                    max_concurrency=0,
                    requests_per_minute=5,
                    window_seconds=1,
                    wait_seconds=10,
                    lease_seconds=5,
                ) as lease,
                lock,
            ):
                granted.append(lease)
                seen_at.append(time.monotonic())

    run_in_threads(6, work)

    assert len(granted) == 12
    # Exactly, on Redis's clock; and with a little slack for thread scheduling, on ours.
    assert most_in_any_window([lease.granted_at_ms / 1000 for lease in granted], 1.0) == 5
    assert most_in_any_window(seen_at, 0.9) <= 5
    assert max(seen_at) - min(seen_at) > 1.8  # twelve requests at five a second need two more windows


def test_it_counts_a_request_even_after_its_slot_is_given_back(limiter: ModelLimiter) -> None:
    for _ in range(2):
        with limiter.acquire(
            MODEL, max_concurrency=1, requests_per_minute=2, wait_seconds=1, lease_seconds=5
        ):
            pass

    assert limiter.try_acquire(MODEL, max_concurrency=1, requests_per_minute=2, lease_seconds=5) is None


def test_it_turns_a_limit_off_when_it_is_zero(limiter: ModelLimiter) -> None:
    leases = [
        limiter.try_acquire(MODEL, max_concurrency=0, requests_per_minute=0, lease_seconds=5)
        for _ in range(50)
    ]

    assert all(leases)


# --- Giving up --------------------------------------------------------------------------------------------


def test_it_raises_local_rate_limit_when_no_slot_frees_up_in_time(limiter: ModelLimiter) -> None:
    assert limiter.try_acquire(MODEL, max_concurrency=1, requests_per_minute=0, lease_seconds=60)
    started = time.monotonic()

    with (
        pytest.raises(ProviderError) as caught,
        limiter.acquire(MODEL, max_concurrency=1, requests_per_minute=0, wait_seconds=0.3, lease_seconds=60),
    ):
        pytest.fail("acquired a slot that was taken")

    assert (caught.value.code, caught.value.kind) == ("local_rate_limit", "transient")
    assert "concurrency" in caught.value.detail
    assert 0.3 <= time.monotonic() - started < 0.8


def test_it_raises_local_rate_limit_when_the_rate_stays_used_up(limiter: ModelLimiter) -> None:
    assert limiter.try_acquire(MODEL, max_concurrency=0, requests_per_minute=1, lease_seconds=5)

    with (
        pytest.raises(ProviderError) as caught,
        limiter.acquire(MODEL, max_concurrency=0, requests_per_minute=1, wait_seconds=0.2, lease_seconds=5),
    ):
        pytest.fail("went over the rate")

    assert (caught.value.code, caught.value.kind) == ("local_rate_limit", "transient")
    assert "rate" in caught.value.detail


def test_it_reports_an_unreachable_redis_as_a_transient_error() -> None:
    unreachable = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=1, retry=Retry(NoBackoff(), 0))
    limiter = ModelLimiter(unreachable)

    with (
        pytest.raises(ProviderError) as caught,
        limiter.acquire(MODEL, max_concurrency=1, requests_per_minute=1, wait_seconds=0, lease_seconds=5),
    ):
        pytest.fail("acquired without Redis")

    assert (caught.value.code, caught.value.kind) == ("limiter_unavailable", "transient")


def test_it_leaves_no_key_without_an_expiry(limiter: ModelLimiter, redis_client: redis.Redis) -> None:
    with limiter.acquire(MODEL, max_concurrency=2, requests_per_minute=5, wait_seconds=1, lease_seconds=30):
        pass

    keys = list(redis_client.scan_iter(match=f"{limiter.prefix}:*"))
    assert keys
    assert all(0 < redis_client.pttl(key) <= 60_000 for key in keys)


# --- complete() through the limiter -----------------------------------------------------------------------


def limited_config(server: FakeLLM, **overrides: object) -> ProviderConfig:
    settings: dict[str, object] = {
        "provider": "openai",
        "base_url": server.base_url,
        "api_model": MODEL,
        "model_key": f"end-to-end-{uuid.uuid4().hex}",
        "limit_wait_seconds": 10.0,
    }
    settings.update(overrides)
    return ProviderConfig(**settings)  # type: ignore[arg-type]


def test_it_keeps_concurrent_completions_within_the_model_limits(
    fake_llm: FakeLLM, limiter: ModelLimiter
) -> None:
    fake_llm.script(MODEL, *[Delay(0.1, Reply("Limited reply"))] * 12)
    config = limited_config(fake_llm, max_concurrency=2, requests_per_minute=4, rate_window_seconds=1.0)
    replies: list[str] = []

    def work() -> None:
        for _ in range(3):
            replies.append(complete(config, [ChatMessage("user", "Hi")], limiter=limiter))

    run_in_threads(4, work)

    assert replies == ["Limited reply"] * 12
    received = [request["received_at"] for request in fake_llm.requests]
    assert len(received) == 12
    # The server saw the requests a little after they were granted; the slack allows for that delay.
    assert most_in_any_window(received, 0.85) <= 4
    assert max(received) - min(received) > 1.8
    assert fake_llm.max_in_flight <= 2


def test_it_counts_every_attempt_against_the_rate_limit(fake_llm: FakeLLM, limiter: ModelLimiter) -> None:
    fake_llm.script(MODEL, Status(500), Reply("After a retry"))
    config = limited_config(fake_llm, requests_per_minute=2, limit_wait_seconds=0.2)
    ask = [ChatMessage("user", "Hi")]

    assert complete(config, ask, limiter=limiter, sleep=lambda seconds: None) == "After a retry"
    with pytest.raises(ProviderError) as caught:
        complete(config, ask, limiter=limiter)

    assert caught.value.code == "local_rate_limit"
    assert len(fake_llm.requests) == 2


def test_it_holds_no_slot_while_waiting_to_retry(fake_llm: FakeLLM, limiter: ModelLimiter) -> None:
    fake_llm.script(MODEL, Status(503), Reply("Back again"))
    config = limited_config(fake_llm, max_concurrency=1)
    model_key = config.model_key
    holders_while_waiting: list[int] = []

    reply = complete(
        config,
        [ChatMessage("user", "Hi")],
        limiter=limiter,
        sleep=lambda seconds: holders_while_waiting.append(limiter.holders(model_key)),
    )

    assert reply == "Back again"
    assert holders_while_waiting == [0]
    assert limiter.holders(model_key) == 0


def test_it_limits_nothing_without_a_limiter(fake_llm: FakeLLM) -> None:
    config = limited_config(fake_llm, max_concurrency=1, requests_per_minute=1)

    replies = [complete(config, [ChatMessage("user", "Hi")]) for _ in range(3)]

    assert len(replies) == 3
