"""Personal leaderboard benchmark: does a visitor's own board predict their own held-out choices?

``python manage.py bench personal --json [--quick]`` calls :func:`run`. No Django: the simulation drives
``stats.personalization`` as the site does.

The simulated population
------------------------
12 models with global skills ~ Normal(0, 0.8^2); two demographic axes (2 and 3 groups), each group with
offsets ~ Normal(0, 0.5^2) per model, so a person's group offsets (one group per axis, summed) have sd
0.5 * sqrt(2) = 0.71 per model; every person has their own taste with sd ``tau_ind`` per model, varied
over the settings (0 is the control). The issue's headline, "individual tastes as large as the group
offsets", is ``tau_ind`` = 0.71: the individual part of a person's skill as large as the group part the
profile board knows (0.5 would be one axis's offsets only, half the variance). Tastes are
low-rank by default: 80% of their variance along two "style" directions shared by the population (a
person's position on them is theirs), 20% independent per model; one setting is fully isotropic.
A comparison ends by Bradley-Terry-Davidson with nu = 0.15, so that about 10% of all answers are ties (the
reference study's rate on Overall, SPEC), careless ones included: 15% of all answers (panel and quiz
alike) are careless, a, b or tie at random.

Each setting is simulated in ``N_WORLDS`` worlds (skills, offsets and style directions drawn afresh, each
fitted on its own panel) with the visitors shared out among them: how much a personal board can gain
depends on how many pairs are close in a world, so one world per run made two runs disagree.

Panel-like studies: ``N_RATERS`` raters, each with 20 battles on random pairs, fitted with
``Population.fit`` (group offsets' tau and the individual sigma both estimated).

Held-out visitors: new people drawn from the same population, with known groups. Each has 20 held-out
pairs (never asked) and answers ``k`` quiz items among the other 46 pairs, chosen by ``person.choose``
(adaptive) or uniformly at random (control); the same pair gets the same answer in both arms (common
random numbers). The held-out choices are scored in expectation over the visitor's true outcome
probabilities (careless share included), which is the mean over infinitely many replays of their
held-out answers and keeps the paired comparison free of answer noise:

* accuracy: the probability that the visitor's answer is the board's most probable outcome;
* log-loss: expected ``-log P(answer)`` under the board's probabilities;

for the pooled board (no groups), the profile board (the visitor's groups), the personal model after
``k`` adaptive or random items, and the oracle (the visitor's true skills: the ceiling any board can
reach with these careless answers and ties; ``oracle_gain_k10`` is its gain over the profile board),
plus Kendall tau of ``person.ranking()`` with the visitor's
true order after every item. Differences are paired over visitors with their standard errors.
``run(taste="known")`` is a diagnostic: the model is told the true covariance of tastes, which
separates what the panel data cannot tell from what ten answers cannot.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from stats.personalization import OUTCOMES, Population, davidson

N_MODELS = 12
THETA_SD = 0.8
GROUP_SD = 0.5
AXES = (("north", "south"), ("young", "middle", "old"))
# The sd per model of a person's summed group offsets: "as large as the group offsets".
GROUP_PART_SD = round(GROUP_SD * math.sqrt(len(AXES)), 2)
LOG_NU = math.log(0.15)
N_WORLDS = 4
CARELESS = 0.15
VOTES_PER_RATER = 20
HELD_OUT_PAIRS = 20
KS = (0, 5, 10, 20)
STYLES = 2
LOW_RANK_SHARE = 0.8
MODELS = [f"model-{k:02d}" for k in range(N_MODELS)]
PAIRS = [(i, j) for i in range(N_MODELS) for j in range(i + 1, N_MODELS)]


def _truth(rng: np.random.Generator, theta: np.ndarray, offsets: dict, tau_ind: float, styles: np.ndarray):
    """A person's groups and skills: global + their groups' offsets + their own taste, of which the
    share ``(styles ** 2).sum(axis=1).mean()`` of the variance lies along the population's few style
    directions (``styles`` is zero for isotropic tastes)."""
    groups = tuple(str(rng.choice(axis)) for axis in AXES)
    low_rank_share = float((styles**2).sum(axis=1).mean())
    own = rng.normal(0.0, tau_ind * math.sqrt(max(1.0 - low_rank_share, 0.0)), N_MODELS)
    own += tau_ind * styles @ rng.standard_normal(styles.shape[1])
    return groups, theta + sum(offsets[g] for g in groups) + own


def _true_probabilities(skills: np.ndarray, i: int, j: int) -> np.ndarray:
    return (1.0 - CARELESS) * davidson(skills[i] - skills[j], LOG_NU) + CARELESS / 3.0


def _answer(skills: np.ndarray, i: int, j: int, uniform: float) -> str:
    cumulative = np.cumsum(_true_probabilities(skills, i, j))
    return OUTCOMES[int(np.searchsorted(cumulative, uniform * cumulative[-1]))]


def _score(predicted: dict[str, float], truth: np.ndarray) -> tuple[float, float]:
    p = np.array([predicted[o] for o in OUTCOMES])
    return float(truth[int(np.argmax(p))]), float(-(truth * np.log(np.clip(p, 1e-12, None))).sum())


@dataclass
class _World:
    theta: np.ndarray
    offsets: dict[str, np.ndarray]
    styles: np.ndarray
    population: Population
    fit_seconds: float


def _world(rng: np.random.Generator, tau_ind: float, low_rank: bool, *, seed: int, n_raters: int, taste: str):
    """One simulated population and its panel, fitted as the site fits it."""
    theta = rng.normal(0.0, THETA_SD, N_MODELS)
    offsets = {g: rng.normal(0.0, GROUP_SD, N_MODELS) for axis in AXES for g in axis}
    # Style directions, scaled so that the low-rank part has variance LOW_RANK_SHARE per model on average.
    styles = rng.standard_normal((N_MODELS, STYLES))
    styles *= math.sqrt(LOW_RANK_SHARE / (styles**2).sum(axis=1).mean()) if low_rank else 0.0
    votes = []
    for rater in range(n_raters):
        groups, skills = _truth(rng, theta, offsets, tau_ind, styles)
        for _ in range(VOTES_PER_RATER):
            i, j = rng.choice(N_MODELS, 2, replace=False)
            votes.append((rater, MODELS[i], MODELS[j], _answer(skills, i, j, rng.random()), groups))
    started = time.perf_counter()
    population = Population.fit(votes, seed=seed, taste="isotropic" if taste == "known" else taste)
    if taste == "known":
        # Diagnostic: the model told the true covariance of tastes, so only the visitor's answers are
        # left to learn; the gap to the estimated covariance is what the panel data cannot tell.
        low_rank_share = float((styles**2).sum(axis=1).mean())
        population.taste = tau_ind**2 * (styles @ styles.T + (1.0 - low_rank_share) * np.eye(N_MODELS))
        population.taste += 0.02**2 * np.eye(N_MODELS)
    return _World(theta, offsets, styles, population, time.perf_counter() - started)


def _held_out_scores(predict, held_out, truths) -> tuple[float, float]:
    """Mean expected accuracy and log-loss of ``predict(model_a, model_b)`` on the held-out pairs."""
    scores = [_score(predict(MODELS[i], MODELS[j]), t) for (i, j), t in zip(held_out, truths, strict=True)]
    return float(np.mean([s[0] for s in scores])), float(np.mean([s[1] for s in scores]))


def _visitor(rng: np.random.Generator, world: _World, tau_ind: float, row: int, accuracy, log_loss, tau):
    """One held-out visitor: fixed boards, then the quiz in both arms; fills row ``row`` of the tables."""
    population = world.population
    groups, skills = _truth(rng, world.theta, world.offsets, tau_ind, world.styles)
    order = rng.permutation(len(PAIRS))
    held_out = [PAIRS[k] for k in order[:HELD_OUT_PAIRS]]
    quiz = [PAIRS[k] for k in order[HELD_OUT_PAIRS:]]
    # Common random numbers: a quiz pair gets the same answer whichever arm asks it.
    uniforms = dict(zip(quiz, rng.random(len(quiz)), strict=True))
    random_order = [quiz[k] for k in rng.permutation(len(quiz))]
    truths = [_true_probabilities(skills, i, j) for i, j in held_out]
    # The oracle knows the visitor's true skills: the ceiling of any personal board.
    fixed = (
        ("pooled", population.pooled_skills(), True),
        ("profile", population.profile_skills(groups), False),
        ("oracle", skills, False),
    )
    for name, board, is_pooled in fixed:
        scored = _held_out_scores(
            lambda a, b, board=board, is_pooled=is_pooled: population.predict_board(
                board, a, b, pooled=is_pooled
            ),
            held_out,
            truths,
        )
        accuracy[name][row, :], log_loss[name][row, :] = scored
    for arm in ("adaptive", "random"):
        person = population.person(groups)
        candidates = list(quiz)
        for asked in range(KS[-1] + 1):
            if asked in KS:
                column = KS.index(asked)
                accuracy[arm][row, column], log_loss[arm][row, column] = _held_out_scores(
                    person.predict, held_out, truths
                )
            tau[arm][row, asked] = scipy_stats.kendalltau(person.skills(), skills).statistic
            if asked == KS[-1]:
                break
            if arm == "adaptive":
                pair = candidates.pop(person.choose([(MODELS[i], MODELS[j]) for i, j in candidates]))
            else:
                pair = random_order[asked]
            person.observe(MODELS[pair[0]], MODELS[pair[1]], _answer(skills, *pair, uniforms[pair]))


def _setting(
    tau_ind: float, low_rank: bool, *, seed: int, n_raters: int, n_visitors: int, taste: str, n_worlds: int
) -> dict:
    rng = np.random.default_rng(seed)
    boards = ("pooled", "profile", "adaptive", "random", "oracle")
    accuracy = {b: np.zeros((n_visitors, len(KS))) for b in boards}
    log_loss = {b: np.zeros((n_visitors, len(KS))) for b in boards}
    tau = {b: np.zeros((n_visitors, KS[-1] + 1)) for b in ("adaptive", "random")}
    worlds = []
    for world_index in range(n_worlds):
        world = _world(rng, tau_ind, low_rank, seed=seed + 1000 * world_index, n_raters=n_raters, taste=taste)
        worlds.append(world)
        for row in range(world_index, n_visitors, n_worlds):
            _visitor(rng, world, tau_ind, row, accuracy, log_loss, tau)

    def mean_se(values: np.ndarray) -> tuple[float, float]:
        return float(values.mean()), float(values.std(ddof=1) / math.sqrt(len(values)))

    table = {}
    for column, k in enumerate(KS):
        row = {}
        for board in boards:
            row[f"acc_{board}"] = round(100 * float(accuracy[board][:, column].mean()), 2)
            row[f"logloss_{board}"] = round(float(log_loss[board][:, column].mean()), 4)
        for arm in ("adaptive", "random"):
            row[f"tau_{arm}"] = round(float(tau[arm][:, k].mean()), 4)
        gain, gain_se = mean_se(100 * (accuracy["adaptive"][:, column] - accuracy["profile"][:, column]))
        row["acc_gain_vs_profile"], row["acc_gain_se"] = round(gain, 2), round(gain_se, 2)
        oracle = 100 * (accuracy["oracle"][:, column] - accuracy["profile"][:, column]).mean()
        row["acc_gain_oracle"] = round(float(oracle), 2)
        table[f"k{k}"] = row
    random_k20 = tau["random"][:, KS[-1]].mean()
    adaptive_curve = tau["adaptive"].mean(axis=0)
    reached = np.flatnonzero(adaptive_curve >= random_k20)
    return {
        "tau_ind": tau_ind,
        "tastes": "low-rank" if low_rank else "isotropic",
        "taste_spread_mean": [
            round(float(np.mean(list(w.population.taste_spread().values()))), 3) for w in worlds
        ],
        "sigma_estimated": [w.population.sigma for w in worlds],
        "taste_scale": [w.population.taste_scale for w in worlds],
        "group_tau_estimated": [round(float(w.population.group_fit.group_prior_sd[0]), 3) for w in worlds],
        "fit_seconds": round(max(w.fit_seconds for w in worlds), 2),
        "by_k": table,
        "acc_gain_k10": table["k10"]["acc_gain_vs_profile"],
        "acc_gain_k10_se": table["k10"]["acc_gain_se"],
        "oracle_gain_k10": table["k10"]["acc_gain_oracle"],
        "items_to_match_random_k20": int(reached[0]) if len(reached) else None,
        "tau_adaptive_curve": [round(float(v), 4) for v in adaptive_curve],
        "tau_random_curve": [round(float(v), 4) for v in tau["random"].mean(axis=0)],
    }


def run(*, quick: bool = False, seed: int = 20261124, taste: str = "covariance") -> dict:
    n_raters, n_visitors, worlds = (150, 24, 2) if quick else (400, 400, N_WORLDS)
    # (individual taste sd, low-rank?): the headline is tastes as large as a person's group offsets.
    headline = (GROUP_PART_SD, True)
    cases = ((0.0, False), headline)
    if not quick:
        cases += ((2 * GROUP_PART_SD, True), (GROUP_PART_SD, False))
    settings = {
        _setting_name(t, low_rank): _setting(
            t,
            low_rank,
            seed=seed + k,
            n_raters=n_raters,
            n_visitors=n_visitors,
            taste=taste,
            n_worlds=worlds,
        )
        for k, (t, low_rank) in enumerate(cases)
    }
    hetero, null = settings[_setting_name(*headline)], settings[_setting_name(0.0, False)]
    return {
        "taste_model": taste,
        "seed": seed,
        "n_raters": n_raters,
        "votes_per_rater": VOTES_PER_RATER,
        "n_visitors": n_visitors,
        "n_worlds": worlds,
        "careless_share": CARELESS,
        "headline_tau_ind": GROUP_PART_SD,
        "acc_gain_k10": hetero["acc_gain_k10"],
        "acc_gain_k10_se": hetero["acc_gain_k10_se"],
        "oracle_gain_k10": hetero["oracle_gain_k10"],
        "acc_loss_k10_null": round(-null["acc_gain_k10"], 2),
        "acc_loss_k10_null_se": null["acc_gain_k10_se"],
        "adaptive_items_to_match_random_k20": hetero["items_to_match_random_k20"],
        "settings": settings,
    }


def _setting_name(tau_ind: float, low_rank: bool) -> str:
    return f"tau_ind={tau_ind}{'' if low_rank or not tau_ind else ' isotropic'}"
