"""The API's one error shape: every failure under /api/, whatever raised it, answers
{"error": {"code", "message", "details"}} with the right status."""

import pytest
from django.http import HttpResponse
from django.test import Client
from django.urls import include, path
from rest_framework.authentication import BasicAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.views import APIView

from config.api import ExportThrottle, PublicReadThrottle
from config.errors import Conflict, RateLimited, SessionEnded, StrikeWarning
from leaderboard.services import fits_publish
from tests.leaderboard.board_data import raters_in, votes_cast

pytestmark = pytest.mark.django_db


# Views that fail on purpose, mounted beside the real API by `test_urls` below.
class Broken(APIView):
    def get(self, request):
        raise RuntimeError("a bug")


class RaisesApplicationError(APIView):
    errors = {
        "conflict": lambda: Conflict("This battle was already voted on."),
        "slow-down": lambda: RateLimited("Too many votes.", retry_after=7),
        "strike": lambda: StrikeWarning("Please write a real question.", number=1, of=3),
        "ended": lambda: SessionEnded("Your session has ended."),
    }

    def get(self, request, which):
        raise self.errors[which]()


class MembersOnly(APIView):
    authentication_classes = []
    permission_classes = [IsAuthenticated]

    def get(self, request):
        return HttpResponse("secret")


class MembersWithPasswords(MembersOnly):
    authentication_classes = [BasicAuthentication]


def broken_plain_view(request):
    raise RuntimeError("a bug outside DRF")


urlpatterns = [
    path("api/v1/", include("leaderboard.api.urls")),
    path("api/test/broken/", Broken.as_view()),
    path("api/test/plain-broken/", broken_plain_view),
    path("api/test/app-error/<slug:which>/", RaisesApplicationError.as_view()),
    path("api/test/members/", MembersOnly.as_view()),
    path("api/test/login/", MembersWithPasswords.as_view()),
]


@pytest.fixture
def test_urls(settings):
    settings.ROOT_URLCONF = __name__


def error_of(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["message"]
    return body["error"]


def test_it_answers_an_unknown_api_address_with_the_shape(client):
    error = error_of(client.get("/api/v1/no-such-thing/"), 404)
    assert error["code"] == "not_found"


def test_it_leaves_pages_outside_the_api_alone(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_it_names_the_unknown_slug(client, tournament):
    error = error_of(client.get("/api/v1/boards/?dimension=charisma"), 404)
    assert error == {
        "code": "not_found",
        "message": "This tournament has no dimension called 'charisma'.",
        "details": None,
    }
    assert "nonesuch" in error_of(client.get("/api/v1/tournaments/nonesuch/"), 404)["message"]


def test_it_answers_bad_filter_values_with_400_and_the_fields(client, tournament):
    error = error_of(client.get("/api/v1/boards/?as_of=yesterday&group=not%20a%20slug"), 400)
    assert error["code"] == "invalid_input"
    assert set(error["details"]) == {"as_of", "group"}
    assert all(isinstance(messages, list) and messages for messages in error["details"].values())


def test_it_checks_pagination_parameters_strictly(client, tournament):
    assert error_of(client.get("/api/v1/models/?page_size=0"), 400)["details"] == {
        "page_size": ["Must be between 1 and 200."]
    }
    assert "page" in error_of(client.get("/api/v1/models/?page=two"), 400)["details"]
    error = error_of(client.get("/api/v1/models/?page=9"), 404)
    assert error["message"] == "There is no page 9 (there are 1 page(s))."


def test_it_answers_a_wrong_method_with_405_and_allow(client, tournament):
    response = client.post("/api/v1/boards/", {}, content_type="application/json")
    assert error_of(response, 405)["code"] == "method_not_allowed"
    assert "GET" in response["Allow"]


def test_it_answers_throttled_reads_with_429_and_retry_after(client, tournament, monkeypatch):
    monkeypatch.setattr(PublicReadThrottle, "THROTTLE_RATES", {"public_read": "2/min"})
    for _ in range(2):
        assert client.get("/api/v1/tournaments/").status_code == 200
    # A forged X-Forwarded-For does not make a new client: with no proxy configured, REMOTE_ADDR counts.
    response = client.get("/api/v1/tournaments/", HTTP_X_FORWARDED_FOR="203.0.113.9")
    error = error_of(response, 429)
    assert error["code"] == "rate_limited"
    assert 1 <= error["details"]["retry_after"] <= 60
    assert response["Retry-After"] == str(error["details"]["retry_after"])


def test_it_counts_only_answers_it_has_to_build(client, tournament, study, groups, monkeypatch):
    votes_cast(tournament, raters_in(study, "us-age-18-34", count=10))
    fits_publish(tournament_id=tournament.pk)
    monkeypatch.setattr(PublicReadThrottle, "THROTTLE_RATES", {"public_read": "2/min"})
    assert client.get("/api/v1/boards/").status_code == 200  # built: counted (1)
    for _ in range(5):
        assert client.get("/api/v1/boards/").status_code == 200  # from the cache: not counted
    assert client.get("/api/v1/boards/?dimension=overall").status_code == 200  # built: counted (2)
    assert error_of(client.get("/api/v1/boards/?group=us-age-18-34"), 429)["code"] == "rate_limited"


def test_it_counts_every_battle_download(client, tournament, monkeypatch):
    monkeypatch.setattr(ExportThrottle, "THROTTLE_RATES", {"exports": "1/min"})
    assert client.get("/api/v1/tournaments/pilot/battles.jsonl").status_code == 200
    assert error_of(client.get("/api/v1/tournaments/pilot/battles.jsonl"), 429)["code"] == "rate_limited"


@pytest.mark.parametrize(
    ("which", "status", "code", "details"),
    [
        ("conflict", 409, "conflict", None),
        ("slow-down", 429, "rate_limited", {"retry_after": 7}),
        ("strike", 422, "quality_warning", {"title": "Warning 1 of 3"}),
        ("ended", 403, "session_ended", {"next": "/rate/next/"}),
    ],
)
def test_it_maps_application_errors_from_services(client, test_urls, which, status, code, details):
    error = error_of(client.get(f"/api/test/app-error/{which}/"), status)
    assert (error["code"], error["details"]) == (code, details)


def test_it_says_permission_denied_in_the_shape(client, test_urls):
    assert error_of(client.get("/api/test/members/"), 403)["code"] == "permission_denied"


def test_it_asks_for_credentials_with_401_in_the_shape(client, test_urls):
    response = client.get("/api/test/login/")
    assert error_of(response, 401)["code"] == "not_authenticated"
    assert response["WWW-Authenticate"].startswith("Basic")
    bad = client.get("/api/test/login/", HTTP_AUTHORIZATION="Basic bm86bm8=")
    assert error_of(bad, 401)["code"] == "authentication_failed"


def test_it_answers_an_unexpected_exception_with_a_500_in_the_shape(test_urls, caplog):
    client = Client(raise_request_exception=False)
    error = error_of(client.get("/api/test/broken/"), 500)
    assert error["code"] == "server_error"
    assert "a bug" not in error["message"]  # nothing of the exception reaches the client
    assert any("Unexpected error" in record.getMessage() for record in caplog.records)


def test_it_answers_an_exception_in_a_plain_view_under_api_with_the_shape(test_urls):
    client = Client(raise_request_exception=False)
    error = error_of(client.get("/api/test/plain-broken/"), 500)
    assert error["code"] == "server_error"
