import csv
import json
import threading
import time
import uuid
from datetime import UTC, datetime

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection

from config.bulk import pg_can_skip_triggers
from config.errors import ApplicationError
from leaderboard.models import AppliedVote, Rating
from leaderboard.services import ratings_replay
from raters.models import Rater, Study
from raters.panel import keyed_hash
from raters.services import PendingEntry, rater_create
from tournaments import imports
from tournaments.arena_format import ArenaBattle, BadRow, BattleLog, UnreadableLog, row_parse
from tournaments.imports import IMPORTED_BASE_URL, battles_import
from tournaments.models import Battle, Dimension, LLMModel, Tournament, Turn, Vote, VoteChoice

pytestmark = pytest.mark.django_db

BATTLES = [
    {"model_a": "gpt-4", "model_b": "claude-2", "winner": "model_a", "judge": "u1", "tstamp": 1700000000.5,
     "anony": True, "question_id": "q1"},
    {"model_a": "claude-2", "model_b": "llama-2-70b", "winner": "model_b", "judge": "u2",
     "tstamp": 1700000100.0, "anony": True, "question_id": "q2"},
    {"model_a": "gpt-4", "model_b": "llama-2-70b", "winner": "tie (bothbad)", "judge": "u1",
     "tstamp": 1700000200.0, "anony": True, "question_id": "q3"},
]  # fmt: skip


@pytest.fixture
def arena() -> Tournament:
    return Tournament.objects.create(slug="arena", name="Arena import")


def write_jsonl(path, rows) -> str:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return str(path)


def write_csv(
    path, rows, columns=("model_a", "model_b", "winner", "judge", "tstamp", "anony", "question_id")
):
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


def run(path, *args, tournament="arena"):
    call_command("import_battles", path, "--tournament", tournament, *args)


def outcomes(tournament):
    return list(
        VoteChoice.objects.filter(vote__battle__tournament=tournament)
        .order_by("vote__pk")
        .values_list("vote__battle__model_a__name", "vote__battle__model_b__name", "outcome")
    )


EXPECTED = [("gpt-4", "claude-2", "a"), ("claude-2", "llama-2-70b", "b"), ("gpt-4", "llama-2-70b", "tie")]


def test_it_imports_a_json_array_as_voted_battles_on_overall_only(arena, tmp_path, capsys):
    path = tmp_path / "battles.json"
    path.write_text(json.dumps(BATTLES, indent=2))
    run(str(path))
    assert outcomes(arena) == EXPECTED
    assert list(arena.dimensions.values_list("slug", flat=True))[-1] == "overall"  # defaults created
    assert set(VoteChoice.objects.values_list("dimension__slug", flat=True)) == {"overall"}
    battle = Battle.objects.get(model_a__name="gpt-4", model_b__name="claude-2")
    assert battle.state == Battle.State.VOTED
    assert battle.pair_probability == 1.0
    assert battle.created_at == battle.ended_at == datetime.fromtimestamp(1700000000.5, tz=UTC)
    assert battle.vote.created_at == battle.created_at
    assert not Turn.objects.exists()
    out = capsys.readouterr().out
    assert "Imported 3 battle(s) into tournament 'arena'" in out
    assert "(JSON array)" in out


def test_it_imports_json_lines(arena, tmp_path):
    run(write_jsonl(tmp_path / "battles.jsonl", BATTLES))
    assert outcomes(arena) == EXPECTED


def test_it_imports_csv_by_suffix_or_by_format_option(arena, tmp_path):
    run(write_csv(tmp_path / "battles.csv", BATTLES))
    assert outcomes(arena) == EXPECTED
    other = Tournament.objects.create(slug="arena-2", name="Arena again")
    run(write_csv(tmp_path / "battles.txt", BATTLES), "--format", "csv", tournament="arena-2")
    assert outcomes(other) == EXPECTED


def test_it_imports_a_minimal_csv_without_judge_or_time(arena, tmp_path):
    path = write_csv(tmp_path / "min.csv", BATTLES[:2], columns=("model_a", "model_b", "winner"))
    run(path)
    assert outcomes(arena) == EXPECTED[:2]
    assert Rater.objects.filter(study__slug="import-arena").count() == 1  # the one anonymous rater


