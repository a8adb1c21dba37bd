"""Issue 22, scenario "messages word for word": obvious personal data is masked in published text.

Pass criteria: emails, phone numbers (international, US and UK national formats) and links carrying a
token (query, fragment, credentials, token-like path) are masked; ordinary text, numbers, prices, years,
version numbers and plain public links are kept exactly.
"""

import pytest

from leaderboard.redaction import text_redact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to jane.doe+news@example.co.uk please", "write to [email] please"),
        ("Call me on +44 20 7946 0958 tonight", "Call me on [phone] tonight"),
        ("my cell is (415) 555-2671.", "my cell is [phone]."),
        ("ring 020 7946 0958 after six", "ring [phone] after six"),
        (
            "reset link: https://accounts.google.com/reset?token=abc123XYZ now",
            "reset link: https://accounts.google.com/[link removed] now",
        ),
        (
            "see docs.google.com/document/d/1AbC2dEf3GhI4jKl5MnO6pQr/edit",
            "see docs.google.com/[link removed]",
        ),
        ("https://bob:hunter2@example.com/x is mine", "https://example.com/[link removed] is mine"),
    ],
)
def test_it_masks_obvious_personal_data(text, expected):
    assert text_redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "What is 12.50 plus 3.14 in 2024? Python 3.11 e.g. works.",
        "Read https://en.wikipedia.org/wiki/Bradley-Terry_model first.",
        "How many people lived in the UK in 1999, about 59000000?",
        "",
        "Plain words with no data at all.",
    ],
)
def test_it_keeps_ordinary_text_and_public_links_exactly(text):
    assert text_redact(text) == text
