"""Publishing style-controlled boards: per-battle style stored once, coefficients on the snapshot."""

import itertools
import random
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Max, Min
from django.test.utils import CaptureQueriesContext

from leaderboard import personal, quiz
from leaderboard.battle_styles import battle_styles_ensure
from leaderboard.models import BattleStyle, FitScore, FitSnapshot
from leaderboard.services import _published_choices, _summed_per_rater_and_pair, fits_publish
from raters.models import Group
from tests.conftest import admitted_rater
from tests.leaderboard.test_fits import AGES, ETHNICITIES, POLITICS, cast
from tournaments.models import Reply, Turn

pytestmark = pytest.mark.django_db

LONG = "# Overview\n\n" + "\n".join(f"- **point {k}** with a longer explanation" for k in range(8))
SHORT = "A short plain answer."


def chat(vote, texts: dict[str, str], turns: int = 1) -> None:
    for index in range(turns):
        turn = Turn.objects.create(battle=vote.battle, index=index, message="Question?")
        for side, text in texts.items():
            Reply.objects.create(turn=turn, side=side, state=Reply.State.DONE, content=text)


@pytest.fixture
def styled_sample(study, groups, tournament):
    """Model 0 always writes long formatted replies and the others short plain ones; raters pick the
    longer reply most of the time, so the raw board favours model 0 for its style."""
    rng = random.Random(3)
    models = list(tournament.llm_models.order_by("pk"))
    for age, ethnicity, politics in itertools.product(AGES, ETHNICITIES, POLITICS):
        rater = admitted_rater(study, answers={"age": age, "ethnicity": ethnicity, "politics": politics})
        for _ in range(5):
            a, b = rng.sample(models, 2)
            texts = {
                "a": LONG if a == models[0] else SHORT * rng.randint(1, 3),
                "b": LONG if b == models[0] else SHORT * rng.randint(1, 3),
            }
            longer = "a" if len(texts["a"]) > len(texts["b"]) else "b"
            winner = longer if rng.random() < 0.75 else ("b" if longer == "a" else "a")
            chat(cast(rater, a, b, {"overall": winner}), texts)
    return models


def test_it_publishes_style_controlled_boards_beside_the_default_ones(styled_sample, tournament):
    fits_publish(tournament_id=tournament.pk)
    overall = FitSnapshot.objects.get(dimension__slug="overall")
    default = FitScore.objects.filter(snapshot=overall, group=None, style_controlled=False)
    controlled = FitScore.objects.filter(snapshot=overall, group=None, style_controlled=True)
    assert default.count() == controlled.count() == len(styled_sample)
    assert FitScore.objects.filter(snapshot=overall, style_controlled=True, group__isnull=False).exists()
    favourite = styled_sample[0]
    # Holding style equal takes away what model 0 gained from its formatting.
    assert controlled.get(model=favourite).score < default.get(model=favourite).score
    for score in controlled:
        assert score.score_low <= score.score <= score.score_high
    assert sum(s.p_best for s in controlled) == pytest.approx(1.0)


def test_it_stores_the_style_coefficients_with_intervals_and_per_group(styled_sample, tournament):
    fits_publish(tournament_id=tournament.pk)
    style = FitSnapshot.objects.get(dimension__slug="overall").style
    assert "length" in style["features"]
    assert "cut_off" not in style["features"]  # no reply was cut off: a feature that never varies is left out
    length = next(c for c in style["coefficients"] if c["feature"] == "length")
    assert length["low"] <= length["estimate"] <= length["high"]
    assert length["low"] > 0  # raters preferred the longer reply
    assert len(length["groups"]) == 3 + 4 + 3
    for group in length["groups"]:
        assert group["low"] <= group["estimate"] <= group["high"]
        assert group["offset"]["low"] <= group["offset"]["estimate"] <= group["offset"]["high"]


def test_it_derives_each_battles_style_once(styled_sample, tournament):
    fits_publish(tournament_id=tournament.pk)
    stored = dict(BattleStyle.objects.values_list("battle_id", "created_at"))
    assert len(stored) == 36 * 5
    fits_publish(tournament_id=tournament.pk)
    assert dict(BattleStyle.objects.values_list("battle_id", "created_at")) == stored


