"""The rater API over HTTP with real tokens: the website's flow, rules, limits and quality control."""

import hashlib
import uuid
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.db import connection

from config import ratelimit
from raters.models import ApiClient, Quota, Rater
from raters.panel import keyed_hash
from raters.services import PendingEntry, api_client_revoke, quota_set, rater_create
from tests.conftest import CAST, US_YOUNG_ASIAN_DEMOCRAT
from tests.helpers import TASKS
from tests.tournaments.rater_api_helpers import RaterApi, answer_pending_replies, client_with_token
from tournaments.models import Battle, Turn, Vote

pytestmark = pytest.mark.django_db


@pytest.fixture
def panel(study, groups):
    """A human-panel client of the pilot study and its HTTP client."""
    return client_with_token(study)


def error_of(response) -> dict:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
    return body["error"]


def identity_strings(battle: Battle) -> list[str]:
    models = (battle.model_a, battle.model_b)
    return [s for m in models for s in (m.name, m.slug, m.maker)] + [c["name"] for c in CAST]


def text_of(response) -> str:
    return response.content.decode() + str(dict(response.items()))


# --- The flow ---------------------------------------------------------------------------------------------


def test_it_runs_a_battle_from_entry_to_vote_over_http(panel, study, settings):
    client, api = panel
    created = api.enter(1)
    assert created.status_code == 201, created.json()
    rater_body = created.json()
    assert rater_body["status"] == "admitted" and rater_body["outcome"] is None

    battle = api.start(rater_body["id"])
    assert battle["state"] == "active" and battle["can_send"] and not battle["can_vote"]
    assert [d["slug"] for d in battle["dimensions"]][-1] == "overall"
    assert api.start(rater_body["id"])["id"] == battle["id"], "a second start resumes the same battle"

    api.chat_turns(battle["id"], 3)
    polled = api.get(f"battles/{battle['id']}/").json()
    assert polled["turns_done"] == 3 and polled["can_vote"]
    assert [t["message"] for t in polled["turns"]] == TASKS[0][:3]
    assert all(t["reply_a"] and t["reply_b"] for t in polled["turns"])

    voted = api.vote(battle["id"], "b")
    assert voted.status_code == 200, voted.json()
    stored = Battle.objects.get(public_id=battle["id"])
    assert voted.json()["battle"]["result"]["model_b"] == stored.model_b.name
    assert {row["winner"] for row in voted.json()["battle"]["result"]["rows"]} == {stored.model_b.name}
    assert voted.json()["rater"]["battles_done"] == 1
    assert set(Vote.objects.get(battle=stored).choices.values_list("outcome", flat=True)) == {"b"}

    rater = Rater.objects.get(public_id=rater_body["id"])
    assert rater.api_client == client
    assert rater.participant_hash == keyed_hash(settings.PANEL_ID_HMAC_KEY, f"{1:024x}")


def test_it_gives_a_returning_participant_their_rater_back(panel):
    _, api = panel
    first = api.enter(7)
    again = api.enter(7)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert Rater.objects.count() == 1


def test_it_reports_a_rater_session_and_its_battle_in_progress(panel):
    _, api = panel
    rater_id = api.admitted_rater()
    battle = api.start(rater_id)
    body = api.get(f"raters/{rater_id}/").json()
    assert body["active_battle"] == battle["id"] and body["battles_done"] == 0
    assert body["battles_per_session"] is None


def test_it_lists_the_screener_questions(panel):
    _, api = panel
    countries = api.get("screener/").json()
    us = next(c for c in countries if c["code"] == "US")
    age = next(a for a in us["axes"] if a["slug"] == "age")
    assert "us-age-18-34" in [o["slug"] for o in age["options"]]


# --- Entry, screener and admission ------------------------------------------------------------------------


