"""Open data: every board as CSV and JSON (suppression as on the pages), anonymised battles as streamed
JSON lines, and the battle export re-imported with `import_battles`."""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.exports import battle_lines
from leaderboard.models import Rating
from leaderboard.services import fits_publish, ratings_replay
from raters.models import Rater
from tests.conftest import admitted_rater
from tests.helpers import DIMENSIONS, voted_battle
from tests.leaderboard.board_data import raters_in, votes_cast
from tournaments.models import Battle, LLMModel, Tournament, Vote

pytestmark = pytest.mark.django_db


YOUNG, MIDDLE, OLDER = "us-age-18-34", "us-age-35-54", "us-age-55-plus"


@pytest.fixture
def rated(tournament, study, groups):
    """Two raters who chatted and voted on every dimension (in the young, Asian and Democrat groups),
    twelve young raters with generated votes, one of whose battles is flagged, and one rater excluded
    by quality control; then a fit. Published groups: young only (the others have one or two raters)."""
    chatters = [admitted_rater(study), admitted_rater(study)]
    for rater, outcome in zip(chatters, ("a", "b"), strict=True):
        voted_battle(rater, outcome, trust_safety="tie")
    crowd = raters_in(study, YOUNG, count=12)
    votes_cast(tournament, crowd, seed=7, dimensions=tuple(DIMENSIONS))
    flagged = Battle.objects.filter(rater=crowd[0]).first()
    Battle.objects.filter(pk=flagged.pk).update(flagged_reason="A model named its maker.")
    excluded = raters_in(study, YOUNG, count=1)[0]
    votes_cast(tournament, [excluded], seed=8, dimensions=tuple(DIMENSIONS))
    Rater.objects.filter(pk=excluded.pk).update(status=Rater.Status.EXCLUDED)
    fits_publish(tournament_id=tournament.pk)
    return {"chatters": chatters, "flagged": flagged, "excluded": excluded}


def download(client, url: str) -> bytes:
    response = client.get(url)
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content) if response.streaming else response.content


def exported_lines(client, slug: str = "pilot") -> list[dict]:
    return [
        json.loads(line)
        for line in download(client, f"/api/v1/tournaments/{slug}/battles.jsonl").splitlines()
    ]


# --- Boards ----------------------------------------------------------------------------------------------


def test_it_exports_every_fitted_board_as_json_with_suppression(client, rated, groups):
    boards = json.loads(download(client, "/api/v1/tournaments/pilot/boards.json"))
    assert len(boards) == len(DIMENSIONS) * (1 + 22)  # pooled and every group, per fitted dimension
    published = [
        (b["dimension"]["slug"], b["group"]["slug"] if b["group"] else None)
        for b in boards
        if not b["suppressed"]
    ]
    assert set(published) == {(d, g) for d in DIMENSIONS for g in (None, YOUNG)}
    for board in boards:
        if board["suppressed"]:
            assert board["raters"] is None and board["entries"] == []
    api_board = client.get("/api/v1/boards/?dimension=overall").json()
    assert next(b for b in boards if b["dimension"]["slug"] == "overall" and b["group"] is None) == api_board


