"""Reading participant ids from panel links, and keeping them only as keyed hashes.

Plain Python, no Django. Each panel names its URL parameters its own way: Prolific sends `PROLIFIC_PID`,
`STUDY_ID` and `SESSION_ID` (24-character hex ids); the generic format is `pid`, `study` and `session`.
"""

import csv
import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
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


# Reading a panel's export of submissions (Prolific's "Download demographic data" CSV, or any CSV with a
# participant id column and a status column), for reconciliation: only approved submissions count.
PARTICIPANT_COLUMNS = ("participant id", "participant_id", "prolific_pid")
STATUS_COLUMN = "status"
APPROVED = "approved"
# How many bad lines a summary names; the rest are counted.
BAD_LINES_SHOWN = 10


class InvalidPanelExport(ValueError):
    """The upload is not a panel export this code can read. The message is safe to show to staff."""


@dataclass(frozen=True)
class PanelExport:
    """What an export says: the approved participant ids (as the file spells them, one per participant
    after normalising), the lines whose row could not be read, and how many rows were not approved."""

    approved: list[str]
    bad_lines: list[int]
    bad_line_count: int
    not_approved: int


def panel_export_read(lines: Iterable[str], *, panel: str = "prolific") -> PanelExport:
    """Read an export line by line (never all at once), raising `InvalidPanelExport` when it is not a CSV
    with a participant id column and a status column. An approved row without a valid id is a bad line."""
    panel_format = PANEL_FORMATS[panel]
    reader = csv.reader(lines)
    try:
        header = next(reader, None)
        if not header:
            raise InvalidPanelExport("The file is empty: upload the panel's CSV export of submissions.")
        names = [name.strip().lstrip("\ufeff").casefold() for name in header]
        accepted = (*PARTICIPANT_COLUMNS, panel_format.participant_param.casefold())
        participant = next((names.index(name) for name in accepted if name in names), None)
        if participant is None:
            shown = ", ".join(f'"{name.strip()[:40]}"' for name in header[:8])
            raise InvalidPanelExport(
                "This file has no participant id column. A panel's CSV export of submissions has one named "
                f'"Participant id" (or "participant_id", "PROLIFIC_PID"); the first line here reads: {shown}.'
            )
        if STATUS_COLUMN not in names:
            raise InvalidPanelExport(
                'This file has no "Status" column, so approved submissions cannot be told from others: '
                "export the submissions with their status."
            )
        status = names.index(STATUS_COLUMN)
        seen, approved, bad_lines, bad_count, not_approved = set(), [], [], 0, 0
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) <= max(participant, status):
                row_status, value = "", ""
            else:
                row_status, value = row[status].strip().casefold(), row[participant].strip()
            if row_status and row_status != APPROVED:
                not_approved += 1
                continue
            if not row_status or not panel_format.id_pattern.fullmatch(value):
                bad_count += 1
                if len(bad_lines) < BAD_LINES_SHOWN:
                    bad_lines.append(reader.line_num)
                continue
            normalised = panel_format.normalised(value)
            if normalised not in seen:
                seen.add(normalised)
                approved.append(value)
    except UnicodeDecodeError:
        raise InvalidPanelExport(
            f"Line {reader.line_num + 1} is not text (UTF-8): this does not look like a CSV file. Upload the "
            "CSV the panel exports, not a spreadsheet or another file."
        ) from None
    except csv.Error as exc:
        raise InvalidPanelExport(f"Line {reader.line_num} cannot be read as CSV ({exc}).") from None
    return PanelExport(
        approved=approved, bad_lines=bad_lines, bad_line_count=bad_count, not_approved=not_approved
    )