def test_it_creates_unknown_models_inactive_and_adds_them_to_the_tournament(arena, tmp_path, capsys):
    live = LLMModel.objects.create(
        slug="gpt-4",
        name="GPT 4 live",
        provider="openai",
        base_url="https://api.example.com/v1",
        api_model="x",
    )
    mine = LLMModel.objects.create(slug="c2", name="claude-2", provider="demo", demo_style="terse")
    arena.llm_models.add(mine)
    run(write_jsonl(tmp_path / "b.jsonl", BATTLES))
    created = LLMModel.objects.filter(base_url=IMPORTED_BASE_URL).order_by("name")
    assert [(m.name, m.api_model, m.provider, m.is_active) for m in created] == [
        ("gpt-4", "gpt-4", "openai", False),
        ("llama-2-70b", "llama-2-70b", "openai", False),
    ]
    assert created.get(name="gpt-4").slug == "gpt-4-2"  # "gpt-4" belongs to another model
    assert set(arena.llm_models.all()) == {mine, *created}  # the tournament's own claude-2 is reused
    assert live not in arena.llm_models.all()
    assert "New models, inactive: 2 (gpt-4, llama-2-70b)." in capsys.readouterr().out
    # Another tournament importing the same names reuses the placeholders.
    Tournament.objects.create(slug="arena-2", name="Arena again")
    run(write_jsonl(tmp_path / "b.jsonl", BATTLES), tournament="arena-2")
    assert LLMModel.objects.filter(base_url=IMPORTED_BASE_URL).count() == 3  # + claude-2 for arena-2


def test_it_makes_judges_raters_without_groups_in_a_closed_import_study(arena, tmp_path):
    rows = [
        *BATTLES,
        {"model_a": "gpt-4", "model_b": "claude-2", "winner": "tie", "question_id": "q9"},
        {"model_a": "gpt-4", "model_b": "claude-2", "winner": "tie", "question_id": "q10"},
        {"model_a": "gpt-4", "model_b": "claude-2", "winner": "model_b"},
        {"model_a": "claude-2", "model_b": "gpt-4", "winner": "model_b"},
    ]
    run(write_jsonl(tmp_path / "b.jsonl", rows))
    study = Study.objects.get(slug="import-arena")
    assert (study.tournament, study.is_open, study.allows_open_entry) == (arena, False, False)
    raters = Rater.objects.filter(study=study)
    assert raters.count() == 5  # u1, u2, q9, q10 and one anonymous rater
    key = settings.PANEL_ID_HMAC_KEY
    judge = raters.get(participant_hash=keyed_hash(key, "u1"))
    assert judge.battles.count() == 2
    assert raters.get(participant_hash=keyed_hash(key, "\x00anonymous")).battles.count() == 2
    for rater in raters:
        assert rater.source == Rater.Source.PANEL
        assert rater.status == Rater.Status.ADMITTED
        assert rater.screened_at is not None
        assert rater.country is None
        assert not rater.groups.exists()


def test_it_applies_the_votes_to_the_pooled_ratings(arena, tmp_path, capsys):
    run(write_jsonl(tmp_path / "b.jsonl", BATTLES))
    overall = Dimension.objects.get(tournament=arena, slug="overall")
    ratings = {r.model.name: r for r in Rating.objects.filter(dimension=overall, group__isnull=True)}
    assert (ratings["gpt-4"].wins, ratings["gpt-4"].losses, ratings["gpt-4"].ties) == (1, 0, 1)
    assert (ratings["claude-2"].wins, ratings["claude-2"].losses) == (0, 2)
    assert ratings["llama-2-70b"].mu > ratings["claude-2"].mu
    assert not Rating.objects.filter(group__isnull=False).exists()
    assert not Rating.objects.exclude(dimension=overall).exists()
    assert AppliedVote.objects.filter(vote__battle__tournament=arena, counted=True).count() == 3
    assert "Ratings: 3 vote(s) applied" in capsys.readouterr().out


