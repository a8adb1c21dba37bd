"""The judging quiz on the personal leaderboard: published battles only, answers in the address only."""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.cache import cache

from leaderboard import quiz
from leaderboard.services import fits_publish
from raters.models import Rater
from tests.leaderboard.test_personal import OLDEST, sample_fitted
from tournaments.models import Battle, Reply, Turn

pytestmark = pytest.mark.django_db
URL = "/leaderboard/personal/"


def conversations_written(battles, *, reply: str = "A **reply** from {side}.") -> None:
    """One turn per battle with both replies done, as a finished battle has."""
    for battle in battles:
        turn = Turn.objects.create(battle=battle, index=0, message=f"Prompt of battle {battle.pk}")
        for side in "ab":
            content = reply.format(side=side)
            Reply.objects.create(turn=turn, side=side, state=Reply.State.DONE, content=content)


@pytest.fixture
def quizzed(study, groups, tournament, settings):
    settings.POPULUS_MIN_GROUP_RATERS = 5
    sample_fitted(study, tournament)
    conversations_written(Battle.objects.filter(tournament=tournament))
    fits_publish(tournament_id=tournament.pk)  # the quiz's model is fitted only where replies are stored
    return tournament


def code_of(battle) -> str:
    return quiz.item_code(battle)


def test_it_offers_only_counted_battles_whose_replies_are_complete(quizzed):
    battles = list(Battle.objects.filter(tournament=quizzed).order_by("pk"))
    flagged, excluded_rater_battle, unfinished = battles[0], battles[1], battles[2]
    Battle.objects.filter(pk=flagged.pk).update(flagged_reason="named itself")
    Rater.objects.filter(pk=excluded_rater_battle.rater_id).update(status=Rater.Status.EXCLUDED)
    Reply.objects.filter(turn__battle=unfinished, side="b").update(state=Reply.State.FAILED)
    data = quiz.quiz_data(tournament=quizzed)
    excluded = Battle.objects.filter(rater_id=excluded_rater_battle.rater_id)
    offered = {item.battle_id for item in data.items.values()}
    assert flagged.pk not in offered and unfinished.pk not in offered
    assert not offered & set(excluded.values_list("pk", flat=True))
    assert offered == set(
        Battle.objects.filter(tournament=quizzed)
        .exclude(pk__in=[flagged.pk, unfinished.pk])
        .exclude(rater_id=excluded_rater_battle.rater_id)
        .values_list("pk", flat=True)
    )
    assert all(code == code_of(Battle.objects.get(pk=item.battle_id)) for code, item in data.items.items())


def test_it_never_asks_the_same_item_twice_and_the_answers_move_the_board(quizzed):
    encoded, seen = "", []
    start = quiz.quiz_build(tournament=quizzed, groups=(OLDEST,), encoded="", item=None, answer=None)
    for _ in range(12):
        current = quiz.quiz_build(
            tournament=quizzed, groups=(OLDEST,), encoded=encoded, item=None, answer=None
        )
        item = current.shown.item
        seen.append(item.code)
        # This visitor always prefers whatever Gamma Instruct wrote, and ties otherwise.
        answer = "a" if item.model_a == "gamma-instruct" else "b" if item.model_b == "gamma-instruct" else "t"
        encoded = quiz.quiz_build(
            tournament=quizzed, groups=(OLDEST,), encoded=encoded, item=item.code, answer=answer
        ).encoded
    assert len(set(seen)) == 12
    final = quiz.quiz_build(tournament=quizzed, groups=(OLDEST,), encoded=encoded, item=None, answer=None)
    assert final.answered == 12
    gamma = {row.slug: row for row in final.rows}["gamma-instruct"]
    before = {row.slug: row for row in start.rows}["gamma-instruct"]
    assert gamma.score > before.score
    assert gamma.p_best > before.p_best
    assert final.closest_group
    assert any("Kendall" in sentence for sentence in final.moved)


def test_it_keeps_the_answers_in_the_address_sets_no_cookie_and_the_address_reproduces_the_board(
    client, quizzed
):
    page = client.get(URL, {"w-overall": "10"})
    assert b"Sharpen it with your own judgments" in page.content
    item = page.context["quiz"].shown
    answered = client.get(
        URL,
        {"w-overall": "10", "item": item.item.code, "answer": item.left_outcome},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="personal-quiz",
    )
    assert not answered.cookies
    pushed = answered["HX-Push-Url"]
    assert parse_qs(urlsplit(pushed).query)["quiz"] == [item.item.code + item.left_outcome]
    assert b"1 answered" in answered.content
    again = client.get(pushed)
    assert again.context["quiz"].rows == answered.context["quiz"].rows
    assert again.context["quiz"].shown == answered.context["quiz"].shown
    assert again.context["quiz"].answered == 1


