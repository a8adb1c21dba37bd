"""Talking to language models. Plain Python, no Django: the site, tests and scripts share it.

`complete(config, messages)` returns the model's reply or raises `ProviderError`. Two kinds of provider:

- "openai": any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp's server,
  TGI, OpenRouter, ...), over real HTTP.
- "demo": the built-in offline demo models in `demo_models`, for the embedded default and the demo.

Reliability rules for "openai" (one place for all of them, `_complete_openai_compatible`):

- Each attempt has one deadline of `timeout_seconds` in all (connecting, waiting, reading), so a reply
  that trickles in forever still ends, as "timeout".
- At most MAX_ATTEMPTS attempts. Retried: 429 rate limits (after Retry-After, at most 60 s, else the
  backoff), 500/502/503/504/529 and connection failures (after an exponential backoff: 1 s, 2 s, ...).
  Never retried: timeouts (the total time would balloon), quota errors, bad output, configuration errors.
- With a `limiter` (tournaments.limits.ModelLimiter), every attempt first takes one of the model's
  concurrency slots and counts as one request against its rate limit; the slot is given back before any
  pause between attempts, so a model backing off does not hold slots.
"""

import email.utils
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from tournaments import demo_models


class Limiter(Protocol):
    """What `complete` needs of a limiter: `tournaments.limits.ModelLimiter` is the one the site uses (it
    imports this module for its errors, so this module names only the shape)."""

    def acquire(
        self,
        model_key: str,
        *,
        max_concurrency: int,
        requests_per_minute: int,
        wait_seconds: float,
        lease_seconds: float,
        window_seconds: float = 60,
    ) -> AbstractContextManager: ...


CONNECT_TIMEOUT_SECONDS = 10.0
# Replies longer than this are refused rather than stored and rendered. For a non-streamed reply it caps
# the body; for a streamed one it caps the reply text, and MAX_STREAM_BYTES caps what is read in all
# (each streamed chunk carries a hundred bytes or more of JSON around a few characters of text).
MAX_RESPONSE_BYTES = 1_000_000
MAX_STREAM_BYTES = 20 * MAX_RESPONSE_BYTES
# How much of an error response is read to classify it.
ERROR_BODY_BYTES = 64_000

MAX_ATTEMPTS = 3
BACKOFF_BASE_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 8.0
MAX_RETRY_AFTER_SECONDS = 60.0
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
# A limiter lease outlives the attempt that holds it by this much; a worker killed mid-attempt frees its
# slot after timeout_seconds plus this.
LEASE_MARGIN_SECONDS = 10.0

# ProviderError kinds: what the caller should do about the failure.
TRANSIENT = "transient"  # try again later; the model stays in matchmaking
QUOTA = "quota"  # the account is out of quota or money: take the model out of matchmaking
BAD_OUTPUT = "bad_output"  # the model answered, but with nothing usable
CONFIG = "config"  # the model's configuration is wrong (key, URL, model name): fix it
KINDS = frozenset({TRANSIENT, QUOTA, BAD_OUTPUT, CONFIG})


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system", "user" or "assistant"
    content: str


@dataclass(frozen=True)
class ProviderConfig:
    provider: str
    base_url: str = ""
    api_model: str = ""
    api_key: str = ""
    system_prompt: str = ""
    temperature: float = 0.7
    max_tokens: int = 1024
    timeout_seconds: float = 120.0  # the whole of one attempt, reading included
    demo_style: str = ""
    stream: bool = True  # ask for a server-sent event stream
    # Local limits, applied only when complete() is given a limiter. Limits are shared by every config
    # with the same model_key ("" means base_url and api_model). 0 or less turns a limit off.
    model_key: str = ""
    max_concurrency: int = 4
    requests_per_minute: int = 60  # requests allowed per rate_window_seconds (attempts, not replies)
    rate_window_seconds: float = 60.0
    limit_wait_seconds: float = 30.0  # how long an attempt may wait for a slot before "local_rate_limit"


