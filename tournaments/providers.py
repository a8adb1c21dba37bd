"""Talking to language models. Plain Python, no Django: the site, tests and scripts share it.

`complete(config, messages)` returns the model's reply or raises `ProviderError`. Two kinds of provider:

- "openai": any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp's server,
  TGI, OpenRouter, ...), over real HTTP.
- "demo": the built-in offline demo models in `demo_models`, for the embedded default and the demo.
"""

import json
from dataclasses import dataclass

import httpx

from tournaments import demo_models

CONNECT_TIMEOUT_SECONDS = 10.0
# Replies longer than this are refused rather than stored and rendered.
MAX_RESPONSE_BYTES = 1_000_000


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
    timeout_seconds: float = 120.0
    demo_style: str = ""


class ProviderError(Exception):
    """The model produced no usable reply. `code` is a short machine-readable reason for staff."""

    def __init__(self, code: str, detail: str = ""):
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail


def complete(config: ProviderConfig, messages: list[ChatMessage]) -> str:
    if config.provider == "demo":
        return demo_models.reply(config.demo_style, [(m.role, m.content) for m in messages])
    if config.provider == "openai":
        return _complete_openai_compatible(config, messages)
    raise ProviderError("unknown_provider", config.provider)


def _complete_openai_compatible(config: ProviderConfig, messages: list[ChatMessage]) -> str:
    conversation = [{"role": m.role, "content": m.content} for m in messages]
    if config.system_prompt:
        conversation.insert(0, {"role": "system", "content": config.system_prompt})
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    timeout = httpx.Timeout(config.timeout_seconds, connect=CONNECT_TIMEOUT_SECONDS)
    try:
        response = httpx.post(
            config.base_url.rstrip("/") + "/chat/completions",
            json={
                "model": config.api_model,
                "messages": conversation,
                "temperature": config.temperature,
                "max_tokens": config.max_tokens,
            },
            headers=headers,
            timeout=timeout,
        )
    except httpx.TimeoutException as exc:
        raise ProviderError("timeout", type(exc).__name__) from exc
    except httpx.HTTPError as exc:
        raise ProviderError("connection", type(exc).__name__) from exc
    if response.status_code != 200:
        raise ProviderError(f"http_{response.status_code}", response.text[:200])
    if len(response.content) > MAX_RESPONSE_BYTES:
        raise ProviderError("too_large", f"{len(response.content)} bytes")
    return _reply_text(response.content)


def _reply_text(body: bytes) -> str:
    try:
        choice = json.loads(body)["choices"][0]
        text = choice["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ProviderError("malformed_response", repr(body[:200])) from exc
    if not isinstance(text, str) or not text.strip():
        raise ProviderError("empty_reply")
    # A reply cut off by the token limit is incomplete and must never be voted on.
    if choice.get("finish_reason") == "length":
        raise ProviderError("truncated", "finish_reason=length")
    return text