def test_it_screens_out_and_closes_full_quotas_with_the_panels_codes(panel, study, tournament):
    from raters.models import Country, Group

    _, api = panel
    study.screen_out_code, study.quota_full_code = "OUT-1", "FULL-1"
    study.save()
    study.countries.set([Country.objects.get(code="UK")])
    out = api.enter(1)
    assert out.status_code == 201
    assert out.json()["status"] == "screened_out" and out.json()["outcome"]["code"] == "OUT-1"

    study.countries.set([])
    quota_set(study=study, groups=[Group.objects.get(slug="us-age-18-34")], target=1)
    assert api.enter(2).json()["status"] == "admitted"
    full = api.enter(3)
    assert full.json()["status"] == "quota_full" and full.json()["outcome"]["code"] == "FULL-1"
    assert Quota.objects.get().admitted == 1

    start = api.post(f"raters/{full.json()['id']}/battle/")
    assert start.status_code == 409 and error_of(start)["code"] == "session_ended"
    assert error_of(start)["details"]["outcome"]["code"] == "FULL-1"


@pytest.mark.parametrize(
    ("overrides", "field_or_message"),
    [
        ({"answers": {**US_YOUNG_ASIAN_DEMOCRAT, "age": "uk-age-55-plus"}}, "not one of the options"),
        ({"answers": {"ethnicity": "us-ethnicity-asian"}}, "Please answer the question about your age"),
        ({"country": "XX"}, "Please choose the country"),
        ({"participant_id": "not-a-prolific-id"}, "participant_id is not valid"),
        ({"consent": False}, "has to consent"),
        ({"country": None}, "country"),
    ],
)
def test_it_refuses_bad_entries_and_saves_nothing(panel, overrides, field_or_message):
    _, api = panel
    response = api.enter(1, **overrides)
    assert response.status_code == 400, response.json()
    error = error_of(response)
    assert field_or_message in error["message"] or field_or_message in (error["details"] or {})
    assert Rater.objects.count() == 0


def test_it_refuses_a_participant_who_takes_part_another_way(panel, study, settings):
    _, api = panel
    participant = f"{9:024x}"
    rater_create(
        entry=PendingEntry(
            study_id=study.pk, participant_hash=keyed_hash(settings.PANEL_ID_HMAC_KEY, participant)
        )
    )
    response = api.enter(participant)
    assert response.status_code == 409 and error_of(response)["code"] == "conflict"

    _, other = client_with_token(study, name="Another front-end")
    api.admitted_rater(10)
    assert other.enter(10).status_code == 409


def test_it_refuses_new_raters_when_the_study_is_closed(panel, study):
    _, api = panel
    rater_id = api.admitted_rater(1)
    study.is_open = False
    study.save()
    assert api.enter(2).status_code == 409
    assert api.enter(1).json()["id"] == rater_id, "a returning participant still resumes"


# --- Tokens -----------------------------------------------------------------------------------------------


def test_it_stores_only_a_hash_of_the_token(study, groups):
    from io import StringIO

    out = StringIO()
    call_command(
        "create_api_client", study=study.slug, kind="human_panel", name="Panel", stdout=out, stderr=StringIO()
    )
    token = out.getvalue().strip()
    assert token.startswith("pop_") and len(token) > 40
    client = ApiClient.objects.get()
    assert client.token_hash == hashlib.sha256(token.encode()).hexdigest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT row_to_json(c)::text FROM raters_apiclient c")
        (row,) = cursor.fetchone()
    assert token not in row and token[4:] not in row
    assert RaterApi(token).enter(1).status_code == 201


@pytest.mark.parametrize(
    "header",
    [
        None,
        "Bearer",
        "Bearer pop_unknown",
        "Bearer a b",
        "Token {token}",
        "Bearer {token}x",
        "Bearer {revoked}",
    ],
)
def test_it_refuses_missing_unknown_and_revoked_tokens(panel, study, header):
    _, api = panel
    revoked, revoked_api = client_with_token(study, name="Revoked")
    api_client_revoke(client=revoked)
    token = api.http.defaults["HTTP_AUTHORIZATION"].split()[1]
    revoked_token = revoked_api.http.defaults["HTTP_AUTHORIZATION"].split()[1]
    from django.test import Client

    headers = (
        {} if header is None else {"HTTP_AUTHORIZATION": header.format(token=token, revoked=revoked_token)}
    )
    response = Client(**headers).post(
        "/api/v1/rater/raters/", {"participant_id": f"{1:024x}"}, content_type="application/json"
    )
    assert response.status_code == 401
    assert error_of(response)["code"] in ("not_authenticated", "authentication_failed")
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert Rater.objects.count() == 0