class ProviderError(Exception):
    """The model produced no usable reply.

    `code` is a short machine-readable reason for staff ("http_503", "timeout", "truncated", ...); `kind`
    says what to do about it (TRANSIENT, QUOTA, BAD_OUTPUT or CONFIG). Without a `kind`, it follows from
    the code (`kind_for_code`), so `ProviderError("missing_api_key", "...")` is a "config" error.
    `retry_after` is the wait in seconds a provider asked for (Retry-After), if any; `attempts` is how
    many requests were made before giving up.
    """

    def __init__(self, code: str, detail: str = "", kind: str | None = None):
        kind = kind or kind_for_code(code)
        if kind not in KINDS:
            raise ValueError(f"Unknown ProviderError kind: {kind!r}")
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail
        self.kind = kind
        self.retry_after: float | None = None
        self.attempts = 1

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.code, self.detail, self.kind), self.__dict__)


_KIND_BY_CODE = {
    "timeout": TRANSIENT,
    "connection": TRANSIENT,
    "local_rate_limit": TRANSIENT,
    "limiter_unavailable": TRANSIENT,
    "stream_error": TRANSIENT,
    "malformed_response": BAD_OUTPUT,
    "empty_reply": BAD_OUTPUT,
    "truncated": BAD_OUTPUT,
    "too_large": BAD_OUTPUT,
    "unknown_provider": CONFIG,
    "missing_api_key": CONFIG,
}


def kind_for_code(code: str) -> str:
    """The usual kind of an error code: HTTP 429 and 5xx are transient, other HTTP errors are config
    errors (a quota error, also an HTTP error, is given its kind explicitly), unknown codes transient."""
    if code in _KIND_BY_CODE:
        return _KIND_BY_CODE[code]
    status = code.removeprefix("http_")
    if code.startswith("http_") and status.isdigit():
        return TRANSIENT if int(status) == 429 or int(status) >= 500 else CONFIG
    return TRANSIENT


def complete(
    config: ProviderConfig,
    messages: list[ChatMessage],
    *,
    limiter: Limiter | None = None,
    sleep: Callable[[float], object] = time.sleep,
    clock: Callable[[], float] = time.time,
) -> str:
    """The model's reply to the conversation, or ProviderError.

    `limiter` applies the config's local limits (none without it). `sleep` pauses between attempts and
    `clock` is the wall clock used to read a Retry-After date; both are there for tests. Deadlines use
    time.monotonic and real sockets, and cannot be replaced.
    """
    if config.provider == "demo":
        return demo_models.reply(config.demo_style, [(m.role, m.content) for m in messages])
    if config.provider == "openai":
        return _complete_openai_compatible(config, messages, limiter=limiter, sleep=sleep, clock=clock)
    raise ProviderError("unknown_provider", config.provider, kind=CONFIG)


def _complete_openai_compatible(
    config: ProviderConfig,
    messages: list[ChatMessage],
    *,
    limiter: Limiter | None,
    sleep: Callable[[float], object],
    clock: Callable[[], float],
) -> str:
    conversation = [{"role": m.role, "content": m.content} for m in messages]
    if config.system_prompt:
        conversation.insert(0, {"role": "system", "content": config.system_prompt})
    body: dict[str, Any] = {
        "model": config.api_model,
        "messages": conversation,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
    }
    if config.stream:
        body["stream"] = True
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            if limiter is None:
                return _attempt(config, body, clock)
            with limiter.acquire(
                config.model_key or f"{config.base_url.rstrip('/')}|{config.api_model}",
                max_concurrency=config.max_concurrency,
                requests_per_minute=config.requests_per_minute,
                wait_seconds=config.limit_wait_seconds,
                lease_seconds=config.timeout_seconds + LEASE_MARGIN_SECONDS,
                window_seconds=config.rate_window_seconds,
            ):
                return _attempt(config, body, clock)
        except ProviderError as error:
            error.attempts = attempt
            if attempt == MAX_ATTEMPTS or not _is_retried(error):
                raise
            sleep(_pause_before_retry(error, attempt))
    raise AssertionError("unreachable")  # pragma: no cover


_RETRIED_CODES = frozenset({"connection", *(f"http_{status}" for status in RETRY_STATUSES)})


