"""Imported battle logs publish their pooled board (their raters are no panel's people and have no groups),
and their models are "imported", while every board of panel data keeps the small-group rule."""

import json

import pytest
from django.core.management import call_command
from django.test import override_settings

from leaderboard.boards import Status, board_get
from leaderboard.services import fits_publish
from raters.models import Study
from tests.leaderboard.board_data import raters_in, votes_cast
from tournaments.models import Tournament
from tournaments.selectors import tournament_is_imported

pytestmark = pytest.mark.django_db

# No judge ids and no question ids: the whole log is one anonymous rater.
ROWS = [
    {"model_a": a, "model_b": b, "winner": w, "tstamp": 1700000000.0 + index}
    for index, (a, b, w) in enumerate(
        [("gpt-4", "claude-2", "model_a"), ("claude-2", "llama-2", "tie"), ("gpt-4", "llama-2", "model_a")]
        * 4
    )
]


@pytest.fixture
def imported(tmp_path) -> Tournament:
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    call_command("import_battles", str(path), "--tournament", "arena", "--create", "--name", "Arena")
    tournament = Tournament.objects.get(slug="arena")
    fits_publish(tournament_id=tournament.pk)
    return tournament


def overall(tournament):
    return tournament.dimensions.get(slug="overall")


@override_settings(POPULUS_PROVISIONAL_BATTLES=5)
def test_it_publishes_the_pooled_board_of_a_log_without_judge_ids_and_marks_its_models_imported(imported):
    board = board_get(dimension=overall(imported))
    assert board.imported and not board.suppressed and board.raters == 1
    assert board.entries[0].name == "gpt-4"
    assert {e.status for e in board.entries} == {Status.IMPORTED}


@override_settings(POPULUS_PROVISIONAL_BATTLES=100)
def test_an_imported_model_with_few_battles_is_provisional_not_withdrawn(imported):
    assert {e.status for e in board_get(dimension=overall(imported)).entries} == {Status.PROVISIONAL}


def test_the_page_and_the_api_show_an_imported_board_with_its_note(imported, client):
    page = client.get("/leaderboard/?tournament=arena&dimension=overall")
    assert b'data-testid="imported-note"' in page.content
    assert b'data-testid="suppressed"' not in page.content
    assert b"gpt-4" in page.content
    api = client.get("/api/v1/boards/?tournament=arena&dimension=overall").json()
    assert api["suppressed"] is False and api["imported"] is True
    assert api["entries"][0]["name"] == "gpt-4"


def test_a_tournament_where_panel_raters_voted_too_is_not_imported_and_keeps_the_rule(imported, groups):
    study = Study.objects.create(slug="panel", name="Panel", tournament=imported)
    votes_cast(imported, raters_in(study, count=1), models=list(imported.llm_models.all()))
    assert not tournament_is_imported(tournament=imported)
    fits_publish(tournament_id=imported.pk)
    board = board_get(dimension=overall(imported))
    assert board.suppressed and not board.imported


def test_a_panel_board_below_the_threshold_stays_withheld(tournament, study, groups):
    votes_cast(tournament, raters_in(study, "us-age-18-34", count=3))
    fits_publish(tournament_id=tournament.pk)
    board = board_get(dimension=overall(tournament))
    assert board.suppressed and not board.imported
    assert not tournament_is_imported(tournament=tournament)


def test_every_board_entry_carries_its_arena_rating_in_page_api_and_downloads(imported, client):
    board = board_get(dimension=overall(imported))
    ratings = [e.rating for e in board.entries]
    assert sum(ratings) / len(ratings) == pytest.approx(1000.0)
    assert all(e.rating_low < e.rating < e.rating_high for e in board.entries)
    assert board.entries[0].rating == max(ratings)  # ordered like the scores
    api = client.get("/api/v1/boards/?tournament=arena&dimension=overall").json()
    assert api["entries"][0]["rating"] == pytest.approx(board.entries[0].rating)
    assert api["entries"][0]["rating_low"] == pytest.approx(board.entries[0].rating_low)
    csv_text = client.get("/api/v1/tournaments/arena/boards.csv").content.decode()
    header, first = csv_text.splitlines()[:2]
    assert "rating,rating_low,rating_high" in header
    assert str(board.entries[0].rating) in first
    exported = client.get("/api/v1/tournaments/arena/boards.json").json()
    assert exported[0]["entries"][0]["rating_high"] == pytest.approx(board.entries[0].rating_high)
    page = client.get("/leaderboard/?tournament=arena&dimension=overall").content.decode()
    assert f"{board.entries[0].rating:.0f}" in page and "Rating (95%)" in page


@pytest.fixture
def twelve_models(tmp_path) -> Tournament:
    names = [f"m{index:02d}" for index in range(12)]
    rows = [
        {"model_a": a, "model_b": b, "winner": "model_a" if a < b else "tie", "tstamp": float(index)}
        for index, (a, b) in enumerate((a, b) for a in names for b in names if a != b)
    ]
    path = tmp_path / "twelve.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    call_command("import_battles", str(path), "--tournament", "wide", "--create")
    tournament = Tournament.objects.get(slug="wide")
    fits_publish(tournament_id=tournament.pk)
    return tournament


def test_the_page_shows_the_top_models_matrices_and_links_the_whole_field(twelve_models, client):
    url = "/leaderboard/?tournament=wide&dimension=overall"
    default = client.get(url).content.decode()
    assert "Head-to-head: all 12 models." in default  # default 20: every one of 12
    top_ten = client.get(url + "&top=10").content.decode()
    assert "Head-to-head: the top 10 of 12 models." in top_ten
    pairs = top_ten.split('data-testid="pairs-table"', 1)[1].split("</table>", 1)[0]
    assert pairs.count("<tr>") == 1 + 10 * 9  # header, then every ordered pair among the ten
    assert "m11" not in pairs and "m00" in pairs
    assert client.get(url + "&top=7").content.decode() == default  # not a choice: the default
    assert 'href="/leaderboard/matrices/?tournament=wide&amp;dimension=overall"' in top_ten
    everything = client.get("/leaderboard/matrices/?tournament=wide&dimension=overall").content.decode()
    pairs = everything.split('data-testid="pairs-table"', 1)[1].split("</table>", 1)[0]
    assert pairs.count("<tr>") == 1 + 12 * 11
    assert client.get("/leaderboard/matrices/?tournament=wide").status_code == 200
    assert client.get("/leaderboard/matrices/?tournament=nowhere&dimension=overall").status_code == 404
