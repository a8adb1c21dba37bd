"""Whole rendered pages of the public boards, cached per page, query and fragment-or-not.

The bodies live in `config.answer_cache` (this process's memory, then the shared cache) under the
boards' site version (`boards_site_version`, which each process re-reads from Redis once a second), so a
cached page costs no round trip at all, and a fit landing (`board_cache_bump`) replaces every page within
a second, each rendered once while the visitors who ask for it meanwhile get the page before. Anything
else that changes a page (a model joins or leaves a tournament) shows within `answer_cache.CACHE_SECONDS`.

Pages cached this way must not depend on the visitor: they carry no CSRF token and no session.
"""

import hashlib
from functools import wraps

from django.http import HttpResponse
from django.utils.cache import patch_vary_headers
from django.utils.http import quote_etag

from config.answer_cache import Uncacheable, answer_get_or_build
from leaderboard.boards import boards_site_version

# The only query parameters a page depends on; anything else a visitor adds makes no new cache entry.
PAGE_PARAMETERS = ("tournament", "dimension", "group", "style", "top")


def cached_page(view):
    """Serve the view's rendered body from the cache while the boards' version stands. The view is
    called with `fragment`: whether to render the htmx fragment instead of the full page."""

    @wraps(view)
    def wrapper(request, **kwargs):
        fragment = bool(request.htmx) and not request.htmx.history_restore_request
        key = _page_key(view.__name__, request, fragment, kwargs)

        def page_build():
            response = view(request, fragment=fragment, **kwargs)
            if response.status_code != 200:
                return Uncacheable(response)
            body = response.content
            return (quote_etag(hashlib.sha256(body).hexdigest()[:32]), body, response["Content-Type"])

        answer = answer_get_or_build(key, boards_site_version(), page_build)
        if isinstance(answer, Uncacheable):
            return answer.data
        etag, body, content_type = answer
        response = HttpResponse(body, content_type=content_type, headers={"ETag": etag})
        patch_vary_headers(response, ["HX-Request"])
        return response

    return wrapper


def _page_key(name: str, request, fragment: bool, kwargs: dict) -> str:
    parts = [name, "fragment" if fragment else "page", *(f"{k}={v}" for k, v in sorted(kwargs.items()))]
    parts += [f"{p}={request.GET.get(p, '')}" for p in PAGE_PARAMETERS]
    return "populus:pages:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()
