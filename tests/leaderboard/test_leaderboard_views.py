import re

import pytest

from leaderboard.services import ratings_apply_pending
from tests.helpers import voted_battle

pytestmark = pytest.mark.django_db


def board_rows(html: str) -> list[list[str]]:
    body = re.search(r"<tbody>(.*?)</tbody>", html, re.S).group(1)
    return [
        [re.sub(r"<[^>]+>|\s+", " ", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]


def test_it_lists_every_model_at_the_prior_before_any_vote(client, tournament):
    rows = board_rows(client.get("/leaderboard/").content.decode())
    assert len(rows) == 3
    assert all(row[2:6] == ["0.00", "25.00", "8.33", "0"] for row in rows)


def test_it_ranks_by_conservative_score_with_battle_counts(client, rater):
    battle, _ = voted_battle(rater, "a")
    ratings_apply_pending()
    rows = board_rows(client.get("/leaderboard/?dimension=overall").content.decode())
    assert rows[0][1].startswith(battle.model_a.name)
    assert rows[0][5] == "1" and rows[0][6] == "1 / 0 / 0"
    loser = next(row for row in rows if row[1].startswith(battle.model_b.name))
    assert loser[6] == "0 / 1 / 0"


def test_it_shows_a_groups_own_board(client, rater):
    voted_battle(rater, "a")
    ratings_apply_pending()
    mine = board_rows(client.get("/leaderboard/?group=us-age-18-34").content.decode())
    others = board_rows(client.get("/leaderboard/?group=uk-age-55-plus").content.decode())
    assert sum(int(row[5]) for row in mine) == 2
    assert sum(int(row[5]) for row in others) == 0


def test_it_swaps_only_the_table_for_htmx(client, tournament, groups):
    response = client.get("/leaderboard/?group=us-age-55-plus&dimension=trust-safety", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert "<html" not in html
    assert "Trust, ethics &amp; safety" in html and "55+" in html


def test_it_says_clearly_when_a_board_does_not_exist(client, tournament):
    response = client.get("/leaderboard/?dimension=charisma")
    assert response.status_code == 404
    assert b"no dimension called" in response.content


def test_it_says_when_there_is_no_tournament(client, db):
    assert b"No tournament has been set up yet" in client.get("/leaderboard/").content
