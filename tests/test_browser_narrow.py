"""At a phone's width (390 px) no page scrolls sideways and no table spills out of its card; and a whole
battle, polling included, runs without a single content-security-policy violation."""

# ruff: noqa: F811 - the tests take the Chromium `page` fixture imported from tests.test_browser

import pytest
from playwright.sync_api import expect

from tests.fake_llm import SlowDrip
from tests.helpers import TASKS
from tests.test_browser import enter_and_screen, page  # noqa: F401
from tests.test_browser_boards import fitted_boards  # noqa: F401
from tournaments.models import Battle

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}

# Elements wider than the viewport, or reaching past its right edge, that are not inside a box that
# scrolls sideways on purpose.
SPILLS = """() => {
  const width = document.documentElement.clientWidth;
  const scrolls = el => { for (let p = el.parentElement; p; p = p.parentElement) {
      const overflow = getComputedStyle(p).overflowX;
      if (overflow === 'auto' || overflow === 'scroll') return true; } return false; };
  return [...document.querySelectorAll('body *')]
    .filter(el => { const box = el.getBoundingClientRect();
      return box.width > 0 && (box.right > width + 1 || box.left < -1) && !scrolls(el); })
    .map(el => el.tagName.toLowerCase() + (el.className ? '.' + el.className : '')
         + (el.dataset.testid ? '[' + el.dataset.testid + ']' : ''));
}"""
SIDEWAYS = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"

# Every violation of the page's content security policy, from the moment the page starts.
WATCH_CSP = """(() => { window.cspViolations = [];
  document.addEventListener('securitypolicyviolation',
    e => window.cspViolations.push(`${e.violatedDirective} ${e.sourceFile || ''}:${e.lineNumber}`));
})()"""


def assert_fits(page) -> None:
    assert page.evaluate(SIDEWAYS) <= 0, "the page scrolls sideways"
    assert page.evaluate(SPILLS) == []


def test_the_leaderboard_model_and_methodology_pages_fit_a_phone(page, live_server, fitted_boards):
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/leaderboard/")
    expect(page.get_by_test_id("board")).to_be_visible()
    assert_fits(page)
    # The board keeps every column: the win/loss/tie and win-rate columns scroll inside the card.
    board = page.get_by_test_id("board")
    expect(board.locator("th", has_text="W / L / T")).to_have_count(1)
    for path in ("/leaderboard/models/alpha-large/", "/leaderboard/methodology/"):
        page.goto(live_server.url + path)
        assert_fits(page)
    assert page.console_errors == []


def test_a_battle_fits_a_phone_and_breaks_no_content_security_rule(
    page, live_server, study, groups, fake_llm, settings
):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.POPULUS_BACKGROUND_THREADS = 2  # generation in the live server's process, as in `make run`
    settings.REPLY_PARTIAL_WRITE_SECONDS = 0.05
    page.set_viewport_size(PHONE)
    page.add_init_script(WATCH_CSP)
    link = f"{live_server.url}/s/{study.slug}/?PROLIFIC_PID={'ab' * 12}&STUDY_ID={'c' * 24}"
    enter_and_screen(page, link, country="United Kingdom", age="55+", ethnicity="White", politics="Green")
    battle = Battle.objects.get(rater__study=study)
    for model in (battle.model_a, battle.model_b):
        fake_llm.script(model.api_model, SlowDrip("A reply that arrives word by word " * 6, 0.05))
    box = page.get_by_label("Your message to both models")
    box.fill(TASKS[2][0])
    box.press("Enter")
    expect(page.get_by_test_id("waiting")).to_be_visible()
    expect(page.get_by_test_id("progress")).to_contain_text("Turn 1 of at most", timeout=20_000)
    assert_fits(page)
    assert page.evaluate("() => window.cspViolations") == []
    assert page.console_errors == []
