"""Reading external battle logs: Chatbot Arena's battle format and CSV with the same columns.

Plain Python, no Django. A log is one of:

- a JSON array of battle objects (``[{"model_a": ..., ...}, ...]``), parsed whole when the log is opened
  (the array is held in memory, like ``json.load``; use JSON lines for very large logs);
- JSON lines, one battle object per line, read one line at a time;
- CSV with a header row naming the same columns, read one record at a time.

A JSON log is an array when its first non-space character is ``[``, JSON lines otherwise. Each battle has
``model_a``, ``model_b`` and ``winner`` (``model_a``, ``model_b``, ``tie`` or ``tie (bothbad)``), and may
have ``judge`` (an opaque rater id), ``tstamp`` (unix seconds), ``anony`` (whether the models were hidden
from the judge until the vote) and ``question_id``. Other keys are ignored.

`BattleLog.rows` yields an `ArenaBattle` for each valid row and a `BadRow` (line number and reason) for
each invalid one, so one bad row never stops the rest. Problems with the file as a whole (unreadable,
malformed JSON array, CSV without the needed header) raise `UnreadableLog`.
"""

import codecs
import csv
import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "tie"}
REQUIRED_COLUMNS = ("model_a", "model_b", "winner")
# LLMModel.name's max_length: a longer name could not be stored.
MAX_MODEL_NAME_CHARS = 120

FORMAT_JSON_ARRAY = "json-array"
FORMAT_JSON_LINES = "json-lines"
FORMAT_CSV = "csv"
FORMAT_NAMES = {FORMAT_JSON_ARRAY: "JSON array", FORMAT_JSON_LINES: "JSON lines", FORMAT_CSV: "CSV"}

_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}
_WHITESPACE = re.compile(r"[ \t\n\r]*")


class UnreadableLog(Exception):
    """The log as a whole cannot be read. The message says why, fit to show to the person importing."""


class BadRowError(ValueError):
    """One row is invalid; the message is the reason."""


@dataclass(frozen=True)
class BadRow:
    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


class ArenaBattle(NamedTuple):
    """One valid row. A named tuple rather than a dataclass: an import makes millions of them, and a
    tuple is made several times faster."""

    line: int
    model_a: str
    model_b: str
    winner: str  # as in the log (lower-cased): model_a, model_b, tie or tie (bothbad)
    judge: str | None = None
    question_id: str | None = None
    tstamp: float | None = None
    anony: bool | None = None

    @property
    def outcome(self) -> str:
        """ "a", "b" or "tie", as a Populus vote records it."""
        return WINNERS[self.winner]

    @property
    def timestamp(self) -> datetime | None:
        return None if self.tstamp is None else datetime.fromtimestamp(self.tstamp, tz=UTC)

    @property
    def content_key(self) -> str:
        """A digest of what the row says about the battle, the same whichever format it came in and
        wherever it stands in the log. Two rows saying the same thing are one battle."""
        canonical = _CANONICAL_JSON.encode(
            [self.model_a, self.model_b, self.winner, self.judge, self.question_id, self.tstamp]
        )
        return hashlib.sha256(canonical.encode()).hexdigest()


# What `json.dumps(..., ensure_ascii=False, separators=(",", ":"))` makes, without building an encoder
# per call (content keys are stored in public ids, so their text must never change).
_CANONICAL_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# The unix times `datetime.fromtimestamp` accepts (years 1 to 9999), checked as plain numbers.
_TSTAMP_MIN = -62_135_596_800.0
_TSTAMP_MAX = 253_402_300_799.0


def row_parse(values: Mapping[str, Any], *, line: int) -> ArenaBattle | BadRow:
    """Validate one row (a JSON object or a CSV record as a mapping of column to value)."""
    get = values.get
    try:
        model_a = _model_name(get("model_a"), "model_a")
        model_b = _model_name(get("model_b"), "model_b")
        if model_a == model_b:
            raise BadRowError(f"the same model on both sides ({model_a!r})")
        return ArenaBattle(
            line,
            model_a,
            model_b,
            _winner(get("winner")),
            _opaque_id(get("judge"), "judge"),
            _opaque_id(get("question_id"), "question_id"),
            _tstamp(get("tstamp")),
            _anony(get("anony")),
        )
    except BadRowError as error:
        return BadRow(line=line, reason=str(error))


# Each check below takes the common case (a clean value of the expected type) first: they run on
# every row of logs of millions.


