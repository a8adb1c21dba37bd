"""Reading participant ids from panel links, and keeping them only as keyed hashes.

Plain Python, no Django. Prolific sends `PROLIFIC_PID`, `STUDY_ID` and `SESSION_ID` (24-character hex
ids); other panels send a generic `pid`.
"""

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass

_PROLIFIC_ID = re.compile(r"[0-9a-fA-F]{24}")
_GENERIC_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class InvalidPanelLink(ValueError):
    """The link's ids are missing or malformed. The message is safe to show to the participant."""


@dataclass(frozen=True)
class PanelIds:
    participant: str
    session: str = ""


def parse_panel_ids(params: Mapping[str, str]) -> PanelIds:
    if "PROLIFIC_PID" in params:
        # STUDY_ID is checked for shape only: the link's path already names the study.
        _checked(params, "STUDY_ID", _PROLIFIC_ID, "24 letters and digits (0-9, a-f)", optional=True)
        return PanelIds(
            participant=_checked(params, "PROLIFIC_PID", _PROLIFIC_ID, "24 letters and digits (0-9, a-f)"),
            session=_checked(
                params, "SESSION_ID", _PROLIFIC_ID, "24 letters and digits (0-9, a-f)", optional=True
            ),
        )
    if "pid" in params:
        return PanelIds(
            participant=_checked(params, "pid", _GENERIC_ID, "1 to 64 letters, digits, '-' or '_'"),
            session=_checked(
                params, "session", _GENERIC_ID, "1 to 64 letters, digits, '-' or '_'", optional=True
            ),
        )
    raise InvalidPanelLink(
        "This study link is missing your participant id. Please go back to the panel and open the study "
        "link from there."
    )


def _checked(
    params: Mapping[str, str], name: str, pattern: re.Pattern, shape: str, optional: bool = False
) -> str:
    value = params.get(name)
    if value is None and optional:
        return ""
    if value is None or not pattern.fullmatch(value):
        raise InvalidPanelLink(
            f"The {name} in this link is not valid: it should be {shape}. Please go back to the panel and "
            "open the study link from there, without editing it."
        )
    return value


def keyed_hash(key: str, value: str) -> str:
    """HMAC-SHA256 of a panel id, so ids can be matched without being stored."""
    return hmac.new(key.encode(), value.encode(), hashlib.sha256).hexdigest()