def test_it_creates_nothing_new_when_the_same_battles_are_imported_again(arena, tmp_path, capsys):
    run(write_jsonl(tmp_path / "b.jsonl", BATTLES))
    counts = (Battle.objects.count(), Vote.objects.count(), Rater.objects.count(), LLMModel.objects.count())
    ratings = list(Rating.objects.order_by("pk").values_list("mu", "sigma"))
    capsys.readouterr()
    run(write_jsonl(tmp_path / "b.jsonl", BATTLES))
    run(write_csv(tmp_path / "same.csv", BATTLES))  # the same battles in another format
    counts_after = (
        Battle.objects.count(),
        Vote.objects.count(),
        Rater.objects.count(),
        LLMModel.objects.count(),
    )
    assert counts_after == counts
    assert list(Rating.objects.order_by("pk").values_list("mu", "sigma")) == ratings
    out = capsys.readouterr().out
    assert "Rows: 3 read, 0 imported, 3 already imported" in out


def test_it_imports_a_repeated_row_once(arena, tmp_path):
    run(write_jsonl(tmp_path / "b.jsonl", [BATTLES[0], BATTLES[1], BATTLES[0]]))
    assert Battle.objects.count() == 2


def test_it_reports_bad_rows_by_line_number_and_imports_the_good_ones(arena, tmp_path, capsys):
    rows = [
        BATTLES[0],
        '{"model_a": "gpt-4", "model_b": ',
        {"model_a": "gpt-4", "winner": "model_a"},
        {"model_a": "gpt-4", "model_b": "claude-2", "winner": "model_c"},
        {"model_a": "gpt-4", "model_b": "gpt-4", "winner": "tie"},
        {"model_a": " ", "model_b": "gpt-4", "winner": "tie"},
        "[1, 2]",
        {"model_a": "gpt-4", "model_b": "claude-2", "winner": "tie", "tstamp": "yesterday"},
        BATTLES[1],
    ]
    run(write_jsonl(tmp_path / "b.jsonl", rows))
    assert outcomes(arena) == EXPECTED[:2]
    err = capsys.readouterr().err
    assert "7 bad row(s), skipped:" in err
    assert "line 2: malformed JSON" in err
    assert "line 3: missing field 'model_b'" in err
    assert "line 4: unknown winner value 'model_c'" in err
    assert "line 5: the same model on both sides ('gpt-4')" in err
    assert "line 6: empty model name in 'model_a'" in err
    assert "line 7: not a JSON object" in err
    assert "line 8: tstamp 'yesterday' is not a unix time" in err


