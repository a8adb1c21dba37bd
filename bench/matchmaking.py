"""Matchmaking benchmark: the matchmaker against uniform random pairing, in simulation.

``python manage.py bench matchmaking --json [--quick]`` calls :func:`run`. No Django: the simulation
drives the same ``stats.matchmaker.Matchmaker`` the site uses, with its default settings. Its figures
are for one board; ``bench.matchmaking_boards`` (included under ``boards``, its headline figures also at
the top) simulates whole studies with every board a battle feeds, and announcements at P(best) >= 0.95.
The top-1 "never flips again" ratio below is kept for comparison, without a target.

The simulated arena
-------------------
Skills are Elo-like and spread as in LLM arenas: 20 models over about 300 Elo points, 50 over 450, with
close contenders at the top: the runner-up 30-40 Elo behind the best and the next two 15-25 Elo further
down each (at 10% ties; the gaps at the top grow by ``sqrt(0.9 / (1 - tie rate))`` so that the question
takes about as many *decisive* votes in every setting). The outcome model is deliberately not the
Bradley-Terry-Davidson model the matchmaker assumes:

* half of all ties come from "both fine" easy prompts: a tie whatever the skills;
* ``RANDOM_RATER_SHARE`` of the other votes come from raters who vote at random (a, b or tie);
* the rest are judged: a tie with a probability that falls off only mildly with the skill gap (up to
  ``CLOSE_TIE_DEPTH`` lower for distant models, not Davidson's shape), otherwise Bradley-Terry,
  scaled so that the overall tie rate is the setting's (10%, 30% or 65%).

Since the truth is not in the model family, what the posterior can estimate is the model in the family
closest to it, the "pseudo-true" skills: the Bradley-Terry-Davidson fit to the exact outcome
probabilities of every pair, all pairs weighted alike (and, as a check, weighted by the pairs' battles in
the run, the design the posterior actually saw). Calibration is measured against those; Kendall tau and
identification against the generating skills (the order is the same).

The pipeline
------------
At least 50 battles are always in flight: results arrive 10 at a time, in random order, the matchmaker
observes them, and 10 new battles are proposed, each with every outstanding battle passed as
``in_flight`` (50 to 59 of them). Uniform pairing draws every pair alike through the same pipeline; both
arms estimate with the same posterior. Each seed runs both arms on the same skills and, through common
random numbers, the same outcome for the k-th battle of a pair.

Figures (per setting, over the seeds)
-------------------------------------
* battles until the best model is identified and stays identified: the first checkpoint (every 20
  battles) from which the posterior-mean leader is the true best at every later checkpoint up to the
  horizon, 8,000 battles (the horizon if it is wrong at the end); the same for the set of the top five.
  Paired geometric-mean ratio, matchmaker over uniform, and the medians;
* Kendall tau with the truth at 1,000, 2,000 and 4,000 battles: paired mean difference and its standard
  error;
* calibration: root mean square, over pairs of models and seeds, of ``(estimated difference -
  pseudo-true difference) / posterior sd of the difference`` at every budget (1 when calibrated);
* the busiest pair's share of the battles (whole horizon), and the pairs never compared (at 4,000);
* reproducibility: the top-1 ratio on two disjoint halves of the seeds, the standard error of its
  logarithm, and from it the sd of the difference between two runs of as many seeds (``top1_two_runs_sd``,
  0.1 meaning that two runs agree within about 10%).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import numpy as np

from bench import matchmaking_boards
from bench.parallel import seeds_map
from stats.matchmaker import Matchmaker

ELO_PER_NAT = 400 / math.log(10)
IN_FLIGHT = 50
# Results arrive (and the matchmaker learns them) this many at a time; proposals are made with
# IN_FLIGHT to IN_FLIGHT + ARRIVALS - 1 battles outstanding.
ARRIVALS = 10
RANDOM_RATER_SHARE = 0.15
# Share of all ties that come from easy prompts (no skill information).
EASY_TIE_SHARE = 0.5
TOP_SET = 5
# Elo gap between the best model and the runner-up, and between each of the next two contenders.
TOP_GAP_ELO = (30.0, 40.0)
NEXT_GAP_ELO = (15.0, 25.0)
GAP_WIDENING_POWER = 0.5
# Judging raters call close models a tie somewhat more often than distant ones: P(tie) = close_tie *
# (1 - depth (1 - exp(-d^2 / (2 width^2)))), so far-apart models tie up to `depth` less.
CLOSE_TIE_WIDTH = 1.0
CLOSE_TIE_DEPTH = 0.3
# Common random numbers: the k-th battle of a pair has the same uniform draw in both arms of a seed.
OUTCOME_STREAM = 256

FULL = {
    "models": (20, 50),
    "tie_rates": (0.10, 0.30, 0.65),
    # Per seed, the log of the top-1 ratio has an sd of about 1 (a lucky early streak of either arm
    # decides it), so two runs of 200 seeds differ by about sqrt(2 / 200) = 10% (one sd).
    "seeds": 200,
    "budgets": (1_000, 2_000, 4_000),
    "horizon": 8_000,
    "checkpoint_every": 20,
}
QUICK = {
    "models": (12,),
    "tie_rates": (0.30,),
    "seeds": 2,
    "budgets": (200, 400),
    "horizon": 400,
    "checkpoint_every": 20,
}
# The top-1 "identified and never flips again" ratio is kept without a target (issue 18): a leaderboard
# announces a leader at a confidence, measured by bench.matchmaking_boards.
TARGETS = {
    "tau_delta_min": (">=", -0.02),
    "z_sd_low": (">=", 0.8),
    "z_sd_high": ("<=", 1.25),
    "max_pair_share": ("<=", 0.05),
}


@dataclass(frozen=True)
class Population:
    """A simulated arena: true skills (nats) and the outcome model that is not the matchmaker's."""

    skills: np.ndarray
    tie_rate: float
    easy_tie: float  # P(easy prompt: a tie whatever the skills)
    close_tie: float  # P(a judging rater calls two equal models a tie); falls off with the skill gap

    def probabilities(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """P(first wins), P(second wins), P(tie) for skill differences d = first - second."""
        judged_tie = self.close_tie * (1 - CLOSE_TIE_DEPTH * (1 - np.exp(-0.5 * (d / CLOSE_TIE_WIDTH) ** 2)))
        decisive = (1 - RANDOM_RATER_SHARE) * (1 - judged_tie)
        noisy = RANDOM_RATER_SHARE * (1 - self.tie_rate) / 2
        win = 0.5 * (1 + np.tanh(0.5 * d))  # logistic(d): decisive votes are Bradley-Terry
        p_win = (1 - self.easy_tie) * (noisy + decisive * win)
        p_loss = (1 - self.easy_tie) * (noisy + decisive * (1 - win))
        return p_win, p_loss, 1.0 - p_win - p_loss

    def pseudo_true(self, weights: np.ndarray | None = None) -> np.ndarray:
        """The Bradley-Terry-Davidson skills closest to the truth (maximum expected log-likelihood).

        ``weights[i, j]`` (i < j) says how much each pair counts, e.g. the battles a run gave it (the
        value the posterior converges to under that design); all pairs alike without it.
        """
        n = len(self.skills)
        first, second = np.triu_indices(n, 1)
        weight = (
            np.ones(len(first)) if weights is None else weights[first, second] / weights[first, second].mean()
        )
        p_win, p_loss, p_tie = self.probabilities(self.skills[first] - self.skills[second])
        scale = 1e6 * weight  # so many battles per pair that the prior does not matter
        fit = Matchmaker(range(n))
        fit.observe_counts(zip(first, second, scale * p_win, scale * p_loss, scale * p_tie, strict=True))
        mean, _ = fit.posterior()
        return mean


def population_for(n_models: int, tie_rate: float, seed) -> Population:
    """Arena-like skills with close contenders at the top, and a noisy outcome model at the tie rate."""
    rng = np.random.default_rng(seed)
    spread = 300.0 if n_models <= 20 else 450.0
    # Ties leave fewer decisive votes; wider gaps at the top keep the best-model question about as hard
    # in decisive votes in every setting (at 65% ties with 10%-tie gaps no policy settles it in budget).
    widen = ((1 - 0.1) / (1 - tie_rate)) ** GAP_WIDENING_POWER
    top = [0.0, -widen * rng.uniform(*TOP_GAP_ELO)]
    for _ in range(2):
        top.append(top[-1] - widen * rng.uniform(*NEXT_GAP_ELO))
    rest = rng.uniform(-spread, top[-1] - 10, size=n_models - len(top))
    skills = np.concatenate([top, rest]) / ELO_PER_NAT
    skills = rng.permutation(skills)  # model order says nothing
    easy_tie = EASY_TIE_SHARE * tie_rate
    first, second = np.triu_indices(n_models, 1)
    d = skills[first] - skills[second]

    def tie_rate_at(close_tie: float) -> float:
        candidate = Population(skills=skills, tie_rate=tie_rate, easy_tie=easy_tie, close_tie=close_tie)
        return float(candidate.probabilities(d)[2].mean())

    if tie_rate_at(1.0) < tie_rate:
        raise ValueError(f"cannot reach a {tie_rate:.0%} tie rate with these skills")
    low, high = 0.0, 1.0
    for _ in range(50):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if tie_rate_at(middle) < tie_rate else (low, middle)
    return Population(skills=skills, tie_rate=tie_rate, easy_tie=easy_tie, close_tie=0.5 * (low + high))


def _kendall_tau(estimate: np.ndarray, truth: np.ndarray) -> float:
    first, second = np.triu_indices(len(truth), 1)
    agree = np.sign(estimate[first] - estimate[second]) * np.sign(truth[first] - truth[second])
    return float(agree.mean())


def _z_scores(matchmaker: Matchmaker, target: np.ndarray) -> np.ndarray:
    mean, covariance = matchmaker.posterior()
    first, second = np.triu_indices(len(mean), 1)
    variance = np.diag(covariance)
    sd = np.sqrt(variance[first] + variance[second] - 2 * covariance[first, second])
    return ((mean[first] - mean[second]) - (target[first] - target[second])) / sd


def simulate(population: Population, *, policy: str, sizes: dict, seed, outcome_draws: np.ndarray) -> dict:
    """One run of ``policy`` ("matchmaker" or "uniform") through the 50-in-flight pipeline.

    ``outcome_draws[i, j, k]`` (i < j) decides the k-th battle of the pair, shared by the arms of a seed.
    """
    n = len(population.skills)
    rng = np.random.default_rng(seed)
    matchmaker = Matchmaker(range(n), seed=rng, **sizes.get("matchmaker_settings", {}))
    first, second = np.triu_indices(n, 1)
    truth = population.skills
    best, top_set = int(np.argmax(truth)), set(np.argsort(-truth)[:TOP_SET].tolist())
    pseudo_true = population.pseudo_true()
    horizon, every = sizes["horizon"], sizes["checkpoint_every"]
    pair_counts = np.zeros((n, n), dtype=np.int64)
    outstanding: list[tuple[int, int]] = []

    def propose() -> None:
        if policy == "uniform":
            k = int(rng.integers(len(first)))
            outstanding.append((int(first[k]), int(second[k])))
        else:
            model_a, model_b, _ = matchmaker.propose(in_flight=outstanding)
            outstanding.append((model_a, model_b))

    def result_of(model_a: int, model_b: int) -> str:
        low, high = min(model_a, model_b), max(model_a, model_b)
        p_win, p_loss, _ = population.probabilities(np.array(truth[low] - truth[high]))
        seen = pair_counts[low, high]
        draw = outcome_draws[low, high, seen] if seen < OUTCOME_STREAM else rng.random()
        pair_counts[low, high] += 1
        winner = low if draw < p_win else high if draw < p_win + p_loss else None
        return "tie" if winner is None else "a" if winner == model_a else "b"

    for _ in range(IN_FLIGHT + ARRIVALS):
        propose()
    top1_ok, top5_ok, tau, z_scores, z_design, never = [], [], {}, {}, {}, {}
    for observed in range(ARRIVALS, horizon + 1, ARRIVALS):
        arrived = [outstanding.pop(int(rng.integers(len(outstanding)))) for _ in range(ARRIVALS)]
        matchmaker.observe_many((a, b, result_of(a, b)) for a, b in arrived)
        if observed % every == 0:
            ranking = matchmaker.ranking()
            top1_ok.append(ranking[0] == best)
            top5_ok.append(set(ranking[:TOP_SET]) == top_set)
        if observed in sizes["budgets"]:
            mean, _ = matchmaker.posterior()
            tau[observed] = _kendall_tau(mean, truth)
            z_scores[observed] = _z_scores(matchmaker, pseudo_true)
            z_design[observed] = _z_scores(matchmaker, population.pseudo_true(pair_counts))
            never[observed] = int((pair_counts[first, second] == 0).sum())
        for _ in range(min(ARRIVALS, horizon - observed - len(outstanding))):
            propose()
    counts = pair_counts[first, second]
    return {
        "top1_battles": _battles_until_stays_true(top1_ok, every, horizon),
        "top5_battles": _battles_until_stays_true(top5_ok, every, horizon),
        "top1_found": bool(top1_ok[-1]),
        "tau": tau,
        "z_scores": z_scores,
        "z_design": z_design,
        "max_pair_share": float(counts.max() / horizon),
        "pairs_never_compared": never,
    }


def _battles_until_stays_true(correct: list[bool], every: int, horizon: int) -> int:
    """Battles from which the answer is right at every later checkpoint (the horizon if wrong at the end)."""
    if not correct[-1]:
        return horizon
    wrong = [k for k, ok in enumerate(correct) if not ok]
    return every * ((wrong[-1] + 1 if wrong else 0) + 1)


def _run_seed(task: tuple[int, float, int, dict]) -> dict:
    n_models, tie_rate, seed, sizes = task
    setting_key = [n_models, round(tie_rate * 100), seed]
    population = population_for(n_models, tie_rate, seed=np.random.SeedSequence([*setting_key, 0]))
    draws = np.random.default_rng(np.random.SeedSequence([*setting_key, 3])).random(
        (n_models, n_models, OUTCOME_STREAM)
    )
    return {
        policy: simulate(
            population,
            policy=policy,
            sizes=sizes,
            seed=np.random.SeedSequence([*setting_key, arm]),
            outcome_draws=draws,
        )
        for arm, policy in ((1, "matchmaker"), (2, "uniform"))
    }


def _geometric_mean_ratio(numerator: np.ndarray, denominator: np.ndarray) -> float:
    return float(np.exp(np.mean(np.log(numerator / denominator))))


def _summarise(runs: list[dict], sizes: dict) -> dict:
    """Paired figures of one setting over its seeds."""
    ours = [run["matchmaker"] for run in runs]
    uniform = [run["uniform"] for run in runs]

    def column(arm: list[dict], key: str) -> np.ndarray:
        return np.array([run[key] for run in arm], dtype=float)

    top1_ours, top1_uniform = column(ours, "top1_battles"), column(uniform, "top1_battles")
    half = len(runs) // 2
    summary = {
        "top1_ratio": _geometric_mean_ratio(top1_ours, top1_uniform),
        "top1_ratio_halves": [
            _geometric_mean_ratio(top1_ours[:half], top1_uniform[:half]),
            _geometric_mean_ratio(top1_ours[half:], top1_uniform[half:]),
        ],
        "top1_median_battles": {
            "matchmaker": float(np.median(top1_ours)),
            "uniform": float(np.median(top1_uniform)),
        },
        "top1_found_share": {
            "matchmaker": float(column(ours, "top1_found").mean()),
            "uniform": float(column(uniform, "top1_found").mean()),
        },
        "top5_ratio": _geometric_mean_ratio(column(ours, "top5_battles"), column(uniform, "top5_battles")),
        "top5_median_battles": {
            "matchmaker": float(np.median(column(ours, "top5_battles"))),
            "uniform": float(np.median(column(uniform, "top5_battles"))),
        },
        "tau": {},
        "z_sd": {},
        "max_pair_share": {
            "matchmaker": float(column(ours, "max_pair_share").max()),
            "uniform": float(column(uniform, "max_pair_share").max()),
        },
        "pairs_never_compared_mean": {},
    }
    a, b = summary["top1_ratio_halves"]
    summary["top1_ratio_halves_disagreement"] = abs(math.log(a / b))
    log_ratio = np.log(top1_ours / top1_uniform)
    summary["top1_log_ratio_se"] = (
        float(log_ratio.std(ddof=1) / math.sqrt(len(runs))) if len(runs) > 1 else 0.0
    )
    # How far apart two runs of this many seeds are expected to be (sd of the difference of their logs).
    summary["top1_two_runs_sd"] = math.sqrt(2) * summary["top1_log_ratio_se"]
    for budget in sizes["budgets"]:
        tau_ours = np.array([run["tau"][budget] for run in ours])
        tau_uniform = np.array([run["tau"][budget] for run in uniform])
        difference = tau_ours - tau_uniform
        summary["tau"][budget] = {
            "matchmaker": float(tau_ours.mean()),
            "uniform": float(tau_uniform.mean()),
            "delta": float(difference.mean()),
            "delta_se": float(difference.std(ddof=1) / math.sqrt(len(difference)))
            if len(difference) > 1
            else 0.0,
        }
        summary["pairs_never_compared_mean"][budget] = {
            arm_name: float(np.mean([run["pairs_never_compared"][budget] for run in arm]))
            for arm_name, arm in (("matchmaker", ours), ("uniform", uniform))
        }
        for name, key in (("z_sd", "z_scores"), ("z_sd_design", "z_design")):
            summary.setdefault(name, {})[budget] = {
                arm_name: float(np.sqrt(np.mean(np.concatenate([run[key][budget] for run in arm]) ** 2)))
                for arm_name, arm in (("matchmaker", ours), ("uniform", uniform))
            }
    return summary


def _passes(value: float, rule: tuple[str, float]) -> bool:
    comparison, limit = rule
    return value <= limit if comparison == "<=" else value >= limit


def run(*, quick: bool, **overrides) -> dict:
    """`bench matchmaking`: every setting's paired figures, the worst of each over settings, the targets.

    ``overrides`` replace sizes (``models``, ``tie_rates``, ``seeds``, ...) or pass other policy settings
    to the matchmaker arm, for exploring the trade-offs from a shell, e.g. top-two sampling alone:
    ``run(quick=False, models=(20,), tie_rates=(0.65,), matchmaker_settings={"top_two_share": 0.9,
    "top_two_focus": 1.0, "top_two_contenders": 100, "max_pair_probability": 0.3})``.
    """
    sizes = QUICK if quick else FULL
    unknown = set(overrides) - set(sizes) - {"matchmaker_settings"}
    if unknown:
        raise ValueError(f"unknown benchmark sizes: {sorted(unknown)}")
    sizes = {**sizes, **overrides}
    if sizes["seeds"] < 2:
        raise ValueError("the benchmark needs at least 2 seeds: it compares two halves of them")
    # The biggest first, so that the two processes finish together.
    tasks = [
        (n_models, tie_rate, seed, sizes)
        for n_models in sorted(sizes["models"], reverse=True)
        for tie_rate in sizes["tie_rates"]
        for seed in range(sizes["seeds"])
    ]
    start = time.perf_counter()
    results = seeds_map(_run_seed, tasks, processes=1 if quick else max(2, os.cpu_count() or 2))
    settings = {}
    for n_models in sizes["models"]:
        for tie_rate in sizes["tie_rates"]:
            runs = [r for task, r in zip(tasks, results, strict=True) if task[:2] == (n_models, tie_rate)]
            settings[f"{n_models}_models_{round(tie_rate * 100)}pct_ties"] = _summarise(runs, sizes)
    z_all = [v["matchmaker"] for s in settings.values() for v in s["z_sd"].values()]
    z_design = [v["matchmaker"] for s in settings.values() for v in s["z_sd_design"].values()]
    last = sizes["budgets"][-1]
    headline = {
        "top1_ratio": max(s["top1_ratio"] for s in settings.values()),
        "top5_ratio": max(s["top5_ratio"] for s in settings.values()),
        "tau_delta_min": min(t["delta"] for s in settings.values() for t in s["tau"].values()),
        "z_sd": max(z_all, key=lambda z: abs(z - 1)),
        "z_sd_design": max(z_design, key=lambda z: abs(z - 1)),
        "max_pair_share": max(s["max_pair_share"]["matchmaker"] for s in settings.values()),
        "pairs_never_compared_max_mean": max(
            s["pairs_never_compared_mean"][last]["matchmaker"] for s in settings.values()
        ),
        "top1_ratio_halves_disagreement_max": max(
            s["top1_ratio_halves_disagreement"] for s in settings.values()
        ),
        "top1_two_runs_sd_max": max(s["top1_two_runs_sd"] for s in settings.values()),
    }
    checks = {
        "tau_delta_min": _passes(headline["tau_delta_min"], TARGETS["tau_delta_min"]),
        "z_sd": _passes(min(z_all), TARGETS["z_sd_low"]) and _passes(max(z_all), TARGETS["z_sd_high"]),
        "max_pair_share": _passes(headline["max_pair_share"], TARGETS["max_pair_share"]),
    }
    # Every board a battle feeds, in simulated studies (issue 18): its own sizes, quick or full.
    boards = matchmaking_boards.run(quick=quick)
    for name in ("all_boards_announce_ratio", "pooled_announce_ratio", "wrong_announcement_rate"):
        headline[name] = boards[name]
    checks.update({f"boards_{name}": passed for name, passed in boards["passed"].items()})
    return {
        **headline,
        "targets": {name: f"{rule[0]} {rule[1]}" for name, rule in TARGETS.items()},
        "passed": checks,
        "all_passed": all(checks.values()),
        "boards": boards,
        "settings": settings,
        "sizes": {k: list(v) if isinstance(v, tuple) else v for k, v in sizes.items()},
        "seconds": time.perf_counter() - start,
    }
