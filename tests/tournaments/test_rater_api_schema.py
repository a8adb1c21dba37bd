"""The rater API's OpenAPI description is complete: every operation with its bodies, its token and its
errors, generated without warnings."""

import pytest
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator

RATER = "/api/v1/rater/"
OPERATIONS = {
    # (path, method): (success status, request component or None, response component)
    ("screener/", "get"): ("200", None, "ScreenerCountry"),
    ("raters/", "post"): ("201", "RaterCreateRequest", "Rater"),
    ("raters/{rater_id}/", "get"): ("200", None, "Rater"),
    ("raters/{rater_id}/battle/", "post"): ("200", None, "Battle"),
    ("raters/{rater_id}/finish/", "post"): ("200", None, "Rater"),
    ("battles/{battle_id}/", "get"): ("200", None, "Battle"),
    ("battles/{battle_id}/turns/", "post"): ("202", "TurnCreateRequest", "Battle"),
    ("battles/{battle_id}/vote/", "post"): ("200", "VoteCreateRequest", "VoteResult"),
}


@pytest.fixture(scope="module")
def schema_and_warnings():
    GENERATOR_STATS.reset()
    GENERATOR_STATS.silent = True
    schema = SchemaGenerator().get_schema(request=None, public=True)
    messages = list(GENERATOR_STATS._warn_cache) + list(GENERATOR_STATS._error_cache)
    GENERATOR_STATS.silent = False
    return schema, messages


def ref_name(content: dict) -> str:
    body = content["application/json"]["schema"]
    ref = body.get("$ref") or body.get("items", {}).get("$ref")
    return ref.rsplit("/", 1)[-1]


@pytest.mark.parametrize(("path", "method"), list(OPERATIONS))
def test_the_schema_documents_each_operation(schema_and_warnings, path, method):
    schema, _ = schema_and_warnings
    operation = schema["paths"][RATER + path][method]
    status, request_component, response_component = OPERATIONS[(path, method)]
    assert ref_name(operation["responses"][status]["content"]) == response_component
    if request_component:
        assert ref_name(operation["requestBody"]["content"]) == request_component
    assert operation["security"] == [{"raterApiToken": []}]
    for error_status in ("401", "404"):
        assert ref_name(operation["responses"][error_status]["content"]) == "Error"
    if method == "post":
        assert ref_name(operation["responses"]["409"]["content"]) == "Error"


def test_the_schema_describes_the_bearer_token(schema_and_warnings):
    schema, _ = schema_and_warnings
    assert schema["components"]["securitySchemes"]["raterApiToken"]["scheme"] == "bearer"


def test_the_schema_of_the_rater_api_has_no_warnings(schema_and_warnings):
    _, messages = schema_and_warnings
    mine = [m for m in messages if "tournaments/api" in m or "tournaments.api" in m]
    assert mine == []


def test_the_battle_schema_has_no_field_that_could_name_a_model_before_the_vote(schema_and_warnings):
    schema, _ = schema_and_warnings
    battle = schema["components"]["schemas"]["Battle"]["properties"]
    assert battle["result"].get("nullable") or "oneOf" in battle["result"]
    assert not {"model_a", "model_b", "flagged_reason"} & set(battle)
