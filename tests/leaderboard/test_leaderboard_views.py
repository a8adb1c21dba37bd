"""The leaderboard page on the fitted boards: full page and htmx fragment, group and dimension choice,
suppression, the state before any fit, and every entrant listed."""

import re

import pytest

from leaderboard import boards
from leaderboard.boards import SITE_VERSION_KEY
from leaderboard.services import fits_publish
from tests.leaderboard.board_data import raters_in, votes_cast
from tournaments.models import LLMModel, Tournament
from tournaments.services import tournament_add_default_dimensions

pytestmark = pytest.mark.django_db


YOUNG, MIDDLE, OLDER = "us-age-18-34", "us-age-35-54", "us-age-55-plus"
DASH = "\u2013"  # ranges and labels are written with en dashes


def board_rows(html: str) -> list[list[str]]:
    body = re.search(r'<table class="board".*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return [
        [
            re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", cell)).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]


@pytest.fixture
def fitted(tournament, study, groups):
    """Ten young raters and nine middle-aged ones (so both are hidden: the nine, and the ten as cover),
    twelve aged 55+; three votes each on Overall, then a fit."""
    for slug, count in ((YOUNG, 10), (MIDDLE, 9), (OLDER, 12)):
        votes_cast(tournament, raters_in(study, slug, count=count), seed=count)
    fits_publish(tournament_id=tournament.pk)
    return tournament


def test_it_shows_the_pooled_fitted_board_with_every_column(client, fitted):
    html = client.get("/leaderboard/").content.decode()
    assert "<html" in html and 'id="board-area"' in html
    rows = board_rows(html)
    assert len(rows) == 3
    favourite = fitted.llm_models.order_by("pk").first()
    rank, model, score, rating, p_best, _battles, _wins_losses_ties, win_rate = rows[0]
    assert rank.startswith("1") and model.startswith(favourite.name)
    assert re.fullmatch(rf"0\.\d{{3}} \(0\.\d{{3}}{DASH}0\.\d{{3}}\)", score)
    assert re.fullmatch(rf"1\d{{3}} \(\d{{3,4}}{DASH}1\d{{3}}\)", rating)
    assert p_best.endswith("%") and win_rate.endswith("%")
    assert sum(int(row[5]) for row in rows) == 2 * 31 * 3
    assert "Fitted <time" in html and "31 raters" in html
    assert 'href="/leaderboard/models/' in html


def test_it_swaps_only_the_board_area_for_htmx(client, fitted):
    response = client.get(f"/leaderboard/?group={OLDER}&dimension=overall", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html and '<nav class="tabs"' in html
    assert len(board_rows(html)) == 3 and "12 raters" in html
    assert "HX-Request" in response["Vary"]


def test_a_group_of_nine_shows_not_enough_raters_and_no_figures(client, fitted):
    for slug in (MIDDLE, YOUNG):  # nine raters, and the ten hidden as its cover
        html = client.get(f"/leaderboard/?group={slug}").content.decode()
        assert "Not enough raters yet" in html
        assert 'data-testid="board"' not in html and "raters ·" not in html
        assert 'class="chart"' not in html.split('id="chart-group-ranks"')[0]
        for model in fitted.llm_models.all():
            assert model.name in html  # still listed, by name only


def test_a_group_of_ten_shows_figures(client, tournament, study, groups):
    for slug in (YOUNG, MIDDLE):
        votes_cast(tournament, raters_in(study, slug, count=10), seed=1)
    fits_publish(tournament_id=tournament.pk)
    html = client.get(f"/leaderboard/?group={YOUNG}").content.decode()
    assert "Not enough raters yet" not in html.split('id="chart-group-ranks"')[0]
    assert len(board_rows(html)) == 3 and "10 raters" in html


def test_the_selector_marks_groups_without_enough_raters(client, fitted):
    html = client.get("/leaderboard/").content.decode()
    assert re.search(rf'value="us-age-35-54"[^>]*>35{DASH}54 \(not enough raters yet\)', html)
    assert re.search(r'value="us-age-55-plus"[^>]*>55\+</option>', html)
    # A plain GET form with the current choice, which htmx submits in place and pushes to the URL.
    assert 'method="get" action="/leaderboard/"' in html and 'hx-push-url="true"' in html


def test_dimension_tabs_are_plain_links_that_keep_the_group(client, fitted):
    html = client.get(f"/leaderboard/?group={OLDER}").content.decode()
    link = f'href="/leaderboard/?tournament=pilot&amp;dimension=trust-safety&amp;group={OLDER}"'
    assert (
        link in html
        and f'hx-get="/leaderboard/?tournament=pilot&amp;dimension=trust-safety&amp;group={OLDER}"' in html
    )


def test_before_any_fit_it_says_so_and_lists_every_entrant(client, tournament, study, groups):
    votes_cast(tournament, raters_in(study, YOUNG, count=10))
    html = client.get("/leaderboard/").content.decode()
    assert "No fit has been published yet" in html
    rows = board_rows(html)
    assert len(rows) == 3 and all("not fitted yet" in row[2] for row in rows)
    assert sum(int(row[5]) for row in rows) == 60


def test_withdrawn_and_provisional_models_stay_listed(client, fitted, settings):
    settings.POPULUS_PROVISIONAL_BATTLES = 1000
    withdrawn = fitted.llm_models.order_by("pk").last()
    fitted.llm_models.remove(withdrawn)
    rows = board_rows(client.get("/leaderboard/?dimension=overall&tournament=pilot").content.decode())
    by_name = {row[1].split(" · ")[0]: row for row in rows}
    assert "withdrawn" in by_name[withdrawn.name][1]
    assert sum("provisional" in row[1] for row in rows) == 2


def test_it_says_clearly_when_a_board_does_not_exist(client, tournament):
    response = client.get("/leaderboard/?dimension=charisma")
    assert response.status_code == 404
    assert b"no dimension called" in response.content
    assert client.get("/leaderboard/?group=martians").status_code == 404


def test_it_says_when_there_is_no_tournament(client, db):
    assert b"No tournament has been set up yet" in client.get("/leaderboard/").content


def test_it_offers_every_tournament_and_labels_llm_judge_boards(client, fitted):
    judged = Tournament.objects.create(slug="judged", name="Judged", audience=Tournament.Audience.AUTOMATED)
    tournament_add_default_dimensions(tournament=judged)
    judged.llm_models.add(*LLMModel.objects.all())
    html = client.get("/leaderboard/?tournament=pilot").content.decode()
    assert 'href="/leaderboard/?tournament=judged"' in html and "Judged (LLM-judge raters)" in html
    judged_page = client.get("/leaderboard/?tournament=judged").content.decode()
    assert "LLM-judge raters" in judged_page.split("</h1>")[0]
    assert "No fit has been published yet" in judged_page and "Not enough raters yet" in judged_page


def test_a_fit_landing_replaces_the_cached_page(client, fitted, study):
    first = client.get("/leaderboard/").content.decode()
    assert client.get("/leaderboard/").content.decode() == first  # served from the cache
    votes_cast(fitted, raters_in(study, OLDER, count=3), seed=4)
    assert client.get("/leaderboard/").content.decode() == first  # counts follow the fit, not the log
    fits_publish(tournament_id=fitted.pk)
    assert "34 raters" in client.get("/leaderboard/").content.decode()


def test_the_cached_page_carries_no_csrf_token(client, fitted):
    response = client.get("/leaderboard/")
    assert "csrf" not in response.content.decode().lower() and "csrftoken" not in response.cookies


def test_a_fit_landing_in_another_process_shows_within_a_second(client, fitted, monkeypatch):
    from django.core.cache import cache

    def withdrawn_badges() -> int:
        return client.get("/leaderboard/").content.decode().count('class="badge withdrawn"')

    assert withdrawn_badges() == 0
    fitted.llm_models.remove(fitted.llm_models.order_by("pk").last())
    cache.incr(SITE_VERSION_KEY)  # as the ratings worker's bump does, out of this process
    assert withdrawn_badges() == 0  # this process read the version just now
    monkeypatch.setattr(boards, "SITE_VERSION_RECHECK_SECONDS", 0)  # a second later
    assert withdrawn_badges() == 1
