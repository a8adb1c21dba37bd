"""The public read API: catalogue, boards (with suppression, as-of and profile), model detail,
head-to-head, snapshots; pagination, ETags and caching under the board cache version."""

import pytest
from django.core.cache import cache
from django.urls import reverse

from config.answer_cache import ProcessAnswers
from leaderboard.boards import SITE_VERSION_KEY, board_cache_bump, boards_site_version_forget
from leaderboard.models import FitSnapshot
from leaderboard.services import fits_publish
from tests.leaderboard.board_data import raters_in, votes_cast
from tournaments.models import LLMModel, Tournament

pytestmark = pytest.mark.django_db


YOUNG, MIDDLE, OLDER = "us-age-18-34", "us-age-35-54", "us-age-55-plus"


@pytest.fixture
def fitted(tournament, study, groups):
    """12 young, 8 middle-aged and 3 older raters, three votes each on overall and trust-safety, fitted:
    the pooled and young boards are published; the middle and older groups' are suppressed (fewer than
    10 raters each, 11 together, so the young group need not hide them)."""
    for slug, count, seed in ((YOUNG, 12, 1), (MIDDLE, 8, 2), (OLDER, 3, 3)):
        votes_cast(
            tournament, raters_in(study, slug, count=count), seed=seed, dimensions=("overall", "trust-safety")
        )
    fits_publish(tournament_id=tournament.pk)
    return tournament


def get_json(client, url: str, status: int = 200, **headers):
    response = client.get(url, **headers)
    assert response.status_code == status, response.content
    return response.json()


# --- Catalogue -----------------------------------------------------------------------------------------


def test_it_links_every_part_and_each_tournaments_downloads_from_the_root(client, tournament):
    root = get_json(client, "/api/v1/")
    for name in (
        "tournaments",
        "dimensions",
        "groups",
        "models",
        "boards",
        "head_to_head",
        "snapshots",
        "docs",
    ):
        assert client.get(root[name]).status_code == 200, name
    assert set(root["downloads"]["pilot"]) == {"boards_csv", "boards_json", "battles_jsonl"}
    assert root["downloads"]["pilot"]["battles_jsonl"].endswith("/api/v1/tournaments/pilot/battles.jsonl")


def test_it_lists_tournaments_with_dimensions_and_downloads(client, tournament):
    listing = get_json(client, "/api/v1/tournaments/")
    assert listing["count"] == 1 and listing["next"] is None
    pilot = listing["results"][0]
    assert pilot["slug"] == "pilot" and pilot["audience"] == "human"
    assert [d["slug"] for d in pilot["dimensions"]][-1] == "overall"
    assert get_json(client, "/api/v1/tournaments/pilot/") == pilot


def test_it_lists_groups_filtered_by_country_and_axis(client, groups):
    listing = get_json(client, "/api/v1/groups/?country=uk&axis=age")
    assert [g["slug"] for g in listing["results"]] == ["uk-age-18-34", "uk-age-35-54", "uk-age-55-plus"]
    assert listing["results"][0]["country"] == "UK"
    assert get_json(client, "/api/v1/groups/?country=FR", 404)["error"]["code"] == "not_found"


def test_it_lists_every_entrant_without_private_fields(client, tournament):
    LLMModel.objects.filter(slug="beta-chat").update(is_active=False)  # withdrawn models stay listed
    results = get_json(client, "/api/v1/models/")["results"]
    assert [m["slug"] for m in results] == ["alpha-large", "beta-chat", "gamma-instruct"]
    assert set(results[0]) == {"slug", "name", "maker"}


def test_it_pages_lists_with_links(client, tournament):
    first = get_json(client, "/api/v1/dimensions/?page_size=2")
    assert first["count"] == 5 and len(first["results"]) == 2 and first["previous"] is None
    second = get_json(client, first["next"])
    assert second["previous"] and [d["position"] for d in second["results"]] == [2, 3]
    last = get_json(client, "/api/v1/dimensions/?page_size=2&page=3")
    assert last["next"] is None and len(last["results"]) == 1


