from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from leaderboard.models import FitSnapshot
from leaderboard.quiz import quiz_data
from leaderboard.services import ratings_apply_pending
from raters.models import Group, Quota, Study
from tests.helpers import TASKS, consent_post, verdict
from tournaments.models import Battle, LLMModel, Reply, Strike, Tournament, Vote
from tournaments.services import reply_generate

pytestmark = pytest.mark.django_db


def test_it_seeds_a_complete_demo_and_prints_the_staff_login(capsys, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    call_command("seed_demo")
    output = capsys.readouterr().out
    password = (tmp_path / "demo_admin_password").read_text()
    assert f"user: admin  password: {password}" in output
    assert get_user_model().objects.get(username="admin").check_password(password)
    tournament = Tournament.objects.get(slug="demo")
    assert tournament.llm_models.filter(provider=LLMModel.Provider.DEMO).count() == 4
    assert len({m.demo_style for m in tournament.llm_models.all()}) == 4
    assert list(tournament.dimensions.values_list("slug", flat=True)) == [
        "core-task",
        "communication",
        "adaptiveness",
        "trust-safety",
        "overall",
    ]
    assert Group.objects.count() == 22
    assert Study.objects.get(slug="demo").allows_open_entry
    panel = Study.objects.get(slug="demo-panel")
    assert panel.quotas.count() == 22  # one marginal quota per default group
    assert "/s/demo-panel/?PROLIFIC_PID=" in output
    # Simulated votes fill the boards, fitted on every dimension, and say so.
    assert Vote.objects.filter(battle__tournament=tournament).count() == 1200
    assert FitSnapshot.objects.filter(tournament=tournament).count() == 5
    assert "made-up raters" in output
    # Each simulated battle has its conversation (the demo models' replies), which the judging quiz shows.
    assert Reply.objects.filter(turn__battle__tournament=tournament, state=Reply.State.DONE).count() == 2400
    assert quiz_data(tournament=tournament) is not None


def test_it_is_idempotent(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    call_command("seed_demo")
    call_command("seed_demo")
    assert Tournament.objects.count() == 1
    assert LLMModel.objects.count() == 4
    assert Group.objects.count() == 22
    assert Study.objects.count() == 2
    assert Quota.objects.count() == 22
    assert Vote.objects.count() == 1200  # simulated once, on the first run only


def test_it_lets_a_rater_finish_a_demo_battle_offline(client, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    call_command("seed_demo")
    client.get("/rate/")
    consent_post(client)
    client.post(
        "/rate/screener/", {"country": "US", "age": "us-age-55-plus", "ethnicity": "", "politics": ""}
    )
    battle_url = client.get("/rate/next/", follow=True).redirect_chain[-1][0]
    battle = Battle.objects.get(state=Battle.State.ACTIVE)
    for message in TASKS[4][:3]:
        client.post(f"{battle_url}turn/", {"message": message})
        for reply in Reply.objects.filter(state=Reply.State.PENDING):
            reply_generate(reply_id=reply.pk)
    replies = Reply.objects.filter(turn__battle=battle, content__contains="Offline demo reply")
    assert replies.count() == 6
    replies.update(finished_at=timezone.now() - timedelta(minutes=1))  # time taken to read
    assert client.post(f"{battle_url}vote/", verdict(battle, "tie")).status_code == 302
    assert ratings_apply_pending() == 1
    assert not Strike.objects.exists()
