"""The OpenAPI schema against a live server: schemathesis generates requests for every public read
operation from the schema the site serves, with fitted boards behind them (published, suppressed and
profile boards), and every response must be documented, conform to its schema and never be a 5xx.

Also: the schema documents the error shape, and the docs page renders from it without scripts."""

import re

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from config.api import ExportThrottle, PublicReadThrottle
from leaderboard.api.docs import api_schema
from leaderboard.services import fits_publish
from tests.leaderboard.board_data import raters_in, votes_cast

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
]


@pytest.fixture
def boards_data(transactional_db, tournament, study, groups):
    """Committed, so the live server's connections see it: one published group, two suppressed ones."""
    for slug, count, seed in (("us-age-18-34", 12, 1), ("us-age-35-54", 8, 2), ("us-age-55-plus", 3, 3)):
        votes_cast(
            tournament, raters_in(study, slug, count=count), seed=seed, dimensions=("overall", "trust-safety")
        )
    fits_publish(tournament_id=tournament.pk)
    return tournament


@pytest.fixture
def live_api(live_server, boards_data, monkeypatch):
    """The schema as the live server serves it, limited to the public read API (the rater API needs
    client tokens and has tests of its own)."""
    # The fuzzer sends hundreds of requests from one address; throttling is tested on its own.
    monkeypatch.setattr(PublicReadThrottle, "THROTTLE_RATES", {"public_read": "100000/min"})
    monkeypatch.setattr(ExportThrottle, "THROTTLE_RATES", {"exports": "100000/min"})
    loaded = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/schema/")
    return [result.ok() for result in loaded.exclude(path_regex=r"^/api/v1/rater/").get_all_operations()]


# Requests that reach real data (random slugs mostly find nothing), checked the same way as generated ones.
KNOWN_GOOD = {
    "/api/v1/tournaments/{slug}/": [{"path_parameters": {"slug": "pilot"}}],
    "/api/v1/tournaments/{slug}/boards.csv": [{"path_parameters": {"slug": "pilot"}}],
    "/api/v1/tournaments/{slug}/boards.json": [{"path_parameters": {"slug": "pilot"}}],
    "/api/v1/tournaments/{slug}/battles.jsonl": [{"path_parameters": {"slug": "pilot"}}],
    "/api/v1/models/{slug}/": [
        {"path_parameters": {"slug": "alpha-large"}, "query": {"tournament": "pilot"}}
    ],
    "/api/v1/boards/": [
        {"query": {"tournament": "pilot", "dimension": "trust-safety"}},
        {"query": {"group": "us-age-18-34"}},
        {"query": {"group": "us-age-55-plus"}},
        {"query": {"profile": "us-age-18-34"}},
        {"query": {"profile": "us-age-18-34", "weights": "overall:2,trust-safety:1"}},
    ],
    "/api/v1/head-to-head/": [{"query": {"model": "beta-chat"}}, {"query": {"group": "us-age-35-54"}}],
    "/api/v1/snapshots/": [{"query": {"dimension": "overall", "page_size": 1}}],
}


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_response_conforms_to_the_schema(live_api, mode):
    assert len(live_api) >= 13
    for operation in live_api:
        if mode == GenerationMode.NEGATIVE and not len(operation.query):
            # Nothing to get wrong, or only a path slug: a value outside its pattern cannot be sent in a URL.
            continue

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case):
            case.call_and_validate(checks=CHECKS)

        check()


def test_real_data_conforms_to_the_schema(live_api):
    by_path = {operation.path: operation for operation in live_api}
    assert set(KNOWN_GOOD) <= set(by_path)
    for path, requests in KNOWN_GOOD.items():
        for request in requests:
            response = by_path[path].Case(**request).call_and_validate(checks=CHECKS)
            assert response.status_code == 200, (path, request, response.text[:300])


# --- The schema and the docs page -------------------------------------------------------------------


def test_the_schema_documents_the_error_shape_on_every_operation(client, db):
    document = client.get("/api/v1/schema/").json()
    error = document["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            for status in ("400", "404", "429", "500"):
                ref = responses[status]["content"]["application/json"]["schema"]["$ref"]
                assert ref == "#/components/schemas/Error", (method, path, status)
    assert "## Errors" in document["info"]["description"]


def test_the_schema_is_valid_openapi(db):
    schemathesis.openapi.from_dict(api_schema()).validate()


def test_the_docs_page_lists_every_operation_without_scripts_of_its_own(client, db):
    response = client.get("/api/v1/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    for path in api_schema()["paths"]:
        assert f"{path}</code>" in html
    assert 'id="schema-Error"' in html and "Open data formats" in html
    # Only the site's own static scripts: nothing inline, nothing from elsewhere.
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
    assert all('src="/static/' in attributes and not body.strip() for attributes, body in scripts)
    assert "style=" not in html