def test_it_notes_when_a_client_was_last_used(panel):
    client, api = panel
    assert client.last_used_at is None
    api.get("screener/")
    client.refresh_from_db()
    assert client.last_used_at is not None


# --- Isolation between clients ----------------------------------------------------------------------------


def test_another_client_cannot_see_or_act_on_a_clients_raters_and_battles(panel, study):
    _, api = panel
    _, intruder = client_with_token(study, name="Intruder")
    rater_id = api.admitted_rater()
    battle_id = api.start(rater_id)["id"]
    api.chat(battle_id, TASKS[0][0])
    attempts = [
        intruder.get(f"battles/{battle_id}/"),
        intruder.post(f"battles/{battle_id}/turns/", {"message": TASKS[0][1]}),
        intruder.post(f"battles/{battle_id}/vote/", {"choices": {"overall": "a"}}),
        intruder.get(f"raters/{rater_id}/"),
        intruder.post(f"raters/{rater_id}/battle/"),
        intruder.post(f"raters/{rater_id}/finish/"),
    ]
    unknown = intruder.get(f"battles/{uuid.uuid4()}/")
    for response in attempts:
        assert response.status_code == 404
        assert error_of(response)["code"] == "not_found"
        # Indistinguishable from an id that does not exist.
        assert error_of(response)["message"] in (
            error_of(unknown)["message"],
            "This client has no rater with that id.",
        )
    assert Turn.objects.count() == 1 and not Vote.objects.exists()
    assert Battle.objects.get().state == Battle.State.ACTIVE


# --- Rules and limits, as on the website -------------------------------------------------------------------


def test_it_asks_for_the_minimum_turns_and_both_replies_before_a_vote(panel):
    _, api = panel
    battle_id = api.start(api.admitted_rater())["id"]
    api.chat_turns(battle_id, 2)
    early = api.vote(battle_id)
    assert early.status_code == 409 and "at least 3 turns" in error_of(early)["message"]
    api.post(f"battles/{battle_id}/turns/", {"message": TASKS[0][2]})
    waiting = api.vote(battle_id)
    assert (
        waiting.status_code == 409 and "wait until both models have answered" in error_of(waiting)["message"]
    )
    assert not Vote.objects.exists()


def test_it_applies_the_message_rules(panel, tournament):
    _, api = panel
    tournament.max_turns = 3
    tournament.save()
    battle_id = api.start(api.admitted_rater())["id"]
    empty = api.post(f"battles/{battle_id}/turns/", {"message": "   "})
    assert empty.status_code == 400 and "type a message" in error_of(empty)["message"]
    too_long = api.post(f"battles/{battle_id}/turns/", {"message": "x" * 4001})
    assert too_long.status_code == 400 and "Message too long" in error_of(too_long)["message"]
    api.post(f"battles/{battle_id}/turns/", {"message": TASKS[0][0]})
    busy = api.post(f"battles/{battle_id}/turns/", {"message": TASKS[0][1]})
    assert busy.status_code == 409 and "wait until both models have answered" in error_of(busy)["message"]
    answer_pending_replies()
    api.chat(battle_id, TASKS[0][1])
    api.chat(battle_id, TASKS[0][2])
    over = api.post(f"battles/{battle_id}/turns/", {"message": TASKS[0][3]})
    assert over.status_code == 400 and "limit of 3 turns" in error_of(over)["message"]
    assert Turn.objects.count() == 3


@pytest.fixture
def still_clock(monkeypatch):
    """The rate limits' clock stands still, so that a test's requests cannot straddle two windows."""
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: 1_800_000_000.0))


