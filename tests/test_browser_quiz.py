"""The judging quiz in real Chromium: ten answers (keys and clicks) change the visitor's own board, the
address alone brings the same board back, and nothing is blocked by the content security policy."""

import re

import pytest
from playwright.sync_api import expect

from leaderboard.models import QuizContribution
from leaderboard.quiz import QUIZ_LENGTH
from tests.leaderboard.test_personal import sample_fitted
from tests.leaderboard.test_quiz import conversations_written
from tests.test_browser import page  # noqa: F401 - the shared Chromium fixture
from tournaments.models import Battle

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def quiz_url(live_server, study, groups, tournament, settings) -> str:
    """The personal page of a fitted tournament whose battles have their conversations: the quiz shows."""
    settings.POPULUS_MIN_GROUP_RATERS = 5
    sample_fitted(study, tournament)
    conversations_written(Battle.objects.filter(tournament=tournament))
    return f"{live_server.url}/leaderboard/personal/?w-overall=10"


def own_board(page):  # noqa: F811
    return page.get_by_test_id("own-board").locator("tbody")


def test_ten_answers_change_the_own_board_and_the_address_reproduces_it(
    page,  # noqa: F811
    quiz_url,
):
    page.goto(quiz_url)
    expect(page.get_by_text("Sharpen it with your own judgments")).to_be_visible()
    before = own_board(page).inner_text()
    prompts = []
    for answered in range(1, 11):
        prompt = page.get_by_test_id("quiz-prompt").first.inner_text()
        prompts.append(prompt)
        if answered % 2:
            page.keyboard.press("a")  # the left reply, by keyboard
        else:
            page.get_by_role("button", name="B is better").click()
        expect(page.get_by_test_id("quiz-count")).to_have_text(f"{answered} answered")
        earlier = answered - 1
        expect(page).to_have_url(re.compile(rf"quiz=(\w{{12}}[abt]\.){{{earlier}}}\w{{12}}[abt]($|&)"))
    assert len(set(prompts)) == 10  # never the same battle twice
    expect(page.get_by_test_id("quiz-progress")).to_have_attribute("value", str(min(10, QUIZ_LENGTH)))
    after = own_board(page).inner_text()
    assert after != before
    expect(page.get_by_test_id("quiz-closest")).to_be_visible()

    # The address alone brings the same board back.
    address = page.url
    page.goto(address)
    expect(page.get_by_test_id("quiz-count")).to_have_text("10 answered")
    assert own_board(page).inner_text() == after
    assert page.console_errors == []


def test_a_key_pressed_before_htmx_settles_the_new_battle_still_answers_in_place(
    page,  # noqa: F811
    quiz_url,
):
    # htmx wires up swapped-in content only when the swap settles (20 ms later; longer on a busy
    # machine). A key pressed before that must not submit the new form natively, a full page load to its
    # raw address; a slow settle makes the window wide enough to hit every time.
    page.goto(quiz_url)
    page.evaluate("htmx.config.defaultSettleDelay = 2000")
    page.get_by_role("button", name="B is better").click()
    expect(page.get_by_test_id("quiz-count")).to_have_text("1 answered")
    page.keyboard.press("a")
    expect(page.get_by_test_id("quiz-count")).to_have_text("2 answered")
    expect(page).to_have_url(re.compile(r"quiz=\w{12}[ab]\.\w{12}[ab]($|&)"))
    assert "answer=" not in page.url
    assert page.evaluate("htmx.config.defaultSettleDelay") == 2000  # no full page load in between


def test_a_dimension_judged_alongside_moves_its_own_board_and_the_tick_adds_the_answers_once(
    page,  # noqa: F811
    quiz_url,
):
    page.goto(quiz_url)
    page.get_by_test_id("quiz-dimension").select_option("communication")
    expect(page).to_have_url(re.compile(r"qdim=communication"))
    dimension_board = page.get_by_test_id("own-dimension-board").locator("tbody")
    before = dimension_board.inner_text()
    for answered in range(1, 6):
        page.keyboard.press("3")  # Communication: the right reply, by keyboard
        page.keyboard.press("t")  # overall: a tie
        expect(page.get_by_test_id("quiz-count")).to_have_text(f"{answered} answered")
    expect(page).to_have_url(re.compile(r"quiz=(\w{12}t[ab]\.){4}\w{12}t[ab]($|&)"))
    expect(page.get_by_test_id("quiz-dimension-count")).to_have_text(re.compile("^5 of your answers"))
    assert dimension_board.inner_text() != before
    assert page.context.cookies() == []  # nothing stored, no cookie

    # Added to the open data only with the tick: without it, a clear error and nothing stored.
    page.get_by_role("button", name="Add them").click()
    expect(page.get_by_text("Nothing was stored")).to_be_visible()
    assert not QuizContribution.objects.exists()
    page.go_back()
    page.get_by_label("Add my answers to the open data").check()
    page.get_by_role("button", name="Add them").click()
    expect(page.get_by_test_id("contributed")).to_contain_text("10 verdicts added")
    assert QuizContribution.objects.get().answers.count() == 10
    assert page.context.cookies() == []
    page.get_by_role("link", name="Back to your board").click()
    expect(page.get_by_test_id("quiz-count")).to_have_text("5 answered")
    # The refused submission's 400 is the one error the console reports.
    assert [error for error in page.console_errors if "status of 400" not in error] == []
