"""The site's URLs plus a trivial view, for `bench web` only (config/settings/bench.py mounts it)."""

import functools

from django.http import HttpResponse
from django.urls import path
from django.views.decorators.http import require_safe

from config.urls import urlpatterns as site_urlpatterns

MAX_BYTES = 1024 * 1024


@functools.lru_cache(maxsize=8)
def _filler(size: int) -> bytes:
    return b"x" * size


@require_safe
def trivial(request):
    """The floor: a Django view through the full middleware stack that does no work of its own. With
    `?bytes=N` it answers N bytes, to tell the cost of a page's size from the cost of making it."""
    try:
        size = min(max(int(request.GET.get("bytes", 2)), 0), MAX_BYTES)
    except ValueError:
        size = 2
    return HttpResponse(_filler(size), content_type="text/plain")


def _leaderboard_index(patterns) -> int:
    for index, pattern in enumerate(patterns):
        urlconf = getattr(pattern, "urlconf_name", None)
        if getattr(urlconf, "__name__", urlconf) == "leaderboard.urls":
            return index
    raise LookupError("config.urls no longer includes leaderboard.urls")


# Just before the leaderboard's URLs, so resolving the trivial view walks the same patterns as resolving
# the leaderboard page: the comparison is of the views, not of where they sit in the URL list.
urlpatterns = list(site_urlpatterns)
urlpatterns.insert(_leaderboard_index(urlpatterns), path("bench/trivial", trivial, name="bench-trivial"))
