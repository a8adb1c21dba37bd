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
"""

import itertools
import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COMPLETIONS_PATH = "/v1/chat/completions"


# --- Behaviours -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A normal 200 reply with this text."""

    text: str


@dataclass(frozen=True)
class Status:
    """An HTTP error. `body` is sent as JSON if it is a dict, as plain text if a str; None means an
    OpenAI-style error object."""

    status: int
    body: dict[str, Any] | str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Delay:
    """Wait `seconds` before answering, then behave like `then` (the default reply if None)."""

    seconds: float
    then: "Behaviour | None" = None


@dataclass(frozen=True)
class Malformed:
    """A 200 reply whose body is not valid JSON."""

    body: str = '{"choices": [{"message": {"content": "cut off mid'


@dataclass(frozen=True)
class Truncated:
    """A 200 reply cut off by the token limit (finish_reason "length")."""

    text: str = "This reply stops in the middle of a"


@dataclass(frozen=True)
class EmptyContent:
    """A 200 reply whose message content is the empty string."""


Behaviour = Reply | Status | Delay | Malformed | Truncated | EmptyContent


def rate_limited(retry_after: int = 1) -> Status:
    """A 429 with a Retry-After header, as providers send when rate limiting."""
    return Status(
        429,
        {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}},
        {"Retry-After": str(retry_after)},
    )


# --- Server -----------------------------------------------------------------------------------------------


class FakeLLM:
    """An OpenAI-compatible chat-completions server on 127.0.0.1, on a free port, in a background thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._scripts: dict[str, deque[Behaviour]] = defaultdict(deque)
        self._ids = itertools.count(1)
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
        self._stopping.set()  # wakes any request sleeping in a Delay
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
        """Every request received so far, oldest first: {"method", "path", "headers", "json"}.
        Header names are lower-case; "json" is the parsed body, or None if it was not JSON."""
        with self._lock:
            return list(self._requests)

    @property
    def last_request(self) -> dict[str, Any]:
        with self._lock:
            return self._requests[-1]

    # Called from request threads

    def _record(self, request: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_behaviour(self, model: str) -> Behaviour | None:
        with self._lock:
            queue = self._scripts.get(model)
            return queue.popleft() if queue else None

    def _respond(
        self, behaviour: Behaviour | None, body: dict[str, Any]
    ) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body bytes) for one completions request."""
        model = str(body.get("model", ""))
        if isinstance(behaviour, Delay):
            self._stopping.wait(behaviour.seconds)
            return self._respond(behaviour.then, body)
        if isinstance(behaviour, Status):
            if isinstance(behaviour.body, str):
                return (
                    behaviour.status,
                    {"Content-Type": "text/plain", **behaviour.headers},
                    _utf8(behaviour.body),
                )
            payload = behaviour.body or {
                "error": {"message": f"Fake error {behaviour.status}", "type": "fake"}
            }
            return behaviour.status, {"Content-Type": "application/json", **behaviour.headers}, _json(payload)
        if isinstance(behaviour, Malformed):
            return 200, {"Content-Type": "application/json"}, _utf8(behaviour.body)
        if isinstance(behaviour, Reply):
            return 200, _JSON_HEADERS, _json(self._completion(model, behaviour.text, "stop", body))
        if isinstance(behaviour, Truncated):
            return 200, _JSON_HEADERS, _json(self._completion(model, behaviour.text, "length", body))
        if isinstance(behaviour, EmptyContent):
            return 200, _JSON_HEADERS, _json(self._completion(model, "", "stop", body))
        text = f"Reply from {model} to: {_last_user_message(body)}"
        return 200, _JSON_HEADERS, _json(self._completion(model, text, "stop", body))

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


_JSON_HEADERS = {"Content-Type": "application/json"}


def _json(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def _utf8(text: str) -> bytes:
    return text.encode()


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages")
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _last_user_message(body: dict[str, Any]) -> str:
    user_messages = [m.get("content", "") for m in _messages(body) if m.get("role") == "user"]
    return str(user_messages[-1]) if user_messages else "(no user message)"


class _Server(ThreadingHTTPServer):
    # Non-daemon request threads, so server_close() joins them and stop() leaves nothing behind.
    daemon_threads = False
    fake: FakeLLM

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (e.g. on a timeout) before the reply was written is expected in tests.
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 10  # seconds a connection may sit idle, so a stuck client cannot block stop()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self.server.fake._record(
            {
                "method": "POST",
                "path": self.path,
                "headers": {name.lower(): value for name, value in self.headers.items()},
                "json": body,
            }
        )
        if self.path != COMPLETIONS_PATH:
            self._not_found()
            return
        if not isinstance(body, dict):
            self._send(400, _JSON_HEADERS, _json({"error": {"message": "Body is not a JSON object"}}))
            return
        fake = self.server.fake
        behaviour = fake._next_behaviour(str(body.get("model", "")))
        self._send(*fake._respond(behaviour, body))

    def do_GET(self) -> None:
        self._not_found()

    def _not_found(self) -> None:
        self._send(
            404, _JSON_HEADERS, _json({"error": {"message": f"Not found: {self.path}", "type": "fake"}})
        )

    def _send(self, status: int, headers: dict[str, str], payload: bytes) -> None:
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped waiting

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet
