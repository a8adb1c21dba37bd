"""Local limits on how hard Populus drives each model, shared by every worker process through Redis.

Plain Python, no Django: it takes a `redis.Redis` client.

    limiter = ModelLimiter(redis.Redis.from_url(url))
    with limiter.acquire("openai|gpt-4o", max_concurrency=4, requests_per_minute=60,
                         wait_seconds=30, lease_seconds=130):
        ...  # one request to the model

Per model key, two sorted sets:

- leases: lease id -> expiry time. At most `max_concurrency` unexpired leases exist; leaving the `with`
  block removes its lease, and the lease of a worker killed before it could leave expires after
  `lease_seconds`.
- requests: request id -> time granted. At most `requests_per_minute` entries younger than
  `window_seconds` exist (a sliding window), so no span of `window_seconds` holds more grants than that.

Taking a lease and counting the request happen together, in one Lua script, on Redis's clock (the workers'
clocks need not agree). A refused caller polls until `wait_seconds` have passed, then gets
ProviderError("local_rate_limit", kind="transient"). Waiters are not served in order of arrival.
"""

import math
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

import redis

from tournaments.providers import TRANSIENT, ProviderError

# How often a caller refused for want of a free slot asks again. (One refused by the rate limit sleeps
# until the oldest request in the window is old enough.)
POLL_SECONDS = 0.05

# KEYS: leases, requests. ARGV: lease id, max concurrency, lease ms, max requests, window ms.
# Returns {1, granted_at_ms} or {0, reason, retry_in_ms}; reason 1 is concurrency, 2 the rate.
_TAKE = """
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local max_concurrency = tonumber(ARGV[2])
local lease_ms = tonumber(ARGV[3])
local max_requests = tonumber(ARGV[4])
local window_ms = tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window_ms)
if max_concurrency > 0 and redis.call('ZCARD', KEYS[1]) >= max_concurrency then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, 1, tonumber(first[2]) - now}
end
if max_requests > 0 and redis.call('ZCARD', KEYS[2]) >= max_requests then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return {0, 2, tonumber(oldest[2]) + window_ms - now}
end
redis.call('ZADD', KEYS[1], now + lease_ms, ARGV[1])
if redis.call('PTTL', KEYS[1]) < lease_ms then
  redis.call('PEXPIRE', KEYS[1], lease_ms)
end
if max_requests > 0 then
  redis.call('ZADD', KEYS[2], now, ARGV[1])
  redis.call('PEXPIRE', KEYS[2], window_ms)
end
return {1, now}
"""

_REFUSED_BECAUSE = {1: "all concurrency slots are taken", 2: "the request rate limit is reached"}


@dataclass(frozen=True)
class Lease:
    model_key: str
    lease_id: str
    granted_at_ms: int  # on Redis's clock (milliseconds since the epoch)


class ModelLimiter:
    def __init__(self, redis_client: redis.Redis, *, prefix: str = "populus:limits"):
        self._redis = redis_client
        self.prefix = prefix  # of every key this limiter writes
        self._take = redis_client.register_script(_TAKE)

    @contextmanager
    def acquire(
        self,
        model_key: str,
        *,
        max_concurrency: int,
        requests_per_minute: int,
        wait_seconds: float,
        lease_seconds: float,
        window_seconds: float = 60,
    ) -> Iterator[Lease]:
        """Hold one of the model's slots, counting one request, for the `with` block.

        Waits up to `wait_seconds`, then raises ProviderError("local_rate_limit"). `max_concurrency` or
        `requests_per_minute` of 0 or less turns that limit off. Redis failing is
        ProviderError("limiter_unavailable"), also transient: no request goes out unlimited.
        """
        ends = time.monotonic() + max(0.0, wait_seconds)
        while True:
            lease, reason, retry_in = self._try(
                model_key, max_concurrency, requests_per_minute, lease_seconds, window_seconds
            )
            if lease is not None:
                break
            remaining = ends - time.monotonic()
            if remaining <= 0:
                raise ProviderError(
                    "local_rate_limit",
                    f"{model_key}: {_REFUSED_BECAUSE[reason]} (waited {wait_seconds:g} s)",
                    kind=TRANSIENT,
                )
            pause = POLL_SECONDS if reason == 1 else retry_in
            time.sleep(min(max(pause, 0.001), remaining))
        try:
            yield lease
        finally:
            self.release(lease)

    def try_acquire(
        self,
        model_key: str,
        *,
        max_concurrency: int,
        requests_per_minute: int,
        lease_seconds: float,
        window_seconds: float = 60,
    ) -> Lease | None:
        """A lease taken now (to be given back with `release`), or None without waiting."""
        lease, _, _ = self._try(
            model_key, max_concurrency, requests_per_minute, lease_seconds, window_seconds
        )
        return lease

    def release(self, lease: Lease) -> None:
        """Give the slot back. The request still counts against the rate. A failure is ignored: the lease
        expires anyway."""
        with suppress(redis.RedisError):
            self._redis.zrem(self._key(lease.model_key, "leases"), lease.lease_id)

    def holders(self, model_key: str) -> int:
        """How many unexpired leases the model has (by this machine's clock, near enough for a report)."""
        return int(self._redis.zcount(self._key(model_key, "leases"), time.time() * 1000, "+inf"))

    def _try(
        self,
        model_key: str,
        max_concurrency: int,
        requests_per_minute: int,
        lease_seconds: float,
        window_seconds: float,
    ) -> tuple[Lease | None, int, float]:
        """(lease, 0, 0) if granted, else (None, reason, seconds until it might be)."""
        if lease_seconds <= 0 or window_seconds <= 0:
            raise ValueError("lease_seconds and window_seconds must be positive")
        lease_id = uuid.uuid4().hex
        try:
            result = self._take(
                keys=[self._key(model_key, "leases"), self._key(model_key, "requests")],
                args=[
                    lease_id,
                    max_concurrency,
                    math.ceil(lease_seconds * 1000),
                    requests_per_minute,
                    math.ceil(window_seconds * 1000),
                ],
            )
        except redis.RedisError as exc:
            raise ProviderError("limiter_unavailable", type(exc).__name__, kind=TRANSIENT) from exc
        if int(result[0]) == 1:
            return Lease(model_key, lease_id, int(result[1])), 0, 0.0
        return None, int(result[1]), int(result[2]) / 1000

    def _key(self, model_key: str, name: str) -> str:
        # The braces make both keys of a model hash to one Redis Cluster slot, as a script needs.
        return f"{self.prefix}:{{{model_key}}}:{name}"
