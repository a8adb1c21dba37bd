"""A rater's whole journey in real Chromium: study link → consent → screener → three turns → vote →
revealed names → the leaderboard showing the battle. Generation and ratings run in real workers."""

import os
import re

import pytest
from django.db import connections
from playwright.sync_api import expect, sync_playwright

from leaderboard.models import AppliedVote
from raters.models import Group
from raters.services import quota_set
from tests.conftest import CAST
from tests.helpers import TASKS
from tests.workers import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
PID = "60a1b2c3d4e5f60718293a4b"
# Chromium's own background traffic is refused on this closed network; these flags keep it quiet.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def page(monkeypatch):
    # Playwright's sync API runs an event loop in this thread; the ORM calls made by the test itself are
    # still synchronous and safe.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (the test command does).")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context()
        page = context.new_page()
        page.console_errors = []
        page.on(
            "console", lambda message: message.type == "error" and page.console_errors.append(message.text)
        )
        yield page
        context.close()
        browser.close()
        # While Playwright's loop runs, Django keeps this test's database connection apart from the
        # thread's usual one; close it here or it outlives the test database.
        connections.close_all()


ETHNICITY_QUESTION = "Which best describes your ethnicity?"
POLITICS_QUESTION = "Which political party do you feel closest to?"


def enter_and_screen(page, link: str, *, country: str, age: str, ethnicity: str, politics: str) -> None:
    """Open a study link, consent, and answer the screener as a rater would."""
    page.goto(link)
    expect(page.get_by_role("heading", name="Before you start")).to_be_visible()
    page.get_by_label("I have read this and agree").check()
    page.get_by_role("button", name="Continue").click()
    page.get_by_label(country).check()
    page.get_by_role("button", name="Next").click()
    page.get_by_label(age).check()
    page.get_by_role("group", name=ETHNICITY_QUESTION).get_by_label(ethnicity).check()
    page.get_by_role("group", name=POLITICS_QUESTION).get_by_label(politics).check()
    page.get_by_role("button", name="Continue").click()


def test_a_rater_goes_from_study_link_to_revealed_names_and_the_leaderboard(
    page, live_server, celery_workers, study, groups, settings
):
    settings.POPULUS_MIN_GROUP_RATERS = 1  # one rater's group board would otherwise be withheld
    link = f"{live_server.url}/s/{study.slug}/?PROLIFIC_PID={PID}&STUDY_ID={'c' * 24}&SESSION_ID={'d' * 24}"
    enter_and_screen(page, link, country="United Kingdom", age="55+", ethnicity="White", politics="Green")

    for turn in range(1, 4):
        box = page.get_by_label("Your message to both models")
        box.fill(TASKS[1][turn - 1])
        box.press("Enter")  # Enter sends
        expect(page.get_by_test_id("progress")).to_contain_text(f"Turn {turn} of at most", timeout=20_000)
        before_vote = page.content()
        for model in CAST:
            assert model["name"] not in before_vote and model["maker"] not in before_vote

    expect(page.get_by_test_id("progress")).to_contain_text("Voting is open")
    page.wait_for_timeout(4_000)  # reading the last replies: faster votes are struck as too fast
    for fieldset in page.locator("form.vote fieldset:not([data-testid=attention-check])").all():
        fieldset.get_by_label("Model A").check()
    check = page.get_by_test_id("attention-check")  # a rater's first battles always carry one
    check.get_by_label(check.locator("strong").inner_text(), exact=True).check()
    page.get_by_role("button", name="Submit vote").click()

    expect(page.get_by_role("heading", name=re.compile("who you were talking to"))).to_be_visible()
    expect(page.get_by_test_id("strike-warning")).to_have_count(0)
    model_a = page.get_by_test_id("model-a-name").inner_text()
    model_b = page.get_by_test_id("model-b-name").inner_text()
    assert {model_a, model_b} <= {m["name"] for m in CAST} and model_a != model_b

    wait_for(lambda: AppliedVote.objects.exists(), message="the ratings worker to apply the vote")
    page.get_by_role("link", name="See the leaderboard").click()
    page.get_by_label("Raters").select_option("uk-age-55-plus")
    expect(page).to_have_url(re.compile(r"group=uk-age-55-plus"))
    board = page.get_by_test_id("board")
    expect(board).to_contain_text("1 / 0 / 0")
    winner_row = board.locator("tr", has_text=model_a)
    expect(winner_row.get_by_test_id("battles")).to_have_text("1")
    # Nothing was blocked by the content security policy or failed in the page's scripts.
    assert page.console_errors == []