def test_it_renders_the_replies_through_the_sanitiser_and_drops_answers_it_cannot_use(client, quizzed):
    Reply.objects.filter(side="a").update(content="<script>alert(1)</script>**bold**")
    page = client.get(URL, {"w-overall": "10", "quiz": "0000000000zzz.ffffffffffffa"})
    assert b"<script>alert(1)" not in page.content
    assert b"<strong>bold</strong>" in page.content
    assert page.context["quiz"].answered == 0
    assert b"not about a published battle any more" in page.content


def test_the_methodology_page_shows_how_much_people_disagree_about_each_model(client, quizzed):
    html = client.get("/leaderboard/methodology/").content.decode()
    assert 'data-testid="taste-spread"' in html
    spreads = quiz.taste_spreads(tournament=quizzed)
    assert [name for name, _ in spreads] == sorted(
        (name for name, _ in spreads), key=lambda name: -dict(spreads)[name]
    )
    assert all(f"<td>{name}</td>" in html for name, _ in spreads)
    # The quiz's shared answers are named as an audience apart, with a link to their own board.
    assert f'href="/leaderboard/personal/open-answers/?tournament={quizzed.slug}"' in html


def test_each_model_page_shows_how_much_people_disagree_about_it_on_its_dimension(client, quizzed):
    for dimension in ("overall", "trust-safety"):
        spreads = quiz._spread_by_slug(quizzed, dimension)
        for slug in spreads:
            page = client.get(f"/leaderboard/models/{slug}/", {"dimension": dimension})
            shown = page.context["spread"]
            assert shown.sd == spreads[slug] and shown.of == len(spreads)
            # Ranked by spread, equal spreads sharing a rank.
            assert shown.rank == 1 + sum(sd > spreads[slug] for sd in spreads.values())
            html = page.content.decode()
            assert 'data-testid="model-taste-spread"' in html
            assert f"<strong>{spreads[slug]:.2f}</strong>" in html


def test_the_disagreement_figures_are_withheld_while_the_pooled_board_is(client, quizzed, settings):
    settings.POPULUS_MIN_GROUP_RATERS = 10_000
    html = client.get("/leaderboard/methodology/").content.decode()
    assert 'data-testid="pooled-raters"' in html
    assert 'data-testid="taste-spread"' not in html
    model_page = client.get("/leaderboard/models/alpha-large/").content.decode()
    assert 'data-testid="model-taste-spread"' not in model_page


def test_a_panel_rater_gets_their_own_board_from_their_own_votes_only_after_the_last_vote(quizzed):
    from tests.conftest import client_for

    rater = Battle.objects.filter(tournament=quizzed).order_by("pk").first().rater
    client = client_for(rater)
    assert client.get("/leaderboard/personal/mine/").status_code == 403  # still voting
    Rater.objects.filter(pk=rater.pk).update(status=Rater.Status.COMPLETED)
    response = client.get("/leaderboard/personal/mine/")
    assert response.status_code == 302
    query = parse_qs(urlsplit(response["Location"]).query)
    own = Battle.objects.filter(rater=rater)
    assert sorted(token[:-1] for token in query["quiz"][0].split(".")) == sorted(code_of(b) for b in own)
    assert query["tournament"] == [quizzed.slug]
    assert set(query) & {group.axis.slug for group in rater.groups.all()}
    page = client.get(response["Location"])
    assert page.context["quiz"].answered == own.count() == 10


def test_it_fits_the_personal_model_when_the_fits_are_published_not_on_a_page_request(quizzed):
    key = quiz._population_key(quizzed)
    published = cache.get(key)
    assert published is not None and published.models
    # The page reads the kept model: marked here, the mark comes back (a refit would not carry it).
    published.taste_scale = -1.0
    cache.set(key, published)
    quiz._cache.clear()
    assert quiz.quiz_data(tournament=quizzed).population.taste_scale == -1.0
    # A new fit keeps a new model under its own key, and the page moves to it.
    fits_publish(tournament_id=quizzed.pk)
    assert quiz._population_key(quizzed) != key
    assert cache.get(quiz._population_key(quizzed)).taste_scale != -1.0
    assert quiz.quiz_data(tournament=quizzed).population.taste_scale != -1.0


def test_a_tournament_without_replies_fits_no_personal_model_on_publish_or_on_a_page(
    study, groups, tournament, settings, monkeypatch
):
    # An imported battle log: votes, no conversations. Its quiz has nothing to judge, and fitting the
    # individual-level model on a log of millions of votes took minutes and gigabytes.
    settings.POPULUS_MIN_GROUP_RATERS = 5
    sample_fitted(study, tournament)
    assert cache.get(quiz._population_key(tournament)) is None

    def refused(*args, **kwargs):
        raise AssertionError("no personal model for a tournament without replies")

    monkeypatch.setattr(quiz.Population, "fit", refused)
    quiz._cache.clear()
    assert quiz.quiz_data(tournament=tournament) is None
    assert quiz.taste_spreads(tournament=tournament) is None