def _is_retried(error: ProviderError) -> bool:
    return error.kind == TRANSIENT and error.code in _RETRIED_CODES


def _pause_before_retry(error: ProviderError, attempt: int) -> float:
    if error.code == "http_429" and error.retry_after is not None:
        return min(error.retry_after, MAX_RETRY_AFTER_SECONDS)
    return min(BACKOFF_BASE_SECONDS * 2 ** (attempt - 1), BACKOFF_MAX_SECONDS)


# --- One attempt ------------------------------------------------------------------------------------------


def _attempt(config: ProviderConfig, body: dict[str, Any], clock: Callable[[], float]) -> str:
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    if config.stream:
        headers["Accept"] = "text/event-stream"
    # httpx's timeouts bound each operation; the deadline bounds their sum.
    timeout = httpx.Timeout(
        config.timeout_seconds, connect=min(CONNECT_TIMEOUT_SECONDS, config.timeout_seconds)
    )
    with _Deadline(config.timeout_seconds) as deadline:
        try:
            with (
                httpx.Client(timeout=timeout) as client,
                client.stream(
                    "POST",
                    config.base_url.rstrip("/") + "/chat/completions",
                    json=body,
                    headers=headers,
                    extensions={"trace": deadline.trace},
                ) as response,
            ):
                if response.status_code != 200:
                    error_body = _read_body(response, ERROR_BODY_BYTES, deadline, cut=True)
                    raise _http_error(response.status_code, error_body, response.headers, clock)
                if _is_event_stream(response, config.stream):
                    return _read_event_stream(response, deadline)
                return _reply_text(_read_body(response, MAX_RESPONSE_BYTES, deadline))
        except httpx.TimeoutException as exc:
            raise ProviderError("timeout", type(exc).__name__) from exc
        except httpx.HTTPError as exc:
            if deadline.is_over():
                raise deadline.error() from exc
            raise ProviderError("connection", type(exc).__name__) from exc


class _Deadline:
    """The time limit of one attempt.

    httpx only bounds each read, so a server sending a byte now and then could hold an attempt forever.
    A timer shuts the connection's socket down when the time is up, which wakes a read blocked on it; the
    socket comes from httpcore's "trace" hook as soon as it is connected.
    """

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._ends = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> "_Deadline":
        self._timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._timer.cancel()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if not event.endswith((".connect_tcp.complete", ".start_tls.complete")):
            return
        sock = info["return_value"].get_extra_info("socket")
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            expired = self._expired
        if expired:
            _shut_down(sock)

    def _expire(self) -> None:
        with self._lock:
            self._expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut_down(sock)

    def is_over(self) -> bool:
        return self._expired or time.monotonic() >= self._ends

    def error(self) -> ProviderError:
        return ProviderError("timeout", f"no complete reply within {self.seconds:g} s", kind=TRANSIENT)

    def check(self) -> None:
        if self.is_over():
            raise self.error()


def _shut_down(sock: socket.socket) -> None:
    with suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


def _read_body(response: httpx.Response, limit: int, deadline: _Deadline, *, cut: bool = False) -> bytes:
    """The (decoded) body, at most `limit` bytes: longer is "too_large", or cut to the limit if `cut`."""
    declared = response.headers.get("content-length", "")
    if not cut and declared.isdigit() and int(declared) > limit:
        raise ProviderError("too_large", f"{declared} bytes", kind=BAD_OUTPUT)
    received = bytearray()
    for chunk in response.iter_bytes():
        deadline.check()
        received += chunk
        if len(received) > limit:
            if cut:
                return bytes(received[:limit])
            raise ProviderError("too_large", f"over {limit} bytes", kind=BAD_OUTPUT)
    deadline.check()
    return bytes(received)


def _is_event_stream(response: httpx.Response, requested: bool) -> bool:
    content_type = response.headers.get("content-type", "").lower()
    if "text/event-stream" in content_type:
        return True
    if "json" in content_type:
        return False  # a server that ignored "stream": a plain completion
    return requested


# --- Errors -----------------------------------------------------------------------------------------------