def test_a_rater_whose_quota_is_full_gets_the_quota_full_code(page, live_server, study, groups):
    study.quota_full_code = "FULL-123"
    study.save()
    quota_set(study=study, groups=[Group.objects.get(slug="uk-age-18-34")], target=0)
    enter_and_screen(
        page,
        f"{live_server.url}/s/{study.slug}/?PROLIFIC_PID={'f' * 24}",
        country="United Kingdom",
        age="18–34",  # noqa: RUF001
        ethnicity="Prefer not to say",
        politics="Prefer not to say",
    )
    expect(page.get_by_role("heading", name="This study is full for now")).to_be_visible()
    expect(page.get_by_test_id("panel-code")).to_have_text("FULL-123")
    assert page.console_errors == []


HOSTILE_MARKDOWN = """Here is **bold** advice and a table:

| tip | why |
| --- | --- |
| water | roots |

<script>alert("script")</script>
<img src=x onerror="alert('img')">
[click me](javascript:alert('link'))
<svg onload="alert('svg')"></svg>
<iframe src="https://evil.example/frame"></iframe>
<p style="background:url(https://evil.example/bg)">styled</p>
<div hx-get="/battle/next/" hx-trigger="load">htmx</div>
<a hx-on:click="alert('hx-on')" data-hx-get="/x">data</a>
![tracker](https://evil.example/pixel.png?q=secret)
Bidi \u202egnirts desrever\u202c and zero\u200bwidth text stays readable.
"""
HOSTILE_MESSAGE = '<script>alert("rater")</script> <img src=x onerror=alert(2)> [x](javascript:alert(3))'


def test_hostile_text_from_models_and_raters_stays_inert(
    page, live_server, celery_workers, study, groups, fake_llm
):
    from tests.fake_llm import Reply

    for model in CAST:
        fake_llm.script(model["api_model"], *[Reply(HOSTILE_MARKDOWN)] * 3)
    dialogs, requests = [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("request", lambda request: requests.append(request.url))

    enter_and_screen(
        page,
        f"{live_server.url}/s/{study.slug}/?PROLIFIC_PID={'a' * 24}",
        country="United States",
        age="35–54",  # noqa: RUF001
        ethnicity="Black",
        politics="Independent",
    )
    box = page.get_by_label("Your message to both models")
    box.fill(HOSTILE_MESSAGE)
    box.press("Enter")
    expect(page.get_by_test_id("progress")).to_contain_text("Turn 1 of at most", timeout=20_000)

    body = page.locator("#battle-body")
    expect(body.locator(".markdown table").first).to_be_visible()
    assert dialogs == []
    assert body.locator("script, iframe, img, svg, style, object, embed").count() == 0
    hostile_attributes = page.evaluate(
        """() => [...document.querySelectorAll('#battle-body *')].flatMap(el => [...el.attributes]
            .map(a => a.name).filter(n => n.startsWith('on') || n.startsWith('hx-on') || n === 'style'
                || (n.startsWith('hx-') || n.startsWith('data-hx'))
                    && el.parentElement.closest('[hx-disable]')))"""
    )
    assert hostile_attributes == []
    assert body.locator("a[href^='javascript:'], a[href^='http:']").count() == 0
    assert all(url.startswith(live_server.url) for url in requests), [u for u in requests if "evil" in u]
    text = body.inner_text()
    assert "bold" in text and "gnirts desrever" in text and "width text stays readable" in text
    assert '<script>alert("rater")</script>' in text  # the rater's own text, shown as text
    assert page.console_errors == []


def test_three_strikes_end_the_session_with_the_screen_out_code(
    page, live_server, celery_workers, study, groups, fake_llm
):
    study.screen_out_code = "SCREENED-3"
    study.save()
    enter_and_screen(
        page,
        f"{live_server.url}/s/{study.slug}/?PROLIFIC_PID={'b' * 24}",
        country="United Kingdom",
        age="35–54",  # noqa: RUF001
        ethnicity="Asian",
        politics="Labour",
    )
    box = page.get_by_label("Your message to both models")
    box.fill("How do I bake a sourdough loaf with a crisp crust at home?")
    box.press("Enter")
    expect(page.get_by_test_id("progress")).to_contain_text("Turn 1 of at most", timeout=20_000)
    battle_url = page.url

    box = page.get_by_label("Your message to both models")
    box.fill("lkjhgf asdfgh zxcvb")
    box.press("Enter")
    expect(page.locator("#errors")).to_contain_text("Warning 1 of 3")
    box.fill("asdfgh")
    box.press("Enter")
    expect(page.locator("#errors")).to_contain_text("Warning 2 of 3")
    box.fill("zxcvbn qwerty lkjhgf")
    box.press("Enter")

    expect(page.get_by_role("heading", name="Your session has ended")).to_be_visible()
    expect(page.get_by_test_id("panel-code")).to_have_text("SCREENED-3")
    page.goto(battle_url)
    expect(page.get_by_role("heading", name="Your session has ended")).to_be_visible()  # no way back to vote
    # The two warnings arrive as 422 responses, which the browser and htmx both log; nothing else may.
    assert [e for e in page.console_errors if "422" not in e] == []