def test_it_exports_every_board_as_csv_with_suppressed_boards_blank(client, rated):
    response = client.get("/api/v1/tournaments/pilot/boards.csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="pilot-boards.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    published = [r for r in rows if r["suppressed"] == "false"]
    assert len(published) == len(DIMENSIONS) * 2 * 3  # pooled and young boards, three models each
    suppressed = [r for r in rows if r["suppressed"] == "true"]
    assert len(suppressed) == len(DIMENSIONS) * 21
    assert all(r["raters"] == r["model"] == r["score"] == r["battles"] == "" for r in suppressed)
    pooled_overall = [r for r in published if r["dimension"] == "overall" and r["group"] == ""]
    api = client.get("/api/v1/boards/?dimension=overall").json()
    assert [r["model"] for r in pooled_overall] == [e["slug"] for e in api["entries"]]
    assert [int(r["battles"]) for r in pooled_overall] == [e["battles"] for e in api["entries"]]


def test_it_keeps_spreadsheet_formulas_out_of_the_csv(client, rated):
    LLMModel.objects.filter(slug="beta-chat").update(name='=HYPERLINK("http://evil.invalid")')
    fits_publish(tournament_id=rated["flagged"].tournament_id)
    rows = list(
        csv.DictReader(io.StringIO(download(client, "/api/v1/tournaments/pilot/boards.csv").decode()))
    )
    names = {r["model_name"] for r in rows if r["model"] == "beta-chat"}
    assert names == {'\'=HYPERLINK("http://evil.invalid")'}


def test_it_answers_a_repeated_board_download_with_304(client, rated):
    first = client.get("/api/v1/tournaments/pilot/boards.csv")
    again = client.get("/api/v1/tournaments/pilot/boards.csv", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304


def test_it_says_which_tournament_it_does_not_know(client, db):
    response = client.get("/api/v1/tournaments/nonesuch/battles.jsonl")
    assert response.status_code == 404 and "nonesuch" in response.json()["error"]["message"]


# --- Battles ---------------------------------------------------------------------------------------------


def test_it_exports_only_counted_finished_battles_in_vote_order(client, rated, tournament):
    lines = exported_lines(client)
    counted = (
        Vote.objects.filter(battle__tournament=tournament, battle__flagged_reason="")
        .exclude(battle__rater=rated["excluded"])
        .order_by("pk")
    )
    assert len(lines) == counted.count() == 2 + 12 * 3 - 1
    assert [line["tstamp"] for line in lines] == [vote.created_at.timestamp() for vote in counted]
    alpha, beta, _ = tournament.llm_models.order_by("pk")
    Battle.objects.create(  # a battle still in progress is not exported
        tournament=tournament, rater=rated["chatters"][0], model_a=alpha, model_b=beta, pair_probability=0.5
    )
    assert len(exported_lines(client)) == len(lines)


def test_it_exports_conversation_votes_positions_and_timings(client, rated):
    chatted = [line for line in exported_lines(client) if line["conversation"]]
    assert len(chatted) == 2
    line = chatted[0]
    battle = Battle.objects.get(rater=rated["chatters"][0])
    assert line["models"]["a"]["slug"] == battle.model_a.slug and line["model_a"] == battle.model_a.name
    assert line["positions"] == {"left": "a", "right": "b"}
    assert line["votes"] == {**dict.fromkeys(DIMENSIONS, "a"), "trust-safety": "tie"}
    assert line["winner"] == "model_a" and line["anony"] is True
    assert len(line["conversation"]) == 3
    turn = line["conversation"][0]
    assert turn["message"] == battle.turns.get(index=0).message
    assert set(turn["replies"]) == {"a", "b"} and all(turn["replies"][side]["content"] for side in "ab")
    assert line["timings"]["voted_at"] and line["timings"]["seconds_to_vote"] is not None
    assert line["pair_probability"] == battle.pair_probability


def test_it_publishes_only_pseudonyms_and_publishable_groups(client, rated, study):
    body = download(client, "/api/v1/tournaments/pilot/battles.jsonl").decode()
    for rater in Rater.objects.filter(study=study):
        assert str(rater.public_id) not in body
        assert not rater.participant_hash or rater.participant_hash not in body
    for battle in Battle.objects.all():
        assert str(battle.public_id) not in body
    lines = [json.loads(line) for line in body.splitlines()]
    chatted = [line for line in lines if line["conversation"]]
    # The chatters are young, Asian and Democrat; only the young group has enough raters to be published.
    assert all(line["rater"]["groups"] == [YOUNG] for line in chatted)
    assert chatted[0]["judge"] != chatted[1]["judge"]
    by_rater = {}
    for line in lines:
        by_rater.setdefault(line["judge"], []).append(line)
    assert len(by_rater) == 2 + 12 and all(line["rater"]["id"] == line["judge"] for line in lines)
    assert set(lines[0]) >= {"question_id", "battle", "tournament", "populus"}


def test_linked_pseudonyms_survive_a_rotation_of_the_secret_key(rated, tournament, settings):
    def pseudonyms():
        lines = [json.loads(line) for line in battle_lines(tournament=tournament, linked=True)]
        return [(line["judge"], line["question_id"]) for line in lines]

    before = pseudonyms()
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "rotated-" + "x" * 50, [settings.SECRET_KEY]
    assert pseudonyms() == before
    settings.PANEL_ID_HMAC_KEY = "another-panel-key"
    assert all(
        judge != old_judge and question != old_question
        for (judge, question), (old_judge, old_question) in zip(pseudonyms(), before, strict=True)
    )


def test_it_streams_battles_a_chunk_at_a_time(client, rated, tournament):
    response = client.get("/api/v1/tournaments/pilot/battles.jsonl")
    assert response.streaming and response["Content-Type"].startswith("application/x-ndjson")
    assert len(b"".join(response.streaming_content).splitlines()) == 37
    whole = b"".join(battle_lines(tournament=tournament, salt="one"))
    with CaptureQueriesContext(connection) as queries:
        chunked = b"".join(battle_lines(tournament=tournament, chunk_size=5, salt="one"))
    assert chunked == whole
    vote_reads = [
        q["sql"]
        for q in queries.captured_queries
        if 'FROM "tournaments_vote"' in q["sql"].split("WHERE")[0] and "SELECT DISTINCT" not in q["sql"]
    ]
    assert len(vote_reads) == 8 + 1  # 37 votes in chunks of five, then an empty read
    assert all("LIMIT 5" in sql for sql in vote_reads)


def test_it_reimports_the_battle_export_with_the_same_outcomes(client, rated, tournament, tmp_path):
    lines = exported_lines(client)
    path = tmp_path / "pilot-battles.jsonl"
    path.write_bytes(download(client, "/api/v1/tournaments/pilot/battles.jsonl"))
    copy = Tournament.objects.create(slug="pilot-copy", name="Pilot, re-imported")
    copy.llm_models.add(*tournament.llm_models.all())
    call_command(
        "import_battles", str(path), tournament="pilot-copy", stdout=io.StringIO(), stderr=io.StringIO()
    )

    imported = (
        Battle.objects.filter(tournament=copy)
        .select_related("model_a", "model_b", "vote")
        .order_by("vote__pk")
    )
    assert imported.count() == len(lines)
    assert [
        (b.model_a.name, b.model_b.name, b.vote.choices.get(dimension__slug="overall").outcome)
        for b in imported
    ] == [(line["model_a"], line["model_b"], line["votes"]["overall"]) for line in lines]
    assert [round(b.vote.created_at.timestamp(), 6) for b in imported] == [
        round(line["tstamp"], 6) for line in lines
    ]

    # The same votes in the same order: the pooled overall ratings come out identical.
    ratings_replay(tournament_id=tournament.pk)
    original = {
        (r.model.name): (r.mu, r.sigma, r.wins, r.losses, r.ties)
        for r in Rating.objects.filter(
            dimension__tournament=tournament, dimension__slug="overall", group=None
        )
    }
    reimported = {
        (r.model.name): (r.mu, r.sigma, r.wins, r.losses, r.ties)
        for r in Rating.objects.filter(dimension__tournament=copy, dimension__slug="overall", group=None)
    }
    assert reimported.keys() == original.keys()
    for name, values in original.items():
        assert reimported[name] == pytest.approx(values, abs=1e-9)

    # Importing the same export again adds nothing.
    out = io.StringIO()
    call_command("import_battles", str(path), tournament="pilot-copy", stdout=out, stderr=io.StringIO())
    assert Battle.objects.filter(tournament=copy).count() == len(lines)
    assert f"{len(lines)} already imported" in out.getvalue()