def test_it_counts_every_turn_of_each_side(study, groups, tournament):
    models = list(tournament.llm_models.order_by("pk"))
    vote = cast(admitted_rater(study), models[0], models[1], {"overall": "a"})
    chat(vote, {"a": LONG, "b": SHORT}, turns=3)
    side_a, side_b = battle_styles_ensure(battle_ids=[vote.battle_id])[vote.battle_id]
    assert side_a.length == 3 * len(LONG) and side_b.length == 3 * len(SHORT)
    assert (side_a.headers, side_a.list_items, side_a.bold) == (3, 24, 24)
    assert side_a.cut_off == 0


def test_it_records_a_reply_cut_off_at_its_length_limit(study, groups, tournament):
    models = list(tournament.llm_models.order_by("pk"))
    vote = cast(admitted_rater(study), models[0], models[1], {"overall": "a"})
    chat(vote, {"a": LONG, "b": SHORT}, turns=2)
    Reply.objects.filter(turn__battle_id=vote.battle_id, side="a", turn__index=1).update(cut_off=True)
    side_a, side_b = battle_styles_ensure(battle_ids=[vote.battle_id])[vote.battle_id]
    assert (side_a.cut_off, side_b.cut_off) == (1, 0)


def test_it_publishes_no_style_boards_when_no_reply_differs_in_style(study, groups, tournament):
    models = list(tournament.llm_models.order_by("pk"))
    rater = admitted_rater(study)
    for _ in range(4):
        cast(rater, models[0], models[1], {"overall": "a"})  # no replies stored: every feature is 0
    fits_publish(tournament_id=tournament.pk)
    overall = FitSnapshot.objects.get(dimension__slug="overall")
    assert overall.style == {}
    assert not FitScore.objects.filter(snapshot=overall, style_controlled=True).exists()
    # With no replies at all (as in an imported log) no battle's style is derived, for the fits or the quiz.
    assert not BattleStyle.objects.exists()


# --- The personal board from the style-controlled fits ------------------------------------------------

PERSONAL_URL = "/leaderboard/personal/"


@pytest.fixture
def styled_fitted(styled_sample, tournament, settings):
    settings.POPULUS_MIN_GROUP_RATERS = 5
    fits_publish(tournament_id=tournament.pk)
    return FitSnapshot.objects.get(dimension__slug="overall")


def test_it_stores_the_style_controlled_posterior_beside_the_default_one(styled_fitted):
    published = FitScore.objects.filter(snapshot=styled_fitted, group=None)
    for style_controlled in (False, True):
        posterior = personal.posterior_get(styled_fitted.pk, style_controlled=style_controlled)
        scores = {s.model_id: s.score for s in published.filter(style_controlled=style_controlled)}
        # The pooled draws kept for the personal board are those its published scores came from.
        assert dict(zip(posterior.model_ids, posterior.pooled.point, strict=True)) == scores
    # A profile's board of the style-controlled fit is the published style-controlled group board.
    older = Group.objects.get(slug=AGES[-1])
    draws = personal._cell_draws(styled_fitted.pk, (older.pk,), True)
    controlled = FitScore.objects.filter(snapshot=styled_fitted, group=older, style_controlled=True)
    posterior = personal.posterior_get(styled_fitted.pk, style_controlled=True)
    for score in controlled:
        assert draws.point[posterior.model_ids.index(score.model_id)] == pytest.approx(score.score, abs=1e-9)


def test_the_personal_board_can_hold_style_equal(styled_sample, styled_fitted, tournament):
    boards = {
        style: personal.personal_board(
            tournament=tournament,
            weights={"overall": 5},
            profile={"age": AGES[-1]},
            country="US",
            style=style,
        )
        for style in (None, "controlled")
    }
    assert not boards["controlled"].problems
    assert boards["controlled"].style_controlled and "style=controlled" in boards["controlled"].query
    favourite = styled_sample[0].pk
    as_voted, controlled = ({row.model_id: row.score for row in boards[s].rows} for s in (None, "controlled"))
    # Model 0 won on its long formatted replies; with style held equal that advantage is gone.
    assert controlled[favourite] < as_voted[favourite]


def test_a_dimension_without_a_style_controlled_fit_is_left_out_with_a_note(
    study, groups, tournament, settings
):
    settings.POPULUS_MIN_GROUP_RATERS = 1
    models = list(tournament.llm_models.order_by("pk"))
    rater = admitted_rater(study)
    for _ in range(4):
        cast(rater, models[0], models[1], {"overall": "a"})  # no replies: no style to control
    fits_publish(tournament_id=tournament.pk)
    board = personal.personal_board(
        tournament=tournament, weights={"overall": 5}, profile={}, country=None, style="controlled"
    )
    assert not board.ranked
    assert any("no style-controlled fit" in note for note in board.notes)