def test_it_numbers_csv_and_json_array_rows_by_their_first_line(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text('model_a,model_b,winner\n\n"multi\nline",x,model_a\ngpt-4,,tie\n')
    with BattleLog.open(path) as log:
        rows = list(log.rows())
    assert [r.line for r in rows] == [3, 5]
    assert rows[1] == BadRow(line=5, reason="empty model name in 'model_b'")
    path = tmp_path / "b.json"
    path.write_text('[\n  {"model_a": "a", "model_b": "b", "winner": "tie"},\n\n  7\n]\n')
    with BattleLog.open(path) as log:
        rows = list(log.rows())
    assert isinstance(rows[0], ArenaBattle) and rows[0].line == 2
    assert rows[1] == BadRow(line=4, reason="not a JSON object (got a number)")


def test_it_prints_at_most_fifty_bad_rows_then_a_count(arena, tmp_path, capsys):
    bad = {"model_a": "gpt-4", "model_b": "gpt-4", "winner": "tie"}
    run(write_jsonl(tmp_path / "b.jsonl", [*[bad] * 60, BATTLES[0]]))
    err = capsys.readouterr().err
    assert "line 50:" in err
    assert "line 51:" not in err
    assert "… and 10 more bad row(s)." in err
    assert Battle.objects.count() == 1


def test_it_refuses_a_file_whose_rows_are_all_bad(arena, tmp_path, capsys):
    path = write_jsonl(tmp_path / "b.jsonl", ["not json", {"model_a": "x", "model_b": "y", "winner": "?"}])
    with pytest.raises(CommandError, match=r"Every row of .* was bad"):
        run(path)
    assert "line 1: malformed JSON" in capsys.readouterr().err
    assert not Battle.objects.exists()
    assert not Study.objects.filter(slug="import-arena").exists()


def test_it_refuses_unreadable_files(arena, tmp_path):
    with pytest.raises(CommandError, match="Cannot read"):
        run(str(tmp_path / "missing.jsonl"))
    broken = tmp_path / "broken.json"
    broken.write_text('[{"model_a": "a", "model_b": "b", "winner": "tie"},\n {"model_a": ]')
    with pytest.raises(CommandError, match=r"not a valid JSON array: .* line 2"):
        run(str(broken))
    headless = tmp_path / "headless.csv"
    headless.write_text("gpt-4,claude-2,model_a\n")
    with pytest.raises(CommandError, match="header row"):
        run(str(headless))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(CommandError, match="holds no battles"):
        run(str(empty))
    with pytest.raises(CommandError, match="No tournament has the slug 'nope'"):
        run(str(broken), tournament="nope")
    assert not Battle.objects.exists()


def test_it_refuses_a_tournament_with_battles_from_real_raters(arena, tmp_path):
    study = Study.objects.create(slug="panel", name="Panel", tournament=arena)
    rater = rater_create(entry=PendingEntry(study_id=study.pk, participant_hash=None))
    a = LLMModel.objects.create(slug="a", name="A", provider="demo", demo_style="terse")
    b = LLMModel.objects.create(slug="b", name="B", provider="demo", demo_style="formal")
    Battle.objects.create(tournament=arena, rater=rater, model_a=a, model_b=b, pair_probability=0.5)
    with pytest.raises(CommandError, match="panel or open-link raters"):
        run(write_jsonl(tmp_path / "b.jsonl", BATTLES))
    assert Battle.objects.count() == 1


def test_it_records_tie_bothbad_as_a_tie(arena, tmp_path):
    rows = [{"model_a": "x", "model_b": "y", "winner": w} for w in ("tie (bothbad)", "tie", "Model_B")]
    run(write_jsonl(tmp_path / "b.jsonl", rows))
    assert [o for _, _, o in outcomes(arena)] == ["tie", "tie", "b"]


def test_it_skips_non_anonymous_battles_unless_asked(arena, tmp_path, capsys):
    rows = [BATTLES[0], {**BATTLES[1], "anony": False}]
    run(write_jsonl(tmp_path / "b.jsonl", rows))
    assert Battle.objects.count() == 1
    assert "1 non-anonymous skipped (--include-named imports them)" in capsys.readouterr().out
    run(write_jsonl(tmp_path / "b.jsonl", rows), "--include-named")
    assert Battle.objects.count() == 2


def test_it_writes_in_batches_and_shows_progress(arena, tmp_path, capsys):
    rows = [
        {
            "model_a": f"m{i % 4}",
            "model_b": f"m{(i + 1) % 4}",
            "winner": "model_a",
            "judge": f"j{i % 3}",
            "tstamp": 1700000000 + i,
        }
        for i in range(25)
    ]
    run(write_jsonl(tmp_path / "b.jsonl", rows), "--batch-size", "4", "--progress-every", "10")
    assert Battle.objects.count() == 25
    assert Rater.objects.count() == 3
    err = capsys.readouterr().err
    assert "rows 12  imported 12  skipped 0  bad 0" in err
    assert "rows 20  imported 20" in err
    assert "rows 4 " not in err
    assert "rows/s" in err
    assert "[########################] 100%  rows 25" in err


def test_it_reports_lines_that_are_not_utf8_as_bad_rows(arena, tmp_path, capsys):
    (tmp_path / "b.csv").write_bytes(b"model_a,model_b,winner\nx,\xff\xfe,tie\nx,y,tie\n")
    (tmp_path / "b.jsonl").write_bytes(b'{"model_a": "\xff", "model_b": "y", "winner": "tie"}\n')
    run(str(tmp_path / "b.csv"))
    assert "line 2: not UTF-8 text" in capsys.readouterr().err
    assert Battle.objects.count() == 1
    with pytest.raises(CommandError, match="Every row"):
        run(str(tmp_path / "b.jsonl"))
    assert "line 1: not UTF-8 text" in capsys.readouterr().err


def test_it_keeps_what_was_read_before_a_csv_turns_unreadable(arena, tmp_path, capsys):
    path = tmp_path / "b.csv"
    path.write_text("model_a,model_b,winner\nx,y,tie\nx,z,tie\n" + f'"{"x" * 200_000}",y,tie\n')
    with pytest.raises(CommandError, match=r"not valid CSV after line 3 .* 2 battle\(s\) were imported"):
        run(str(path), "--batch-size", "1")
    assert "Rows: 2 read, 2 imported" in capsys.readouterr().out
    assert Rating.objects.filter(group__isnull=True).count() == 3  # ratings follow what was imported


def test_it_refuses_an_import_study_of_another_tournament(arena, tmp_path):
    other = Tournament.objects.create(slug="other", name="Other")
    Study.objects.create(slug="import-arena", name="Squatter", tournament=other)
    with pytest.raises(CommandError, match="belongs to another tournament"):
        run(write_jsonl(tmp_path / "b.jsonl", BATTLES))


def test_it_parses_rows_without_django():
    row = ArenaBattle(line=1, model_a="a", model_b="b", winner="tie (bothbad)", tstamp=0.0)
    assert row.outcome == "tie"
    assert row.timestamp == datetime(1970, 1, 1, tzinfo=UTC)
    with pytest.raises(UnreadableLog):
        BattleLog.open("/nonexistent/file.jsonl")


def _imported_state(tournament):
    """What an import wrote, in the order of its battles."""
    return sorted(
        (
            battle.pk,
            battle.model_a.name,
            battle.model_b.name,
            battle.rater.participant_hash,
            battle.rater.status,
            battle.state,
            battle.pair_probability,
            battle.created_at,
            battle.ended_at,
            battle.vote.created_at,
            tuple(battle.vote.choices.values_list("dimension__slug", "outcome")),
            battle.vote.applied.counted,
        )
        for battle in Battle.objects.filter(tournament=tournament).select_related(
            "model_a", "model_b", "rater", "vote__applied"
        )
    )


def test_it_writes_the_same_battles_through_copy_as_through_the_portable_path(tmp_path):
    asked = {"model_a": "gpt-4", "model_b": "claude-2", "winner": "tie", "question_id": "q", "tstamp": 9.0}
    rows = [*BATTLES, asked]  # no judge: a rater keyed on the question id
    states = []
    for slug, bulk_copy in (("copy", True), ("portable", False)):
        tournament = Tournament.objects.create(slug=slug, name=slug)
        with BattleLog.open(write_jsonl(tmp_path / f"{slug}.jsonl", rows)) as log:
            report = battles_import(tournament=tournament, rows=log.rows(), bulk_copy=bulk_copy, batch_size=2)
        ratings_replay(tournament_id=tournament.pk)
        assert (report.imported, report.raters_created) == (4, 3)
        ratings = Rating.objects.filter(dimension__tournament=tournament).order_by("model__name")
        states.append(
            (
                sorted(state[1:] for state in _imported_state(tournament)),
                list(ratings.values_list("model__name", "mu", "sigma", "wins", "losses", "ties")),
            )
        )
    assert states[0] == states[1]


def test_it_numbers_copied_votes_in_the_order_of_the_log(arena, tmp_path):
    rows = [{**BATTLES[index % 3], "tstamp": 1700000000.0 - index} for index in range(7)]
    run(write_jsonl(tmp_path / "b.jsonl", rows), "--batch-size", "3")
    stamps = list(Vote.objects.order_by("pk").values_list("created_at", flat=True))
    assert stamps == sorted(stamps, reverse=True) and len(stamps) == 7
    battle_ids = list(Vote.objects.order_by("pk").values_list("battle_id", flat=True))
    assert battle_ids == sorted(battle_ids)


def test_it_does_not_rebuild_the_live_ratings_when_a_re_import_brings_nothing_new(arena, tmp_path, capsys):
    path = write_jsonl(tmp_path / "b.jsonl", BATTLES)
    run(path)
    applied = list(AppliedVote.objects.order_by("vote_id").values_list("pk", "applied_at"))
    run(path)
    assert list(AppliedVote.objects.order_by("vote_id").values_list("pk", "applied_at")) == applied


def test_it_creates_the_tournament_with_default_dimensions_when_asked(tmp_path, capsys):
    path = write_jsonl(tmp_path / "b.jsonl", BATTLES)
    call_command("import_battles", path, "--tournament", "arena-2023", "--create", "--name", "Arena 2023")
    tournament = Tournament.objects.get(slug="arena-2023")
    assert tournament.name == "Arena 2023"
    assert "overall" in set(tournament.dimensions.values_list("slug", flat=True))
    assert tournament.dimensions.count() == 5
    assert outcomes(tournament) == EXPECTED
    call_command("import_battles", path, "--tournament", "arena-2023", "--create", "--name", "Arena 2023")
    assert Tournament.objects.filter(slug="arena-2023").count() == 1
    assert Battle.objects.count() == 3


def test_it_refuses_an_unknown_tournament_without_create_and_a_bad_slug_with_it(tmp_path):
    path = write_jsonl(tmp_path / "b.jsonl", BATTLES)
    with pytest.raises(CommandError, match="--create"):
        call_command("import_battles", path, "--tournament", "nowhere")
    with pytest.raises(CommandError, match="Cannot create tournament"):
        call_command("import_battles", path, "--tournament", "not a slug!", "--create")
    with pytest.raises(CommandError, match="--name names a tournament made by --create"):
        call_command("import_battles", path, "--tournament", "nowhere", "--name", "Nowhere")
    assert not Tournament.objects.exists()


# --- Speed without losing a guarantee (tournaments.imports, config.bulk) ---------------------------------

# Public ids of imported battles derive from these digests: they must never change, or re-importing a log
# imported before would duplicate it. (Values made by the first implementation, json.dumps and uuid5.)
KNOWN_IDS = [
    (
        ArenaBattle(1, "gpt-4", "claude-2", "model_a", "u1", "q1", 1700000000.5),
        "c50380059368b68676de579eb01690ed210017d991af515bcfab4262c9af97a7",
        "75aa828b-504d-5593-9637-3321758e7ebd",
    ),
    (
        ArenaBattle(9, 'Ünïcode "q"', "b\\c", "tie (bothbad)"),
        "c10608b80103ec569a57e615df9dc6b93c2ccd048790f71380cf82653becfc42",
        "dbdfe287-953f-54dc-82fb-c27b1b97d9b1",
    ),
    (
        ArenaBattle(3, "a", "b", "tie", "7", None, 1e-7),
        "8dd190746b916465ba5cd4fd7ed837971f58dbcccb15e05b7cd5d966b6e9d107",
        "12d82abe-efb5-594c-a598-f4b9e559d515",
    ),
]


def test_public_ids_are_the_ones_earlier_imports_stored():
    tournament = Tournament(slug="arena")
    ids = imports._ImportIds(tournament)
    for row, content_key, public_id in KNOWN_IDS:
        assert row.content_key == content_key
        assert str(imports.battle_import_id(tournament=tournament, row=row)) == public_id
        assert ids.hex(row) == uuid.UUID(public_id).hex


def test_the_fast_public_id_is_uuid5_for_any_row():
    tournament = Tournament(slug="some-slug")
    ids = imports._ImportIds(tournament)
    for index in range(300):
        row = ArenaBattle(index, f"m{index}", f"é{index * 7}", "tie", str(index) if index % 2 else None)
        assert ids.hex(row) == imports.battle_import_id(tournament=tournament, row=row).hex


def test_tstamps_outside_the_years_a_datetime_holds_are_bad_rows():
    def parsed(tstamp):
        return row_parse({"model_a": "a", "model_b": "b", "winner": "tie", "tstamp": tstamp}, line=1)

    assert parsed(253402300000).tstamp == 253402300000.0  # in the year 9999
    assert parsed("-62135596800").tstamp == -62135596800.0  # the first second of the year 1
    for bad in (1e20, -1e12, "nan", "inf", float("-inf"), True, [1]):
        assert isinstance(parsed(bad), BadRow), bad


def test_a_failure_part_way_leaves_nothing_imported(arena, tmp_path):
    def rows():
        with BattleLog.open(write_jsonl(tmp_path / "b.jsonl", BATTLES * 1)) as log:
            yield from log.rows()
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError, match="disk gone"):
        battles_import(tournament=arena, rows=rows(), batch_size=1)
    assert not Battle.objects.exists()
    assert not Study.objects.filter(slug="import-arena").exists()


