"""A loopback OpenAI-compatible chat-completions server for tests.

Tests fake language models only at the network boundary: the code under test makes real HTTP requests to
this server, which answers like an OpenAI-compatible endpoint. Standard library only.

    with FakeLLM() as llm:
        config = ProviderConfig(provider="openai", base_url=llm.base_url, api_model="m")
        llm.script("m", Status(500), Reply("Second time lucky"))
        ...
        assert llm.requests[0]["json"]["model"] == "m"

By default every request gets a 200 reply "Reply from {model} to: {last user message}". `script(model, ...)`
queues behaviours for one model name, consumed one per request; once the queue is empty the default
reply comes back.

A request with `"stream": true` is answered as a server-sent event stream, as OpenAI does: a first chunk
with the role, one chunk per word of the text (`choices[0].delta.content`), a last chunk with the
`finish_reason`, then `data: [DONE]`, sent with chunked transfer encoding. Without the flag the answer is
one JSON chat completion. Every behaviour below works both ways unless it says otherwise.
"""

import itertools
import json
import re
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

COMPLETIONS_PATH = "/v1/chat/completions"


# --- Behaviours -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A normal 200 reply with this text."""

    text: str


@dataclass(frozen=True)
class Status:
    """An HTTP error. `body` is sent as JSON if it is a dict or a list, as plain text if a str; None means
    an OpenAI-style error object."""

    status: int
    body: dict[str, Any] | list[Any] | str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class QuotaError:
    """The provider's "out of money" answer: OpenAI's `insufficient_quota` error (a 429 by default)."""

    status: int = 429
    message: str = "You exceeded your current quota, please check your plan and billing details."


@dataclass(frozen=True)
class Delay:
    """Wait `seconds` before answering, then behave like `then` (the default reply if None).
    A long delay is a model that hangs without sending anything."""

    seconds: float
    then: "Behaviour | None" = None


@dataclass(frozen=True)
class Malformed:
    """A 200 reply whose body is not valid JSON; streamed, one event whose data is `body`, then the end of
    the stream without `[DONE]`."""

    body: str = '{"choices": [{"message": {"content": "cut off mid'


@dataclass(frozen=True)
class Truncated:
    """A 200 reply cut off by the token limit (finish_reason "length")."""

    text: str = "This reply stops in the middle of a"


@dataclass(frozen=True)
class EmptyContent:
    """A 200 reply whose message content is the empty string."""


@dataclass(frozen=True)
class CutOffStream:
    """The connection drops after `after_fraction` of the reply was sent.

    Streamed: the first chunks, then the connection closes with no finish_reason and no `[DONE]`. With
    `chunked` (the default) the chunked body is left unfinished, as when a proxy or the provider dies; with
    `chunked=False` the body is delimited by the connection closing, so the cut looks like a clean end.
    Not streamed: a Content-Length for the whole JSON body, then only part of it.
    """

    text: str = "This reply was going to be long, but the connection dropped before the end of it."
    after_fraction: float = 0.4
    chunked: bool = True


@dataclass(frozen=True)
class SlowDrip:
    """A reply that trickles in: headers at once, then one piece every `interval` seconds (one word per
    chunk when streamed; the JSON body in as many pieces as the text has words when not)."""

    text: str
    interval: float


@dataclass(frozen=True)
class Huge:
    """A 200 reply of `size_bytes` characters ("x" repeated), streamed in 16 KiB chunks."""

    size_bytes: int


@dataclass(frozen=True)
class Disconnect:
    """The connection closes before any response is sent."""


@dataclass(frozen=True)
class Unstreamed:
    """Answer like `then` (the default reply if None) as a plain JSON completion, even to a request that
    asked for a stream, as some OpenAI-compatible servers do."""

    then: "Behaviour | None" = None


Behaviour = (
    Reply
    | Status
    | QuotaError
    | Delay
    | Malformed
    | Truncated
    | EmptyContent
    | CutOffStream
    | SlowDrip
    | Huge
    | Disconnect
    | Unstreamed
)


def rate_limited(retry_after: int | str | None = 1) -> Status:
    """A 429 with a Retry-After header (seconds or an HTTP date; None for none), as providers send when
    rate limiting."""
    headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
    return Status(429, {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}, headers)


# --- What is written back ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Answer:
    """One HTTP response, written piece by piece.

    framing: "length" sends a Content-Length for all pieces (even those never sent), "chunked" uses chunked
    transfer encoding, "close" ends the body by closing the connection. `interval` is the pause between
    pieces; `send_only` stops after that many pieces and drops the connection, whatever the framing said.
    """

    status: int
    headers: dict[str, str]
    pieces: list[bytes]
    framing: Literal["length", "chunked", "close"] = "length"
    interval: float = 0.0
    send_only: int | None = None


_JSON_HEADERS = {"Content-Type": "application/json"}
_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
_HUGE_CHUNK_CHARS = 16_384