def test_it_rate_limits_messages_per_rater_with_retry_after(panel, settings, still_clock):
    _, api = panel
    settings.RATE_LIMIT_MESSAGES_PER_MINUTE = 1
    battle_id = api.start(api.admitted_rater())["id"]
    api.chat(battle_id, TASKS[0][0])
    limited = api.post(f"battles/{battle_id}/turns/", {"message": TASKS[0][1]})
    assert limited.status_code == 429
    assert error_of(limited)["code"] == "rate_limited"
    assert int(limited["Retry-After"]) == error_of(limited)["details"]["retry_after"] >= 1
    assert Turn.objects.count() == 1


def test_it_rate_limits_participant_entries_per_client(panel, study, settings, still_clock):
    _, api = panel
    settings.RATE_LIMIT_API_ENTRIES_PER_MINUTE = 2
    assert [api.enter(k).status_code for k in (1, 2)] == [201, 201]
    limited = api.enter(3)
    assert limited.status_code == 429
    assert "Too many participant entries in a short time (at most 2 a minute)" in error_of(limited)["message"]
    assert Rater.objects.count() == 2
    # The limit is the client's own: another client of the study is not held back by it.
    _, other = client_with_token(study)
    assert other.enter(4).status_code == 201


def test_it_rate_limits_votes_per_rater(panel, settings):
    _, api = panel
    settings.RATE_LIMIT_VOTES_PER_MINUTE = 0
    battle_id = api.start(api.admitted_rater())["id"]
    api.chat_turns(battle_id, 3)
    assert api.vote(battle_id).status_code == 429
    assert not Vote.objects.exists()


def test_it_warns_twice_and_ends_the_session_at_the_third_strike(panel, study):
    _, api = panel
    study.screen_out_code = "STRUCK-OUT"
    study.save()
    rater_id = api.admitted_rater()
    battle_id = api.start(rater_id)["id"]
    for number, message in enumerate(["?!", "..."], start=1):
        warned = api.post(f"battles/{battle_id}/turns/", {"message": message})
        assert warned.status_code == 422
        assert error_of(warned)["code"] == "quality_warning"
        assert error_of(warned)["details"]["title"] == f"Warning {number} of 3"
    assert Turn.objects.count() == 0, "a message that earns a strike is not sent"
    polled = api.get(f"battles/{battle_id}/").json()
    assert len(polled["warnings"]) == 2

    ended = api.post(f"battles/{battle_id}/turns/", {"message": "??"})
    assert ended.status_code == 409
    error = error_of(ended)
    assert error["code"] == "session_ended" and error["details"]["status"] == "excluded"
    assert error["details"]["outcome"]["code"] == "STRUCK-OUT"
    assert Rater.objects.get(public_id=rater_id).status == Rater.Status.EXCLUDED
    again = api.post(f"raters/{rater_id}/battle/")
    assert again.status_code == 409 and error_of(again)["details"]["outcome"]["code"] == "STRUCK-OUT"


def test_it_asks_for_the_attention_check_when_the_battle_has_one(panel):
    _, api = panel
    battle = api.start(api.admitted_rater())
    # The first two battles of a rater always carry one.
    assert battle["attention_check"]["field"] == "attention"
    api.chat_turns(battle["id"], 3)
    choices = {d["slug"]: "a" for d in battle["dimensions"]}
    unanswered = api.post(f"battles/{battle['id']}/vote/", {"choices": choices})
    assert unanswered.status_code == 400 and "check question" in error_of(unanswered)["message"]
    assert api.vote(battle["id"]).status_code == 200


def test_it_takes_the_same_vote_twice_and_refuses_a_changed_one(panel):
    _, api = panel
    battle_id = api.start(api.admitted_rater())["id"]
    api.chat_turns(battle_id, 3)
    body = api.vote_body(battle_id, "a")
    first = api.post(f"battles/{battle_id}/vote/", body)
    retried = api.post(f"battles/{battle_id}/vote/", body)
    assert (first.status_code, retried.status_code) == (200, 200)
    assert retried.json()["battle"]["result"] == first.json()["battle"]["result"]
    changed = api.post(f"battles/{battle_id}/vote/", {**body, "choices": dict.fromkeys(body["choices"], "b")})
    assert changed.status_code == 409 and Vote.objects.count() == 1