def _model_name(value: Any, field: str) -> str:
    if value.__class__ is str:
        name = value.strip()
        if name and len(name) <= MAX_MODEL_NAME_CHARS:
            return name
    if value is None:
        raise BadRowError(f"missing field {field!r}")
    if not isinstance(value, str):
        raise BadRowError(f"{field!r} is not a model name (got {type(value).__name__})")
    name = value.strip()
    if not name:
        raise BadRowError(f"empty model name in {field!r}")
    if len(name) > MAX_MODEL_NAME_CHARS:
        raise BadRowError(f"model name in {field!r} is longer than {MAX_MODEL_NAME_CHARS} characters")
    return name


def _winner(value: Any) -> str:
    if value.__class__ is str:
        winner = value.strip().lower()
        if winner in WINNERS:
            return winner
    if value is None or (isinstance(value, str) and not value.strip()):
        raise BadRowError("missing field 'winner'")
    raise BadRowError(f"unknown winner value {value!r} (expected model_a, model_b, tie or tie (bothbad))")


def _opaque_id(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise BadRowError(f"{field!r} is not a string (got {type(value).__name__})")
    return str(value).strip() or None


def _tstamp(value: Any) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        seconds = math.nan
    # A comparison with NaN is false: not-a-number and infinities fail here too.
    if _TSTAMP_MIN <= seconds <= _TSTAMP_MAX:
        return seconds
    raise BadRowError(f"tstamp {value!r} is not a unix time in seconds")


def _anony(value: Any) -> bool | None:
    if value is None or value is True or value is False:
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if not text:
            return None
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise BadRowError(f"anony {value!r} is not true or false")


def detect_format(path: Path, requested: str | None = None) -> str:
    """`requested` is "csv", "arena" or None (CSV when the file name ends in .csv, Arena otherwise).
    Arena logs are a JSON array when their first non-space character is "[", JSON lines otherwise."""
    if requested == FORMAT_CSV or (requested is None and path.suffix.lower() == ".csv"):
        return FORMAT_CSV
    try:
        with path.open("rb") as file:
            head = b""
            while chunk := file.read(4096):
                head = (head + chunk).removeprefix(codecs.BOM_UTF8).lstrip()
                if head:
                    break
    except OSError as error:
        raise UnreadableLog(f"Cannot read {path}: {error.strerror or error}.") from None
    return FORMAT_JSON_ARRAY if head.startswith(b"[") else FORMAT_JSON_LINES


class BattleLog:
    """An open battle log. Open with `BattleLog.open` (which checks what can be checked up front: the
    file can be read, a JSON array parses, a CSV has its header), then iterate `rows()` once."""

    def __init__(self, path: Path, file: BinaryIO, log_format: str):
        self.path = path
        self.format = log_format
        self._file = file
        self._size = max(path.stat().st_size, 1)
        self._array: list[tuple[int, Any]] | None = None
        self._array_done = 0
        self._undecodable: set[int] = set()
        self._csv_header: list[str] = []

    @classmethod
    def open(cls, path: str | Path, requested_format: str | None = None) -> "BattleLog":
        path = Path(path)
        log_format = detect_format(path, requested_format)
        try:
            file = path.open("rb")
        except OSError as error:
            raise UnreadableLog(f"Cannot read {path}: {error.strerror or error}.") from None
        log = cls(path, file, log_format)
        try:
            if log_format == FORMAT_JSON_ARRAY:
                log._array = _json_array_items(file.read(), path)
            elif log_format == FORMAT_CSV:
                log._open_csv()
        except BaseException:
            file.close()
            raise
        return log

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "BattleLog":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def format_name(self) -> str:
        return FORMAT_NAMES[self.format]

    def fraction_read(self) -> float:
        """How far through the log reading has got, from 0 to 1 (approximate for CSV)."""
        if self._array is not None:
            return self._array_done / max(len(self._array), 1)
        try:
            return min(self._file.tell() / self._size, 1.0)
        except (OSError, ValueError):
            return 0.0

    def rows(self) -> Iterator[ArenaBattle | BadRow]:
        if self.format == FORMAT_JSON_ARRAY:
            return self._array_rows()
        if self.format == FORMAT_CSV:
            return self._csv_rows()
        return self._json_lines_rows()

    def _array_rows(self) -> Iterator[ArenaBattle | BadRow]:
        assert self._array is not None  # noqa: S101
        for index, (line, item) in enumerate(self._array):
            self._array_done = index + 1
            if isinstance(item, dict):
                yield row_parse(item, line=line)
            else:
                yield BadRow(line=line, reason=f"not a JSON object (got {_json_type(item)})")

    def _json_lines_rows(self) -> Iterator[ArenaBattle | BadRow]:
        loads = json.loads
        for line_number, raw in enumerate(self._file, start=1):
            if line_number == 1:
                raw = raw.removeprefix(codecs.BOM_UTF8)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                yield BadRow(line=line_number, reason="not UTF-8 text")
                continue
            try:
                item = loads(text)  # the line's own spaces and newline are JSON whitespace
            except json.JSONDecodeError:
                # Rare, so the work goes here: skip a blank line, else report the error as found in
                # the stripped line (columns counted from its first character).
                text = text.strip()
                if not text:
                    continue
                try:
                    item = loads(text)
                except json.JSONDecodeError as error:
                    reason = f"malformed JSON: {error.msg} (column {error.colno})"
                    yield BadRow(line=line_number, reason=reason)
                    continue
            if item.__class__ is dict:
                yield row_parse(item, line=line_number)
            else:
                yield BadRow(line=line_number, reason=f"not a JSON object (got {_json_type(item)})")

    def _open_csv(self) -> None:
        self._csv_reader = csv.reader(self._decoded_lines())
        try:
            header = next(self._csv_reader, None)
        except csv.Error as error:
            raise UnreadableLog(f"Cannot read the CSV header of {self.path}: {error}.") from None
        if self._undecodable:
            raise UnreadableLog(f"The CSV header of {self.path} is not UTF-8 text.")
        self._csv_header = [column.strip() for column in header or []]
        missing = [column for column in REQUIRED_COLUMNS if column not in self._csv_header]
        if missing:
            found = ", ".join(self._csv_header) or "nothing"
            raise UnreadableLog(
                f"{self.path} needs a CSV header row naming the columns model_a, model_b and winner "
                f"(missing {', '.join(missing)}; found {found})."
            )

    def _decoded_lines(self) -> Iterator[str]:
        """The file's lines as text, one at a time. A line that is not UTF-8 is passed on with
        replacement characters and its number noted, so its record is reported as a bad row."""
        for line_number, raw in enumerate(self._file, start=1):
            if line_number == 1:
                raw = raw.removeprefix(codecs.BOM_UTF8)
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                self._undecodable.add(line_number)
                yield raw.decode("utf-8", errors="replace")

    def _csv_rows(self) -> Iterator[ArenaBattle | BadRow]:
        reader, header = self._csv_reader, self._csv_header
        last_line = reader.line_num
        while True:
            try:
                record = next(reader, None)
            except csv.Error as error:
                raise UnreadableLog(
                    f"{self.path} is not valid CSV after line {last_line} ({error}); "
                    "the rows before it were read."
                ) from None
            if record is None:
                return
            line, last_line = last_line + 1, reader.line_num  # the record's first physical line
            if not record or not any(value.strip() for value in record):
                continue
            if self._undecodable:
                undecodable = any(line <= number <= last_line for number in self._undecodable)
                self._undecodable = {number for number in self._undecodable if number > last_line}
                if undecodable:
                    yield BadRow(line=line, reason="not UTF-8 text")
                    continue
            if len(record) > len(header):
                yield BadRow(line=line, reason=f"{len(record)} fields but the header names {len(header)}")
                continue
            yield row_parse(dict(zip(header, record, strict=False)), line=line)


def _json_array_items(data: bytes, path: Path) -> list[tuple[int, Any]]:
    """Parse a whole JSON array, keeping the line each element starts on."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise UnreadableLog(f"{path} is not UTF-8 text (byte {error.start}).") from None
    decoder = json.JSONDecoder()
    items: list[tuple[int, Any]] = []
    line, counted_to = 1, 0

    def skip_space(position: int) -> int:
        return _WHITESPACE.match(text, position).end()

    def fail(message: str, position: int):
        error = json.JSONDecodeError(message, text, position)
        raise UnreadableLog(
            f"{path} is not a valid JSON array: {error.msg} at line {error.lineno} column {error.colno}."
        ) from None

    position = skip_space(0)
    if not text.startswith("[", position):
        fail("Expecting '['", position)
    position = skip_space(position + 1)
    if text.startswith("]", position):
        position += 1
    else:
        while True:
            line += text.count("\n", counted_to, position)
            counted_to = position
            try:
                item, position = decoder.raw_decode(text, position)
            except json.JSONDecodeError as error:
                fail(error.msg, error.pos)
            items.append((line, item))
            position = skip_space(position)
            if text.startswith(",", position):
                position = skip_space(position + 1)
            elif text.startswith("]", position):
                position += 1
                break
            else:
                fail("Expecting ',' or ']'", position)
    if skip_space(position) != len(text):
        fail("Extra data after the array", skip_space(position))
    return items


def _json_type(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
