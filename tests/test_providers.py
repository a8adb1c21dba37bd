"""`tournaments.providers.complete` against a real loopback OpenAI-compatible server, over real HTTP.

Tests taking the `stream` fixture run twice: once asking for a streamed reply, once not. Pauses between
attempts go to `Waits`, which records them instead of sleeping (one test waits for real).
"""

import pickle
import socket
import time
from email.utils import formatdate

import pytest

from tests.fake_llm import (
    CutOffStream,
    Delay,
    Disconnect,
    EmptyContent,
    FakeLLM,
    Huge,
    Malformed,
    QuotaError,
    Reply,
    SlowDrip,
    Status,
    Truncated,
    Unstreamed,
    rate_limited,
)
from tournaments.providers import (
    MAX_RESPONSE_BYTES,
    ChatMessage,
    ProviderConfig,
    ProviderError,
    complete,
)

MODEL = "fake-model-1"


class Waits(list[float]):
    """A stand-in for time.sleep that records each pause."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture(params=[True, False], ids=["streamed", "not-streamed"])
def stream(request: pytest.FixtureRequest) -> bool:
    return request.param


@pytest.fixture
def waits() -> Waits:
    return Waits()


def config_for(server: FakeLLM, **overrides: object) -> ProviderConfig:
    settings: dict[str, object] = {"provider": "openai", "base_url": server.base_url, "api_model": MODEL}
    settings.update(overrides)
    return ProviderConfig(**settings)  # type: ignore[arg-type]


def ask(text: str) -> list[ChatMessage]:
    return [ChatMessage("user", text)]


def failure(config: ProviderConfig, messages: list[ChatMessage], **kwargs: object) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        complete(config, messages, **kwargs)  # type: ignore[arg-type]
    return caught.value


def error_code(config: ProviderConfig, messages: list[ChatMessage], **kwargs: object) -> str:
    return failure(config, messages, **kwargs).code


# --- Requests and replies ---------------------------------------------------------------------------------


def test_it_returns_the_reply_text(fake_llm: FakeLLM, stream: bool) -> None:
    reply = complete(config_for(fake_llm, stream=stream), ask("What is a haiku?"))

    assert reply == f"Reply from {MODEL} to: What is a haiku?"


def test_it_returns_scripted_replies_in_order_then_the_default(fake_llm: FakeLLM, stream: bool) -> None:
    fake_llm.script(MODEL, Reply("First"), Reply("Second"))
    config = config_for(fake_llm, stream=stream)

    replies = [complete(config, ask("Hi")) for _ in range(3)]

    assert replies == ["First", "Second", f"Reply from {MODEL} to: Hi"]


def test_it_reassembles_a_streamed_reply_from_its_chunks(fake_llm: FakeLLM) -> None:
    text = "Line one,\nline two;  and   some spacing. Ünïcödé too! 🎉"
    fake_llm.script(MODEL, Reply(text))

    assert complete(config_for(fake_llm), ask("Hello")) == text


def test_it_asks_for_a_stream_by_default(fake_llm: FakeLLM) -> None:
    complete(config_for(fake_llm), ask("Hello"))

    assert fake_llm.last_request["json"]["stream"] is True


def test_it_sends_no_stream_flag_when_not_streaming(fake_llm: FakeLLM) -> None:
    complete(config_for(fake_llm, stream=False), ask("Hello"))

    assert "stream" not in fake_llm.last_request["json"]


def test_it_reads_a_plain_json_reply_to_a_request_for_a_stream(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, Unstreamed(Reply("Streams are for others")), Unstreamed(Truncated()))
    config = config_for(fake_llm)

    assert complete(config, ask("Hello")) == "Streams are for others"
    assert error_code(config, ask("Hello")) == "truncated"


def test_it_sends_model_temperature_and_max_tokens(fake_llm: FakeLLM) -> None:
    complete(config_for(fake_llm, temperature=0.2, max_tokens=77), ask("Hello"))

    [request] = fake_llm.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["json"]["model"] == MODEL
    assert request["json"]["temperature"] == 0.2
    assert request["json"]["max_tokens"] == 77


def test_it_puts_the_system_prompt_first(fake_llm: FakeLLM) -> None:
    complete(config_for(fake_llm, system_prompt="You are terse."), ask("Hello"))

    assert fake_llm.last_request["json"]["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hello"},
    ]


def test_it_sends_no_system_message_without_a_system_prompt(fake_llm: FakeLLM) -> None:
    complete(config_for(fake_llm), ask("Hello"))

    assert fake_llm.last_request["json"]["messages"] == [{"role": "user", "content": "Hello"}]


def test_it_sends_a_bearer_token_when_an_api_key_is_given(fake_llm: FakeLLM) -> None:
    complete(config_for(fake_llm, api_key="sk-test-123"), ask("Hello"))

    assert fake_llm.last_request["headers"]["authorization"] == "Bearer sk-test-123"


def test_it_sends_no_authorization_header_without_an_api_key(fake_llm: FakeLLM) -> None:
    complete(config_for(fake_llm), ask("Hello"))

    assert "authorization" not in fake_llm.last_request["headers"]


def test_it_preserves_the_conversation_order(fake_llm: FakeLLM) -> None:
    conversation = [
        ChatMessage("user", "Name a fruit."),
        ChatMessage("assistant", "Apple."),
        ChatMessage("user", "Another one?"),
        ChatMessage("assistant", "Pear."),
        ChatMessage("user", "And a vegetable?"),
    ]

    reply = complete(config_for(fake_llm, system_prompt="Be brief."), conversation)

    sent = fake_llm.last_request["json"]["messages"]
    assert sent[0] == {"role": "system", "content": "Be brief."}
    assert sent[1:] == [{"role": m.role, "content": m.content} for m in conversation]
    assert reply == f"Reply from {MODEL} to: And a vegetable?"


def test_it_accepts_a_base_url_with_a_trailing_slash(fake_llm: FakeLLM) -> None:
    reply = complete(config_for(fake_llm, base_url=fake_llm.base_url + "/"), ask("Hello"))

    assert reply == f"Reply from {MODEL} to: Hello"
    assert fake_llm.last_request["path"] == "/v1/chat/completions"


def test_it_waits_for_a_slow_model_within_the_timeout(fake_llm: FakeLLM, stream: bool) -> None:
    fake_llm.script(MODEL, Delay(0.2, Reply("Worth the wait")))

    assert complete(config_for(fake_llm, timeout_seconds=5, stream=stream), ask("Hello")) == "Worth the wait"


def test_it_reads_a_slowly_dripping_reply_that_ends_within_the_timeout(
    fake_llm: FakeLLM, stream: bool
) -> None:
    fake_llm.script(MODEL, SlowDrip("Drip by drip it came", interval=0.05))

    assert (
        complete(config_for(fake_llm, timeout_seconds=5, stream=stream), ask("Hi")) == "Drip by drip it came"
    )


def test_it_accepts_a_long_reply_under_the_size_limit(fake_llm: FakeLLM, stream: bool) -> None:
    fake_llm.script(MODEL, Huge(MAX_RESPONSE_BYTES - 1000))

    assert len(complete(config_for(fake_llm, stream=stream), ask("Hello"))) == MAX_RESPONSE_BYTES - 1000


# --- Transient failures: retried ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503, 504, 529])
def test_it_retries_a_server_error_then_returns_the_reply(
    fake_llm: FakeLLM, stream: bool, waits: Waits, status: int
) -> None:
    fake_llm.script(MODEL, Status(status), Reply("Second time lucky"))

    reply = complete(config_for(fake_llm, stream=stream), ask("Hello"), sleep=waits)

    assert reply == "Second time lucky"
    assert len(fake_llm.requests) == 2
    assert waits == [1.0]


def test_it_gives_up_after_three_attempts_with_the_last_error(fake_llm: FakeLLM, waits: Waits) -> None:
    fake_llm.script(MODEL, Status(503), Status(503), Status(503), Reply("Too late"))

    error = failure(config_for(fake_llm), ask("Hello"), sleep=waits)

    assert (error.code, error.kind, error.attempts) == ("http_503", "transient", 3)
    assert len(fake_llm.requests) == 3
    assert waits == [1.0, 2.0]  # exponential backoff


def test_it_reports_http_500_with_the_start_of_the_body(fake_llm: FakeLLM, waits: Waits) -> None:
    fake_llm.script(MODEL, *[Status(500, "Internal Server Error")] * 3)

    error = failure(config_for(fake_llm), ask("Hello"), sleep=waits)

    assert str(error) == "http_500: Internal Server Error"
    assert error.kind == "transient"


def test_it_retries_a_dropped_connection(fake_llm: FakeLLM, stream: bool, waits: Waits) -> None:
    fake_llm.script(MODEL, Disconnect(), Reply("Reconnected"))

    assert complete(config_for(fake_llm, stream=stream), ask("Hello"), sleep=waits) == "Reconnected"
    assert waits == [1.0]


def test_it_retries_a_non_streamed_body_cut_off_in_transit(fake_llm: FakeLLM, waits: Waits) -> None:
    fake_llm.script(MODEL, CutOffStream(), Reply("Whole this time"))

    assert complete(config_for(fake_llm, stream=False), ask("Hello"), sleep=waits) == "Whole this time"
    assert len(fake_llm.requests) == 2


def test_it_reports_a_refused_connection_after_retrying(waits: Waits) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = ProviderConfig(provider="openai", base_url=f"http://127.0.0.1:{port}/v1", api_model=MODEL)

    error = failure(config, ask("Hello"), sleep=waits)

    assert (error.code, error.kind, error.attempts) == ("connection", "transient", 3)
    assert waits == [1.0, 2.0]


def test_it_waits_as_long_as_retry_after_says(fake_llm: FakeLLM, stream: bool, waits: Waits) -> None:
    fake_llm.script(MODEL, rate_limited(retry_after=7), Reply("Thanks for waiting"))

    assert complete(config_for(fake_llm, stream=stream), ask("Hello"), sleep=waits) == "Thanks for waiting"
    assert waits == [7.0]


def test_it_reads_a_retry_after_date(fake_llm: FakeLLM, waits: Waits) -> None:
    now = 1_700_000_000.0
    fake_llm.script(MODEL, rate_limited(retry_after=formatdate(now + 12, usegmt=True)), Reply("Later"))

    assert complete(config_for(fake_llm), ask("Hello"), sleep=waits, clock=lambda: now) == "Later"
    assert waits == [12.0]


def test_it_waits_at_most_a_minute_whatever_retry_after_says(fake_llm: FakeLLM, waits: Waits) -> None:
    fake_llm.script(MODEL, rate_limited(retry_after=3600), Reply("Finally"))

    assert complete(config_for(fake_llm), ask("Hello"), sleep=waits) == "Finally"
    assert waits == [60.0]


def test_it_backs_off_on_a_rate_limit_without_retry_after(fake_llm: FakeLLM, waits: Waits) -> None:
    fake_llm.script(MODEL, *[rate_limited(retry_after=None)] * 3)

    error = failure(config_for(fake_llm), ask("Hello"), sleep=waits)

    assert (error.code, error.kind, error.attempts) == ("http_429", "transient", 3)
    assert waits == [1.0, 2.0]


def test_it_really_waits_for_retry_after(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, rate_limited(retry_after=1), Reply("Patience pays"))
    started = time.monotonic()

    reply = complete(config_for(fake_llm), ask("Hello"))

    assert reply == "Patience pays"
    first, second = (r["received_at"] for r in fake_llm.requests)
    assert second - first >= 1.0
    assert 1.0 <= time.monotonic() - started < 3.0


# --- Timeouts: not retried ----------------------------------------------------------------------------------


def test_it_reports_a_timeout_when_the_model_hangs_and_does_not_retry(
    fake_llm: FakeLLM, stream: bool, waits: Waits
) -> None:
    fake_llm.script(MODEL, Delay(5.0))
    started = time.monotonic()

    error = failure(config_for(fake_llm, timeout_seconds=0.5, stream=stream), ask("Hello"), sleep=waits)

    assert (error.code, error.kind) == ("timeout", "transient")
    assert time.monotonic() - started < 1.5
    assert len(fake_llm.requests) == 1
    assert waits == []


def test_it_times_out_a_reply_that_drips_in_for_longer_than_the_timeout(
    fake_llm: FakeLLM, stream: bool, waits: Waits
) -> None:
    # Every pause is shorter than the timeout: only a deadline on the whole attempt stops it.
    fake_llm.script(MODEL, SlowDrip("drip " * 20, interval=0.3))
    started = time.monotonic()

    error = failure(config_for(fake_llm, timeout_seconds=1.0, stream=stream), ask("Hello"), sleep=waits)

    assert (error.code, error.kind) == ("timeout", "transient")
    assert time.monotonic() - started < 2.0
    assert len(fake_llm.requests) == 1


# --- Quota: never retried ---------------------------------------------------------------------------------


def test_it_reports_an_exhausted_quota_without_retrying(
    fake_llm: FakeLLM, stream: bool, waits: Waits
) -> None:
    fake_llm.script(MODEL, QuotaError(), Reply("Should never be asked for"))

    error = failure(config_for(fake_llm, stream=stream), ask("Hello"), sleep=waits)

    assert (error.code, error.kind) == ("http_429", "quota")
    assert "exceeded your current quota" in error.detail
    assert len(fake_llm.requests) == 1
    assert waits == []


@pytest.mark.parametrize(
    "behaviour",
    [
        QuotaError(status=402),
        Status(402, {"error": {"message": "Payment required"}}),
        Status(403, {"error": {"message": "Your monthly spend limit has been reached", "type": "forbidden"}}),
        Status(429, {"error": {"message": "Billing hard limit reached", "type": "requests"}}),
        Status(429, [{"error": {"code": 429, "message": "Insufficient credits on this account"}}]),
    ],
    ids=["402-insufficient-quota", "402", "403-spend-limit", "429-billing", "429-listed-error"],
)
def test_it_recognises_quota_and_spend_limit_errors(
    fake_llm: FakeLLM, waits: Waits, behaviour: QuotaError | Status
) -> None:
    fake_llm.script(MODEL, behaviour)

    assert failure(config_for(fake_llm), ask("Hello"), sleep=waits).kind == "quota"
    assert len(fake_llm.requests) == 1


# --- Configuration errors: never retried --------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_it_reports_a_client_error_as_config_without_retrying(
    fake_llm: FakeLLM, waits: Waits, status: int
) -> None:
    fake_llm.script(MODEL, Status(status))

    error = failure(config_for(fake_llm), ask("Hello"), sleep=waits)

    assert (error.code, error.kind) == (f"http_{status}", "config")
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"code": "context_length_exceeded", "message": "Maximum context length is 8192"}},
        {"error": {"code": "content_policy_violation", "message": "Your request was rejected"}},
        {"error": {"type": "invalid_request_error", "message": "The response was filtered: content filter"}},
    ],
    ids=["context-length", "content-policy", "content-filter"],
)
def test_it_blames_the_conversation_not_the_config_for_a_400_about_its_length_or_content(
    fake_llm: FakeLLM, waits: Waits, body: dict[str, object]
) -> None:
    # A rater must not be able to take a model out of matchmaking with one long or nasty message.
    fake_llm.script(MODEL, Status(400, body))

    error = failure(config_for(fake_llm), ask("Hello"), sleep=waits)

    assert (error.code, error.kind) == ("http_400", "bad_output")
    assert len(fake_llm.requests) == 1


def test_it_reports_http_404_for_a_base_url_without_the_api_prefix(fake_llm: FakeLLM) -> None:
    base_url = fake_llm.base_url.removesuffix("/v1")

    assert error_code(config_for(fake_llm, base_url=base_url), ask("Hello")) == "http_404"


def test_it_rejects_an_unknown_provider() -> None:
    config = ProviderConfig(provider="carrier-pigeon", base_url="http://127.0.0.1:9/v1")

    error = failure(config, ask("Hello"))

    assert (error.code, error.kind) == ("unknown_provider", "config")


def test_it_gives_errors_a_kind_from_their_code_when_none_is_given() -> None:
    assert ProviderError("missing_api_key", "OPENAI_KEY is not set").kind == "config"
    assert ProviderError("timeout").kind == "transient"
    assert ProviderError("truncated").kind == "bad_output"
    assert ProviderError("http_401").kind == "config"
    assert ProviderError("http_429", kind="quota").kind == "quota"
    with pytest.raises(ValueError, match="kind"):
        ProviderError("timeout", kind="fatal")


def test_it_keeps_code_detail_and_kind_through_pickling() -> None:
    error = ProviderError("http_429", "out of money", kind="quota")

    copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own object

    assert (copy.code, copy.detail, copy.kind, str(copy)) == ("http_429", "out of money", "quota", str(error))


# --- Bad output: never retried ----------------------------------------------------------------------------


def test_it_reports_a_malformed_response(fake_llm: FakeLLM, stream: bool) -> None:
    fake_llm.script(MODEL, Malformed(), Reply("Never asked for"))

    error = failure(config_for(fake_llm, stream=stream), ask("Hello"))

    assert (error.code, error.kind) == ("malformed_response", "bad_output")
    assert len(fake_llm.requests) == 1


def test_it_reports_a_response_without_choices_as_malformed(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, Malformed('{"choices": []}'))

    assert error_code(config_for(fake_llm, stream=False), ask("Hello")) == "malformed_response"


def test_it_reports_a_stream_chunk_without_choices_as_malformed(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, Malformed('{"id": "chunk-1", "object": "chat.completion.chunk"}'))

    assert error_code(config_for(fake_llm), ask("Hello")) == "malformed_response"


def test_it_reports_a_truncated_reply(fake_llm: FakeLLM, stream: bool) -> None:
    fake_llm.script(MODEL, Truncated())

    error = failure(config_for(fake_llm, stream=stream), ask("Hello"))

    assert (error.code, error.kind) == ("truncated", "bad_output")
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked-body-broken", "connection-closed"])
def test_it_reports_a_cut_off_stream_as_truncated_and_never_returns_part_of_it(
    fake_llm: FakeLLM, waits: Waits, chunked: bool
) -> None:
    fake_llm.script(
        MODEL, CutOffStream("The first half arrives but the second never does", 0.5, chunked=chunked)
    )

    error = failure(config_for(fake_llm), ask("Hello"), sleep=waits)

    assert (error.code, error.kind) == ("truncated", "bad_output")
    assert "first half" not in str(error)
    assert len(fake_llm.requests) == 1


def test_it_reports_an_empty_reply(fake_llm: FakeLLM, stream: bool) -> None:
    fake_llm.script(MODEL, EmptyContent())

    error = failure(config_for(fake_llm, stream=stream), ask("Hello"))

    assert (error.code, error.kind) == ("empty_reply", "bad_output")


def test_it_reports_a_whitespace_only_reply_as_empty(fake_llm: FakeLLM, stream: bool) -> None:
    fake_llm.script(MODEL, Reply("  \n\t "))

    assert error_code(config_for(fake_llm, stream=stream), ask("Hello")) == "empty_reply"


def test_it_refuses_a_reply_that_is_too_large(fake_llm: FakeLLM, stream: bool) -> None:
    fake_llm.script(MODEL, Huge(MAX_RESPONSE_BYTES + 100_000), Reply("Never asked for"))

    error = failure(config_for(fake_llm, stream=stream), ask("Hello"))

    assert (error.code, error.kind) == ("too_large", "bad_output")
    assert len(fake_llm.requests) == 1


def test_it_stops_reading_an_enormous_stream_at_the_limit(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, Huge(10 * MAX_RESPONSE_BYTES))
    started = time.monotonic()

    assert error_code(config_for(fake_llm), ask("Hello")) == "too_large"
    assert time.monotonic() - started < 5.0