# --- Sessions ---------------------------------------------------------------------------------------------


def test_it_completes_the_session_with_the_last_vote(panel, study):
    _, api = panel
    study.battles_per_session, study.completion_code = 1, "DONE-1"
    study.save()
    rater_id = api.admitted_rater()
    battle_id = api.start(rater_id)["id"]
    api.chat_turns(battle_id, 3)
    rater = api.vote(battle_id).json()["rater"]
    assert rater["status"] == "completed" and rater["outcome"]["code"] == "DONE-1"
    after = api.post(f"raters/{rater_id}/battle/")
    assert after.status_code == 409 and error_of(after)["details"]["outcome"]["code"] == "DONE-1"


def test_it_finishes_an_open_ended_session_on_request(panel, study):
    _, api = panel
    study.completion_code = "DONE-2"
    study.save()
    rater_id = api.admitted_rater()
    battle_id = api.start(rater_id)["id"]
    api.chat_turns(battle_id, 3)
    api.vote(battle_id)
    second = api.start(rater_id)["id"]
    finished = api.post(f"raters/{rater_id}/finish/")
    assert finished.status_code == 200
    assert finished.json()["status"] == "completed" and finished.json()["outcome"]["code"] == "DONE-2"
    assert Battle.objects.get(public_id=second).state == Battle.State.VOID
    assert api.post(f"raters/{rater_id}/finish/").json()["status"] == "completed", "finishing is idempotent"


def test_finishing_before_any_vote_gives_the_quota_place_back(panel, study):
    from raters.models import Group

    _, api = panel
    quota = quota_set(study=study, groups=[Group.objects.get(slug="us-age-18-34")], target=1)
    rater_id = api.admitted_rater()
    assert Quota.objects.get(pk=quota.pk).admitted == 1
    assert api.post(f"raters/{rater_id}/finish/").json()["status"] == "released"
    assert Quota.objects.get(pk=quota.pk).admitted == 0


def test_finishing_a_session_with_battles_left_is_refused(panel, study):
    _, api = panel
    study.battles_per_session = 2
    study.save()
    rater_id = api.admitted_rater()
    battle_id = api.start(rater_id)["id"]
    api.chat_turns(battle_id, 3)
    api.vote(battle_id)
    refused = api.post(f"raters/{rater_id}/finish/")
    assert refused.status_code == 409 and "2 battles and 1 are done" in error_of(refused)["message"]
    assert Rater.objects.get(public_id=rater_id).status == Rater.Status.ADMITTED


# --- Integrity: no model identity before the vote ----------------------------------------------------------


def test_no_model_identity_reaches_the_client_before_the_vote(panel, tournament):
    _, api = panel
    created = api.enter(1)
    rater_id = created.json()["id"]
    start = api.post(f"raters/{rater_id}/battle/")
    battle_id = start.json()["id"]
    seen = [created, start, api.get(f"raters/{rater_id}/")]
    seen += api.chat_turns(battle_id, 2)
    seen.append(api.vote(battle_id))  # too early: an error
    seen.append(api.post(f"battles/{battle_id}/turns/", {"message": "x" * 5000}))  # an error
    seen += api.chat(battle_id, TASKS[0][2])
    seen.append(api.get(f"battles/{battle_id}/"))
    battle = Battle.objects.get(public_id=battle_id)
    secrets_ = identity_strings(battle)
    for response in seen:
        assert response.status_code < 500
        text = text_of(response)
        for secret in secrets_:
            assert secret not in text, (secret, response.request["PATH_INFO"])
        assert '"result":{' not in text.replace(" ", "")
    voted = api.vote(battle_id)
    assert battle.model_a.name in text_of(voted), "the names are revealed after the vote"