# --- Boards ----------------------------------------------------------------------------------------------


def test_it_serves_the_pooled_board_of_the_latest_fit(client, fitted):
    board = get_json(client, "/api/v1/boards/?tournament=pilot&dimension=overall")
    assert board["suppressed"] is False and board["raters"] == 23 and board["notice"] is None
    assert board["snapshot"]["votes"] == 69 and board["fitted_at"] == board["snapshot"]["fitted_at"]
    entries = board["entries"]
    assert entries[0]["slug"] == "alpha-large"  # the favourite of the generated votes
    assert sum(e["battles"] for e in entries) == 2 * 69
    assert all(e["score_low"] <= e["score"] <= e["score_high"] for e in entries)
    assert "model_id" not in entries[0]


def test_it_suppresses_a_small_group_exactly_as_the_pages_do(client, fitted):
    older = get_json(client, f"/api/v1/boards/?group={OLDER}")
    assert older["suppressed"] is True and older["notice"] == "Not enough raters yet."
    assert older["raters"] is None and older["entries"] == []
    middle = get_json(client, f"/api/v1/boards/?group={MIDDLE}")
    assert middle["suppressed"] is True and middle["entries"] == []
    nobody = get_json(client, "/api/v1/boards/?group=uk-age-18-34")
    assert nobody["suppressed"] is True and nobody["entries"] == []
    young = get_json(client, f"/api/v1/boards/?group={YOUNG}")
    assert young["suppressed"] is False and young["raters"] == 12
    assert sum(e["battles"] for e in young["entries"]) == 2 * 36


def test_it_suppresses_the_pooled_board_of_a_tournament_with_too_few_raters(
    client, tournament, study, groups
):
    votes_cast(tournament, raters_in(study, YOUNG, count=9))
    fits_publish(tournament_id=tournament.pk)
    board = get_json(client, "/api/v1/boards/")
    assert board["suppressed"] is True and board["raters"] is None and board["entries"] == []
    assert get_json(client, "/api/v1/head-to-head/")["results"] == []


def test_it_shows_the_board_as_of_an_earlier_fit(client, fitted, study):
    first = get_json(client, "/api/v1/boards/")
    votes_cast(fitted, raters_in(study, YOUNG, count=5), seed=3)
    fits_publish(tournament_id=fitted.pk)
    latest = get_json(client, "/api/v1/boards/")
    assert latest["snapshot"]["votes"] == first["snapshot"]["votes"] + 15
    as_of = first["fitted_at"].replace("+00:00", "Z")
    again = get_json(client, f"/api/v1/boards/?as_of={as_of}")
    assert again == first
    error = get_json(client, "/api/v1/boards/?as_of=2000-01-01T00:00:00Z", 404)["error"]
    assert "had been published by 2000-01-01" in error["message"]


def test_it_lists_the_snapshots_newest_first(client, fitted):
    fits_publish(tournament_id=fitted.pk)
    snapshots = get_json(client, "/api/v1/snapshots/?dimension=overall")["results"]
    assert len(snapshots) == 2 and snapshots[0]["fitted_at"] > snapshots[1]["fitted_at"]
    assert {s["dimension"] for s in get_json(client, "/api/v1/snapshots/")["results"]} == {
        "overall",
        "trust-safety",
    }


def test_it_gives_a_models_lines_on_every_published_board(client, fitted):
    detail = get_json(client, "/api/v1/models/alpha-large/")
    lines = {(line["dimension"], line["group"]): line for line in detail["boards"]}
    # Fitted dimensions only; the pooled board and the one publishable group, never the suppressed one.
    assert set(lines) == {
        ("trust-safety", None),
        ("trust-safety", YOUNG),
        ("overall", None),
        ("overall", YOUNG),
    }
    pooled = lines[("overall", None)]
    board = get_json(client, "/api/v1/boards/")
    assert pooled["entry"] == board["entries"][0]
    assert pooled["share_of_battles"] == pytest.approx(pooled["entry"]["battles"] / 69)
    assert get_json(client, "/api/v1/models/nonesuch/", 404)["error"]["code"] == "not_found"