_QUOTA_ERROR_CODES = frozenset(
    {"insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "insufficient_credits"}
)
_SPEND_LIMIT_WORDS = re.compile(
    r"billing|spend(ing)?[ _-]?(limit|cap)|budget|insufficient[ _-]?(credits?|funds|balance)"
    r"|out of credits|credit balance|payment required",
    re.IGNORECASE,
)
_REQUEST_ERROR_CODES = frozenset(
    {"context_length_exceeded", "string_above_max_length", "content_policy_violation", "content_filter"}
)
_REQUEST_ERROR_WORDS = re.compile(
    r"context[ _-]?(length|window)|maximum context|too many tokens|content[ _-]?(management[ _-]?)?policy"
    r"|content[ _-]?filter|safety system",
    re.IGNORECASE,
)
_RETRY_AFTER_SECONDS = re.compile(r"\d+(\.\d+)?")


def _http_error(
    status: int, body: bytes, headers: httpx.Headers, clock: Callable[[], float]
) -> ProviderError:
    detail = body[:200].decode("utf-8", errors="replace")
    if status == 402 or (status in (403, 429) and _is_quota_error(body)):
        return ProviderError(f"http_{status}", detail, kind=QUOTA)
    if status in (400, 413) and _is_about_this_request(body):
        # Too long a conversation, or a message the provider's filter refused: this request cannot be
        # answered, but the model is fine. As a config error, one rater could take a model out of play.
        return ProviderError(f"http_{status}", detail, kind=BAD_OUTPUT)
    error = ProviderError(f"http_{status}", detail)
    error.retry_after = _retry_after_seconds(headers.get("retry-after", ""), clock)
    return error


def _is_quota_error(body: bytes) -> bool:
    """Whether an error body says the account is out of quota or over a spend limit (not a rate limit)."""
    return _error_matches(body, _QUOTA_ERROR_CODES, _SPEND_LIMIT_WORDS)


def _is_about_this_request(body: bytes) -> bool:
    """Whether an error body blames this conversation (its length or content), not the configuration."""
    return _error_matches(body, _REQUEST_ERROR_CODES, _REQUEST_ERROR_WORDS)


def _error_matches(body: bytes, codes: frozenset[str], words: re.Pattern[str]) -> bool:
    try:
        payload = json.loads(body)
    except ValueError:
        return bool(words.search(body.decode("utf-8", errors="replace")))
    return _payload_matches(payload, codes, words)


def _payload_matches(payload: Any, codes: frozenset[str], words: re.Pattern[str]) -> bool:
    """Whether an error object (OpenAI's {"error": {...}}, a bare one, or a list of them) has one of the
    codes as its code, type or status, or a message with one of the words."""
    if isinstance(payload, list):  # some providers wrap the error object in a list
        return any(_payload_matches(item, codes, words) for item in payload)
    if not isinstance(payload, dict):
        return False
    error = payload.get("error", payload)
    if isinstance(error, str):
        return bool(words.search(error))
    if not isinstance(error, dict):
        return False
    named = {str(error.get(name, "")).lower() for name in ("code", "type", "status")}
    return bool(named & codes) or bool(words.search(str(error.get("message", ""))))


def _retry_after_seconds(value: str, clock: Callable[[], float]) -> float | None:
    """Retry-After in seconds from now: delta-seconds or an HTTP date. None if missing or unreadable."""
    value = value.strip()
    if _RETRY_AFTER_SECONDS.fullmatch(value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    seconds = when.timestamp() - clock()  # a date without a zone is taken as UTC, as HTTP dates are
    return max(0.0, seconds) if math.isfinite(seconds) else None


# --- Replies ----------------------------------------------------------------------------------------------


def _reply_text(body: bytes) -> str:
    """The text of a non-streamed chat completion."""
    try:
        choice = json.loads(body)["choices"][0]
        text = choice["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ProviderError("malformed_response", repr(body[:200]), kind=BAD_OUTPUT) from exc
    if not isinstance(text, str) or not text.strip():
        raise ProviderError("empty_reply", kind=BAD_OUTPUT)
    # A reply cut off by the token limit is incomplete and must never be voted on.
    if choice.get("finish_reason") == "length":
        raise ProviderError("truncated", "finish_reason=length", kind=BAD_OUTPUT)
    return text


def _read_event_stream(response: httpx.Response, deadline: _Deadline) -> str:
    """The text of a streamed chat completion: server-sent events of `choices[0].delta.content`."""
    reply = _StreamedReply()
    pending = b""
    received = 0
    try:
        for chunk in response.iter_bytes():
            deadline.check()
            received += len(chunk)
            if received > MAX_STREAM_BYTES:
                raise ProviderError("too_large", f"stream over {MAX_STREAM_BYTES} bytes", kind=BAD_OUTPUT)
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                reply.feed(line.removesuffix(b"\r"))
                if reply.done:
                    return reply.text()
            if len(pending) > MAX_RESPONSE_BYTES:
                raise ProviderError("too_large", "one stream line over the limit", kind=BAD_OUTPUT)
    except httpx.TimeoutException:
        raise
    except httpx.HTTPError as exc:
        if deadline.is_over():
            raise deadline.error() from exc
        # The connection broke mid-stream: whatever came is a partial reply and must not be used.
        raise ProviderError("truncated", f"stream cut off ({type(exc).__name__})", kind=BAD_OUTPUT) from exc
    deadline.check()  # the stream may have "ended" because the deadline shut the socket
    reply.feed(pending)
    reply.feed(b"")
    return reply.text()


class _StreamedReply:
    """Server-sent events in, reply text out. Fed one line at a time (without its line ending)."""

    def __init__(self) -> None:
        self._data: list[bytes] = []
        self._parts: list[str] = []
        self._size = 0
        self.finish_reason: str | None = None
        self.done = False  # "[DONE]" was received

    def feed(self, line: bytes) -> None:
        if not line:  # a blank line ends an event
            if self._data:
                data, self._data = b"\n".join(self._data), []
                self._event(data)
            return
        if line.startswith(b":"):  # a comment, e.g. a keep-alive
            return
        name, _, value = line.partition(b":")
        if name == b"data":
            self._data.append(value.removeprefix(b" "))

    def _event(self, data: bytes) -> None:
        if data.strip() == b"[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            raise ProviderError("malformed_response", repr(data[:200]), kind=BAD_OUTPUT) from exc
        if not isinstance(chunk, dict):
            raise ProviderError("malformed_response", repr(data[:200]), kind=BAD_OUTPUT)
        if "error" in chunk:  # a provider failing after the stream began
            kind = QUOTA if _payload_matches(chunk, _QUOTA_ERROR_CODES, _SPEND_LIMIT_WORDS) else TRANSIENT
            raise ProviderError("stream_error", repr(data[:200]), kind=kind)
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            raise ProviderError("malformed_response", repr(data[:200]), kind=BAD_OUTPUT)
        for choice in choices:  # none in a usage-only chunk
            if not isinstance(choice, dict) or not isinstance(choice.get("delta", {}), dict):
                raise ProviderError("malformed_response", repr(data[:200]), kind=BAD_OUTPUT)
            if choice.get("index", 0) != 0:
                continue
            content = (choice.get("delta") or {}).get("content")
            if content is not None:
                if not isinstance(content, str):
                    raise ProviderError("malformed_response", repr(data[:200]), kind=BAD_OUTPUT)
                self._parts.append(content)
                self._size += len(content.encode())
                if self._size > MAX_RESPONSE_BYTES:
                    raise ProviderError("too_large", f"over {MAX_RESPONSE_BYTES} bytes", kind=BAD_OUTPUT)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def text(self) -> str:
        # A reply cut off by the token limit or by the connection is incomplete and must never be voted on.
        if self.finish_reason == "length":
            raise ProviderError("truncated", "finish_reason=length", kind=BAD_OUTPUT)
        if self.finish_reason is None and not self.done:
            raise ProviderError("truncated", "stream ended without finish_reason or [DONE]", kind=BAD_OUTPUT)
        text = "".join(self._parts)
        if not text.strip():
            raise ProviderError("empty_reply", kind=BAD_OUTPUT)
        return text
