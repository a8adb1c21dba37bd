"""Matchmaking for every board, in simulated studies: the combined choice against uniform pairs.

Part of ``python manage.py bench matchmaking --json [--quick]`` (``bench.matchmaking.run`` adds this
module's figures). No Django: it drives ``stats.matchmaker.Matchmaker`` and ``stats.board_mix`` exactly as
``tournaments.matchmaking`` does (one matchmaker per board and dimension, each board's need from the
same goal and weights, the need-weighted mixture of their distributions).

The simulated study
-------------------
* Models: ``MODELS`` models (``run(models=...)`` for more) with skills spread over about 300 Elo on
  Overall, the runner-up ``TOP_GAP_ELO`` behind the best and the third as far again; each other
  dimension is Overall plus an independent jitter of 30 Elo per model.
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
  raters. As on the site, the matchmakers see the votes in batches (every ``REFRESH`` battles: the
  site refills its queues every 20 s), and a rater's pair is drawn as ``tournaments.matchmaking`` draws
  it: each of the rater's four boards offers its slot (the mixture of its dimensions' distributions
  weighted by their needs, with the board's battles in flight counted), restricted to the pairs the
  rater has not had and renormalised; the boards are weighted by need times rarity
  (``stats.board_mix.board_rarity``, exponent ``rarity``); and the combined distribution is capped
  as the site caps it (``stats.board_mix.pair_cap`` of ``mixture_cap``: the site's default 5%; 0 for
  no cap). The uniform policy draws any pair the rater has not had. Both run on the
  same raters and, by common random numbers, the same outcome for a rater's k-th battle.

Figures (paired seed by seed)
-----------------------------
Every ``checkpoint`` battles each board's favourite on Overall and its P(best) are recorded; a board
*announces* at the first checkpoint where that P(best) >= 0.95 (:func:`announcements`, optionally only
once the board has ``min_battles`` battles), and keeps its first announcement.

Censoring is reported, not hidden: the smallest groups (1.6% of raters) get about 130 battles in 8,000,
far too few to tell two models 60 Elo apart at 95%, so in both arms some boards have not announced by
the horizon. Battles to announce are censored at the horizon, and:

* ``all_boards_announce_ratio``: battles until every Overall board (pooled and the 22 groups) has
  announced, new / uniform, median over seeds, with a board not announced counted at the horizon;
  ``all_boards_censored`` gives, per policy, the share of seeds where some board had not announced
  (where both are censored the ratio is 1 by construction and says nothing);
* ``pooled_announce_ratio``: the same for the pooled board alone (geometric mean over seeds) and
  ``pooled_censored``;
* ``restricted_mean_announce_ratio``: the restricted mean of battles to announce (each board's
  battles to announce capped at the horizon, summed over boards and seeds), new / uniform: every board
  counts, and a board announced sooner counts even when others are censored;
* ``boards_announced_share``: per budget, the share of (seed, board) announced by then, per policy;
* ``wrong_announcement_rate``: share of announcements naming a model that is not the board's true
  best, per policy (``announcements``: how many there were);
* ``tau_delta_min``: at each budget, Kendall tau of every board and dimension with its truth, paired
  difference new - uniform averaged over seeds; the worst over boards, dimensions and budgets, with its
  standard error and place; ``tau_deltas_significantly_negative`` counts the differences more than two
  standard errors below zero, ``tau_delta_min_pooled`` is the worst on the pooled board, and
  ``tau_delta_min_if_no_effect`` what the worst would read if neither policy were better on any board
  (:func:`worst_of_noise`, from the cells' own standard errors);
* ``z_sd``: sd of ``(estimated - true difference) / posterior sd`` over the pooled Overall board's
  pairs at the horizon, new policy (the truth being the base skills shrunk to what the tie and
  careless-rater model leaves visible, the Bradley-Terry-Davidson fit to the exact outcome
  probabilities);
* ``max_pair_share``: the busiest pair's share of all battles, new policy (and uniform's);
* ``closest_leaders_elo``: over the seeds, the median (and the shares under 5 and 10 Elo) of the
  smallest gap between a board's true best and second-best model on Overall: the board that decides
  ``all_boards_announce_ratio`` (:meth:`Study.closest_leaders_elo`);
* ``top1_stays_ratio`` (no target): battles until the pooled Overall leader is the true best at every
  later checkpoint, new / uniform;
* ``two_halves``: the three announcement ratios on each half of the seeds, and whether they agree
  within 10%.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from bench.parallel import seeds_map
from stats.board_mix import Goal, Weights, board_need, board_rarity, mixture_weights, pair_cap
from stats.census import PRESETS
from stats.matchmaker import Matchmaker, capped

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
OUTCOME_COLUMN = {"a": 0, "b": 1, "tie": 2}
# Battles between two refreshes of the matchmakers' posteriors and needs.
REFRESH = 50
# Policy settings of the new arm (each can be overridden in ``run``).
RARITY = 0.0
MIXTURE_CAP = 0.05  # the site's default matchmaking_pair_cap (0: no cap on the mixture)
# The site's POPULUS_MIN_ANNOUNCE_BATTLES: a board announces only once it has this many battles.
MIN_BATTLES = 300
ANNOUNCE_RULES_COMPARED = (0, 300, 600)
FULL = {"seeds": 16, "horizon": 8_000, "checkpoint": 100, "budgets": (2_000, 4_000, 8_000)}
QUICK = {"seeds": 2, "horizon": 600, "checkpoint": 100, "budgets": (300, 600)}
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

    def __init__(self, seed: int, models: int = MODELS):
        rng = np.random.default_rng([seed, 1])
        self.groups = groups()
        self.pairs = [(i, j) for i in range(models) for j in range(i + 1, models)]
        n, d = models, len(TIE_RATES)
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

    def closest_leaders_elo(self) -> float:
        """The smallest gap on Overall, in Elo, between a board's true best and second-best model, over
        the pooled board and every group's. Telling two models apart at 95% takes battles in proportion
        to one over the gap squared, so this board decides when every board has announced."""
        return min(float(np.diff(np.sort(truth[0])[-2:])[0]) for truth in self.truth.values()) * ELO_PER_NAT

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
    n, dims = len(study.base[0]), len(TIE_RATES)
    pairs = study.pairs
    boards = [None, *range(len(study.groups))]
    matchmakers = {(b, k): Matchmaker(list(range(n)), seed=[seed, 4]) for b in boards for k in range(dims)}
    pending = {key: np.zeros((len(pairs), 3)) for key in matchmakers}
    raters_on = dict.fromkeys(boards, 0)
    battles_on = dict.fromkeys(boards, 0)
    flying: dict = {b: [] for b in boards}
    counts = np.zeros(len(pairs))
    goal = Goal(threshold=THRESHOLD, **sizes.get("goal", {}))
    weights = Weights(**sizes.get("weights", {}))
    rarity = sizes.get("rarity", RARITY)
    mixture_cap = sizes.get("mixture_cap", MIXTURE_CAP)
    needs_cache: dict = {}
    running: list = []  # (rater, pair index, outcome draws)
    queue: list = []  # raters waiting for their next battle: [groups, careless, met mask, left, skills]
    trajectory: list = []  # (battles, {board: (favourite's P(best), favourite, board's battles)})
    stays: list[bool] = []
    taus: dict = {}
    done = 0

    def refresh() -> None:
        """Hand the votes since the last refresh to the matchmakers (the site's queues are refilled
        every 20 s, so its proposals come from a posterior a few dozen battles old too)."""
        for key, tally in pending.items():
            rows = np.flatnonzero(tally.sum(axis=1))
            if len(rows):
                matchmakers[key].observe_counts((*pairs[r], *tally[r]) for r in rows.tolist())
                tally[:] = 0.0
        needs_cache.clear()

    def dimension_needs(board) -> list[float]:
        if board not in needs_cache:
            needs = []
            for k in range(dims):
                m = matchmakers[(board, k)]
                widest = max(hi - lo for lo, hi in m.intervals().values())
                needs.append(
                    board_need(
                        p_best=max(m.probability_best().values()),
                        models=n,
                        widest_interval=widest,
                        raters=raters_on[board],
                        tie_parameter=m.tie_parameter(),
                        goal=goal,
                        weights=weights,
                    )
                )
            needs_cache[board] = needs
        return needs_cache[board]

    def board_distribution(board) -> np.ndarray:
        """The board's slot: the mixture of its dimensions' distributions (site: ``slots_make``)."""
        parts = [
            np.fromiter(
                matchmakers[(board, k)].pair_distribution(in_flight=flying[board]).values(), float, len(pairs)
            )
            for k in range(dims)
        ]
        return np.array(mixture_weights(dimension_needs(board))) @ np.array(parts)

    def choose(rater_groups: list, allowed: np.ndarray) -> int:
        if policy == "uniform":
            return int(pick_rng.choice(np.flatnonzero(allowed)))
        fed = (None, *rater_groups)
        slots, needs = [], []
        for b in fed:
            slot = board_distribution(b) * allowed
            slots.append(slot / slot.sum())
            needs.append(sum(dimension_needs(b)) * board_rarity(raters_on[None], raters_on[b], rarity))
        combined = np.array(mixture_weights(needs)) @ np.array(slots)
        if mixture_cap:
            kept = np.flatnonzero(allowed)
            cap = pair_cap(mixture_cap, pairs=len(pairs), allowed=len(kept))
            combined[kept] = capped(combined[kept], cap, 0.0)
        return int(pick_rng.choice(len(pairs), p=combined / combined.sum()))

    def start() -> None:
        if not queue:
            rater_groups, careless = study.rater(rng)
            for b in (None, *rater_groups):
                raters_on[b] += 1
            skills = study.base + study.offsets[rater_groups].sum(axis=0)
            queue.append([rater_groups, careless, np.ones(len(pairs), dtype=bool), BATTLES_PER_RATER, skills])
        rater = queue.pop(0)
        rater_groups, _, allowed, _, _ = rater
        pair = choose(rater_groups, allowed)
        allowed[pair] = False
        rater[3] -= 1
        for b in (None, *rater_groups):
            flying[b].append(pairs[pair])
        running.append((rater, pair, rng.random((dims, 2))))

    def checkpoint() -> None:
        refresh()
        readings = {}
        for b in boards:
            p_best = matchmakers[(b, 0)].probability_best()
            top = max(p_best, key=p_best.get)
            readings["pooled" if b is None else b] = (p_best[top], top, battles_on[b])
        trajectory.append((done, readings))
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
        order = set(pick_rng.permutation(len(running))[:ARRIVALS].tolist())
        finished = [r for i, r in enumerate(running) if i in order]
        running[:] = [r for i, r in enumerate(running) if i not in order]
        for rater, pair, draws in finished:
            rater_groups, careless, _, left, skills = rater
            a, b = pairs[pair]
            counts[pair] += 1
            outcomes = [
                OUTCOME_COLUMN[_outcome(skills[k][a], skills[k][b], TIE_RATES[k], careless, *draws[k])]
                for k in range(dims)
            ]
            for board in (None, *rater_groups):
                flying[board].remove(pairs[pair])
                battles_on[board] += 1
                for k in range(dims):
                    pending[(board, k)][pair, outcomes[k]] += 1
            if left > 0:
                queue.append(rater)
            done += 1
            if done % sizes["checkpoint"] == 0:
                checkpoint()
            elif done % REFRESH == 0:
                refresh()
        for _ in finished:
            start()
    refresh()
    pooled = matchmakers[(None, 0)]
    target = _pseudo_true(study.base[0], TIE_RATES[0])
    mean, covariance = pooled.posterior()
    first, second = np.triu_indices(n, 1)
    sd = np.sqrt(covariance[first, first] + covariance[second, second] - 2 * covariance[first, second])
    z = ((mean[first] - mean[second]) - (target[first] - target[second])) / sd
    return {
        "trajectory": trajectory,
        "truth": {("pooled" if b is None else b): int(np.argmax(t[0])) for b, t in study.truth.items()},
        "stays": stays,
        "taus": taus,
        "z": z.tolist(),
        "max_pair_share": float(counts.max() / done),
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


def announcements(result: dict, *, min_battles: int = 0) -> dict:
    """Each board's first announcement: {board: (battles, whether it names the true best)}. A board
    announces at the first checkpoint where its favourite's P(best) >= THRESHOLD, once it has counted
    at least ``min_battles`` battles (it keeps its first announcement)."""
    announced = {}
    for done, readings in result["trajectory"]:
        for board, (p_best, top, battles) in readings.items():
            if board not in announced and p_best >= THRESHOLD and battles >= min_battles:
                announced[board] = (done, top == result["truth"][board])
    return announced


def _stays_time(stays: list[bool], every: int, horizon: int) -> int:
    for k in range(len(stays)):
        if all(stays[k:]):
            return (k + 1) * every
    return horizon


def _gm_ratio(new: list[float], old: list[float]) -> float:
    return float(np.exp(np.mean(np.log(np.array(new) / np.array(old)))))


def worst_of_noise(errors: list[float], draws: int = 2_000) -> float:
    """What ``tau_delta_min`` would read if no policy made any difference: the median, over ``draws``
    repetitions, of the smallest of one Normal(0, se) draw per compared cell. The worst of some two
    hundred noisy differences lies well below zero whatever the policy does."""
    if not errors:
        return 0.0
    rng = np.random.default_rng(0)
    return float(np.median((rng.standard_normal((draws, len(errors))) * np.array(errors)).min(axis=1)))


def _passes(value: float, rule: tuple[str, float]) -> bool:
    comparison, limit = rule
    return value <= limit if comparison == "<=" else value >= limit


def _seed(task: tuple[int, dict]) -> dict:
    seed, sizes = task
    study = Study(seed, sizes.get("models", MODELS))
    return {p: simulate(study, policy=p, sizes=sizes, seed=seed) for p in ("new", "uniform")}


def _announce_figures(per_seed: list[dict], horizon: int, budgets, min_battles: int) -> dict:
    """Battles to announce, censored at the horizon, and the ratios and shares built on them."""
    all_boards = ["pooled", *range(len(groups()))]
    times = {
        p: [
            [announced.get(b, (None, None))[0] for b in all_boards]
            for announced in (announcements(r[p], min_battles=min_battles) for r in per_seed)
        ]
        for p in ("new", "uniform")
    }
    every = {p: [None if None in seed else max(seed) for seed in times[p]] for p in times}
    pooled = {p: [seed[0] for seed in times[p]] for p in times}

    def capped_at_horizon(values):
        return [horizon if t is None else t for t in values]

    def censored(values):
        return float(np.mean([t is None for t in values]))

    restricted = {p: [sum(capped_at_horizon(seed)) for seed in times[p]] for p in times}
    return {
        "all_boards_announce_ratio": float(
            np.median(np.array(capped_at_horizon(every["new"])) / capped_at_horizon(every["uniform"]))
        ),
        "all_boards_censored": {p: censored(every[p]) for p in times},
        "pooled_announce_ratio": _gm_ratio(
            capped_at_horizon(pooled["new"]), capped_at_horizon(pooled["uniform"])
        ),
        "pooled_censored": {p: censored(pooled[p]) for p in times},
        "restricted_mean_announce_ratio": float(sum(restricted["new"]) / sum(restricted["uniform"])),
        "boards_announced_share": {
            str(budget): {
                p: float(np.mean([t is not None and t <= budget for seed in times[p] for t in seed]))
                for p in times
            }
            for budget in sorted({*budgets, horizon})
        },
        "wrong_announcement_rate": {
            p: float(
                np.mean(
                    [
                        not ok
                        for r in per_seed
                        for _, ok in announcements(r[p], min_battles=min_battles).values()
                    ]
                    or [0.0]
                )
            )
            for p in times
        },
        "announcements": {p: sum(t is not None for seed in times[p] for t in seed) for p in times},
    }


def run(*, quick: bool = False, processes: int | None = None, **overrides) -> dict:
    """The figures above. ``overrides`` replace sizes (``seeds``, ``first_seed``, ``horizon``,
    ``checkpoint``, ``budgets``, the number of ``models``), set the need weights of the new policy
    (``weights={"intervals": 0.0}``), its ``rarity`` exponent, the ``mixture_cap`` on the combined
    distribution, or the announcement rule's ``min_battles``."""
    sizes = {**(QUICK if quick else FULL), **overrides}
    if sizes["seeds"] < 2:
        raise ValueError("at least 2 seeds: the two halves are compared")
    start = time.perf_counter()
    horizon, every = sizes["horizon"], sizes["checkpoint"]
    if processes is None:
        processes = 1 if quick else max(2, os.cpu_count() or 2)
    first = sizes.get("first_seed", 0)  # another first seed: an independent run, to compare two runs
    tasks = [(seed, sizes) for seed in range(first, first + sizes["seeds"])]
    per_seed = seeds_map(_seed, tasks, processes=processes)
    min_battles = sizes.get("min_battles", MIN_BATTLES)
    announce = _announce_figures(per_seed, horizon, sizes["budgets"], min_battles)
    # The trade-off of a minimum of battles before a board may announce: fewer wrong, later.
    by_rule = {
        str(battles): {
            name: _announce_figures(per_seed, horizon, sizes["budgets"], battles)[name]
            for name in ("wrong_announcement_rate", "announcements", "restricted_mean_announce_ratio")
        }
        for battles in ANNOUNCE_RULES_COMPARED
    }
    half = sizes["seeds"] // 2
    halves = [
        _announce_figures(part, horizon, sizes["budgets"], min_battles)
        for part in (per_seed[:half], per_seed[half:])
    ]
    deltas, errors = {}, {}
    for budget in sizes["budgets"]:
        for key in per_seed[0]["new"]["taus"].get(budget, {}):
            paired = [r["new"]["taus"][budget][key] - r["uniform"]["taus"][budget][key] for r in per_seed]
            deltas[(budget, key)] = float(np.mean(paired))
            errors[(budget, key)] = float(np.std(paired, ddof=1) / math.sqrt(len(paired)))
    worst = min(deltas, key=deltas.get) if deltas else None
    z = np.concatenate([r["new"]["z"] for r in per_seed])
    figures = {
        **announce,
        "by_min_battles": by_rule,
        "tau_delta_min": deltas[worst] if deltas else 0.0,
        "tau_delta_min_se": errors[worst] if deltas else 0.0,
        "tau_delta_min_where": {"budget": worst[0], "board": worst[1][0], "dimension": worst[1][1]}
        if deltas
        else None,
        "tau_delta_mean": float(np.mean(list(deltas.values()))) if deltas else 0.0,
        # Paired differences more than two standard errors below zero (of len(deltas) compared).
        "tau_deltas_significantly_negative": sum(deltas[k] < -2 * errors[k] for k in deltas),
        "tau_deltas_compared": len(deltas),
        "tau_delta_min_pooled": min((v for (_, (b, _)), v in deltas.items() if b is None), default=0.0),
        "tau_delta_min_if_no_effect": worst_of_noise(list(errors.values())),
        "z_sd": float(np.std(z)),
        "max_pair_share": max(r["new"]["max_pair_share"] for r in per_seed),
        "max_pair_share_uniform": max(r["uniform"]["max_pair_share"] for r in per_seed),
        "top1_stays_ratio": _gm_ratio(
            [_stays_time(r["new"]["stays"], every, horizon) for r in per_seed],
            [_stays_time(r["uniform"]["stays"], every, horizon) for r in per_seed],
        ),
        "two_halves": {
            name: [h[name] for h in halves]
            for name in (
                "all_boards_announce_ratio",
                "pooled_announce_ratio",
                "restricted_mean_announce_ratio",
            )
        },
    }
    gaps = [Study(seed, sizes.get("models", MODELS)).closest_leaders_elo() for seed, _ in tasks]
    figures["closest_leaders_elo"] = {
        "median": float(np.median(gaps)),
        "under_5_elo": float(np.mean(np.array(gaps) < 5)),
        "under_10_elo": float(np.mean(np.array(gaps) < 10)),
    }
    figures["two_halves_agree_within_10pct"] = {
        name: abs(a - b) <= 0.1 * max(a, b) for name, (a, b) in figures["two_halves"].items()
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