def test_the_command_lands_rows_and_ratings_together_or_not_at_all(arena, tmp_path, monkeypatch):
    def broken_replay(**kwargs):
        raise ApplicationError("ratings broke")

    monkeypatch.setattr("leaderboard.management.commands.import_battles.ratings_replay", broken_replay)
    with pytest.raises(CommandError, match="ratings broke"):
        run(write_jsonl(tmp_path / "b.jsonl", BATTLES), "--batch-size", "1")
    assert not Battle.objects.exists()
    assert not LLMModel.objects.filter(base_url=IMPORTED_BASE_URL).exists()


def test_reading_stays_a_few_batches_ahead_and_stops_when_the_writer_does():
    pulled = []

    def produce(put):
        for index in range(1000):
            pulled.append(index)
            put(index)

    items = imports._read_ahead(produce, depth=2)
    assert next(items) == 0
    time.sleep(0.3)
    assert len(pulled) <= 4  # the one taken, two queued, one waiting to be put
    items.close()  # the writer leaves early: the reading thread ends
    assert not any(t.name == "import-read-ahead" and t.is_alive() for t in threading.enumerate())


def test_an_error_while_reading_reaches_the_writer():
    def produce(put):
        put(1)
        raise ValueError("line 2 broke the reader")

    items = imports._read_ahead(produce, depth=2)
    assert next(items) == 1
    with pytest.raises(ValueError, match="line 2 broke"):
        next(items)


