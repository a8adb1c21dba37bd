"""A missing answer is built once however many ask for it at the same time (config.answer_cache)."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.cache import cache

from config import answer_cache
from config.answer_cache import Uncacheable, answer_get, answer_get_or_build, answer_put, process_answers

KEY = "populus:test:answer"


class SlowBuild:
    """A build that counts its calls and holds each one until the test lets it finish."""

    def __init__(self, answer=("etag-new", b"new page", "text/html")):
        self.answer = answer
        self.calls = 0
        self.started = threading.Event()
        self.finish = threading.Event()
        self.lock = threading.Lock()

    def __call__(self):
        with self.lock:
            self.calls += 1
        self.started.set()
        assert self.finish.wait(timeout=10)
        return self.answer


def ask_at_once(count: int, build, version="v2") -> list:
    """`count` requests at once from their own threads, each missing this process's copy as another
    process would."""

    def ask():
        process_answers.clear()
        return answer_get_or_build(KEY, version, build)

    with ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(ask) for _ in range(count)]
        build.started.wait(timeout=10)
        time.sleep(0.3)  # lets every request reach the cache while the first build is held
        build.finish.set()
        return [future.result(timeout=20) for future in futures]


def test_a_miss_asked_for_at_once_is_built_once():
    build = SlowBuild()
    answers = ask_at_once(8, build)
    assert build.calls == 1
    assert answers == [build.answer] * 8
    assert answer_get(KEY, "v2") == build.answer
    assert cache.get(f"{KEY}:building") is None  # the lock goes with the build


def test_while_one_builds_the_others_get_the_answer_before_at_once():
    answer_put(KEY, "v1", ("etag-old", b"old page", "text/html"))
    build = SlowBuild()
    with ThreadPoolExecutor(1) as pool:
        builder = pool.submit(answer_get_or_build, KEY, "v2", build)
        assert build.started.wait(timeout=10)
        process_answers.clear()
        # The builder is still held: this answer cannot have waited for it.
        assert answer_get_or_build(KEY, "v2", SlowBuild()) == ("etag-old", b"old page", "text/html")
        build.finish.set()
        assert builder.result(timeout=10) == build.answer
    assert answer_get_or_build(KEY, "v2", SlowBuild()) == build.answer


def test_an_answer_that_must_not_be_stored_is_built_by_each_waiter():
    build = SlowBuild(Uncacheable(("etag", b"live counts", "application/json")))
    answers = ask_at_once(4, build)
    assert build.calls == 4
    assert all(isinstance(answer, Uncacheable) for answer in answers)
    assert answer_get(KEY, "v2") is None


def test_a_failed_build_lets_the_next_request_build():
    def failing():
        raise ValueError("bad query")

    with pytest.raises(ValueError, match="bad query"):
        answer_get_or_build(KEY, "v2", failing)
    assert answer_get_or_build(KEY, "v2", lambda: ("etag", b"page", "text/html")) == (
        "etag",
        b"page",
        "text/html",
    )


def test_a_builder_that_died_holding_the_lock_delays_the_others_a_bounded_time(monkeypatch):
    monkeypatch.setattr(answer_cache, "BUILD_WAIT_SECONDS", 0.3)
    cache.add(f"{KEY}:building", 1, timeout=30)  # as a process killed mid-build leaves it
    assert answer_get_or_build(KEY, "v2", lambda: ("etag", b"page", "text/html")) == (
        "etag",
        b"page",
        "text/html",
    )
