"""Issue 22, scenario "a panel id is a bearer key".

Pass criteria:
- a returning participant on a new device, with the panel id alone, resumes their unfinished battle but
  gets 404 for the reveal of a battle voted before, and the end page without the completion code; the
  same link with the panel's session id they started with (proof) shows both;
- a battle voted and a session finished on the new device show their reveal and code there;
- a study link for someone else never replaces an unfinished session in this browser on a GET (it asks);
  the confirming POST needs the CSRF token, and switches;
- a participant entered by a rater API client cannot enter through the website (403, no session).
"""

import pytest
from django.test import Client

from raters.models import Rater
from raters.selectors import SESSION_RATER_KEY
from raters.services import rater_admit, rater_complete_if_done, rater_screen
from tests.conftest import US_YOUNG_ASIAN_DEMOCRAT
from tests.helpers import chat_turns, verdict, voted_battle
from tests.tournaments.rater_api_helpers import client_with_token
from tournaments.services import battle_start

pytestmark = pytest.mark.django_db

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"
SESSION = "b" * 24
OWN_LINK = f"/s/pilot-study/?PROLIFIC_PID={PID}&SESSION_ID={SESSION}"
ID_ONLY_LINK = f"/s/pilot-study/?PROLIFIC_PID={PID}"
OTHER_LINK = f"/s/pilot-study/?PROLIFIC_PID={'c' * 24}&SESSION_ID={'d' * 24}"


def enter(link: str, browser: Client | None = None) -> Client:
    browser = browser or Client()
    browser.get(link)
    return browser


@pytest.fixture
def participant(study, groups):
    """A participant who began in their own browser: admitted, one battle voted, one unfinished."""
    browser = enter(OWN_LINK)
    browser.post("/rate/consent/", {"agree": "yes"})
    rater = Rater.objects.get()
    rater = rater_admit(rater=rater_screen(rater=rater, country_code="US", answers=US_YOUNG_ASIAN_DEMOCRAT))
    voted, _ = voted_battle(rater)
    unfinished = battle_start(rater=rater)
    chat_turns(unfinished, 1)
    return {"browser": browser, "rater": rater, "voted": voted, "unfinished": unfinished}


def test_a_new_device_with_the_id_alone_resumes_the_battle_but_not_the_reveals(participant):
    intruder = enter(ID_ONLY_LINK)
    assert intruder.session[SESSION_RATER_KEY] == str(participant["rater"].public_id)
    resumed = intruder.get("/battle/next/")
    assert resumed.url == f"/battle/{participant['unfinished'].public_id}/"
    assert intruder.get(resumed.url).status_code == 200
    assert intruder.get(f"/battle/{participant['voted'].public_id}/reveal/").status_code == 404
    # The participant's own browser still sees it.
    assert participant["browser"].get(f"/battle/{participant['voted'].public_id}/reveal/").status_code == 200


def test_the_panel_session_id_proves_a_new_device_is_the_participants_own(participant):
    own_new_device = enter(OWN_LINK)
    assert own_new_device.get(f"/battle/{participant['voted'].public_id}/reveal/").status_code == 200


def test_a_limited_session_sees_the_reveal_of_a_battle_it_voted(participant):
    intruder = enter(ID_ONLY_LINK)
    battle = participant["unfinished"]
    chat_turns(battle, 2)
    assert intruder.post(f"/battle/{battle.public_id}/vote/", verdict(battle)).status_code == 302
    assert intruder.get(f"/battle/{battle.public_id}/reveal/").status_code == 200


def test_a_new_device_with_the_id_alone_does_not_see_the_completion_code(participant, study):
    study.battles_per_session = 1
    study.completion_code = "C0MPLETE"
    study.return_url = "https://panel.example/done?cc={code}"
    study.save()
    assert rater_complete_if_done(rater=Rater.objects.get()).status == Rater.Status.COMPLETED
    intruder = enter(ID_ONLY_LINK)
    page = intruder.get("/rate/next/").content.decode()
    assert "already ended" in page and "C0MPLETE" not in page
    assert "C0MPLETE" in enter(OWN_LINK).get("/rate/next/").content.decode()


def test_a_limited_session_that_finishes_the_study_gets_its_code(participant, study):
    study.battles_per_session = 2
    study.completion_code = "C0MPLETE"
    study.save()
    intruder = enter(ID_ONLY_LINK)
    battle = participant["unfinished"]
    chat_turns(battle, 2)
    intruder.post(f"/battle/{battle.public_id}/vote/", verdict(battle))
    assert "C0MPLETE" in intruder.get("/rate/next/").content.decode()


def test_a_link_for_someone_else_asks_before_replacing_an_unfinished_session(participant):
    browser = Client(enforce_csrf_checks=True)
    browser.cookies = participant["browser"].cookies
    question = browser.get(OTHER_LINK)
    assert question.status_code == 200 and b'data-testid="switch-session"' in question.content
    assert browser.session[SESSION_RATER_KEY] == str(participant["rater"].public_id)
    # Another site's forged POST has no CSRF token.
    forged = browser.post("/s/pilot-study/", {"PROLIFIC_PID": "c" * 24, "switch": "yes"})
    assert forged.status_code == 403
    assert browser.session[SESSION_RATER_KEY] == str(participant["rater"].public_id)
    token = browser.cookies["csrftoken"].value
    fields = {"PROLIFIC_PID": "c" * 24, "SESSION_ID": "d" * 24, "switch": "yes"}
    switched = browser.post("/s/pilot-study/", {**fields, "csrfmiddlewaretoken": token})
    assert switched.url == "/rate/consent/"
    assert SESSION_RATER_KEY not in browser.session


def test_the_same_participants_link_does_not_ask(participant):
    assert participant["browser"].get(OWN_LINK).url == "/rate/next/"


def test_a_participant_entered_by_an_api_client_while_consenting_is_not_taken_over(study, groups):
    browser = enter(OWN_LINK)
    _, api = client_with_token(study)
    assert api.enter(PID).status_code == 201
    response = browser.post("/rate/consent/", {"agree": "yes"})
    assert response.status_code == 409
    assert SESSION_RATER_KEY not in browser.session
    assert Rater.objects.count() == 1


def test_a_participant_of_an_api_client_cannot_enter_through_the_website(study, groups):
    _, api = client_with_token(study)
    assert api.enter(PID).status_code == 201
    browser = Client()
    response = browser.get(OWN_LINK)
    assert response.status_code == 403 and b"another app or site" in response.content
    assert SESSION_RATER_KEY not in browser.session
