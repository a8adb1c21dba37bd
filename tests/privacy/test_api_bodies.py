"""Issue 22, scenario "bad bodies": the rater API answers a body it cannot read with a 400 or 413 in its
one error shape, never a 500, and writes nothing.

Pass criteria: malformed JSON -> 400 `parse_error`; JSON nested deeper than Python's recursion limit ->
400 `parse_error`; a body over DATA_UPLOAD_MAX_MEMORY_SIZE -> 413 `request_too_large`; 0 raters stored.
"""

import pytest

from raters.models import Rater
from tests.tournaments.rater_api_helpers import API, client_with_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def panel(study, groups):
    return client_with_token(study)[1]


def post_raw(panel, body: bytes):
    return panel.http.post(API + "raters/", body, content_type="application/json")


def error_of(response) -> dict:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
    return body["error"]


def test_it_answers_malformed_json_with_a_400(panel):
    response = post_raw(panel, b'{"participant_id": ')
    assert response.status_code == 400
    assert error_of(response)["code"] == "parse_error"
    assert not Rater.objects.exists()


def test_it_answers_json_nested_too_deep_with_a_400(panel):
    depth = 100_000
    response = post_raw(panel, b"[" * depth + b"]" * depth)
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "parse_error"
    assert "deep" in error["message"]
    assert not Rater.objects.exists()


def test_it_answers_a_body_over_the_limit_with_a_413(panel, settings):
    body = b'{"participant_id": "' + b"a" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10) + b'"}'
    response = post_raw(panel, body)
    assert response.status_code == 413
    error = error_of(response)
    assert error["code"] == "request_too_large"
    assert str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) in error["message"] or "MB" in error["message"]
    assert not Rater.objects.exists()


def test_it_still_takes_a_good_body(panel):
    assert panel.enter(1).status_code == 201
