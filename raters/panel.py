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
    # Whether the panel treats ids that differ only in letter case as one id. Prolific's are hex numbers,
    # so `0A1B…` and `0a1b…` are the same participant; a generic panel's ids are taken as they come.
    case_insensitive: bool = False

    def normalised(self, value: str) -> str:
        """The id as the panel means it, so one participant hashes to one key however the link spells it."""
        return value.lower() if self.case_insensitive else value


PANEL_FORMATS = {
    "prolific": PanelFormat(
        "PROLIFIC_PID",
        "STUDY_ID",
        "SESSION_ID",
        re.compile(r"[0-9a-fA-F]{24}"),
        "24 letters and digits (0-9, a-f)",
        case_insensitive=True,
    ),
    "generic": PanelFormat(
        "pid", "study", "session", re.compile(r"[A-Za-z0-9_-]{1,64}"), "1 to 64 letters, digits, '-' or '_'"
    ),
}


class InvalidPanelLink(ValueError):
    """The link's ids are missing or malformed. The message is safe to show to the participant."""


@dataclass(frozen=True)
class PanelIds:
    """A link's ids, normalised by the panel's rules; `participant_as_typed` keeps the participant id as the
    link spelled it, to find raters recorded before ids were normalised (see `participant_keys`)."""

    participant: str
    study: str = ""
    session: str = ""
    participant_as_typed: str = ""


def parse_panel_ids(params: Mapping[str, str], panel: str = "prolific") -> PanelIds:
    panel_format = PANEL_FORMATS[panel]
    if panel_format.participant_param not in params:
        raise InvalidPanelLink(
            f"This study link is missing your participant id ({panel_format.participant_param}). "
            "Please go back to the panel and open the study link from there."
        )
    participant = _checked(params, panel_format.participant_param, panel_format)
    return PanelIds(
        participant=panel_format.normalised(participant),
        study=panel_format.normalised(
            _checked(params, panel_format.study_param, panel_format, optional=True)
        ),
        session=panel_format.normalised(
            _checked(params, panel_format.session_param, panel_format, optional=True)
        ),
        participant_as_typed=participant,
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


@dataclass(frozen=True)
class ParticipantKeys:
    """The keyed hash a participant is stored under, and the one a rater recorded before normalisation may
    be stored under.

    Only hashes are stored, so raters made before ids were normalised cannot be migrated: their hash is of
    the id as their link spelled it, and the id itself is gone. A participant is therefore looked up by the
    hash of the normalised id first, then by the hash of the id as typed (`legacy`, set only when the two
    differ). Panels send one spelling (Prolific sends lower case), so an earlier rater's link finds them
    again either way; new raters are always stored under the normalised hash, which is what makes two
    spellings one rater from now on.
    """

    current: str
    legacy: str | None = None

    @property
    def all(self) -> list[str]:
        return [self.current] if self.legacy is None else [self.current, self.legacy]


def participant_keys(key: str, *, normalised: str, as_typed: str) -> ParticipantKeys:
    current = keyed_hash(key, normalised)
    legacy = keyed_hash(key, as_typed) if as_typed and as_typed != normalised else None
    return ParticipantKeys(current=current, legacy=legacy)