def test_its_style_switch_falls_back_to_the_quiz_as_voted_where_replies_never_differ_in_style(quizzed):
    # Every reply here reads the same, so no style feature varies and there is no style-controlled model.
    built = quiz.quiz_build(
        tournament=quizzed, groups=(OLDEST,), encoded="", item=None, answer=None, style_controlled=True
    )
    assert not built.style_controlled
    assert built.problems == (quiz.NO_STYLE_MODEL,)
    as_voted = quiz.quiz_build(tournament=quizzed, groups=(OLDEST,), encoded="", item=None, answer=None)
    assert built.rows == as_voted.rows


def test_a_new_board_brings_the_quiz_back_with_it(client, quizzed):
    # The form's htmx request swaps the results; the quiz (which starts from the profile's board) comes
    # along out of band.
    response = client.get(URL, {"w-overall": "10"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="personal-results")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="personal-quiz" hx-swap-oob="innerHTML"' in html
    assert "Sharpen it with your own judgments" in html


# --- One dimension the visitor cares about ------------------------------------------------------------


def answered_for(item, liked: str) -> str:
    """The verdict of someone who prefers `liked` and ties otherwise, relative to the battle's model A."""
    return "a" if item.model_a == liked else "b" if item.model_b == liked else "t"


def test_the_visitor_can_also_judge_one_dimension_and_only_that_board_moves_with_those_verdicts(quizzed):
    communication = quizzed.dimensions.get(slug="communication")
    start = quiz.quiz_build(
        tournament=quizzed, groups=(OLDEST,), encoded="", item=None, answer=None, dimension=communication
    )
    encoded = ""
    for _ in range(12):
        item = quiz.quiz_build(
            tournament=quizzed,
            groups=(OLDEST,),
            encoded=encoded,
            item=None,
            answer=None,
            dimension=communication,
        ).shown.item
        # Overall a tie every time; on Communication this visitor always prefers what Gamma Instruct wrote.
        encoded = quiz.quiz_build(
            tournament=quizzed,
            groups=(OLDEST,),
            encoded=encoded,
            item=item.code,
            answer="t",
            dimension=communication,
            dimension_answer=answered_for(item, "gamma-instruct"),
        ).encoded
    assert all(len(token) == quiz.CODE_CHARS + 2 for token in encoded.split("."))
    final = quiz.quiz_build(
        tournament=quizzed, groups=(OLDEST,), encoded=encoded, item=None, answer=None, dimension=communication
    )
    assert final.dimension_answered == 12
    gamma = {row.slug: row for row in final.dimension_rows}["gamma-instruct"]
    before = {row.slug: row for row in start.dimension_rows}["gamma-instruct"]
    # (Alpha Large wins nine in ten Communication battles, so a dozen answers lift Gamma, not to the top.)
    assert gamma.score > before.score
    # The overall board reads the overall verdicts only: the same as from the 13-character tokens.
    overall_only = ".".join(token[:-1] for token in encoded.split("."))
    plain = quiz.quiz_build(
        tournament=quizzed, groups=(OLDEST,), encoded=overall_only, item=None, answer=None
    )
    assert plain.rows == final.rows and plain.answered == 12 and not plain.dimension_rows


def test_older_addresses_still_work_and_an_unknown_dimension_gets_a_clear_problem(client, quizzed):
    page = client.get(URL, {"w-overall": "10"})
    item = page.context["quiz"].shown
    old_style = item.item.code + item.left_outcome  # 13 characters, as before dimensions
    page = client.get(URL, {"w-overall": "10", "quiz": old_style, "qdim": "communication"})
    assert page.context["quiz"].answered == 1
    assert page.context["quiz"].dimension_answered == 0
    assert page.context["quiz"].dimension.slug == "communication"
    assert b'data-testid="own-dimension-board"' in page.content
    unknown = client.get(URL, {"w-overall": "10", "quiz": old_style, "qdim": "overall"})
    assert unknown.context["quiz"].dimension is None
    assert "no dimension called" in unknown.context["quiz"].problems[0]
    assert unknown.context["quiz"].answered == 1


def test_a_dimension_verdict_goes_into_the_address_which_reproduces_both_boards(client, quizzed):
    page = client.get(URL, {"w-overall": "10", "qdim": "trust-safety"})
    shown = page.context["quiz"].shown
    answered = client.get(
        URL,
        {
            "w-overall": "10",
            "qdim": "trust-safety",
            "item": shown.item.code,
            "answer": shown.left_outcome,
            "danswer": shown.right_outcome,
        },
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="personal-quiz",
    )
    assert not answered.cookies
    pushed = parse_qs(urlsplit(answered["HX-Push-Url"]).query)
    assert pushed["quiz"] == [shown.item.code + shown.left_outcome + shown.right_outcome]
    assert pushed["qdim"] == ["trust-safety"]
    again = client.get(answered["HX-Push-Url"])
    assert again.context["quiz"].dimension_rows == answered.context["quiz"].dimension_rows
    assert again.context["quiz"].dimension_answered == 1
    assert again.context["quiz"].rows == answered.context["quiz"].rows
