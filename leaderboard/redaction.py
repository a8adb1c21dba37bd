"""Masking obvious personal data in published text (no Django).

Raters type what they like; a message with an email address, a phone number or a link carrying a token
(a password-reset or a private document link) must not go into the open data as typed. This masks them;
it is a safety net for the obvious, not a guarantee of anonymity (names and addresses in prose are not
detected; the data README says so).

Libraries, and why these: phone numbers are the hard part (national and international formats, spaces,
dots, brackets; a regex either misses them or masks prices and years), so they are found with
`phonenumbers`, the maintained Python port of Google's libphonenumber, which validates each candidate
against the numbering plan of its region. Links and email addresses are found with `urlextract`, which
knows the real top-level domains (so "v3.14" or "e.g." are not links) and finds links without a scheme.
Both are small, pure Python and need no network or model at run time. Presidio and scrubadub were
considered: Presidio needs a spaCy language model (hundreds of MB, downloaded at run time), scrubadub
pulls in scikit-learn and textblob and has had no release since 2023.
"""

import re
from urllib.parse import urlsplit

import phonenumbers
from urlextract import URLExtract

EMAIL_MASK = "[email]"
PHONE_MASK = "[phone]"
LINK_MASK = "[link removed]"
# Regions whose national phone formats are recognised besides international (+...) ones: those of the
# default sampling frame (the US and the UK).
PHONE_REGIONS = ("US", "GB")
# A path segment that looks like a key or token rather than a word: long, with letters and digits mixed.
TOKEN_SEGMENT = re.compile(r"(?=[^/]*\d)(?=[^/]*[A-Za-z])[A-Za-z0-9_\-.~%]{16,}")

_extractor = None


def _urls() -> URLExtract:
    global _extractor
    if _extractor is None:
        _extractor = URLExtract(extract_email=True)
    return _extractor


def text_redact(text: str) -> str:
    """`text` with email addresses, phone numbers and the private part of links carrying a token (query,
    fragment, credentials, or a token-like path segment) masked. Links without one are kept: a rater
    citing a public page is useful and harmless."""
    if not text:
        return text
    spans: list[tuple[int, int, str]] = []
    for found, (start, end) in _urls().find_urls(text, get_indices=True):
        if "@" in found and "/" not in found and ":" not in found:
            spans.append((start, end, EMAIL_MASK))
        else:
            masked = _link_masked(found)
            if masked != found:
                spans.append((start, end, masked))
    for region in PHONE_REGIONS:
        for match in phonenumbers.PhoneNumberMatcher(text, region):
            spans.append((match.start, match.end, PHONE_MASK))
    return _apply(text, spans)


def _link_masked(link: str) -> str:
    parts = urlsplit(link if "://" in link else "https://" + link)
    private = (
        parts.query or parts.fragment or parts.username or parts.password or TOKEN_SEGMENT.search(parts.path)
    )
    if not private:
        return link
    scheme = link.split("://", 1)[0] + "://" if "://" in link else ""
    return f"{scheme}{parts.hostname or ''}/{LINK_MASK}"


def _apply(text: str, spans: list[tuple[int, int, str]]) -> str:
    """Replace non-overlapping spans, the earliest (then the longest) winning where two overlap."""
    out, position = [], 0
    for start, end, mask in sorted(spans, key=lambda span: (span[0], -span[1])):
        if start < position:
            continue
        out += [text[position:start], mask]
        position = end
    out.append(text[position:])
    return "".join(out)
