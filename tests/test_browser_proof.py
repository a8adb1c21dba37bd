"""The proof of effort in real Chromium: the open entry's consent page solves its challenge with
crypto.subtle while the rater reads, and the rater gets in without noticing; with JavaScript off the page
says it needs JavaScript."""

import re
import statistics

import pytest
from playwright.sync_api import expect

from raters.models import Rater
from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, page  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_open_entry_gets_in_with_the_browsers_proof(page, live_server, study):  # noqa: F811
    page.goto(f"{live_server.url}/rate/")
    expect(page.get_by_role("heading", name="Before you start")).to_be_visible()
    page.get_by_label("I have read this and agree").check()
    page.get_by_role("button", name="Continue").click()
    expect(page.get_by_role("heading", name="About you (1 of 2)")).to_be_visible()
    rater = Rater.objects.get()
    assert rater.source == Rater.Source.OPEN and len(rater.network_fingerprint) == 64
    assert page.console_errors == []


def test_the_proof_takes_well_under_a_second_at_the_default_difficulty(page, live_server, study):  # noqa: F811
    """Five fresh challenges at the default difficulty; the figures go to the report (-s shows them)."""
    times = []
    for _ in range(5):
        page.context.clear_cookies()
        page.goto(f"{live_server.url}/rate/")
        form = page.locator("form[data-proof-bits]")
        expect(form).to_have_attribute("data-proof-milliseconds", re.compile(r"^\d+$"))
        times.append(int(form.get_attribute("data-proof-milliseconds")))
    bits, median = study.proof_of_effort_bits, statistics.median(times)
    print(f"proof of effort at {bits} bits, ms: {times}, median {median}")
    assert median < 1000


def test_with_javascript_off_the_page_says_it_needs_javascript(live_server, study, monkeypatch):
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(java_script_enabled=False)
        page = context.new_page()
        page.goto(f"{live_server.url}/rate/")
        # Located by its test id: Playwright's text search skips whatever sits inside <noscript>.
        message = page.get_by_test_id("needs-javascript")
        expect(message).to_be_visible()
        expect(message).to_contain_text("This page needs JavaScript. Before you take part, your browser runs")
        expect(page.get_by_role("button", name="Continue")).to_be_disabled()
        context.close()
        browser.close()
