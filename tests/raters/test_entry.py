import pytest

from raters.models import Rater
from raters.selectors import SESSION_RATER_KEY
from tests.helpers import consent_post

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"
LINK = f"/s/pilot-study/?PROLIFIC_PID={PID}&STUDY_ID={'a' * 24}&SESSION_ID={'b' * 24}"

pytestmark = pytest.mark.django_db


def consent(client):
    return consent_post(client)


def test_it_shows_consent_for_a_valid_panel_link_without_storing_anything(client, study):
    response = client.get(LINK, follow=True)
    assert response.redirect_chain[-1][0] == "/rate/consent/"
    assert b"Before you start" in response.content
    assert Rater.objects.count() == 0


def test_it_creates_a_panel_rater_on_consent_with_only_hashed_ids(client, study):
    client.get(LINK)
    response = consent(client)
    assert response.url == "/rate/screener/"
    rater = Rater.objects.get()
    assert rater.source == Rater.Source.PANEL
    assert len(rater.participant_hash) == 64
    assert PID not in rater.participant_hash
    assert PID not in str(client.session.items())


@pytest.mark.parametrize(
    "query", ["", "?PROLIFIC_PID=abc", "?pid=a%20b", f"?PROLIFIC_PID={PID}&SESSION_ID=zz"]
)
def test_it_answers_malformed_links_with_a_clear_400(client, study, query):
    response = client.get(f"/s/pilot-study/{query}")
    assert response.status_code == 400
    assert b"This link is not valid" in response.content
    assert Rater.objects.count() == 0


def test_it_says_a_closed_study_is_closed_to_newcomers(client, study):
    study.is_open = False
    study.save()
    response = client.get(LINK)
    assert response.status_code == 410
    assert b"closed" in response.content


def test_it_resumes_a_returning_participant_instead_of_creating_a_second_rater(client, study):
    client.get(LINK)
    consent(client)
    second_browser = type(client)()
    response = second_browser.get(LINK)
    assert response.url == "/rate/next/"
    assert Rater.objects.count() == 1
    assert second_browser.session[SESSION_RATER_KEY] == str(Rater.objects.get().public_id)


def test_it_changes_the_session_key_on_entry(client, study):
    client.get("/")
    session = client.session
    session["planted"] = "yes"
    session.save()
    planted_key = session.session_key
    client.get(LINK)
    assert client.session.session_key != planted_key
    assert "planted" not in client.session


def test_it_requires_the_consent_box(client, study):
    client.get(LINK)
    response = client.post("/rate/consent/", {})
    assert response.status_code == 400
    assert b"tick the box" in response.content
    assert Rater.objects.count() == 0


def test_it_starts_an_open_rater_from_rate_models(client, study):
    assert client.get("/rate/").url == "/rate/consent/"
    consent(client)
    rater = Rater.objects.get()
    assert rater.source == Rater.Source.OPEN
    assert rater.participant_hash is None


def test_it_explains_when_no_study_is_open_to_anyone(client, study):
    study.allows_open_entry = False
    study.save()
    response = client.get("/rate/")
    assert response.status_code == 404
    assert b"No study is open" in response.content


def test_it_puts_the_screened_rater_in_one_group_per_answered_axis(client, study, groups):
    client.get("/rate/")
    consent(client)
    page = client.get("/rate/screener/?country=UK")
    assert b"Liberal Democrat" in page.content and b"Republican" not in page.content
    response = client.post(
        "/rate/screener/",
        {"country": "UK", "age": "uk-age-55-plus", "ethnicity": "uk-ethnicity-black", "politics": ""},
    )
    assert response.url == "/rate/next/"
    rater = Rater.objects.get()
    assert rater.country.code == "UK"
    assert sorted(rater.groups.values_list("slug", flat=True)) == ["uk-age-55-plus", "uk-ethnicity-black"]


def test_it_rejects_a_group_from_another_country(client, study, groups):
    client.get("/rate/")
    consent(client)
    response = client.post(
        "/rate/screener/", {"country": "UK", "age": "us-age-18-34", "ethnicity": "", "politics": ""}
    )
    assert response.status_code == 400
    assert b"not one of the options" in response.content
    assert Rater.objects.get().screened_at is None


def test_it_requires_an_age_band(client, study, groups):
    client.get("/rate/")
    consent(client)
    response = client.post("/rate/screener/", {"country": "US", "ethnicity": "", "politics": ""})
    assert response.status_code == 400
    assert b"age" in response.content


def test_it_sends_a_screened_rater_to_a_battle(rater_client, rater):
    response = rater_client.get("/rate/next/", follow=True)
    assert response.redirect_chain[-1][0].startswith("/battle/")
    assert rater.battles.count() == 1


def test_it_turns_away_pages_that_need_a_rater(client, db):
    response = client.get("/rate/screener/")
    assert response.status_code == 403
    assert b"no rating session" in response.content
