"""`tournaments.providers.complete` against a real loopback OpenAI-compatible server, over real HTTP."""

import socket
import time
from collections.abc import Iterator

import pytest

from tests.fake_llm import Delay, EmptyContent, FakeLLM, Malformed, Reply, Status, Truncated, rate_limited
from tournaments.providers import ChatMessage, ProviderConfig, ProviderError, complete

MODEL = "fake-model-1"


@pytest.fixture
def llm_server() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def config_for(server: FakeLLM, **overrides: object) -> ProviderConfig:
    settings: dict[str, object] = {"provider": "openai", "base_url": server.base_url, "api_model": MODEL}
    settings.update(overrides)
    return ProviderConfig(**settings)  # type: ignore[arg-type]


def ask(text: str) -> list[ChatMessage]:
    return [ChatMessage("user", text)]


def error_code(config: ProviderConfig, messages: list[ChatMessage]) -> str:
    with pytest.raises(ProviderError) as caught:
        complete(config, messages)
    return caught.value.code


def test_it_returns_the_reply_text(llm_server: FakeLLM) -> None:
    assert (
        complete(config_for(llm_server), ask("What is a haiku?"))
        == f"Reply from {MODEL} to: What is a haiku?"
    )


def test_it_returns_scripted_replies_in_order_then_the_default(llm_server: FakeLLM) -> None:
    llm_server.script(MODEL, Reply("First"), Reply("Second"))
    config = config_for(llm_server)

    replies = [complete(config, ask("Hi")) for _ in range(3)]

    assert replies == ["First", "Second", f"Reply from {MODEL} to: Hi"]


def test_it_sends_model_temperature_and_max_tokens(llm_server: FakeLLM) -> None:
    complete(config_for(llm_server, temperature=0.2, max_tokens=77), ask("Hello"))

    [request] = llm_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["json"]["model"] == MODEL
    assert request["json"]["temperature"] == 0.2
    assert request["json"]["max_tokens"] == 77


def test_it_puts_the_system_prompt_first(llm_server: FakeLLM) -> None:
    complete(config_for(llm_server, system_prompt="You are terse."), ask("Hello"))

    assert llm_server.last_request["json"]["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hello"},
    ]


def test_it_sends_no_system_message_without_a_system_prompt(llm_server: FakeLLM) -> None:
    complete(config_for(llm_server), ask("Hello"))

    assert llm_server.last_request["json"]["messages"] == [{"role": "user", "content": "Hello"}]


def test_it_sends_a_bearer_token_when_an_api_key_is_given(llm_server: FakeLLM) -> None:
    complete(config_for(llm_server, api_key="sk-test-123"), ask("Hello"))

    assert llm_server.last_request["headers"]["authorization"] == "Bearer sk-test-123"


def test_it_sends_no_authorization_header_without_an_api_key(llm_server: FakeLLM) -> None:
    complete(config_for(llm_server), ask("Hello"))

    assert "authorization" not in llm_server.last_request["headers"]


def test_it_preserves_the_conversation_order(llm_server: FakeLLM) -> None:
    conversation = [
        ChatMessage("user", "Name a fruit."),
        ChatMessage("assistant", "Apple."),
        ChatMessage("user", "Another one?"),
        ChatMessage("assistant", "Pear."),
        ChatMessage("user", "And a vegetable?"),
    ]

    reply = complete(config_for(llm_server, system_prompt="Be brief."), conversation)

    sent = llm_server.last_request["json"]["messages"]
    assert sent[0] == {"role": "system", "content": "Be brief."}
    assert sent[1:] == [{"role": m.role, "content": m.content} for m in conversation]
    assert reply == f"Reply from {MODEL} to: And a vegetable?"


def test_it_reports_http_500(llm_server: FakeLLM) -> None:
    llm_server.script(MODEL, Status(500, "Internal Server Error"))

    assert error_code(config_for(llm_server), ask("Hello")) == "http_500"


def test_it_reports_http_429_when_rate_limited(llm_server: FakeLLM) -> None:
    llm_server.script(MODEL, rate_limited(retry_after=30))

    assert error_code(config_for(llm_server), ask("Hello")) == "http_429"


def test_it_reports_http_404_for_a_base_url_without_the_api_prefix(llm_server: FakeLLM) -> None:
    base_url = llm_server.base_url.removesuffix("/v1")

    assert error_code(config_for(llm_server, base_url=base_url), ask("Hello")) == "http_404"


def test_it_reports_a_malformed_response(llm_server: FakeLLM) -> None:
    llm_server.script(MODEL, Malformed())

    assert error_code(config_for(llm_server), ask("Hello")) == "malformed_response"


def test_it_reports_a_response_without_choices_as_malformed(llm_server: FakeLLM) -> None:
    llm_server.script(MODEL, Malformed('{"choices": []}'))

    assert error_code(config_for(llm_server), ask("Hello")) == "malformed_response"


def test_it_reports_a_truncated_reply(llm_server: FakeLLM) -> None:
    llm_server.script(MODEL, Truncated())

    assert error_code(config_for(llm_server), ask("Hello")) == "truncated"


def test_it_reports_an_empty_reply(llm_server: FakeLLM) -> None:
    llm_server.script(MODEL, EmptyContent())

    assert error_code(config_for(llm_server), ask("Hello")) == "empty_reply"


def test_it_reports_a_whitespace_only_reply_as_empty(llm_server: FakeLLM) -> None:
    llm_server.script(MODEL, Reply("  \n\t "))

    assert error_code(config_for(llm_server), ask("Hello")) == "empty_reply"


def test_it_refuses_a_reply_that_is_too_large(llm_server: FakeLLM) -> None:
    llm_server.script(MODEL, Reply("x" * 1_100_000))

    assert error_code(config_for(llm_server), ask("Hello")) == "too_large"


def test_it_reports_a_timeout_when_the_model_is_too_slow(llm_server: FakeLLM) -> None:
    llm_server.script(MODEL, Delay(2.0))
    started = time.monotonic()

    assert error_code(config_for(llm_server, timeout_seconds=0.5), ask("Hello")) == "timeout"
    assert time.monotonic() - started < 1.9


def test_it_waits_for_a_slow_model_within_the_timeout(llm_server: FakeLLM) -> None:
    llm_server.script(MODEL, Delay(0.2, Reply("Worth the wait")))

    assert complete(config_for(llm_server, timeout_seconds=5), ask("Hello")) == "Worth the wait"


def test_it_reports_a_refused_connection() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = ProviderConfig(provider="openai", base_url=f"http://127.0.0.1:{port}/v1", api_model=MODEL)

    assert error_code(config, ask("Hello")) == "connection"


def test_it_accepts_a_base_url_with_a_trailing_slash(llm_server: FakeLLM) -> None:
    reply = complete(config_for(llm_server, base_url=llm_server.base_url + "/"), ask("Hello"))

    assert reply == f"Reply from {MODEL} to: Hello"
    assert llm_server.last_request["path"] == "/v1/chat/completions"


def test_it_rejects_an_unknown_provider() -> None:
    config = ProviderConfig(provider="carrier-pigeon", base_url="http://127.0.0.1:9/v1")

    assert error_code(config, ask("Hello")) == "unknown_provider"