def _foreign_keys_validate(tables):
    """Drop and re-add every foreign key of these tables: PostgreSQL checks every row as it adds one."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the test's own pending checks first
        cursor.execute(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE contype = 'f' AND conrelid::regclass::text = ANY(%s)",
            [tables],
        )
        constraints = cursor.fetchall()
        assert len(constraints) >= 8
        for table, name, definition in constraints:
            cursor.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
            cursor.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')


@pytest.mark.parametrize("role_may_skip_triggers", [True, False])
def test_copied_rows_satisfy_every_foreign_key_whoever_checks_them(
    arena, tmp_path, monkeypatch, role_may_skip_triggers
):
    """Where the role may turn triggers off, the import checks (and locks) each referenced row once
    itself; otherwise PostgreSQL's triggers check every row. The rows must be valid either way."""
    monkeypatch.setattr(imports, "pg_can_skip_triggers", lambda: role_may_skip_triggers)
    skipped = []
    real_skip = imports.pg_triggers_skipped
    monkeypatch.setattr(imports, "pg_triggers_skipped", lambda skip: skipped.append(skip) or real_skip(skip))
    rows = [{**BATTLES[index % 3], "tstamp": 1700000000.0 + index} for index in range(10)]
    for log_rows in (rows[:4], rows):  # the second import adds to the first one's votes
        with BattleLog.open(write_jsonl(tmp_path / "b.jsonl", log_rows)) as log:
            report = battles_import(tournament=arena, rows=log.rows(), batch_size=3)
        # What the command does: the markers of the votes just written skip their checks too.
        ratings_replay(tournament_id=arena.pk, new_votes_from=report.first_vote_id)
    assert report.imported == 6 and set(skipped) == {role_may_skip_triggers}
    assert report.first_vote_id == min(Vote.objects.order_by("pk").values_list("pk", flat=True)[4:])
    assert AppliedVote.objects.filter(vote__battle__tournament=arena).count() == 10
    _foreign_keys_validate(
        ["tournaments_battle", "tournaments_vote", "tournaments_votechoice", "leaderboard_appliedvote"]
    )


def test_the_database_role_in_the_tests_may_skip_triggers():
    """The suite's role is a superuser, like the one docker-compose.yml sets up, so the fast path is
    the one the other import tests take."""
    assert pg_can_skip_triggers()


def test_a_replayed_vote_without_choices_is_still_marked_applied(arena, tmp_path):
    run(write_jsonl(tmp_path / "b.jsonl", BATTLES))
    vote = Vote.objects.order_by("pk").first()
    vote.choices.all().delete()
    assert ratings_replay(tournament_id=arena.pk) == 3
    assert AppliedVote.objects.filter(vote__battle__tournament=arena).count() == 3
    ratings = Rating.objects.filter(dimension__tournament=arena, group__isnull=True)
    assert sum(r.wins + r.ties for r in ratings) == 1 + 2  # the second vote's win, the third's tie
