"""Driving the rater API over HTTP as a client program would, with a real token."""

from datetime import timedelta

from django.test import Client
from django.utils import timezone

from raters.models import ApiClient, Study
from raters.services import api_client_create
from tests.conftest import US_YOUNG_ASIAN_DEMOCRAT
from tests.helpers import TASKS
from tournaments.models import Reply
from tournaments.services import reply_generate

API = "/api/v1/rater/"


class RaterApi:
    """An HTTP client that sends one API client's token with every request."""

    def __init__(self, token: str):
        self.http = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def get(self, path: str):
        return self.http.get(API + path)

    def post(self, path: str, data: dict | None = None):
        return self.http.post(API + path, data or {}, content_type="application/json")

    def enter(self, participant: int | str, **overrides):
        """POST raters/ for a participant (a number becomes a Prolific-shaped id)."""
        participant_id = f"{participant:024x}" if isinstance(participant, int) else participant
        body = {
            "participant_id": participant_id,
            "consent": True,
            "country": "US",
            "answers": US_YOUNG_ASIAN_DEMOCRAT,
        }
        return self.post("raters/", {**body, **overrides})

    def admitted_rater(self, participant: int | str = 1) -> str:
        response = self.enter(participant)
        assert response.status_code == 201, response.json()
        assert response.json()["status"] == "admitted"
        return response.json()["id"]

    def start(self, rater_id: str) -> dict:
        response = self.post(f"raters/{rater_id}/battle/")
        assert response.status_code == 200, response.json()
        return response.json()

    def chat(self, battle_id: str, message: str) -> list:
        """Send a message, let the replies be written, poll until both are in. Returns every response."""
        sent = self.post(f"battles/{battle_id}/turns/", {"message": message})
        assert sent.status_code == 202, sent.json()
        assert sent.json()["waiting"] is True
        waiting = self.get(f"battles/{battle_id}/")
        assert waiting.json()["turns"][-1]["state"] == "waiting"
        assert waiting.json()["turns"][-1]["reply_a"] is None
        answer_pending_replies()
        done = self.get(f"battles/{battle_id}/")
        assert done.json()["waiting"] is False and done.json()["turns"][-1]["state"] == "done"
        return [sent, waiting, done]

    def chat_turns(self, battle_id: str, count: int, task: int = 0) -> list:
        return [response for n in range(count) for response in self.chat(battle_id, TASKS[task][n])]

    def vote_body(self, battle_id: str, outcome: str = "a") -> dict:
        """A verdict on every dimension, answering the attention check as asked."""
        battle = self.get(f"battles/{battle_id}/").json()
        body = {"choices": {d["slug"]: outcome for d in battle["dimensions"]}}
        if battle["attention_check"]:
            body["attention"] = attention_answer(battle["attention_check"]["question"])
        return body

    def vote(self, battle_id: str, outcome: str = "a"):
        return self.post(f"battles/{battle_id}/vote/", self.vote_body(battle_id, outcome))


def attention_answer(question: str) -> str:
    for label, value in (("Model A", "a"), ("Model B", "b"), ("Tie", "tie")):
        if f"choose {label}" in question:
            return value
    raise AssertionError(f"no answer in {question!r}")


def answer_pending_replies() -> None:
    """Do what the generation worker does with the tasks turn_submit enqueues (on commit, which never
    comes inside a test's transaction): write each pending reply from the fake LLM server. Replies are
    dated a minute back, as if the rater had taken the time to read them."""
    for reply_id in Reply.objects.filter(state=Reply.State.PENDING).values_list("pk", flat=True):
        reply_generate(reply_id=reply_id)
    Reply.objects.filter(finished_at__isnull=False).update(finished_at=timezone.now() - timedelta(minutes=1))


def client_with_token(study: Study, kind: str = ApiClient.Kind.HUMAN_PANEL, name: str = "Front-end"):
    client, token = api_client_create(name=name, kind=kind, study=study)
    return client, RaterApi(token)
