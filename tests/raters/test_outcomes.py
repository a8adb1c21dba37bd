"""The panel round trip: end-of-session pages with the right code and a way back to the panel."""

import pytest

from raters.models import Country, Group, Rater
from raters.services import quota_set
from tests.conftest import admitted_rater, client_for
from tests.helpers import chat_turns, verdict, voted_battle
from tournaments.services import battle_start

pytestmark = pytest.mark.django_db

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"


@pytest.fixture
def panel_study(study, groups):
    study.completion_code = "C0MPLETE42"
    study.screen_out_code = "SCREENOUT7"
    study.quota_full_code = "QUOTAFULL9"
    study.return_url = "https://panel.example/submissions/complete?cc={code}"
    study.battles_per_session = 1
    study.save()
    return study


def enter_and_screen(client, study, answers, country="US"):
    client.get(f"/s/{study.slug}/?PROLIFIC_PID={PID}")
    client.post("/rate/consent/", {"agree": "yes"})
    return client.post("/rate/screener/", {"country": country, **answers}, follow=True)


def test_it_shows_the_quota_full_code_and_the_way_back(client, panel_study):
    quota_set(study=panel_study, groups=[Group.objects.get(slug="us-age-18-34")], target=0)
    response = enter_and_screen(
        client, panel_study, {"age": "us-age-18-34", "ethnicity": "us-ethnicity-asian", "politics": ""}
    )
    page = response.content.decode()
    assert "This study is full for now" in page
    assert 'data-testid="panel-code">QUOTAFULL9<' in page
    assert 'content="10;url=https://panel.example/submissions/complete?cc=QUOTAFULL9"' in page
    assert Rater.objects.get().status == Rater.Status.QUOTA_FULL


def test_it_shows_the_screen_out_code(client, panel_study):
    panel_study.countries.set([Country.objects.get(code="UK")])
    response = enter_and_screen(
        client, panel_study, {"age": "us-age-55-plus", "ethnicity": "", "politics": ""}
    )
    assert 'data-testid="panel-code">SCREENOUT7<' in response.content.decode()


def test_it_sends_an_admitted_rater_to_a_battle(client, panel_study):
    response = enter_and_screen(
        client, panel_study, {"age": "us-age-55-plus", "ethnicity": "", "politics": ""}
    )
    assert response.redirect_chain[-1][0].startswith("/battle/")


def test_it_ends_the_session_with_the_completion_code_and_shows_it_again_on_return(client, panel_study):
    enter_and_screen(client, panel_study, {"age": "us-age-55-plus", "ethnicity": "", "politics": ""})
    rater = Rater.objects.get()
    battle, _ = voted_battle(rater)
    reveal = client.get(f"/battle/{battle.public_id}/reveal/")
    assert b"Finish and get your completion code" not in reveal.content  # not complete until checked
    assert b"/leaderboard/personal/mine/" not in reveal.content
    done = client.get("/rate/next/").content.decode()
    assert 'data-testid="panel-code">C0MPLETE42<' in done
    assert Rater.objects.get().status == Rater.Status.COMPLETED
    # The completion page offers the rater their own board, now that they can no longer vote.
    assert 'data-testid="own-board-link"' in done and 'href="/leaderboard/personal/mine/"' in done
    returning = client.get(f"/s/{panel_study.slug}/?PROLIFIC_PID={PID}", follow=True)
    assert b"C0MPLETE42" in returning.content
    # Another browser with the panel id alone is not shown the code (tests/privacy/test_sessions.py).
    elsewhere = type(client)().get(f"/s/{panel_study.slug}/?PROLIFIC_PID={PID}", follow=True)
    assert b"C0MPLETE42" not in elsewhere.content and b"already ended" in elsewhere.content
    assert b"own-board-link" not in elsewhere.content
    assert Rater.objects.count() == 1
    assert rater.battles.count() == 1  # no second session


def test_it_offers_finishing_after_the_last_vote(client, panel_study):
    enter_and_screen(client, panel_study, {"age": "us-age-55-plus", "ethnicity": "", "politics": ""})
    battle = battle_start(rater=Rater.objects.get())
    chat_turns(battle, 3)
    reveal = client.post(f"/battle/{battle.public_id}/vote/", verdict(battle), follow=True)
    assert b"Finish and get your completion code" in reveal.content
    # Their own board is offered now, after the last vote, and not before (the first assertion above).
    assert b'href="/leaderboard/personal/mine/"' in reveal.content
    assert client.post("/battle/next/").url == "/rate/next/"


def test_it_lets_a_returning_participant_resume_after_the_study_closes(client, panel_study):
    enter_and_screen(client, panel_study, {"age": "us-age-55-plus", "ethnicity": "", "politics": ""})
    panel_study.is_open = False
    panel_study.save()
    returning = type(client)().get(f"/s/{panel_study.slug}/?PROLIFIC_PID={PID}", follow=True)
    assert returning.redirect_chain[-1][0].startswith("/battle/")
    newcomer = type(client)().get(f"/s/{panel_study.slug}/?PROLIFIC_PID={'e' * 24}")
    assert newcomer.status_code == 410


def test_it_refuses_a_link_for_another_study(client, panel_study):
    panel_study.external_study_id = "a" * 24
    panel_study.save()
    response = client.get(f"/s/{panel_study.slug}/?PROLIFIC_PID={PID}&STUDY_ID={'b' * 24}")
    assert response.status_code == 400
    assert b"belongs to a different study" in response.content
    assert client.get(f"/s/{panel_study.slug}/?PROLIFIC_PID={PID}&STUDY_ID={'a' * 24}").status_code == 302


def test_it_reads_generic_panel_links(client, panel_study):
    panel_study.panel = panel_study.Panel.GENERIC
    panel_study.save()
    assert client.get(f"/s/{panel_study.slug}/?pid=respondent-77").url == "/rate/consent/"
    assert client.get(f"/s/{panel_study.slug}/?PROLIFIC_PID={PID}").status_code == 400


def test_it_keeps_raters_who_may_not_rate_away_from_battles(panel_study):
    quota_set(study=panel_study, groups=[Group.objects.get(slug="us-age-18-34")], target=0)
    rater = admitted_rater(panel_study)
    assert rater.status == Rater.Status.QUOTA_FULL
    client = client_for(rater)
    assert client.post("/battle/next/").url == "/rate/next/"
    assert client.get("/battle/next/", HTTP_HX_REQUEST="true").headers["HX-Redirect"] == "/rate/next/"
    assert rater.battles.count() == 0


def test_it_speaks_of_no_code_on_an_open_study_without_one(study, groups):
    from raters.selectors import rater_outcome

    study.completion_code = study.screen_out_code = study.quota_full_code = ""
    study.return_url = ""
    study.save()
    rater = admitted_rater(study)
    for status in (Rater.Status.COMPLETED, Rater.Status.EXCLUDED, Rater.Status.SCREENED_OUT):
        rater.status = status
        outcome = rater_outcome(rater=rater)
        assert "below" not in outcome.message and "panel" not in outcome.message
        assert outcome.code == ""


def test_it_points_to_the_code_below_when_there_is_one(panel_study):
    from raters.selectors import rater_outcome

    rater = admitted_rater(panel_study)
    rater.status = Rater.Status.COMPLETED
    assert rater_outcome(rater=rater).message.endswith("Your completion code is below.")
