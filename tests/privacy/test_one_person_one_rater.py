"""Issue 22, scenario "one person, several raters": a Prolific id is a hex number, so the spellings
`0a1b…`, `0A1B…` and `0a1B…` are one participant.

Pass criteria: the three spellings make one rater in a study, through the website and through the rater
API alike; the stored hash is the hash of the lower-case id; a rater recorded before normalisation (under
the hash of an upper-case id) is still found by their own link, and no second rater is made for them; a
generic panel's ids, which may differ by case, stay distinct.
"""

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from raters.models import Rater
from raters.panel import keyed_hash
from raters.selectors import SESSION_RATER_KEY
from tests.tournaments.rater_api_helpers import client_with_token

pytestmark = pytest.mark.django_db

PID = "0a1b2c3d4e5f60718293a4b5"
SPELLINGS = [PID, PID.upper(), "0a1B2c3D4e5F60718293A4b5"]


def enter_on_the_website(pid: str) -> Client:
    browser = Client()
    browser.get(f"/s/pilot-study/?PROLIFIC_PID={pid}&STUDY_ID={'A' * 24}&SESSION_ID={'b' * 24}")
    browser.post("/rate/consent/", {"agree": "yes"})
    return browser


@pytest.fixture
def prolific_study(study):
    study.external_study_id = "a" * 24  # the link above spells it in upper case: still this study
    study.save()
    return study


def test_it_makes_one_rater_of_every_spelling_of_a_prolific_id_on_the_website(prolific_study):
    for pid in SPELLINGS:
        enter_on_the_website(pid)
    rater = Rater.objects.get()
    assert rater.participant_hash == keyed_hash(settings.PANEL_ID_HMAC_KEY, PID)
    assert rater.panel_session_hash == keyed_hash(settings.PANEL_ID_HMAC_KEY, "b" * 24)


def test_it_makes_one_rater_of_every_spelling_of_a_prolific_id_in_the_rater_api(study, groups):
    _, api = client_with_token(study)
    ids = {api.enter(pid).json()["id"] for pid in SPELLINGS}
    assert len(ids) == 1
    assert Rater.objects.get().participant_hash == keyed_hash(settings.PANEL_ID_HMAC_KEY, PID)


def test_a_rater_recorded_before_normalisation_is_found_by_their_own_link(prolific_study):
    typed = PID.upper()
    earlier = Rater.objects.create(
        study=prolific_study,
        participant_hash=keyed_hash(settings.PANEL_ID_HMAC_KEY, typed),
        source=Rater.Source.PANEL,
        consented_at=timezone.now(),
    )
    browser = Client()
    response = browser.get(f"/s/pilot-study/?PROLIFIC_PID={typed}&STUDY_ID={'a' * 24}")
    assert response.url == "/rate/next/"
    assert browser.session[SESSION_RATER_KEY] == str(earlier.public_id)
    assert Rater.objects.count() == 1


def test_a_rater_recorded_before_normalisation_is_found_through_the_api(study, groups):
    typed = PID.upper()
    _, api = client_with_token(study)
    first = api.enter(typed)
    rater = Rater.objects.get()
    # As it was stored before ids were normalised: the hash of the id as typed.
    Rater.objects.filter(pk=rater.pk).update(participant_hash=keyed_hash(settings.PANEL_ID_HMAC_KEY, typed))
    again = api.enter(typed)
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    assert Rater.objects.count() == 1


def test_it_keeps_generic_panel_ids_that_differ_by_case_apart(study, groups):
    study.panel = "generic"
    study.save()
    for pid in ("Alice", "alice"):
        browser = Client()
        browser.get(f"/s/pilot-study/?pid={pid}")
        browser.post("/rate/consent/", {"agree": "yes"})
    assert Rater.objects.count() == 2
