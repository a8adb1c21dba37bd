"""Rendered answers (pages, API bodies) cached at two levels, under a version.

Each web process keeps the answers it served in memory, so most repeated reads need no round trip at
all; the shared cache (Redis) holds them for the other processes. An entry stands while its version
does: callers pass a value that changes whenever the data behind the answer can change (e.g.
`leaderboard.boards.boards_site_version()`), so a new fit replaces every answer without deleting any.
CACHE_SECONDS bounds how long a change no version tracks takes to show (a model renamed in the admin).

An answer is a tuple whose second item is the body (bytes), e.g. (etag, body, content type).

Misses are built by one request at a time (`answer_get_or_build`): when a fit lands, every page and API
answer misses at once, and without this each visitor arriving in the same second would render its own
copy of the same page, all competing for the same cores.
"""

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from django.core.cache import cache

CACHE_SECONDS = 60
# The build lock outlives any build (a page renders in well under a second); a builder that died holding
# it delays the others by BUILD_WAIT_SECONDS at most, after which they build for themselves.
BUILD_LOCK_SECONDS = 30
BUILD_WAIT_SECONDS = 10
BUILD_POLL_SECONDS = 0.05


class Uncacheable:
    """What a build returns, wrapped, for an answer that must not be stored (e.g. one counting live
    votes that no version tracks)."""

    def __init__(self, data: Any):
        self.data = data


class ProcessAnswers:
    """This process's copy: bounded in bytes, least recently used out first, shared by its threads."""

    def __init__(self, *, max_bytes: int):
        self.max_bytes = max_bytes
        self.lock = threading.Lock()
        self.answers: OrderedDict[str, tuple] = OrderedDict()  # key -> (version, expires, answer)
        self.bytes = 0

    def get(self, key: str, version: Any) -> tuple | None:
        with self.lock:
            stored = self.answers.get(key)
            if stored is None or stored[0] != version or stored[1] < time.monotonic():
                return None
            self.answers.move_to_end(key)
            return stored[2]

    def put(self, key: str, version: Any, answer: tuple) -> None:
        size = len(answer[1])
        if size > self.max_bytes // 8:
            return  # one big download must not push out everything else
        with self.lock:
            if key in self.answers:
                self.bytes -= len(self.answers.pop(key)[2][1])
            self.answers[key] = (version, time.monotonic() + CACHE_SECONDS, answer)
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, (_, _, evicted) = self.answers.popitem(last=False)
                self.bytes -= len(evicted[1])

    def clear(self) -> None:
        with self.lock:
            self.answers.clear()
            self.bytes = 0


process_answers = ProcessAnswers(max_bytes=16 * 1024 * 1024)


def answer_get(key: str, version: Any) -> tuple | None:
    """The answer cached under `key` for this version: this process's copy, else the shared cache's."""
    answer = process_answers.get(key, version)
    if answer is None:
        stored = cache.get(key)
        if stored is not None and stored[0] == version:
            answer = tuple(stored[1:])
            process_answers.put(key, version, answer)
    return answer


def answer_put(key: str, version: Any, answer: tuple) -> None:
    cache.set(key, (version, *answer), CACHE_SECONDS)
    process_answers.put(key, version, answer)


def answer_get_or_build(key: str, version: Any, build: Callable[[], Any]) -> Any:
    """The cached answer for this version, else the one `build()` returns (stored unless it is
    `Uncacheable`).

    One request builds a missing answer at a time, across every process: the rest get the answer of the
    version before while the shared cache still holds it (a page one render out of date, as a visitor a
    moment earlier saw it), or else wait for the builder's. If the builder's answer cannot be stored, or
    its build fails, or it takes longer than BUILD_WAIT_SECONDS, each waiter builds its own.
    """
    answer = answer_get(key, version)
    if answer is not None:
        return answer
    lock = f"{key}:building"
    if cache.add(lock, 1, timeout=BUILD_LOCK_SECONDS):
        try:
            return _built(key, version, build)
        finally:
            cache.delete(lock)
    stored = cache.get(key)
    if stored is not None:
        return tuple(stored[1:])  # another version's answer: the one being built replaces it
    deadline = time.monotonic() + BUILD_WAIT_SECONDS
    while time.monotonic() < deadline and cache.get(lock) is not None:
        time.sleep(BUILD_POLL_SECONDS)
        answer = answer_get(key, version)
        if answer is not None:
            return answer
    return answer_get(key, version) or _built(key, version, build)


def _built(key: str, version: Any, build: Callable[[], Any]) -> Any:
    built = build()
    if not isinstance(built, Uncacheable):
        answer_put(key, version, built)
    return built