def _whole(status: int, payload: bytes, headers: dict[str, str] | None = None) -> _Answer:
    return _Answer(status, headers or _JSON_HEADERS, [payload])


# --- Server -----------------------------------------------------------------------------------------------


class FakeLLM:
    """An OpenAI-compatible chat-completions server on 127.0.0.1, on a free port, in a background thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._scripts: dict[str, deque[Behaviour]] = defaultdict(deque)
        self._ids = itertools.count(1)
        self._in_flight = 0
        self._max_in_flight = 0
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    # Lifecycle

    def start(self) -> "FakeLLM":
        if self._server is not None:
            raise RuntimeError("FakeLLM is already running")
        self._stopping.clear()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        host, port = self._server.server_address[:2]
        self.base_url = f"http://{host}:{port}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="FakeLLM", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()  # wakes any request sleeping in a Delay or a SlowDrip
        self._server.shutdown()
        self._server.server_close()  # joins the request threads
        assert self._thread is not None
        self._thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> "FakeLLM":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # Scripting and inspection

    def script(self, model: str, *behaviours: Behaviour) -> None:
        """Queue behaviours for requests naming `model`, one per request, in order."""
        with self._lock:
            self._scripts[model].extend(behaviours)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request received so far, oldest first: {"method", "path", "headers", "json", "received_at"}.
        Header names are lower-case; "json" is the parsed body, or None if it was not JSON; "received_at"
        is `time.monotonic()` when the request had been read."""
        with self._lock:
            return list(self._requests)

    @property
    def last_request(self) -> dict[str, Any]:
        with self._lock:
            return self._requests[-1]

    @property
    def max_in_flight(self) -> int:
        """The most completions requests this server was answering at the same moment."""
        with self._lock:
            return self._max_in_flight

    # Called from request threads

    def _record(self, request: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(request)

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _next_behaviour(self, model: str) -> Behaviour | None:
        with self._lock:
            queue = self._scripts.get(model)
            return queue.popleft() if queue else None

    def _respond(self, behaviour: Behaviour | None, body: dict[str, Any], stream: bool) -> _Answer | None:
        """The answer to one completions request, or None to drop the connection without one."""
        model = str(body.get("model", ""))
        if isinstance(behaviour, Delay):
            if self._stopping.wait(behaviour.seconds):
                return None
            return self._respond(behaviour.then, body, stream)
        if isinstance(behaviour, Unstreamed):
            return self._respond(behaviour.then, body, stream=False)
        if isinstance(behaviour, Disconnect):
            return None
        if isinstance(behaviour, QuotaError):
            error = {"code": "insufficient_quota", "type": "insufficient_quota", "message": behaviour.message}
            return self._respond(Status(behaviour.status, {"error": error}), body, stream)
        if isinstance(behaviour, Status):
            if isinstance(behaviour.body, str):
                headers = {"Content-Type": "text/plain", **behaviour.headers}
                return _whole(behaviour.status, _utf8(behaviour.body), headers)
            payload = behaviour.body or {
                "error": {"message": f"Fake error {behaviour.status}", "type": "fake"}
            }
            return _whole(behaviour.status, _json(payload), {**_JSON_HEADERS, **behaviour.headers})
        if isinstance(behaviour, Malformed):
            if stream:
                return _Answer(200, _SSE_HEADERS, [_event(behaviour.body)], framing="close")
            return _whole(200, _utf8(behaviour.body))
        if isinstance(behaviour, Truncated):
            return self._reply(model, _words(behaviour.text), "length", body, stream)
        if isinstance(behaviour, EmptyContent):
            return self._reply(model, [], "stop", body, stream)
        if isinstance(behaviour, Huge):
            text = "x" * behaviour.size_bytes
            pieces = [text[i : i + _HUGE_CHUNK_CHARS] for i in range(0, len(text), _HUGE_CHUNK_CHARS)]
            return self._reply(model, pieces, "stop", body, stream)
        if isinstance(behaviour, SlowDrip):
            answer = self._reply(model, _words(behaviour.text), "stop", body, stream)
            if not stream:
                answer = _Answer(200, _JSON_HEADERS, _split(answer.pieces[0], len(_words(behaviour.text))))
            return _Answer(answer.status, answer.headers, answer.pieces, answer.framing, behaviour.interval)
        if isinstance(behaviour, CutOffStream):
            return self._cut_off(model, behaviour, body, stream)
        text = behaviour.text if isinstance(behaviour, Reply) else _default_text(model, body)
        return self._reply(model, _words(text), "stop", body, stream)

    def _reply(
        self, model: str, pieces: list[str], finish_reason: str, body: dict[str, Any], stream: bool
    ) -> _Answer:
        """A 200 reply whose text is the pieces joined: one chunk per piece if streamed."""
        if not stream:
            return _whole(200, _json(self._completion(model, "".join(pieces), finish_reason, body)))
        return _Answer(200, _SSE_HEADERS, self._events(model, pieces, finish_reason), framing="chunked")

    def _cut_off(self, model: str, behaviour: CutOffStream, body: dict[str, Any], stream: bool) -> _Answer:
        pieces = _words(behaviour.text)
        if not stream:
            payload = _json(self._completion(model, behaviour.text, "stop", body))
            sent = int(len(payload) * behaviour.after_fraction)
            return _Answer(200, _JSON_HEADERS, [payload[:sent], payload[sent:]], send_only=1)
        events = self._events(model, pieces, "stop")
        # The role chunk, then the given fraction of the content chunks.
        sent = 1 + max(1, int(len(pieces) * behaviour.after_fraction))
        framing: Literal["chunked", "close"] = "chunked" if behaviour.chunked else "close"
        return _Answer(200, _SSE_HEADERS, events, framing=framing, send_only=sent)

    def _events(self, model: str, pieces: list[str], finish_reason: str) -> list[bytes]:
        """The server-sent events of a streamed reply: role, one chunk per piece, finish_reason, [DONE]."""
        chunk_id = f"chatcmpl-fake-{next(self._ids)}"
        created = int(time.time())

        def chunk(delta: dict[str, str], finish: str | None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            payload = {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [choice],
            }
            return _event(json.dumps(payload))

        return [
            chunk({"role": "assistant", "content": ""}, None),
            *(chunk({"content": piece}, None) for piece in pieces),
            chunk({}, finish_reason),
            _event("[DONE]"),
        ]

    def _completion(self, model: str, text: str, finish_reason: str, body: dict[str, Any]) -> dict[str, Any]:
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in _messages(body))
        completion_tokens = len(text.split())
        return {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _json(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def _utf8(text: str) -> bytes:
    return text.encode()


def _event(data: str) -> bytes:
    return b"data: " + data.encode() + b"\n\n"


def _words(text: str) -> list[str]:
    """The text in pieces of one word each, with the whitespace after it; joined, they give it back."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def _split(payload: bytes, count: int) -> list[bytes]:
    """`payload` in `count` (at least 2) nearly equal pieces."""
    count = max(2, min(count, len(payload)))
    size = -(-len(payload) // count)
    return [payload[i : i + size] for i in range(0, len(payload), size)]


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages")
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _last_user_message(body: dict[str, Any]) -> str:
    user_messages = [m.get("content", "") for m in _messages(body) if m.get("role") == "user"]
    return str(user_messages[-1]) if user_messages else "(no user message)"


def _default_text(model: str, body: dict[str, Any]) -> str:
    return f"Reply from {model} to: {_last_user_message(body)}"


class _Server(ThreadingHTTPServer):
    # Non-daemon request threads, so server_close() joins them and stop() leaves nothing behind.
    daemon_threads = False
    fake: FakeLLM

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (e.g. on a timeout) before the reply was written is expected in tests.
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    # HTTP/1.1 for chunked streams; every response says "Connection: close", so one request per connection.
    protocol_version = "HTTP/1.1"
    timeout = 10  # seconds a connection may sit idle, so a stuck client cannot block stop()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        fake = self.server.fake
        fake._record(
            {
                "method": "POST",
                "path": self.path,
                "headers": {name.lower(): value for name, value in self.headers.items()},
                "json": body,
                "received_at": time.monotonic(),
            }
        )
        if self.path != COMPLETIONS_PATH:
            self._not_found()
            return
        if not isinstance(body, dict):
            error = {"error": {"message": "Body is not a JSON object"}}
            self._send(_whole(400, _json(error)))
            return
        fake._enter()
        try:
            behaviour = fake._next_behaviour(str(body.get("model", "")))
            answer = fake._respond(behaviour, body, stream=body.get("stream") is True)
            if answer is None:
                self.close_connection = True
            else:
                self._send(answer)
        finally:
            fake._leave()

    def do_GET(self) -> None:
        self._not_found()

    def _not_found(self) -> None:
        self._send(_whole(404, _json({"error": {"message": f"Not found: {self.path}", "type": "fake"}})))

    def _send(self, answer: _Answer) -> None:
        self.close_connection = True
        pieces = answer.pieces if answer.send_only is None else answer.pieces[: answer.send_only]
        try:
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            if answer.framing == "length":
                self.send_header("Content-Length", str(sum(len(p) for p in answer.pieces)))
            elif answer.framing == "chunked":
                self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            for index, piece in enumerate(p for p in pieces if p):
                if index and answer.interval and self.server.fake._stopping.wait(answer.interval):
                    return
                if answer.framing == "chunked":
                    piece = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
                self.wfile.write(piece)
            if answer.framing == "chunked" and answer.send_only is None:
                self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped waiting

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet
