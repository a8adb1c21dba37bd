"""The personal leaderboard in real Chromium: sliders and the profile re-rank the table in place, the
address bar keeps the state, and nothing is blocked by the content security policy."""

import re

import pytest
from playwright.sync_api import expect

from tests.leaderboard.test_personal import OLDEST, sample_fitted
from tests.test_browser import page  # noqa: F401 - the shared Chromium fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def first_model(page):  # noqa: F811
    return page.get_by_test_id("personal-board").locator("tbody tr").first.get_by_test_id("model")


def test_sliders_and_profile_rerank_the_board_and_the_address_keeps_up(
    page,  # noqa: F811
    live_server,
    study,
    groups,
    tournament,
    settings,
    tmp_path,
):
    settings.POPULUS_MIN_GROUP_RATERS = 5
    sample_fitted(study, tournament)
    page.goto(f"{live_server.url}/leaderboard/personal/?w-communication=10")
    expect(first_model(page)).to_contain_text("Alpha Large")

    page.get_by_label("Communication style & presentation").fill("0")
    page.get_by_label("Trust, ethics & safety").fill("10")
    expect(page.locator("#w-trust-safety-value")).to_have_text("10")  # the slider's value, shown live
    expect(first_model(page)).to_contain_text("Gamma Instruct")
    expect(page).to_have_url(re.compile(r"w-communication=0&.*w-trust-safety=10"))

    page.get_by_label("Country").select_option("US")
    expect(page).to_have_url(re.compile(r"country=US"))
    page.get_by_label("Trust, ethics & safety").fill("0")
    page.get_by_label("Overall winner").fill("10")
    expect(first_model(page)).to_contain_text("Alpha Large")
    page.get_by_label("Age").select_option(OLDEST)
    expect(first_model(page)).to_contain_text("Beta Chat")
    expect(page).to_have_url(re.compile(rf"country=US&age={OLDEST}&.*w-overall=10"))
    expect(page.get_by_test_id("fit-report")).to_contain_text("for people like you")
    expect(page.get_by_test_id("personal-board").locator("svg.interval circle")).to_have_count(3)

    # The address alone brings the same board back.
    page.goto(page.url)
    expect(first_model(page)).to_contain_text("Beta Chat")
    expect(page.get_by_label("Age")).to_have_value(OLDEST)

    shot = page.screenshot(full_page=True, path=str(tmp_path / "personal.png"))
    assert len(shot) > 10_000
    assert page.console_errors == []