def test_the_personal_page_has_the_style_switch(client, styled_fitted, tournament):
    query = {"tournament": tournament.slug, "w-overall": "10"}
    html = client.get(PERSONAL_URL, {**query, "style": "controlled"}).content.decode()
    assert 'value="controlled" checked' in html
    assert 'data-testid="personal-style-note"' in html
    assert 'data-testid="personal-style-note"' not in client.get(PERSONAL_URL, query).content.decode()
    html = client.get(PERSONAL_URL, {**query, "style": "bold"}).content.decode()
    assert "There is no style view called &#x27;bold&#x27;; showing the board as voted." in html


def test_the_profile_board_api_takes_the_style_view(client, styled_sample, styled_fitted):
    url = f"/api/v1/boards/?profile={AGES[-1]}&dimension=overall"
    as_voted, controlled = (client.get(url + extra).json() for extra in ("", "&style=controlled"))
    assert (as_voted["style_controlled"], controlled["style_controlled"]) == (False, True)
    favourite = styled_sample[0].slug
    score = {name: next(e["score"] for e in board["entries"] if e["slug"] == favourite)
             for name, board in (("voted", as_voted), ("controlled", controlled))}  # fmt: skip
    assert score["controlled"] < score["voted"]


def test_it_reads_each_dimensions_votes_once_for_the_default_and_the_style_fit(styled_sample, tournament):
    with CaptureQueriesContext(connection) as queries:
        fits_publish(tournament_id=tournament.pk)
    for dimension in tournament.dimensions.all():
        reads = [
            q["sql"]
            for q in queries.captured_queries
            if f'"tournaments_votechoice"."dimension_id" = {dimension.pk}' in q["sql"]
            and not q["sql"].startswith('SELECT 1 AS "a"')  # whether there is anything to fit
        ]
        assert len(reads) == 1, reads


def test_it_sums_single_votes_as_the_database_counts_them(styled_sample, tournament):
    choices = _published_choices(tournament.dimensions.get(slug="overall"))
    columns = ("vote__battle__rater_id", "vote__battle__model_a_id", "vote__battle__model_b_id", "outcome")
    counted = choices.values_list(*columns).annotate(n=Count("pk"), first=Min("vote_id"), last=Max("vote_id"))
    summed = _summed_per_rater_and_pair(list(choices.values_list(*columns, "vote_id", "vote__battle_id")))
    assert sorted(summed) == sorted(counted.order_by())
    assert max(row[4] for row in summed) > 1  # some rater met the same pair with the same verdict twice


# --- The quiz from the style-controlled model -------------------------------------------------------------


def test_the_quiz_follows_the_style_switch_and_reads_answers_net_of_style(
    client, styled_sample, styled_fitted, tournament
):
    # Publishing fitted the quiz's model with style held equal beside the one as voted.
    assert cache.get(quiz._population_key(tournament, style_controlled=True)).n_features > 0
    query = {"tournament": tournament.slug, "w-overall": "10", "style": "controlled"}
    page = client.get(PERSONAL_URL, query)
    controlled = page.context["quiz"]
    assert controlled.style_controlled and not controlled.problems
    html = page.content.decode()
    assert 'data-testid="quiz-style-note"' in html
    assert '<input type="hidden" name="style" value="controlled">' in html  # an answer keeps the view
    item = controlled.shown
    assert item.item.features  # the battle's style, for reading the answer
    answered = client.get(
        PERSONAL_URL,
        {**query, "item": item.item.code, "answer": item.left_outcome},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="personal-quiz",
    )
    assert parse_qs(urlsplit(answered["HX-Push-Url"]).query)["style"] == ["controlled"]
    assert answered.context["quiz"].style_controlled and answered.context["quiz"].answered == 1
    as_voted = client.get(PERSONAL_URL, {k: v for k, v in query.items() if k != "style"}).context["quiz"]
    assert not as_voted.style_controlled and not as_voted.shown.item.features
    # The own board starts from the profile's board with style held equal: model 0's long formatted
    # replies no longer lift it.
    favourite = styled_sample[0].slug
    score = {q: next(row.score for row in q.rows if row.slug == favourite) for q in (controlled, as_voted)}
    assert score[controlled] < score[as_voted]
