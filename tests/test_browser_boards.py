"""The public boards in real Chromium: the group selector swaps the board and its charts in place and
puts the choice in the URL, the charts draw data, a small group shows "not enough raters", and nothing
is blocked by the content security policy."""

# ruff: noqa: F811 - the tests take the Chromium `page` fixture imported from tests.test_browser

import re
import struct
import zlib

import pytest
from playwright.sync_api import expect

from leaderboard.services import fits_publish
from tests.leaderboard.board_data import raters_in, votes_cast
from tests.test_browser import page  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Inline styles and scripts the policy would refuse. (htmx leaves an empty style="" on some swapped
# elements through the CSSOM, which the policy allows and which carries nothing.)
INLINE_CODE = """() => [...document.querySelectorAll('*')].filter(el => el.getAttribute('style')
    || [...el.attributes].some(a => a.name.startsWith('on'))
    || (el.tagName === 'SCRIPT' && !el.src) || el.tagName === 'STYLE')
    .map(el => el.outerHTML.slice(0, 300))"""


def png_colours(data: bytes) -> int:
    """Distinct colours in a PNG screenshot (8-bit RGB or RGBA, not interlaced), decoded with the
    standard library."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks, header = 8, [], None
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    width, height, depth, colour_type, _, _, interlace = header
    assert depth == 8 and colour_type in (2, 6) and interlace == 0
    channels = 3 if colour_type == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    previous = bytearray(stride)
    colours = set()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            up_left = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                estimate = left + up - up_left
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - up_left)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else up_left
                line[i] = (line[i] + predictor) & 0xFF
        colours.update(bytes(line[i : i + 3]) for i in range(0, stride, channels))
        previous = line
    return len(colours)


def assert_chart_drawn(page, test_id: str, *, min_marks: int) -> None:
    figure = page.get_by_test_id(test_id)
    expect(figure).to_be_visible()
    assert figure.locator("svg .mark").count() >= min_marks
    box = figure.locator("svg").bounding_box()
    assert box["width"] > 200 and box["height"] > 60
    # A blank or single-colour rectangle has a handful of colours; a drawn chart has many.
    assert png_colours(figure.locator("svg").screenshot()) > 20, f"{test_id} looks blank"


@pytest.fixture
def fitted_boards(tournament, study, groups):
    """US age groups of 10, 9 and 12 raters (the 10 hides as cover for the 9), fitted twice so the rank
    history has two points."""
    for slug, count in (("us-age-18-34", 10), ("us-age-35-54", 9), ("us-age-55-plus", 12)):
        votes_cast(tournament, raters_in(study, slug, count=count), seed=count)
        if count == 10:
            fits_publish(tournament_id=tournament.pk)
    fits_publish(tournament_id=tournament.pk)
    return tournament


def test_the_group_selector_swaps_the_board_and_its_charts_in_place(
    page, live_server, fitted_boards, tmp_path
):
    page.goto(f"{live_server.url}/leaderboard/")
    expect(page.get_by_test_id("board")).to_be_visible()
    assert_chart_drawn(page, "chart-intervals", min_marks=6)
    assert_chart_drawn(page, "chart-win-rates", min_marks=6)
    assert_chart_drawn(page, "chart-history", min_marks=3)
    assert_chart_drawn(page, "chart-group-ranks", min_marks=3)
    page.screenshot(path=tmp_path / "pooled.png", full_page=True)
    assert page.evaluate(INLINE_CODE) == []

    requests = []
    page.on("request", lambda request: requests.append(request))
    page.get_by_label("Raters").select_option("us-age-55-plus")
    expect(page).to_have_url(re.compile(r"group=us-age-55-plus"))
    expect(page.get_by_test_id("board-caption")).to_contain_text("55+")
    expect(page.get_by_test_id("board-caption")).to_contain_text("12 raters")
    assert any(r.headers.get("hx-request") == "true" for r in requests)  # swapped in place, not reloaded
    assert all(r.url.startswith(live_server.url) for r in requests)
    assert_chart_drawn(page, "chart-intervals", min_marks=6)
    assert_chart_drawn(page, "chart-battles", min_marks=6)
    page.screenshot(path=tmp_path / "older.png", full_page=True)

    page.get_by_label("Raters").select_option("us-age-35-54")
    expect(page.get_by_test_id("suppressed")).to_contain_text("Not enough raters yet")
    expect(page).to_have_url(re.compile(r"group=us-age-35-54"))
    expect(page.get_by_test_id("board")).to_have_count(0)
    expect(page.get_by_test_id("chart-intervals")).to_have_count(0)
    expect(page.get_by_test_id("chart-group-ranks")).to_contain_text("not enough raters")

    page.go_back()  # the URL history holds each choice
    expect(page.get_by_test_id("board-caption")).to_contain_text("55+")
    assert page.evaluate(INLINE_CODE) == []
    assert page.console_errors == []


def test_model_and_methodology_pages_render_their_charts(page, live_server, fitted_boards, tmp_path):
    page.goto(f"{live_server.url}/leaderboard/")
    page.get_by_test_id("board").get_by_role("link").first.click()
    expect(page.get_by_test_id("head-to-head")).to_be_visible()
    assert_chart_drawn(page, "chart-model-groups", min_marks=4)
    page.get_by_role("navigation", name="Dimensions").get_by_role("link", name="Overall").click()
    expect(page).to_have_url(re.compile(r"dimension=overall"))
    page.screenshot(path=tmp_path / "model.png", full_page=True)
    page.get_by_role("link", name="Methodology").first.click()
    expect(page.get_by_test_id("raters-per-group")).to_contain_text("fewer than 10")
    page.screenshot(path=tmp_path / "methodology.png", full_page=True)
    assert page.evaluate(INLINE_CODE) == []
    assert page.console_errors == []
