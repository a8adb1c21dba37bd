"""Rendered answers (pages, API bodies) cached at two levels, under a version.

Each web process keeps the answers it served in memory, so most repeated reads need no round trip at
all; the shared cache (Redis) holds them for the other processes. An entry stands while its version
does: callers pass a value that changes whenever the data behind the answer can change (e.g.
`leaderboard.boards.boards_site_version()`), so a new fit replaces every answer without deleting any.
CACHE_SECONDS bounds how long a change no version tracks takes to show (a model renamed in the admin).

An answer is a tuple whose second item is the body (bytes), e.g. (etag, body, content type).
"""

import threading
import time
from collections import OrderedDict
from typing import Any

from django.core.cache import cache

CACHE_SECONDS = 60


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
