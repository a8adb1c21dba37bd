"""Throttles for actions that cost money or count: a rater's messages to models and votes, a rater-API
client's participant entries.

A fixed-window counter in the cache (Redis in production, so every web process shares it), keyed on the
rater or the client, never on an IP address or a header a client could forge.
"""

import time

from django.core.cache import cache

from config.errors import RateLimited


def rate_limit(*, action: str, key: str, limit: int, window_seconds: int = 60) -> None:
    """Count one `action` for `key`; raise RateLimited once more than `limit` fall in the current window."""
    now = time.time()
    window = int(now // window_seconds)
    cache_key = f"ratelimit:{action.replace(' ', '-')}:{key}:{window}"  # the action is also prose
    cache.add(cache_key, 0, timeout=window_seconds * 2)
    if cache.incr(cache_key) > limit:
        retry_after = max(1, int((window + 1) * window_seconds - now) + 1)
        raise RateLimited(
            f"Too many {action} in a short time (at most {limit} a minute). "
            f"Please wait {retry_after} seconds.",
            retry_after=retry_after,
        )
