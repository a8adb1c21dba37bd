import json
import math
import random

import pytest
from django.core.management import CommandError, call_command

from leaderboard.models import FitScore, FitSnapshot
from raters.models import Rater
from tournaments.models import Tournament

pytestmark = pytest.mark.django_db

BATTLES = [
    {"model_a": "gpt-4", "model_b": "claude-2", "winner": "model_a", "judge": f"u{index}", "tstamp": index}
    for index in range(6)
] + [{"model_a": "claude-2", "model_b": "llama-2", "winner": "tie", "judge": "u9", "tstamp": 99.0}]


@pytest.fixture
def imported(tmp_path) -> Tournament:
    path = tmp_path / "b.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in BATTLES))
    call_command("import_battles", str(path), "--tournament", "arena", "--create", "--name", "Arena")
    return Tournament.objects.get(slug="arena")


def test_it_publishes_a_snapshot_per_dimension_with_votes_and_says_where_to_see_it(imported, capsys):
    capsys.readouterr()
    call_command("fit", "--tournament", "arena")
    out, err = capsys.readouterr()
    snapshot = FitSnapshot.objects.get(tournament=imported)
    assert snapshot.dimension.slug == "overall" and snapshot.votes == 7
    assert FitScore.objects.filter(snapshot=snapshot, group__isnull=True).count() == 3
    assert "fitting overall" in err
    assert f"overall: snapshot {snapshot.pk}, 7 vote(s)" in out
    assert "/leaderboard/?tournament=arena&dimension=overall" in out
    assert "/api/v1/boards/?tournament=arena&dimension=overall" in out


def test_it_fits_only_the_dimensions_named(imported):
    with pytest.raises(CommandError, match="Nothing to fit"):
        call_command("fit", "--tournament", "arena", "--dimension", "trust-safety")
    call_command("fit", "--tournament", "arena", "--dimension", "overall")
    assert FitSnapshot.objects.filter(tournament=imported).count() == 1


def test_it_refuses_an_unknown_tournament_or_dimension(imported):
    with pytest.raises(CommandError, match="No tournament has the slug 'nowhere'"):
        call_command("fit", "--tournament", "nowhere")
    with pytest.raises(CommandError, match="has no dimension 'nope'"):
        call_command("fit", "--tournament", "arena", "--dimension", "nope")
    assert not FitSnapshot.objects.exists()


def test_an_imported_log_is_published_as_recorded_without_the_rigging_check(tmp_path):
    # The same pattern the rigging check holds out of a live study (one rater voting the weakest model
    # over the favourite forty times, against forty raters' ordinary verdicts) stays in an imported log:
    # its raters are someone else's judge ids, all created by one import, with no network to judge.
    rng = random.Random(7)
    skills = {"strong": 1.0, "middle": 0.0, "weak": -1.0}
    rows = []
    for judge in range(40):
        for _ in range(10):
            a, b = rng.sample(sorted(skills), 2)
            p_a = 1 / (1 + math.exp(skills[b] - skills[a]))
            rows.append({"model_a": a, "model_b": b, "winner": "model_a" if rng.random() < p_a else "model_b",
                         "judge": f"j{judge}", "tstamp": len(rows)})  # fmt: skip
    rows += [
        {"model_a": "weak", "model_b": "strong", "winner": "model_a", "judge": "rigger", "tstamp": 1000 + n}
        for n in range(40)
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    call_command("import_battles", str(path), "--tournament", "arena", "--create", "--name", "Arena")
    call_command("fit", "--tournament", "arena")
    assert not Rater.objects.filter(held_out_at__isnull=False).exists()
    assert FitSnapshot.objects.get(tournament__slug="arena").votes == 440
