"""Matchmaking for every board, in simulated studies: the combined choice against uniform pairs.

Part of ``python manage.py bench matchmaking --json [--quick]`` (``bench.matchmaking.run`` adds this
module's figures). No Django: it drives ``stats.matchmaker.Matchmaker`` and ``stats.board_mix`` exactly as
``tournaments.matchmaking`` does (one matchmaker per board and dimension, each board's need from the
same goal and weights, the need-weighted mixture of their distributions).

The simulated study
-------------------
* Models: ``MODELS`` models with skills spread over about 300 Elo on Overall, the runner-up
  ``TOP_GAP_ELO`` behind the best and the third as far again; each other dimension is Overall plus an
  independent jitter of 30 Elo per model.
* Raters arrive one after another with demographics drawn from the census shares of ``stats.census``:
  a country (US 60%, UK 40%), then one group on each of its three axes (age, ethnicity, politics): 22
  groups in all. Each group has an offset per model and dimension (sd ``OFFSET_ELO``, centred within
  its axis by the shares, so the pooled board's truth is the base skills); in a third of the groups the
  second or third model gets ``REORDER_ELO`` more, enough to reorder the top three on that group's
  board. A rater's skills are the base plus their three groups' offsets. A group board's truth is the
  base plus that group's offset (the other axes' offsets average out within it).
* Each rater does ``BATTLES_PER_RATER`` battles, never the same pair twice; ``CARELESS_SHARE`` of the
  raters vote at random on every dimension. Each dimension has its own tie rate (``TIE_RATES``: 10%,
  35%, 65%): a share of "both fine" ties whatever the skills, then Bradley-Terry.
* ``IN_FLIGHT`` battles are always running: results arrive ``ARRIVALS`` at a time, then as many new
  battles start, each proposal counting every running battle of the boards concerned as in flight.
* Boards: pooled and one per group, on every dimension; each is a ``Matchmaker`` fed the votes of its
  raters. The new policy draws a rater's pair from the mixture over their four boards and every
  dimension, weighted by need (``stats.board_mix`` with its default goal, weights and the leader
  threshold 0.95); the uniform policy draws any pair the rater has not had. Both run on the same raters
  and, by common random numbers, the same outcome for a rater's k-th battle.

Figures (paired seed by seed)
-----------------------------
Every ``CHECKPOINT`` battles each Overall board's P(best) is read: a board *announces* at the first
checkpoint where its favourite's P(best) >= 0.95 (and keeps its first announcement).

* ``all_boards_announce_ratio``: battles until every Overall board (pooled and the 22 groups) has
  announced, new / uniform, geometric mean over seeds; a board that has not announced by the horizon
  counts the horizon (censored: the ratio is then biased towards 1). ``pooled_announce_ratio``: the
  same for the pooled board alone; ``boards_announced_share``: the share of boards announced by the
  horizon, per policy;
* ``wrong_announcement_rate``: share of announcements naming a model that is not the board's true
  best, per policy;
* ``tau_delta_min``: at each budget, Kendall tau of every board and dimension with its truth, paired
  difference new - uniform averaged over seeds; the worst over boards, dimensions and budgets (and the
  mean, ``tau_delta_mean``);
* ``z_sd``: sd of ``(estimated - true difference) / posterior sd`` over the pooled Overall board's
  pairs at the last budget, new policy (the truth being the base skills shrunk to what the tie and
  careless-rater model leaves visible, the Bradley-Terry-Davidson fit to the exact outcome
  probabilities);
* ``max_pair_share``: the busiest pair's share of all battles, new policy;
* ``top1_stays_ratio`` (no target): battles until the pooled Overall leader is the true best at every
  later checkpoint, new / uniform;
* ``two_runs_agreement``: ``all_boards_announce_ratio`` on each half of the seeds.
"""

from __future__ import annotations

import math
import time

import numpy as np

from stats.board_mix import Goal, Weights, board_need, mixture
from stats.census import PRESETS
from stats.matchmaker import Matchmaker

ELO_PER_NAT = 400 / math.log(10)
MODELS = 8
TOP_GAP_ELO = 60.0
OFFSET_ELO = 20.0
REORDER_ELO = 90.0
TIE_RATES = (0.10, 0.35, 0.65)  # Overall first
COUNTRY_SHARES = {"US": 0.6, "UK": 0.4}
BATTLES_PER_RATER = 10
CARELESS_SHARE = 0.15
IN_FLIGHT = 50
ARRIVALS = 10
THRESHOLD = 0.95
FULL = {"seeds": 8, "horizon": 4_000, "checkpoint": 100, "budgets": (1_000, 2_000, 4_000)}
QUICK = {"seeds": 2, "horizon": 200, "checkpoint": 50, "budgets": (100, 200)}
TARGETS = {
    "all_boards_announce_ratio": ("<=", 0.6),
    "pooled_announce_ratio": ("<=", 0.6),
    "wrong_announcement_rate": ("<=", 0.05),
    "tau_delta_min": (">=", -0.02),
    "z_sd_low": (">=", 0.8),
    "z_sd_high": ("<=", 1.25),
    "max_pair_share": ("<=", 0.05),
}


