"""Every page that answers GET answers HEAD the same way (uptime monitors and link checkers send
HEAD), walked over the whole URL configuration so a new page cannot forget it."""

import re

import pytest
from django.conf import settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from leaderboard.services import fits_publish
from tests.helpers import study_manager
from tests.leaderboard.board_data import raters_in, votes_cast

pytestmark = pytest.mark.django_db


def routes(resolver=None, prefix: str = "") -> list[str]:
    found = []
    for entry in (resolver or get_resolver()).url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if route.startswith(settings.ADMIN_URL_PATH):
                continue  # Django's own admin, not ours to change
            found += routes(entry, route)
        elif isinstance(entry, URLPattern):
            found.append(route)
    return found


def concrete(route: str, values: dict[str, str]) -> str:
    def fill(match: re.Match) -> str:
        name = match.group(2)
        if name == "slug":
            return values["model"] if "models/" in route else values["tournament"]
        return values.get(name, "0")

    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", fill, route).lstrip("^").rstrip("$")


@pytest.fixture
def site(tournament, study, groups):
    votes_cast(tournament, raters_in(study, "us-age-18-34", count=12), seed=1)
    fits_publish(tournament_id=tournament.pk)
    staff = study_manager()
    return {
        "tournament": tournament.slug,
        "model": tournament.llm_models.first().slug,
        "study_slug": study.slug,
        "public_id": "00000000-0000-0000-0000-000000000000",
        "rater_id": "00000000-0000-0000-0000-000000000000",
        "staff": staff,
    }


@pytest.mark.parametrize("as_staff", [False, True])
def test_it_answers_head_wherever_get_answers(site, as_staff):
    checked = {}
    for route in routes():
        url = concrete(route, site)
        clients = [Client(), Client()]
        if as_staff:
            for client in clients:
                client.force_login(site["staff"])
        got = clients[0].get(url)
        if got.status_code == 405:
            continue  # a POST-only action
        head = clients[1].head(url)
        assert head.status_code == got.status_code, f"HEAD {url}: {head.status_code}, GET {got.status_code}"
        body = b"".join(head.streaming_content) if head.streaming else head.content
        assert body == b""
        checked[url] = got.status_code
    public = ["/", "/healthz", "/leaderboard/", "/leaderboard/methodology/", "/api/v1/boards/", "/rate/"]
    for url in public:
        assert url in checked
    assert checked["/"] == 200 and checked["/leaderboard/"] == 200
    if as_staff:
        assert checked["/staff/studies/"] == 200
