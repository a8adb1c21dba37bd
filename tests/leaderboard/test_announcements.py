"""A board announces its leader only when the top model's P(best) reaches the tournament's threshold:
on the page, in the API, in both board downloads, and per board on the staff study dashboard."""

import csv
import io
import json

import pytest

from leaderboard.boards import board_get
from leaderboard.services import fits_publish
from tests.helpers import study_manager
from tests.leaderboard.board_data import raters_in, votes_cast

pytestmark = pytest.mark.django_db

YOUNG = "us-age-18-34"


@pytest.fixture
def fitted(tournament, study, groups, settings):
    settings.POPULUS_MIN_ANNOUNCE_BATTLES = 0  # 24 battles: the threshold alone decides here
    votes_cast(tournament, raters_in(study, YOUNG, count=12), per_rater=2, favourite_wins=0.7, seed=3)
    fits_publish(tournament_id=tournament.pk)
    return tournament


def top_p_best(tournament) -> tuple[str, float]:
    board = board_get(dimension=tournament.dimensions.get(slug="overall"))
    top = max(board.entries, key=lambda e: e.p_best or 0)
    return top.slug, top.p_best


def set_threshold(tournament, value: float) -> None:
    tournament.leader_threshold = value
    tournament.save()  # renews the cached boards


def announced_everywhere(client, tournament) -> list:
    page = client.get("/leaderboard/?dimension=overall").content.decode()
    api = client.get("/api/v1/boards/?dimension=overall").json()
    exported = json.loads(client.get(f"/api/v1/tournaments/{tournament.slug}/boards.json").content)
    pooled_json = next(b for b in exported if b["dimension"]["slug"] == "overall" and b["group"] is None)
    rows = list(
        csv.DictReader(
            io.StringIO(client.get(f"/api/v1/tournaments/{tournament.slug}/boards.csv").content.decode())
        )
    )
    pooled_csv = {
        (r["leader_status"], r["leader"]) for r in rows if r["dimension"] == "overall" and r["group"] == ""
    }
    return [
        "Leader:" in page and "No clear leader yet" not in page,
        (api["leader_status"], api["leader"]),
        (pooled_json["leader_status"], pooled_json["leader"]),
        pooled_csv,
    ]


def test_it_announces_the_leader_only_at_the_threshold_everywhere(client, fitted):
    slug, p_best = top_p_best(fitted)
    assert 0.5 < p_best < 0.998  # the data leave room on both sides of the threshold

    set_threshold(fitted, p_best)
    assert announced_everywhere(client, fitted) == [
        True,
        ("leader", slug),
        ("leader", slug),
        {("leader", slug)},
    ]

    set_threshold(fitted, p_best + 0.001)
    page, *rest = announced_everywhere(client, fitted)
    assert (
        not page and "No clear leader yet" in client.get("/leaderboard/?dimension=overall").content.decode()
    )
    none = ("no clear leader yet", None)
    assert rest == [none, none, {("no clear leader yet", "")}]


def test_it_refuses_a_threshold_that_two_models_could_reach(fitted):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        set_threshold(fitted, 0.5)


def test_it_shows_staff_each_board_with_its_leader_and_the_battles_still_needed(client, fitted, study):
    client.force_login(study_manager())
    dashboard = client.get(f"/staff/studies/{study.slug}/").content.decode()
    assert f"/staff/studies/{study.slug}/boards/" in dashboard
    slug, p_best = top_p_best(fitted)

    set_threshold(fitted, p_best + 0.001)
    html = client.get(f"/staff/studies/{study.slug}/boards/").content.decode()
    board = board_get(dimension=fitted.dimensions.get(slug="overall"))
    assert board.leader is None and board.battles_to_announce and board.battles_to_announce > 0
    assert "no clear leader yet" in html and f">{board.battles_to_announce}<" in html
    assert "too few raters to publish" in html  # the groups with no raters

    set_threshold(fitted, p_best)
    html = client.get(f"/staff/studies/{study.slug}/boards/").content.decode()
    assert fitted.llm_models.get(slug=slug).name in html and 'data-testid="battles-needed">0<' in html


def test_a_board_with_fewer_battles_than_the_minimum_announces_nothing_yet(client, fitted, settings):
    _, p_best = top_p_best(fitted)
    set_threshold(fitted, p_best)
    board = board_get(dimension=fitted.dimensions.get(slug="overall"))
    assert board.leader is not None
    settings.POPULUS_MIN_ANNOUNCE_BATTLES = board.battles + 50
    none = ("no clear leader yet", None)
    assert announced_everywhere(client, fitted) == [False, none, none, {("no clear leader yet", "")}]
    board = board_get(dimension=fitted.dimensions.get(slug="overall"))
    assert board.leader is None and board.battles_to_announce == 50