def groups() -> list[tuple[str, str, str, float]]:
    """(country, axis, label, share within the country's axis) of the 22 census groups."""
    return [
        (country, axis, label, share)
        for country in COUNTRY_SHARES
        for axis, preset in PRESETS[country].items()
        for label, share in preset.shares.items()
    ]


class Study:
    """One seed's world: skills per dimension, group offsets, the truth of every board."""

    def __init__(self, seed: int):
        rng = np.random.default_rng([seed, 1])
        self.groups = groups()
        n, d = MODELS, len(TIE_RATES)
        base = np.sort(rng.uniform(0, 300 - 2 * TOP_GAP_ELO, n))[::-1]
        base[:3] = [300.0, 300.0 - TOP_GAP_ELO, 300.0 - 2 * TOP_GAP_ELO]
        base = np.sort(base)[::-1]
        self.base = np.stack([base + (rng.normal(0, 30, n) if k else 0) for k in range(d)]) / ELO_PER_NAT
        offsets = rng.normal(0, OFFSET_ELO, (len(self.groups), d, n))
        reorder = rng.permutation(len(self.groups))[: len(self.groups) // 3]
        for g in reorder:
            offsets[g, :, 1 + g % 2] += REORDER_ELO
        # Centre within each (country, axis) by the shares, so the pooled truth is the base skills.
        for key in {(c, a) for c, a, _, _ in self.groups}:
            members = [g for g, (c, a, _, _) in enumerate(self.groups) if (c, a) == key]
            shares = np.array([self.groups[g][3] for g in members])
            offsets[members] -= np.tensordot(shares / shares.sum(), offsets[members], axes=1)
        self.offsets = offsets / ELO_PER_NAT
        self.truth = {None: self.base, **{g: self.base + self.offsets[g] for g in range(len(self.groups))}}

    def rater(self, rng) -> tuple[list[int], bool]:
        """A new rater's three groups (one per axis of one country) and whether they are careless."""
        country = rng.choice(list(COUNTRY_SHARES), p=list(COUNTRY_SHARES.values()))
        chosen = []
        for axis in PRESETS[country]:
            members = [g for g, (c, a, _, _) in enumerate(self.groups) if (c, a) == (country, axis)]
            shares = np.array([self.groups[g][3] for g in members])
            chosen.append(int(rng.choice(members, p=shares / shares.sum())))
        return chosen, bool(rng.random() < CARELESS_SHARE)


def _outcome(skills_a: float, skills_b: float, tie_rate: float, careless: bool, u: float, v: float) -> str:
    if careless:
        return ("a", "b", "tie")[min(int(u * 3), 2)]
    if u < tie_rate:
        return "tie"
    return "a" if v < 1 / (1 + math.exp(skills_b - skills_a)) else "b"


def _kendall(estimate: np.ndarray, truth: np.ndarray) -> float:
    first, second = np.triu_indices(len(truth), 1)
    return float(np.mean(np.sign(estimate[first] - estimate[second]) * np.sign(truth[first] - truth[second])))


def simulate(study: Study, *, policy: str, sizes: dict, seed: int) -> dict:
    """One policy on one seed's study: announcements, taus at the budgets, z-scores, pair counts."""
    rng = np.random.default_rng([seed, 2])  # the same raters and outcome draws for both policies
    pick_rng = np.random.default_rng([seed, 3, policy == "new"])
    n, dims = MODELS, len(TIE_RATES)
    boards = [None, *range(len(study.groups))]
    matchmakers = {(b, k): Matchmaker(list(range(n)), seed=[seed, 4]) for b in boards for k in range(dims)}
    raters_on = dict.fromkeys(boards, 0)
    flying: dict = {b: [] for b in boards}
    pairs_all = [(i, j) for i in range(n) for j in range(i + 1, n)]
    counts = dict.fromkeys(pairs_all, 0)
    goal = Goal(threshold=THRESHOLD)
    weights = Weights(**sizes.get("weights", {}))
    needs_cache: dict = {}
    running: list = []  # (rater, pair, outcome draws)
    queue: list = []  # raters waiting for their next battle: [groups, careless, met, left]
    announced: dict = {}
    stays: list[bool] = []
    taus: dict = {}
    z: list[float] = []
    done = 0

    def need_of(board, k) -> float:
        key = (board, k)
        if key not in needs_cache:
            m = matchmakers[key]
            widest = max(hi - lo for lo, hi in m.intervals().values())
            needs_cache[key] = board_need(
                p_best=max(m.probability_best().values()),
                models=n,
                widest_interval=widest,
                raters=raters_on[board],
                tie_parameter=m.tie_parameter(),
                goal=goal,
                weights=weights,
            )
        return needs_cache[key]

    def start() -> None:
        if not queue:
            rater_groups, careless = study.rater(rng)
            for b in (None, *rater_groups):
                raters_on[b] += 1
            queue.append([rater_groups, careless, set(), BATTLES_PER_RATER])
        rater = queue.pop(0)
        rater_groups, careless, met, _ = rater
        allowed = [p for p in pairs_all if p not in met]
        if policy == "uniform":
            pair = allowed[pick_rng.integers(len(allowed))]
        else:
            parts, needs = [], []
            for b in (None, *rater_groups):
                for k in range(dims):
                    parts.append(
                        matchmakers[(b, k)].pair_distribution(exclude_pairs=met, in_flight=flying[b])
                    )
                    needs.append(need_of(b, k))
            combined = mixture(parts, needs)
            keys = list(combined)
            pair = keys[
                pick_rng.choice(len(keys), p=np.array(list(combined.values())) / sum(combined.values()))
            ]
        met.add(pair)
        rater[3] -= 1
        for b in (None, *rater_groups):
            flying[b].append(pair)
        running.append((rater, pair, rng.random((dims, 2))))

    def checkpoint() -> None:
        for b in boards:
            m = matchmakers[(b, 0)]
            if b not in announced:
                p_best = m.probability_best()
                top = max(p_best, key=p_best.get)
                if p_best[top] >= THRESHOLD:
                    announced[b] = (done, top == int(np.argmax(study.truth[b][0])))
        stays.append(matchmakers[(None, 0)].ranking()[0] == int(np.argmax(study.base[0])))
        if done in sizes["budgets"]:
            taus[done] = {
                (b, k): _kendall(matchmakers[(b, k)].posterior()[0], study.truth[b][k])
                for b in boards
                for k in range(dims)
            }

    for _ in range(IN_FLIGHT):
        start()
    while done < sizes["horizon"]:
        order = pick_rng.permutation(len(running))[:ARRIVALS]
        finished = [running[i] for i in order]
        running[:] = [r for i, r in enumerate(running) if i not in set(order.tolist())]
        for rater, pair, draws in finished:
            rater_groups, careless, _, left = rater
            skills = [study.base[k] + study.offsets[rater_groups].sum(axis=0)[k] for k in range(dims)]
            counts[pair] += 1
            for b in (None, *rater_groups):
                flying[b].remove(pair)
                for k in range(dims):
                    outcome = _outcome(
                        skills[k][pair[0]], skills[k][pair[1]], TIE_RATES[k], careless, *draws[k]
                    )
                    matchmakers[(b, k)].observe(pair[0], pair[1], outcome)
            if left > 0:
                queue.append(rater)
            done += 1
            if done % sizes["checkpoint"] == 0:
                checkpoint()
        needs_cache.clear()
        for _ in finished:
            start()
    pooled = matchmakers[(None, 0)]
    target = _pseudo_true(study.base[0], TIE_RATES[0])
    mean, covariance = pooled.posterior()
    first, second = np.triu_indices(n, 1)
    sd = np.sqrt(covariance[first, first] + covariance[second, second] - 2 * covariance[first, second])
    z = ((mean[first] - mean[second]) - (target[first] - target[second])) / sd
    return {
        "announced": {("pooled" if b is None else b): v for b, v in announced.items()},
        "stays": stays,
        "taus": taus,
        "z": z.tolist(),
        "max_pair_share": max(counts.values()) / done,
    }


def _pseudo_true(skills: np.ndarray, tie_rate: float) -> np.ndarray:
    """The Bradley-Terry-Davidson skills closest to the simulated outcome model (ties whatever the
    skills, careless raters), fitted to the exact outcome probabilities of every pair."""
    n = len(skills)
    fit = Matchmaker(list(range(n)), prior_sd=100.0)
    rows = []
    for i in range(n):
        for j in range(i + 1, n):
            win = 1 / (1 + math.exp(skills[j] - skills[i]))
            judged = 1 - CARELESS_SHARE
            p_tie = CARELESS_SHARE / 3 + judged * tie_rate
            p_a = CARELESS_SHARE / 3 + judged * (1 - tie_rate) * win
            p_b = 1 - p_tie - p_a
            rows.append((i, j, 1e6 * p_a, 1e6 * p_b, 1e6 * p_tie))
    fit.observe_counts(rows)
    mean, _ = fit.posterior()
    return mean


def _announce_time(result: dict, boards: list, horizon: int) -> float:
    return max(result["announced"].get(b, (horizon, None))[0] for b in boards)


def _stays_time(stays: list[bool], every: int, horizon: int) -> int:
    for k in range(len(stays)):
        if all(stays[k:]):
            return (k + 1) * every
    return horizon


def _gm_ratio(new: list[float], old: list[float]) -> float:
    return float(np.exp(np.mean(np.log(np.array(new) / np.array(old)))))


def _passes(value: float, rule: tuple[str, float]) -> bool:
    comparison, limit = rule
    return value <= limit if comparison == "<=" else value >= limit


def run(*, quick: bool = False, **overrides) -> dict:
    """The figures above. ``overrides`` replace sizes (``seeds``, ``horizon``, ``checkpoint``,
    ``budgets``) or set the need weights of the new policy (``weights={"intervals": 0.0}``)."""
    sizes = {**(QUICK if quick else FULL), **overrides}
    if sizes["seeds"] < 2:
        raise ValueError("at least 2 seeds: the two halves are compared")
    start = time.perf_counter()
    horizon, every = sizes["horizon"], sizes["checkpoint"]
    all_boards = ["pooled", *range(len(groups()))]
    per_seed = []
    for seed in range(sizes["seeds"]):
        study = Study(seed)
        per_seed.append({p: simulate(study, policy=p, sizes=sizes, seed=seed) for p in ("new", "uniform")})

    def times(policy: str, boards: list) -> list[float]:
        return [_announce_time(r[policy], boards, horizon) for r in per_seed]

    def wrong(policy: str) -> float:
        verdicts = [ok for r in per_seed for _, ok in r[policy]["announced"].values()]
        return float(np.mean([not ok for ok in verdicts])) if verdicts else 0.0

    half = sizes["seeds"] // 2
    all_new, all_uniform = times("new", all_boards), times("uniform", all_boards)
    deltas = {}
    for budget in sizes["budgets"]:
        for key in per_seed[0]["new"]["taus"].get(budget, {}):
            deltas[(budget, key)] = float(
                np.mean([r["new"]["taus"][budget][key] - r["uniform"]["taus"][budget][key] for r in per_seed])
            )
    z = np.concatenate([r["new"]["z"] for r in per_seed])
    figures = {
        "all_boards_announce_ratio": _gm_ratio(all_new, all_uniform),
        "pooled_announce_ratio": _gm_ratio(times("new", ["pooled"]), times("uniform", ["pooled"])),
        "boards_announced_share": {
            p: float(np.mean([len(r[p]["announced"]) / len(all_boards) for r in per_seed]))
            for p in ("new", "uniform")
        },
        "wrong_announcement_rate": {p: wrong(p) for p in ("new", "uniform")},
        "tau_delta_min": min(deltas.values()) if deltas else 0.0,
        "tau_delta_mean": float(np.mean(list(deltas.values()))) if deltas else 0.0,
        "z_sd": float(np.std(z)),
        "max_pair_share": max(r["new"]["max_pair_share"] for r in per_seed),
        "top1_stays_ratio": _gm_ratio(
            [_stays_time(r["new"]["stays"], every, horizon) for r in per_seed],
            [_stays_time(r["uniform"]["stays"], every, horizon) for r in per_seed],
        ),
        "two_runs_agreement": [
            _gm_ratio(all_new[:half], all_uniform[:half]),
            _gm_ratio(all_new[half:], all_uniform[half:]),
        ],
    }
    checks = {
        name: _passes(figures[name], TARGETS[name])
        for name in ("all_boards_announce_ratio", "pooled_announce_ratio", "tau_delta_min", "max_pair_share")
    }
    checks["wrong_announcement_rate"] = _passes(
        figures["wrong_announcement_rate"]["new"], TARGETS["wrong_announcement_rate"]
    )
    checks["z_sd"] = _passes(figures["z_sd"], TARGETS["z_sd_low"]) and _passes(
        figures["z_sd"], TARGETS["z_sd_high"]
    )
    return {
        **figures,
        "targets": {name: f"{rule[0]} {rule[1]}" for name, rule in TARGETS.items()},
        "passed": checks,
        "sizes": {k: list(v) if isinstance(v, tuple) else v for k, v in sizes.items()},
        "seconds": time.perf_counter() - start,
    }
