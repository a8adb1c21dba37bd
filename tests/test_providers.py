"""`tournaments.providers.complete` against a real loopback OpenAI-compatible server, over real HTTP."""

import socket
import time

import pytest

from tests.fake_llm import Delay, EmptyContent, FakeLLM, Malformed, Reply, Status, Truncated, rate_limited
from tournaments.providers import ChatMessage, ProviderConfig, ProviderError, complete

MODEL = "fake-model-1"


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


def test_it_returns_the_reply_text(fake_llm: FakeLLM) -> None:
    assert (
        complete(config_for(fake_llm), ask("What is a haiku?")) == f"Reply from {MODEL} to: What is a haiku?"
    )


def test_it_returns_scripted_replies_in_order_then_the_default(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, Reply("First"), Reply("Second"))
    config = config_for(fake_llm)

    replies = [complete(config, ask("Hi")) for _ in range(3)]

    assert replies == ["First", "Second", f"Reply from {MODEL} to: Hi"]


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


def test_it_reports_http_500(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, Status(500, "Internal Server Error"))

    assert error_code(config_for(fake_llm), ask("Hello")) == "http_500"


def test_it_reports_http_429_when_rate_limited(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, rate_limited(retry_after=30))

    assert error_code(config_for(fake_llm), ask("Hello")) == "http_429"


def test_it_reports_http_404_for_a_base_url_without_the_api_prefix(fake_llm: FakeLLM) -> None:
    base_url = fake_llm.base_url.removesuffix("/v1")

    assert error_code(config_for(fake_llm, base_url=base_url), ask("Hello")) == "http_404"


def test_it_reports_a_malformed_response(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, Malformed())

    assert error_code(config_for(fake_llm), ask("Hello")) == "malformed_response"


def test_it_reports_a_response_without_choices_as_malformed(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, Malformed('{"choices": []}'))

    assert error_code(config_for(fake_llm), ask("Hello")) == "malformed_response"


def test_it_reports_a_truncated_reply(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, Truncated())

    assert error_code(config_for(fake_llm), ask("Hello")) == "truncated"


def test_it_reports_an_empty_reply(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, EmptyContent())

    assert error_code(config_for(fake_llm), ask("Hello")) == "empty_reply"


def test_it_reports_a_whitespace_only_reply_as_empty(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, Reply("  \n\t "))

    assert error_code(config_for(fake_llm), ask("Hello")) == "empty_reply"


def test_it_refuses_a_reply_that_is_too_large(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, Reply("x" * 1_100_000))

    assert error_code(config_for(fake_llm), ask("Hello")) == "too_large"


def test_it_reports_a_timeout_when_the_model_is_too_slow(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, Delay(2.0))
    started = time.monotonic()

    assert error_code(config_for(fake_llm, timeout_seconds=0.5), ask("Hello")) == "timeout"
    assert time.monotonic() - started < 1.9


def test_it_waits_for_a_slow_model_within_the_timeout(fake_llm: FakeLLM) -> None:
    fake_llm.script(MODEL, Delay(0.2, Reply("Worth the wait")))

    assert complete(config_for(fake_llm, timeout_seconds=5), ask("Hello")) == "Worth the wait"


def test_it_reports_a_refused_connection() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = ProviderConfig(provider="openai", base_url=f"http://127.0.0.1:{port}/v1", api_model=MODEL)

    assert error_code(config, ask("Hello")) == "connection"


def test_it_accepts_a_base_url_with_a_trailing_slash(fake_llm: FakeLLM) -> None:
    reply = complete(config_for(fake_llm, base_url=fake_llm.base_url + "/"), ask("Hello"))

    assert reply == f"Reply from {MODEL} to: Hello"
    assert fake_llm.last_request["path"] == "/v1/chat/completions"


def test_it_rejects_an_unknown_provider() -> None:
    config = ProviderConfig(provider="carrier-pigeon", base_url="http://127.0.0.1:9/v1")

    assert error_code(config, ask("Hello")) == "unknown_provider"
