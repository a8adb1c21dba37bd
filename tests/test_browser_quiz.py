"""The judging quiz in real Chromium: ten answers (keys and clicks) change the visitor's own board, the
address alone brings the same board back, and nothing is blocked by the content security policy."""

import re

import pytest
from playwright.sync_api import expect

from leaderboard.quiz import QUIZ_LENGTH
from tests.leaderboard.test_personal import sample_fitted
from tests.leaderboard.test_quiz import conversations_written
from tests.test_browser import page  # noqa: F401 - the shared Chromium fixture
from tournaments.models import Battle

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def own_board(page):  # noqa: F811
    return page.get_by_test_id("own-board").locator("tbody")


def test_ten_answers_change_the_own_board_and_the_address_reproduces_it(
    page,  # noqa: F811
    live_server,
    study,
    groups,
    tournament,
    settings,
):
    settings.POPULUS_MIN_GROUP_RATERS = 5
    sample_fitted(study, tournament)
    conversations_written(Battle.objects.filter(tournament=tournament))
    page.goto(f"{live_server.url}/leaderboard/personal/?w-overall=10")
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
