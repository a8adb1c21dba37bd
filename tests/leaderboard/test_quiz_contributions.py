"""Quiz answers added to the open data: only with the tick, once, apart from every study's boards."""

import json

import pytest

from leaderboard import quiz
from leaderboard.models import FitScore, QuizAnswer, QuizContribution
from leaderboard.services import fits_publish
from tests.leaderboard.test_personal import OLDEST
from tests.leaderboard.test_quiz import quizzed  # noqa: F401 - the fixture
from tournaments.models import VoteChoice

pytestmark = pytest.mark.django_db
URL = "/leaderboard/personal/contribute/"


def answers_encoded(tournament, count: int, *, dimension_verdict: str = "") -> str:
    codes = sorted(quiz.quiz_data(tournament=tournament).items)[:count]
    return ".".join(code + "a" + dimension_verdict for code in codes)


def sent(client, tournament, encoded: str, *, origin: str | None = None, **extra):
    fields = {"tournament": tournament.slug, "country": "US", "age": OLDEST, "quiz": encoded, **extra}
    return client.post(URL, fields, **({"HTTP_ORIGIN": origin} if origin else {}))


def pooled_overall_scores() -> dict[int, float]:
    """The latest published pooled board of the overall dimension, model -> score."""
    latest = FitScore.objects.filter(group=None, snapshot__dimension__slug="overall").latest("snapshot_id")
    return dict(
        FitScore.objects.filter(snapshot_id=latest.snapshot_id, group=None).values_list("model_id", "score")
    )


def test_nothing_is_stored_without_the_tick_and_no_cookie_is_set(client, quizzed):  # noqa: F811
    response = sent(client, quizzed, answers_encoded(quizzed, 3))
    assert response.status_code == 400
    assert "Tick" in response.content.decode() and "Nothing was stored" in response.content.decode()
    assert not QuizContribution.objects.exists() and not QuizAnswer.objects.exists()
    assert not response.cookies
    page = client.get("/leaderboard/personal/", {"w-overall": "10", "quiz": answers_encoded(quizzed, 3)})
    assert b'data-testid="quiz-contribute"' in page.content
    assert not page.cookies and not QuizContribution.objects.exists()


def test_with_the_tick_the_answers_are_stored_once_with_the_profile_and_the_dimension(
    client,
    quizzed,  # noqa: F811
):
    encoded = answers_encoded(quizzed, 3, dimension_verdict="b")
    response = sent(client, quizzed, encoded, open_data="yes", qdim="communication")
    assert response.status_code == 200
    assert b"6 verdicts added to the open data" in response.content
    contribution = QuizContribution.objects.get()
    assert [g.slug for g in contribution.groups.all()] == [OLDEST]
    assert contribution.dimension.slug == "communication"
    stored = sorted(contribution.answers.values_list("dimension__slug", "outcome"))
    assert stored == [("communication", "b")] * 3 + [("overall", "a")] * 3
    assert not response.cookies
    # The same answers again: nothing new.
    again = sent(client, quizzed, encoded, open_data="yes", qdim="communication")
    assert b"already in the open data" in again.content
    assert QuizContribution.objects.count() == 1 and QuizAnswer.objects.count() == 6
    # Answered more and ticked again: the contribution grows, the first answers are not added twice.
    longer = answers_encoded(quizzed, 5, dimension_verdict="b")
    assert longer.startswith(encoded)
    sent(client, quizzed, longer, open_data="yes", qdim="communication")
    assert QuizContribution.objects.count() == 1 and QuizAnswer.objects.count() == 10
    assert QuizContribution.objects.get().encoded == longer


def test_bad_input_gets_a_clear_error_and_stores_nothing(client, quizzed):  # noqa: F811
    altered = sent(client, quizzed, "0123456789abx", open_data="yes")
    assert altered.status_code == 400 and b"Nothing was stored" in altered.content
    empty = sent(client, quizzed, "", open_data="yes")
    assert empty.status_code == 400 and b"judge at least one battle" in empty.content
    unknown = sent(client, quizzed, answers_encoded(quizzed, 2), open_data="yes", qdim="nonsense")
    assert unknown.status_code == 400 and b"no dimension called" in unknown.content
    assert client.get(URL).status_code == 405
    assert not QuizContribution.objects.exists()


def test_a_browsers_post_from_another_site_is_refused_and_stores_nothing(client, quizzed):  # noqa: F811
    # No CSRF cookie may be set, so the Origin is what stops another site from sending its visitors'
    # browsers (each on a network of its own, past the per-network limit) to add answers.
    for foreign in ("https://evil.example", "null"):
        refused = sent(client, quizzed, answers_encoded(quizzed, 2), open_data="yes", origin=foreign)
        assert refused.status_code == 403 and b"Nothing was stored" in refused.content
        assert not refused.cookies
    assert not QuizContribution.objects.exists() and not QuizAnswer.objects.exists()
    own = sent(client, quizzed, answers_encoded(quizzed, 2), open_data="yes", origin="http://testserver")
    assert own.status_code == 200 and QuizContribution.objects.count() == 1


def test_it_is_rate_limited_per_network(client, quizzed, settings):  # noqa: F811
    settings.RATE_LIMIT_QUIZ_CONTRIBUTIONS_PER_MINUTE = 2
    for count in (1, 2):
        assert sent(client, quizzed, answers_encoded(quizzed, count), open_data="yes").status_code == 200
    limited = sent(client, quizzed, answers_encoded(quizzed, 3), open_data="yes")
    assert limited.status_code == 429 and limited["Retry-After"]


def test_the_answers_never_reach_the_study_boards_and_have_a_board_and_download_of_their_own(
    client,
    quizzed,  # noqa: F811
):
    counted = VoteChoice.objects.counted().count()
    before = pooled_overall_scores()
    battles_export = client.get(f"/api/v1/tournaments/{quizzed.slug}/battles.jsonl")
    lines_before = len(b"".join(battles_export.streaming_content).splitlines())
    # Many contributions, all for the same model, which would move any board that read them.
    items = quiz.quiz_data(tournament=quizzed).items
    liked = [code for code, item in sorted(items.items()) if "gamma-instruct" in (item.model_a, item.model_b)]
    for n in range(1, 6):
        encoded = ".".join(
            code + ("a" if items[code].model_a == "gamma-instruct" else "b") for code in liked[: n + 5]
        )
        assert sent(client, quizzed, encoded, open_data="yes").status_code == 200
    assert QuizAnswer.objects.count() == len(liked[:10])
    assert VoteChoice.objects.counted().count() == counted
    fits_publish(tournament_id=quizzed.pk)
    after = pooled_overall_scores()
    assert after.keys() == before.keys()
    assert all(after[model] == pytest.approx(before[model], abs=1e-6) for model in before)
    battles_export = client.get(f"/api/v1/tournaments/{quizzed.slug}/battles.jsonl")
    assert len(b"".join(battles_export.streaming_content).splitlines()) == lines_before
    # Their own board puts Gamma Instruct first; their own download has the answers, no groups.
    page = client.get("/leaderboard/personal/open-answers/", {"tournament": quizzed.slug})
    assert page.context["rows"][0].name == "Gamma Instruct"
    assert b"1 visitor shared 10 overall verdicts" in page.content
    download = client.get(f"/api/v1/tournaments/{quizzed.slug}/quiz-answers.jsonl")
    lines = [json.loads(line) for line in b"".join(download.streaming_content).splitlines()]
    assert len(lines) == 1 and len(lines[0]["answers"]) == 10
    assert {answer["item"] for answer in lines[0]["answers"]} == set(liked[:10])
    assert "groups" not in lines[0]