def test_it_counts_head_to_head_results_on_a_board(client, fitted):
    pairs = get_json(client, "/api/v1/head-to-head/?dimension=overall")
    assert pairs["count"] == 3 and pairs["suppressed"] is False
    assert sum(p["battles"] for p in pairs["results"]) == 69
    for pair in pairs["results"]:
        assert pair["wins"] + pair["losses"] + pair["ties"] == pair["battles"]
        assert pair["model"]["name"] < pair["opponent"]["name"]
    alpha = get_json(client, "/api/v1/head-to-head/?model=alpha-large")["results"]
    assert {p["opponent"]["slug"] for p in alpha} == {"beta-chat", "gamma-instruct"}
    board_alpha = get_json(client, "/api/v1/boards/")["entries"][0]
    assert sum(p["wins"] for p in alpha) == board_alpha["wins"]
    assert get_json(client, f"/api/v1/head-to-head/?group={OLDER}")["suppressed"] is True
    assert get_json(client, f"/api/v1/head-to-head/?group={OLDER}")["results"] == []


# --- Profile boards --------------------------------------------------------------------------------------


def test_it_ranks_for_a_profile_on_a_dimension(client, fitted):
    board = get_json(client, f"/api/v1/boards/?profile={YOUNG}&dimension=overall")
    assert [g["slug"] for g in board["profile"]] == [YOUNG] and board["left_out"] == []
    assert board["suppressed"] is False and board["country"] == "US"
    ranked = [e for e in board["entries"] if e["rank"] is not None]
    assert len(ranked) == 3 and all(e["score_low"] <= e["score"] <= e["score_high"] for e in ranked)
    assert [w["dimension"] for w in board["weights"] if w["share"] > 0] == ["overall"]


def test_it_leaves_a_suppressed_group_out_of_a_profile(client, fitted):
    board = get_json(client, f"/api/v1/boards/?profile={OLDER}")
    assert board["profile"] == [] and board["left_out"] == [OLDER]
    assert any("Not enough raters" in note for note in board["notes"])


def test_it_combines_dimensions_by_weights_for_a_profile(client, fitted):
    board = get_json(client, f"/api/v1/boards/?profile={YOUNG}&weights=overall:3,trust-safety:1")
    shares = {w["dimension"]: w["share"] for w in board["weights"]}
    assert shares["overall"] == pytest.approx(0.75) and shares["trust-safety"] == pytest.approx(0.25)
    top = board["entries"][0]
    assert {s["dimension"] for s in top["standings"]} == {"overall", "trust-safety"}
    assert top["report"]["rank"] == top["rank"]


@pytest.mark.parametrize(
    ("query", "status", "field"),
    [
        (f"profile={YOUNG},uk-age-55-plus", 400, "profile"),  # two countries
        (f"profile={YOUNG},{OLDER}", 400, "profile"),  # two groups of one axis
        (f"profile={YOUNG}&group={YOUNG}", 400, "group"),
        (f"profile={YOUNG}&as_of=2030-01-01T00:00:00Z", 400, "as_of"),
        (f"profile={YOUNG}&weights=overall:11", 400, "weights"),
        ("weights=overall:1", 400, "weights"),
        (f"profile={YOUNG}&weights=charisma:1", 404, None),
        ("profile=us-age-200", 404, None),
    ],
)
def test_it_refuses_a_profile_it_cannot_use(client, fitted, query, status, field):
    error = get_json(client, f"/api/v1/boards/?{query}", status)["error"]
    if field:
        assert field in error["details"]


# --- Conditional GET and caching ----------------------------------------------------------------------


