"""Issue 22, scenario "the open data picks people out".

Pass criteria:
- in battles.jsonl every published group combination is shared by at least k = 10 raters of the file
  (coarsened by dropping axes from the last), and groups too small for a board are never published;
- two public downloads cannot be joined: no rater or battle pseudonym appears in both;
- the linked export (stable pseudonyms) is 403 for staff without `raters.export_linked`, and 200, stable
  across downloads and audited for staff with it;
- emails, phone numbers and token-bearing links in messages are masked in the file;
- the pooled board's weighting note (stored with the snapshot, shown by the API, boards.json and the
  methods page) names no country or category with fewer than k raters, and no category at all.
"""

import json
from collections import defaultdict

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from leaderboard.models import FitSnapshot
from leaderboard.services import fits_publish
from raters.models import AuditEntry
from tests.conftest import admitted_rater
from tests.helpers import DIMENSIONS, chat, chat_turns, verdict
from tests.leaderboard.board_data import raters_in, votes_cast
from tournaments.services import battle_start, vote_submit

pytestmark = pytest.mark.django_db

YOUNG = "us-age-18-34"
ASIAN, WHITE, BLACK = "us-ethnicity-asian", "us-ethnicity-white", "us-ethnicity-black"
DEM, REP, IND = "us-politics-democrat", "us-politics-republican", "us-politics-independent"


@pytest.fixture
def crowd(tournament, study, groups):
    """12 young Asian Democrats, 5 young Asian Republicans, 6 young White Democrats and 5 young Black
    Independents, three votes each; then a fit. White, Black, Republican and Independent are too small
    for a board of their own (and hide each other); young Asian Democrat is the only full combination
    with 10 raters."""
    cells = {(YOUNG, ASIAN, DEM): 12, (YOUNG, ASIAN, REP): 5, (YOUNG, WHITE, DEM): 6, (YOUNG, BLACK, IND): 5}
    raters = {cell: raters_in(study, *cell, count=count) for cell, count in cells.items()}
    every = [r for group in raters.values() for r in group]
    votes_cast(tournament, every, seed=3, dimensions=tuple(DIMENSIONS))
    fits_publish(tournament_id=tournament.pk)
    return raters


def download(client: Client, url: str = "/api/v1/tournaments/pilot/battles.jsonl") -> list[dict]:
    response = client.get(url)
    assert response.status_code == 200
    return [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]


def test_every_published_combination_is_shared_by_at_least_k_raters(client, crowd):
    lines = download(client)
    raters_by_combination = defaultdict(set)
    for line in lines:
        raters_by_combination[tuple(line["rater"]["groups"])].add(line["judge"])
    assert {combination: len(raters) for combination, raters in raters_by_combination.items()} == {
        (YOUNG, ASIAN, DEM): 12,
        # Young Democrats of an unpublished ethnicity (6) and young raters of an unpublished ethnicity
        # and politics (5) are too few apart; politics dropped, together they are 11 young raters.
        (YOUNG,): 11,
        # The 5 young Asians of unpublished politics: no coarsening of theirs reaches 10 on its own.
        (): 5,
    }
    published = {group for combination in raters_by_combination for group in combination}
    assert not published & {WHITE, BLACK, REP, IND}


def test_two_public_downloads_cannot_be_joined(client, crowd):
    first, second = download(client), download(client)
    assert len(first) == len(second) == 28 * 3
    assert [line["votes"] for line in first] == [line["votes"] for line in second]
    for key in ("judge", "question_id"):
        assert not {line[key] for line in first} & {line[key] for line in second}


def test_the_linked_export_needs_its_permission_and_is_audited(crowd):
    url = "/staff/tournaments/pilot/battles-linked.jsonl"
    user = get_user_model().objects.create_user("researcher", password="x", is_staff=True)
    staff = Client()
    staff.force_login(user)
    assert staff.get(url).status_code == 403
    assert not AuditEntry.objects.exists()
    user.user_permissions.add(Permission.objects.get(codename="export_linked"))
    user = get_user_model().objects.get(pk=user.pk)  # a fresh permission cache
    staff.force_login(user)
    first, second = download(staff, url), download(staff, url)
    assert [line["judge"] for line in first] == [line["judge"] for line in second]
    assert AuditEntry.objects.filter(actor="researcher", action="battles_export_linked").count() == 2


def test_personal_data_in_messages_is_masked(client, tournament, study, groups):
    rater = admitted_rater(study)
    battle = battle_start(rater=rater)
    chat(battle, "I want to bake basil bread; mail the recipe to jane.doe@example.com or call (415) 555-2671")
    chat_turns(battle, 2)
    vote_submit(battle=battle, choices=verdict(battle))
    body = json.dumps(download(client))
    assert "jane.doe@example.com" not in body and "555-2671" not in body
    assert "mail the recipe to [email] or call [phone]" in body


def test_the_weighting_note_names_no_small_country_or_category(client, tournament, study, groups):
    # Only one rater answered every axis, in a cell whose groups are far below the threshold: the
    # census cannot be matched (most categories have nobody), which used to be spelt out by category.
    raters = [admitted_rater(study) for _ in range(3)]
    votes_cast(tournament, raters, seed=5)
    fits_publish(tournament_id=tournament.pk)
    note = FitSnapshot.objects.filter(tournament=tournament).latest("pk").settings["pooled"]
    for word in ("US", "Black", "White", "Other", "Asian", "18", "Democrat", "Republican", "'"):
        assert word not in note, note
    assert note


def test_earlier_weighting_notes_lose_their_categories(tournament, study, groups):
    import importlib

    from django.apps import apps

    raters = [admitted_rater(study) for _ in range(3)]
    votes_cast(tournament, raters, seed=5)
    fits_publish(tournament_id=tournament.pk)
    detailed = (
        "UK: raked to census margins; US: sample weights (census not matchable: axis 0: margin categories "
        "['35-54', '55+'] have no sample cells; merge them)"
    )
    FitSnapshot.objects.update(settings={"pooled": detailed})
    migration = importlib.import_module("leaderboard.migrations.0005_weighting_notes_without_categories")
    migration.notes_scrub(apps, None)
    assert {s.settings["pooled"] for s in FitSnapshot.objects.all()} == {
        "UK: raked to census margins; US: sample weights (census not matchable for some categories)"
    }


def test_the_methods_page_states_the_rule(client, crowd):
    html = client.get("/leaderboard/methodology/").content.decode()
    assert 'data-testid="open-data-rule"' in html
    assert "at least 10 raters" in " ".join(html.split())
    assert "politics first, then ethnicity, then age band" in " ".join(html.split())
