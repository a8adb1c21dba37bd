"""Model replies as sanitised markdown. Pure: no Django import beyond SafeString.

A reply is untrusted text, so it goes through two independent layers:

1. markdown-it-py parses CommonMark (plus tables and strikethrough) with raw HTML *disabled*, so any
   HTML the model writes is shown as literal text, never passed through as markup.
2. nh3 (ammonia) cleans the resulting HTML against an explicit allow-list, so even a bug or a future
   option in the markdown step cannot let a script, an event handler, an htmx attribute, a style or an
   image through.

Only after both does the text get marked safe for templates.
"""

import re

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

# Everything a chat reply needs, and nothing that loads, runs or styles anything. No img: an image
# URL chosen by the model would make the rater's browser send a request (a tracking or exfiltration
# channel), and the CSP allows images from the site anyway.
ALLOWED_TAGS = frozenset(
    {"p", "br", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li"}
    | {"h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th", "td", "a"}
)
# No style, class, id, on*, hx-* or data-* anywhere. nh3 adds `rel` to every <a> itself.
ALLOWED_ATTRIBUTES = {"a": {"href"}, "ol": {"start"}}
# Table alignment as the old `align` attribute, only with these values: the CSP (style-src 'self')
# would block inline style attributes anyway.
ALIGNMENTS = {"left", "center", "right"}
ALLOWED_ATTRIBUTE_VALUES = {"th": {"align": ALIGNMENTS}, "td": {"align": ALIGNMENTS}}
URL_SCHEMES = frozenset({"https", "mailto"})
LINK_REL = "noopener noreferrer nofollow"

# Bidirectional embedding/override (U+202A to U+202E) and isolate (U+2066 to U+2069) controls reorder how
# the text around them is displayed, so a reply could show something other than what it says (the
# "Trojan Source" trick), e.g. a link text or a code line that reads differently from its content.
# They are invisible and never needed to read a reply, so they are removed; other characters stay.
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")

_cleaner = nh3.Cleaner(
    tags=set(ALLOWED_TAGS),
    # Elements whose *content* is dropped too, not just the tag: their text is code or styling.
    clean_content_tags={"script", "style"},
    attributes=ALLOWED_ATTRIBUTES,
    tag_attribute_values=ALLOWED_ATTRIBUTE_VALUES,
    url_schemes=set(URL_SCHEMES),
    # Relative links ("/battle/next/", "#x") would point into Populus itself; deny them.
    url_relative="deny",
    link_rel=LINK_REL,
    strip_comments=True,
)


def _normalise_tokens(state) -> None:
    """Turn markdown-it's output into what the allow-list expects, so nothing useful is stripped:
    strikethrough is emitted as <s> (we allow the semantic <del>), and table alignment as a style
    attribute (which the allow-list and the CSP both refuse) rather than `align`."""
    inline = [child for token in state.tokens for child in token.children or []]
    for token in state.tokens + inline:
        if token.type in ("s_open", "s_close"):
            token.tag = "del"
        elif token.type in ("th_open", "td_open") and token.attrs:
            style = str(token.attrs.pop("style", ""))
            if style.startswith("text-align:"):
                token.attrs["align"] = style.removeprefix("text-align:")


def _render_image_as_alt_text(self, tokens, idx, options, env) -> str:
    """A markdown image becomes its (escaped) alt text: readable, and no request to the image URL."""
    return escapeHtml(self.renderInlineAsText(tokens[idx].children or [], options, env))


# html=False: raw HTML in the markdown is escaped as text. breaks=True: a single newline is a line
# break, as in chat interfaces, so poems and addresses keep their lines.
_markdown = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(["table", "strikethrough"])
_markdown.core.ruler.push("populus_normalise", _normalise_tokens)
_markdown.add_render_rule("image", _render_image_as_alt_text)


def clean_html(html: str) -> str:
    """Sanitise an HTML fragment against the allow-list and remove bidi controls.

    The controls are removed after nh3, from its serialised output, so that ones written as character
    references (&#x202e;) are caught as well; they are never part of HTML syntax, so removing them
    cannot change the markup.
    """
    return BIDI_CONTROLS.sub("", _cleaner.clean(html))


def render_markdown(text: str) -> SafeString:
    """A model reply (untrusted markdown) as HTML that is safe to put in a page."""
    return mark_safe(clean_html(_markdown.render(text)))  # noqa: S308 - sanitised by clean_html