def test_it_answers_a_repeated_get_with_304(client, fitted):
    response = client.get("/api/v1/boards/")
    etag = response["ETag"]
    assert response["Cache-Control"] == "public, max-age=60"
    again = client.get("/api/v1/boards/", HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag
    assert client.get("/api/v1/boards/", HTTP_IF_NONE_MATCH=f'W/{etag}, "other"').status_code == 304
    assert client.get("/api/v1/boards/", HTTP_IF_NONE_MATCH='"other"').status_code == 200
    listing = client.get("/api/v1/tournaments/")
    assert client.get("/api/v1/tournaments/", HTTP_IF_NONE_MATCH=listing["ETag"]).status_code == 304


def test_it_caches_board_data_until_a_fit_lands(client, fitted, study):
    first = client.get("/api/v1/boards/")
    # A change no fit knows about (a rename) is not seen: the board is served from the cache...
    LLMModel.objects.filter(slug="alpha-large").update(name="Alpha Renamed")
    assert client.get("/api/v1/boards/").content == first.content
    # ...until the board cache version moves, as it does when a fit is published.
    board_cache_bump(tournament_id=fitted.pk)
    renamed = client.get("/api/v1/boards/")
    assert renamed["ETag"] != first["ETag"] and b"Alpha Renamed" in renamed.content
    votes_cast(fitted, raters_in(study, YOUNG, count=2), seed=5)
    fits_publish(tournament_id=fitted.pk)
    refitted = get_json(client, "/api/v1/boards/")
    assert refitted["snapshot"]["votes"] == 69 + 6


def test_it_answers_a_cached_board_without_touching_the_database(client, fitted, django_assert_num_queries):
    first = client.get("/api/v1/boards/?group=us-age-18-34")
    with django_assert_num_queries(0):
        again = client.get("/api/v1/boards/?group=us-age-18-34")
    assert again.content == first.content


def test_each_process_keeps_answers_until_it_rereads_the_version(client, fitted):
    first = client.get("/api/v1/boards/")
    LLMModel.objects.filter(slug="alpha-large").update(name="Alpha Renamed")
    cache.incr(SITE_VERSION_KEY)  # a fit published by another process: this one has not seen it yet
    assert client.get("/api/v1/boards/").content == first.content
    boards_site_version_forget()  # what a second's wait does
    assert b"Alpha Renamed" in client.get("/api/v1/boards/").content


def test_the_process_copy_stays_within_its_byte_budget():
    answers = ProcessAnswers(max_bytes=800)
    for index in range(10):
        answers.put(f"key-{index}", "v1", ('"etag"', b"x" * 100, "application/json"))
    assert answers.bytes <= 800 and len(answers.answers) == 8
    assert answers.get("key-0", "v1") is None and answers.get("key-9", "v1") is not None
    assert answers.get("key-9", "v2") is None  # another version is another answer
    answers.put("huge", "v1", ('"etag"', b"x" * 200, "application/json"))  # over an eighth: not kept
    assert answers.get("huge", "v1") is None


def test_it_serves_a_new_default_tournament_once_the_version_moves(client, fitted):
    """A new tournament is found at once by its slug; as the default it shows once the cached answers
    expire (within max-age, like any cached copy a client holds) or a fit lands."""
    assert get_json(client, "/api/v1/boards/")["tournament"] == "pilot"
    newer = Tournament.objects.create(slug="newer", name="Newer")
    newer.llm_models.add(*LLMModel.objects.all())
    newer.dimensions.create(slug="overall", name="Overall", position=0)
    assert get_json(client, "/api/v1/boards/?tournament=newer")["tournament"] == "newer"
    board_cache_bump(tournament_id=fitted.pk)
    after = get_json(client, "/api/v1/boards/")
    assert after["tournament"] == "newer" and after["snapshot"] is None and after["suppressed"] is True


def test_it_does_not_cache_boards_before_the_first_fit(client, tournament, study, groups):
    assert FitSnapshot.objects.count() == 0
    first = get_json(client, "/api/v1/boards/")
    votes_cast(tournament, raters_in(study, YOUNG, count=10), seed=4)
    second = get_json(client, "/api/v1/boards/")
    assert first["suppressed"] and not second["suppressed"] and second["raters"] == 10


def test_it_reverses_every_named_route(tournament):
    assert reverse("api:boards") == "/api/v1/boards/"
    assert reverse("api:export-battles-jsonl", args=["pilot"]) == "/api/v1/tournaments/pilot/battles.jsonl"
