"""Reading participant ids from panel links, and keeping them only as keyed hashes.

Plain Python, no Django. Each panel names its URL parameters its own way: Prolific sends `PROLIFIC_PID`,
`STUDY_ID` and `SESSION_ID` (24-character hex ids); the generic format is `pid`, `study` and `session`.
"""

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class PanelFormat:
    participant_param: str
    study_param: str
    session_param: str
    id_pattern: re.Pattern
    id_shape: str  # how a valid id looks, in words for the participant


PANEL_FORMATS = {
    "prolific": PanelFormat(
        "PROLIFIC_PID",
        "STUDY_ID",
        "SESSION_ID",
        re.compile(r"[0-9a-fA-F]{24}"),
        "24 letters and digits (0-9, a-f)",
    ),
    "generic": PanelFormat(
        "pid", "study", "session", re.compile(r"[A-Za-z0-9_-]{1,64}"), "1 to 64 letters, digits, '-' or '_'"
    ),
}


class InvalidPanelLink(ValueError):
    """The link's ids are missing or malformed. The message is safe to show to the participant."""


@dataclass(frozen=True)
class PanelIds:
    participant: str
    study: str = ""
    session: str = ""


def parse_panel_ids(params: Mapping[str, str], panel: str = "prolific") -> PanelIds:
    panel_format = PANEL_FORMATS[panel]
    if panel_format.participant_param not in params:
        raise InvalidPanelLink(
            f"This study link is missing your participant id ({panel_format.participant_param}). "
            "Please go back to the panel and open the study link from there."
        )
    return PanelIds(
        participant=_checked(params, panel_format.participant_param, panel_format),
        study=_checked(params, panel_format.study_param, panel_format, optional=True),
        session=_checked(params, panel_format.session_param, panel_format, optional=True),
    )


def _checked(params: Mapping[str, str], name: str, panel_format: PanelFormat, optional: bool = False) -> str:
    value = params.get(name)
    if value is None and optional:
        return ""
    if value is None or not panel_format.id_pattern.fullmatch(value):
        raise InvalidPanelLink(
            f"The {name} in this link is not valid: it should be {panel_format.id_shape}. "
            "Please go back to the panel and open the study link from there, without editing it."
        )
    return value


def keyed_hash(key: str, value: str) -> str:
    """HMAC-SHA256 of a panel id, so ids can be matched without being stored."""
    return hmac.new(key.encode(), value.encode(), hashlib.sha256).hexdigest()
