"""``bench rigging``: how many rigged votes lift a mid-table model one rank, and into the top 3, on a
plain Bradley-Terry board of every vote (as Chatbot Arena publishes) and on Populus's published board
with its defences; and how many attacking and honest raters the defences hold out.

No public Arena-format log with networks and arrival times is at hand (Arena's releases carry neither;
the 2023 conversation release has hashed rater ids, and this machine reaches only package registries), so
the honest log is simulated: 60 models, 200,000 votes, 20,000 raters with a heavy-tailed number of votes
each, personal taste (a per-rater offset on every model, sd 0.3), varying care (a skill-scale per rater;
15% who click at random), Davidson ties (about 10%), uniform pairs, arrivals over 30 days, and networks
shared as they are in life (most raters alone, 30% behind shared networks of up to hundreds).

The attacks (Min et al., ICML 2025), each with an identifier that names a model correctly with a stated
accuracy (a wrong guess names another model at random):
- ``target_only``: vote for the target whenever the identifier sees it.
- ``omnipresent``: in every battle, vote for the target, or against a rival (the models just above the
  target, or every model above it for the top-3 goal).
- ``sybil``: the omnipresent strategy carried out by a crowd of small raters spread over 50 networks.

On the plain board a skipped battle costs nothing (Arena lets anyone open battles without voting). On
Populus the matchmaker assigns each battle and a rater cannot skip one: the next battle waits until the
current one is voted. The attacker's way round is to leave and enter as a new rater, bounded by the cap on
new raters per network per hour (reported as hours). It chooses its pace (``PACES``): as fast as the cap
allows, or one new rater per network per hour, which leaves no arrival hour with two of its raters from
one network for the check to judge together. With no practice battles that costs no vote, so the
attacker skips as freely as on Arena. With practice battles (each open-link rater's first
``PRACTICE_BATTLES``, voted but never counted; the site's default is one), every new rater first pays its
practice votes, then either leaves at once if its first counted battle is of no use, or votes its next
``per_rater`` battles whatever they are, casting an honest-looking vote (drawn from the true skills) in
those it cannot use. Costs count every vote the attacker casts, practice and cover votes included. On
Populus the attacker tries several ``per_rater`` sizes and the cheapest is reported; ``run(practice=0)``
measures the board without practice battles. Populus's board: the detector of ``stats.rigging`` holds
raters out (it sees every vote, practice ones included), then a Bradley-Terry-Davidson fit
(``stats.btd.fit_btd``) on the counted votes of the raters left. Rank is the rank each board shows
(``run(shared=False)``: the order of the point estimates): on the plain board the shared rank (1 + the
models whose 95% interval lies wholly above), on Populus's the settled rank it publishes
(``stats.summaries.settled_ranks``: it rises from the rank published before the campaign, the unattacked
board's, only past models that overlap it by ``rank_margin_share`` of the median interval width, the
site's by default; 0 for the plain rule). The one-rank goal is measured on the three mid-table targets
of the movement measure (``ONE_RANK_TARGET_OFFSETS``); an attack's figure is the median over them, its
smallest beside it (``min_cost_ratio_any_target``). What settling costs readers (``settling_cost``): the
honest log published once a day as it arrives, how often the settled rank differs from the plain rule
and how many ranks move.

Movement, beside the rank steps (``movement``). A mid-table target's neighbours are statistically tied, so
a one-rank step measures where the nearest interval's edge happens to fall. Movement measures instead how
far the campaign moves the target against the field: for a target ``t`` and the model ``a`` ranked just
above it on that board (point estimates, before the campaign),

    lift(v) = (skill[t] - skill[a]) after the campaign's first v votes - the same gap before it,

so a rival pushed down counts as much as the target pushed up. The votes needed are the fewest ``v`` with
``lift(v) >= amount``, where ``amount`` is that board's own typical 95% interval width (the median over its
models of 2 x 1.96 standard errors before the campaign): a move the board's readers can see. The search
(``_votes_needed``) steps up from 16 votes by a quarter at a time, then bisects to 2%, up to 200,000
votes on the plain board and 30 times the plain cost on Populus (past it, the cap is reported as a lower
bound). Targets: the models at positions
31 + ``MOVE_TARGET_OFFSETS`` of the plain board (27, 31 and 35 of 60), each attacked by a stream of its own
seed, the omnipresent rivals being its three nearest above. Per attack: the medians over targets of the
votes on each board, and of the paired ratio Populus / plain for each target; ``min_movement_cost_ratio``
is the smallest median ratio over the attacks with a 90% identifier.

The honest noise floor of the one-rank step (``one_rank_honest_noise``): for the same honest log and target,
fresh honest votes from new raters drawn as the simulation draws them (``with_fresh_honest``), in the
numbers the one-rank campaigns cost on the plain board and at ``NOISE_SIZES``, each number over
``NOISE_DRAWS`` independent draws: the share of draws in which they alone moved the target's shown rank
up, down, or either way, on the plain board (every vote counted) and on Populus's (each new rater's first
vote practice, then the check and the fit, as for the honest log). If honest votes move the rank as
often as a campaign of the same size, the one-rank step measures noise, not a defence.

Honest raters behind shared networks may differ from those alone on theirs, whom the check fits
everyone against (``shared_networks_differ``): on honest logs where they are 20% less careful, or share a
taste per network (sd 0.2 per model), or both, and no attack, the share of honest raters held out.

Held-out shares: ``attackers_held_out`` and ``honest_held_out`` count every rater; the ``_counted`` shares
count only raters with a vote that is not practice (``with_counted_vote``): a rater who voted only its
practice battle has nothing on any board to hold out. ``riggers_held_out`` narrows it further, to the
attacking raters who cast a counted vote of use to the attack in a battle that truly holds the target or
a rival (``riggers``): a vote in a battle the identifier misread moves a model the attack does not aim at.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from stats.btd import Counts, fit_bt_plain, fit_btd
from stats.rigging import (
    DEFAULT_REFERENCE_MAX_SHARING,
    VoteLog,
    crowd_z,
    excess_table,
    fit_reference,
    raters_hold_out,
)
from stats.summaries import rank_margin, settled_ranks, shared_ranks

HOURS = 30 * 24
NEW_RATERS_PER_NETWORK_HOUR = 20
PRACTICE_BATTLES = 1


@dataclass
class Honest:
    log: VoteLog
    theta: np.ndarray  # true skills
    network: np.ndarray  # per rater
    arrival: np.ndarray  # per rater, seconds
    n_raters: int
    crowds: np.ndarray  # how likely a rater behind a shared network is to be behind each of them


def _davidson_scores(rng, d: np.ndarray, log_nu: float) -> np.ndarray:
    half = d / 2
    win, loss, nu = np.exp(half), np.exp(-half), np.exp(log_nu)
    total = win + loss + nu
    u = rng.random(len(d))
    return np.where(u < win / total, 1.0, np.where(u < (win + nu) / total, 0.5, 0.0))


def simulate_honest(
    *, n_models: int, n_votes: int, seed: int, log_nu: float = -1.6, shared_differ: tuple = (1.0, 0.0)
) -> Honest:
    """The honest log (see the module docstring). ``shared_differ``: (care, taste sd) of raters behind
    shared networks against those alone: each such rater's care times the first, and a taste per network
    and model (normal, sd the second) shared by the network's raters; (1, 0), the default, for none."""
    rng = np.random.default_rng(seed)
    theta = np.sort(rng.normal(0.0, 0.6, n_models))[::-1].copy()
    return _honest_raters(
        rng,
        theta=theta,
        n_votes=n_votes,
        log_nu=log_nu,
        first_rater=0,
        crowds=None,
        shared_differ=shared_differ,
    )


def with_fresh_honest(honest: Honest, *, n_votes: int, seed: int, log_nu: float = -1.6) -> Honest:
    """The honest log and ``n_votes`` more votes from new raters drawn as ``simulate_honest`` draws them
    (activity, taste, care, ties, uniform pairs, arrival), behind the same shared networks or alone."""
    if not n_votes:
        return honest
    fresh = _honest_raters(
        np.random.default_rng(seed),
        theta=honest.theta,
        n_votes=n_votes,
        log_nu=log_nu,
        first_rater=honest.n_raters,
        crowds=honest.crowds,
    )
    log = VoteLog(
        *(np.r_[getattr(honest.log, name), getattr(fresh.log, name)] for name in ("rater", "i", "j", "score"))
    )
    return Honest(
        log,
        honest.theta,
        np.r_[honest.network, fresh.network],
        np.r_[honest.arrival, fresh.arrival],
        honest.n_raters + fresh.n_raters,
        honest.crowds,
    )


def _honest_raters(
    rng,
    *,
    theta: np.ndarray,
    n_votes: int,
    log_nu: float,
    first_rater: int,
    crowds: np.ndarray | None,
    shared_differ: tuple = (1.0, 0.0),
) -> Honest:
    """``n_votes`` votes from new honest raters numbered from ``first_rater`` (``n_raters`` counts only
    them). Shared networks are picked with the probabilities ``crowds``, drawn here when None; raters
    behind them differ from those alone as ``shared_differ`` says (see ``simulate_honest``)."""
    n_models = len(theta)
    per_rater = []
    total = 0
    while total < n_votes:
        k = int(min(200, 1 + rng.negative_binomial(1, 1 / 10)))
        per_rater.append(k)
        total += k
    per_rater = np.array(per_rater)
    per_rater[-1] -= total - n_votes
    n_raters = len(per_rater)
    rater = np.repeat(np.arange(n_raters), per_rater)
    i = rng.integers(0, n_models, n_votes)
    j = (i + rng.integers(1, n_models, n_votes)) % n_models
    taste = rng.normal(0.0, 0.3, (n_raters, n_models))
    care = np.exp(rng.normal(0.0, 0.3, n_raters)) * (rng.random(n_raters) >= 0.15)
    d = care[rater] * (theta[i] - theta[j]) + taste[rater, i] - taste[rater, j]
    score = _davidson_scores(rng, d, log_nu)
    shared = rng.random(n_raters) < 0.3
    if crowds is None:
        crowd_sizes = rng.zipf(1.6, 500).clip(1, 400)
        crowds = crowd_sizes / crowd_sizes.sum()
    network = np.where(shared, rng.choice(500, n_raters, p=crowds), 500 + first_rater + np.arange(n_raters))
    arrival = rng.uniform(0, HOURS * 3600.0, n_raters)
    if shared_differ != (1.0, 0.0):
        # Drawn after everything else, so that the default log stays as it was; only the votes of
        # raters behind shared networks are drawn again.
        shared_care, network_taste = shared_differ
        care = np.where(shared, care * shared_care, care)
        taste = taste + np.where(
            shared[:, None], rng.normal(0.0, network_taste, (500, n_models))[network % 500], 0
        )
        d = care[rater] * (theta[i] - theta[j]) + taste[rater, i] - taste[rater, j]
        score = np.where(shared[rater], _davidson_scores(rng, d, log_nu), score)
    return Honest(VoteLog(first_rater + rater, i, j, score), theta, network, arrival, n_raters, crowds)


def _counts(log: VoteLog, n_models: int) -> Counts:
    rows = np.column_stack(
        [np.zeros(len(log)), log.i, log.j, log.score == 1.0, log.score == 0.0, log.score == 0.5]
    )
    return Counts(cells=[()], rows=rows).aggregated(n_models)


def plain_skills(log: VoteLog, n_models: int) -> np.ndarray:
    return fit_bt_plain(_counts(log, n_models), n_models, tol=1e-9)


def plain_board(log: VoteLog, n_models: int) -> tuple[np.ndarray, np.ndarray]:
    """The plain board's skills and their standard errors, from the inverse Fisher information of the
    centred Bradley-Terry strengths (ties as half wins, as the fit counts them)."""
    skills = plain_skills(log, n_models)
    games = np.bincount(log.i * n_models + log.j, minlength=n_models**2).reshape(n_models, n_models)
    games = games + games.T
    p = 1 / (1 + np.exp(skills[None, :] - skills[:, None]))
    weight = games * p * (1 - p)
    information = np.diag(weight.sum(axis=1)) - weight
    return skills, np.sqrt(np.clip(np.diag(np.linalg.pinv(information)), 0, None))


def populus_fit(log: VoteLog, n_models: int) -> tuple[np.ndarray, float]:
    fit = fit_btd(_counts(log, n_models), n_models=n_models, n_groups=0, with_groups=False)
    return fit.theta, fit.log_nu


def _intervals(board: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A board's (skills, standard errors) as 95% intervals (low, high)."""
    skills, se = board
    return skills - 1.96 * se, skills + 1.96 * se


def rank_of(
    skills: np.ndarray,
    model: int,
    se: np.ndarray | None = None,
    *,
    previous: np.ndarray | None = None,
    margin_share: float = 0.0,
) -> int:
    """The model's rank: by point estimate, or, given standard errors, the shared rank a board shows
    (1 + the models whose 95% interval lies wholly above its own, ``stats.summaries.shared_ranks``);
    given the ranks the board showed before, the settled rank Populus publishes
    (``stats.summaries.settled_ranks``, its margin ``margin_share`` of the median interval width)."""
    if se is None:
        return int((skills > skills[model]).sum()) + 1
    low, high = _intervals((skills, se))
    if previous is None:
        return int(shared_ranks(low, high)[model])
    margin = rank_margin(low, high, margin_share)
    return int(settled_ranks(low, high, previous, margin=margin)[model])


# --- Attacks -----------------------------------------------------------------------------------------


def _identify(rng, truth: np.ndarray, accuracy: float, n_models: int) -> np.ndarray:
    wrong = rng.random(len(truth)) >= accuracy
    other = (truth + rng.integers(1, n_models, len(truth))) % n_models
    return np.where(wrong, other, truth)


def _attack_votes(kind, target, rival_rank, seen_i, seen_j):
    """The attacker's vote in battles whose models the identifier saw as ``seen_i``, ``seen_j``, and
    whether the battle is of use to the attack at all."""
    if kind == "target_only":
        return np.where(seen_i == target, 1.0, 0.0), (seen_i == target) | (seen_j == target)
    r_i, r_j = rival_rank[seen_i], rival_rank[seen_j]
    t_i, t_j = seen_i == target, seen_j == target
    # The target wins when seen; otherwise the nearer rival loses (a rival beats a non-rival).
    score = np.where(
        t_i,
        1.0,
        np.where(
            t_j,
            0.0,
            np.where((r_i >= 0) & (r_j >= 0), (r_i > r_j).astype(float), np.where(r_i >= 0, 0.0, 1.0)),
        ),
    )
    return score, t_i | t_j | (r_i >= 0) | (r_j >= 0)


def _rival_rank(rivals: np.ndarray, n_models: int) -> np.ndarray:
    rank = np.full(n_models, -1)
    rank[rivals] = np.arange(len(rivals))
    return rank


def attack_stream(
    kind: str, *, target: int, rivals: np.ndarray, accuracy: float, n_models: int, length: int, seed: int
) -> VoteLog:
    """``length`` attacking votes (rater ids left at 0), drawn from battles as they come, skipped ones
    dropped: the plain board's attacker, who opens battles until one is of use. ``rivals`` are ranked by
    how much they stand in the way (closest above first)."""
    rng = np.random.default_rng(seed)
    i_parts, j_parts, s_parts, have = [], [], [], 0
    rival_rank = _rival_rank(rivals, n_models)
    while have < length:
        batch = max(4 * length, 10_000)
        i = rng.integers(0, n_models, batch)
        j = (i + rng.integers(1, n_models, batch)) % n_models
        seen_i, seen_j = _identify(rng, i, accuracy, n_models), _identify(rng, j, accuracy, n_models)
        score, use = _attack_votes(kind, target, rival_rank, seen_i, seen_j)
        i_parts.append(i[use])
        j_parts.append(j[use])
        s_parts.append(score[use])
        have += int(use.sum())
    i, j, s = (np.concatenate(parts)[:length] for parts in (i_parts, j_parts, s_parts))
    return VoteLog(np.zeros(length, dtype=np.intp), i, j, s)


@dataclass
class Assigned:
    """Battles in the order the matchmaker hands them to the attacker, none skipped: the attacking vote
    where the battle is of use, elsewhere a vote as an honest rater would cast it (the attacker's best
    cover), which battles were of use as the identifier saw them, and which truly hold the target (or,
    omnipresent, one of its rivals): where the identifier misread a battle, the attacking vote moves some
    other model and nothing of the target's standing."""

    log: VoteLog
    useful: np.ndarray
    on_target: np.ndarray


def assigned_stream(
    kind: str,
    *,
    target: int,
    rivals: np.ndarray,
    accuracy: float,
    theta: np.ndarray,
    length: int,
    seed: int,
    log_nu: float = -1.6,
) -> Assigned:
    rng = np.random.default_rng(seed)
    n_models = len(theta)
    i = rng.integers(0, n_models, length)
    j = (i + rng.integers(1, n_models, length)) % n_models
    seen_i, seen_j = _identify(rng, i, accuracy, n_models), _identify(rng, j, accuracy, n_models)
    score, useful = _attack_votes(kind, target, _rival_rank(rivals, n_models), seen_i, seen_j)
    cover = _davidson_scores(rng, theta[i] - theta[j], log_nu)
    aimed_at = np.isin(np.arange(n_models), [target] if kind == "target_only" else np.r_[target, rivals])
    log = VoteLog(np.zeros(length, dtype=np.intp), i, j, np.where(useful, score, cover))
    return Assigned(log, useful, on_target=aimed_at[i] | aimed_at[j])


def _plain_log(honest: Honest, attack: VoteLog, votes: int) -> VoteLog:
    """Honest log plus the first ``votes`` attacking votes, as the plain board counts them."""
    rater = honest.n_raters + np.arange(votes)
    return VoteLog(
        np.r_[honest.log.rater, rater],
        np.r_[honest.log.i, attack.i[:votes]],
        np.r_[honest.log.j, attack.j[:votes]],
        np.r_[honest.log.score, attack.score[:votes]],
    )


@dataclass
class Campaign:
    """An attacker's votes on Populus in the order they are cast: which assigned battle each is, the
    attacking rater who casts it, and whether it is a practice vote (never counted on published boards)."""

    battle: np.ndarray
    rater: np.ndarray
    practice: np.ndarray


def campaign_on_populus(assigned: Assigned, *, per_rater: int, practice: int) -> Campaign:
    """Raters enter one after another. Each votes its ``practice`` battles (it cannot skip one: a rater's
    next battle waits until the current one is voted), then leaves without voting if the next battle is of
    no use to the attack, else votes its next ``per_rater`` battles, whatever they are. Leaving is the
    attacker's cheapest way round a battle it cannot skip; with no practice battles it costs nothing."""
    useful = assigned.useful
    battles, raters, practices = [], [], []
    cursor = 0
    while cursor + practice < len(useful):
        first_counted = cursor + practice
        if not useful[first_counted]:
            if practice:
                # Leaves after the practice votes, without voting the battle of no use.
                battles.append(np.arange(cursor, first_counted))
                practices.append(np.ones(practice, dtype=bool))
                raters.append(np.full(practice, len(raters)))
                cursor = first_counted + 1
            else:
                # A rater with no practice to sit through leaves at once, for free.
                ahead = np.flatnonzero(useful[cursor:])
                if not len(ahead):
                    break
                cursor += int(ahead[0])
            continue
        counted = np.arange(first_counted, min(first_counted + per_rater, len(useful)))
        battles.append(np.r_[np.arange(cursor, first_counted), counted])
        practices.append(np.arange(len(battles[-1])) < practice)
        raters.append(np.full(len(battles[-1]), len(raters)))
        cursor = int(counted[-1]) + 1
    return Campaign(np.concatenate(battles), np.concatenate(raters), np.concatenate(practices))


def honest_practice(honest: Honest, practice: int) -> np.ndarray:
    """Which honest votes are their rater's practice votes (each rater's first ``practice``)."""
    rater = honest.log.rater
    first = np.r_[0, np.flatnonzero(np.diff(rater)) + 1]
    position = np.arange(len(rater)) - np.repeat(first, np.diff(np.r_[first, len(rater)]))
    return position < practice


# The rigging check as it was before the reference raters and peeling (2026-11-26), measured beside it.
EARLIER_DETECTOR = {
    "reference_max_sharing": None,
    "peels": 1,
    "crowd_of_networks": False,
    "overdispersed": False,
    "pushing_networks": False,
    "careless_networks": False,
}


def _with_campaign(
    honest: Honest,
    assigned: Assigned,
    campaign: Campaign,
    votes: int,
    *,
    networks: int,
    pace: int = NEW_RATERS_PER_NETWORK_HOUR,
):
    """The honest log with the campaign's first ``votes`` votes, every rater's network and arrival (the
    attacking raters spread over ``networks`` networks, arriving from mid-log on at ``pace`` new raters
    per network per hour, at most the cap), and the number of attacking raters (numbered after the
    honest ones)."""
    battle, attacker = campaign.battle[:votes], campaign.rater[:votes]
    n_attackers = int(attacker.max()) + 1 if votes else 0
    attack = assigned.log
    log = VoteLog(
        np.r_[honest.log.rater, honest.n_raters + attacker],
        np.r_[honest.log.i, attack.i[battle]],
        np.r_[honest.log.j, attack.j[battle]],
        np.r_[honest.log.score, attack.score[battle]],
    )
    index = np.arange(n_attackers)
    network = np.r_[honest.network, -1 - index % networks]
    per_hour = pace * networks
    arrival = np.r_[honest.arrival, HOURS / 2 * 3600.0 + 3600.0 * index / per_hour]
    return log, network, arrival, n_attackers


def campaign_z(
    honest: Honest,
    assigned: Assigned,
    campaign: Campaign,
    votes: int,
    *,
    networks: int,
    pace: int = NEW_RATERS_PER_NETWORK_HOUR,
) -> float:
    """The largest |z| over the check's columns of the campaign's first ``votes`` votes, all its raters
    judged as one crowd against the check's first fit (the reference raters'): what a check that knew
    exactly who the attacker was would see. Below the check's threshold, no choice of crowd sees it."""
    log, network, _, n_attackers = _with_campaign(
        honest, assigned, campaign, votes, networks=networks, pace=pace
    )
    n_raters = honest.n_raters + n_attackers
    reference = fit_reference(log, network, n_raters, DEFAULT_REFERENCE_MAX_SHARING)
    theta, log_nu = populus_fit(log.subset(reference[log.rater]), len(honest.theta))
    excess, variance = excess_table(log, theta, log_nu, n_raters)
    crowd = slice(honest.n_raters, None)
    return float(np.abs(crowd_z(excess, variance, crowd)).max())


def _populus_board(
    honest: Honest,
    assigned: Assigned,
    campaign: Campaign,
    votes: int,
    *,
    networks: int,
    practice: int,
    pace: int = NEW_RATERS_PER_NETWORK_HOUR,
    detector: dict | None = None,
):
    """Populus's published board after the first ``votes`` votes of the campaign (its raters arriving at
    ``pace``; see ``_with_campaign``): the rigging check
    sees every vote, practice ones included; the fit counts the rest of the raters it does not hold out.
    Returns the board (skills, standard errors), which attacking raters and which honest raters it holds
    out, and the number of attacking raters."""
    n_models = len(honest.theta)
    log, network, arrival, n_attackers = _with_campaign(
        honest, assigned, campaign, votes, networks=networks, pace=pace
    )
    n_raters = honest.n_raters + n_attackers
    detection = raters_hold_out(
        log,
        fit=lambda kept: populus_fit(kept, n_models),
        n_raters=n_raters,
        network=network,
        arrival=arrival,
        **(detector or {}),
    )
    held = detection.held_out
    practice_vote = np.r_[honest_practice(honest, practice), campaign.practice[:votes]]
    counted = _counts(log.subset(~held[log.rater] & ~practice_vote), n_models)
    fit = fit_btd(counted, n_models=n_models, n_groups=0, with_groups=False)
    board = (fit.theta, fit.theta_se())
    return board, held[honest.n_raters :], n_attackers, held[: honest.n_raters]


def _progress(key: str, row: dict) -> dict:
    """Each figure on standard error as it is measured (a full run takes a while), and back."""
    print(json.dumps({key: row}), file=sys.stderr, flush=True)
    return row


def riggers(assigned: Assigned, campaign: Campaign, votes: int) -> np.ndarray:
    """Per attacking rater of the campaign's first ``votes`` votes: whether it cast a counted vote of use
    to the attack in a battle that truly holds the target or a rival. The others voted only practice
    battles, honest-looking ones, or battles the identifier misread (at 90%, in the one-rank campaigns,
    about a tenth of those it takes for the target's or a rival's: the vote moves a model the attack does
    not aim at): nothing of the target's standing to catch."""
    battle, attacker = campaign.battle[:votes], campaign.rater[:votes]
    n_attackers = int(attacker.max()) + 1 if votes else 0
    rigging = assigned.useful[battle] & assigned.on_target[battle] & ~campaign.practice[:votes]
    return np.bincount(attacker[rigging], minlength=n_attackers) > 0


def with_counted_vote(rater: np.ndarray, practice: np.ndarray, n_raters: int) -> np.ndarray:
    """Per rater: whether it cast a vote that is not practice, one a published board can count. A rater
    who voted only practice battles has nothing on any board to hold out, so the ``_counted`` shares
    held out leave it out of their denominator, attacking and honest raters alike."""
    return np.bincount(rater[~practice], minlength=n_raters) > 0


def one_rank_honest_noise(
    honest: Honest, *, rank, sizes, draws: int, seed: int, practice: int, label: str = "noise"
) -> list[dict]:
    """How often fresh honest votes alone move the target's rank, as ``rank[board](board)`` reads it, on each
    board: per number of votes, over ``draws`` independent draws of new raters (``with_fresh_honest``),
    the shares of draws that moved it up, down, or either way. The plain board counts every fresh vote;
    Populus's takes them as it takes the honest log (first votes as practice, the check, the fit)."""
    n_models = len(honest.theta)

    def ranks(log_and_raters: Honest) -> dict:
        populus, *_ = _populus_board_unattacked(log_and_raters, practice=practice)
        plain = plain_board(log_and_raters.log, n_models)
        return {"plain": rank["plain"](plain), "populus": rank["populus"](populus)}

    start = ranks(honest)
    rows = []
    for index, size in enumerate(sizes):
        moves = {board: [] for board in start}
        for draw in range(draws):
            grown = with_fresh_honest(honest, n_votes=size, seed=seed + 10_000 + 1_000 * index + draw)
            for board, shown in ranks(grown).items():
                moves[board].append(shown - start[board])
        row: dict = {"votes": int(size), "draws": draws}
        for board, moved in moves.items():
            moved = np.array(moved)
            row.update(
                {
                    f"{board}_up": float((moved < 0).mean()),
                    f"{board}_down": float((moved > 0).mean()),
                    f"{board}_moved": float((moved != 0).mean()),
                }
            )
        rows.append(_progress(label, row))
    return rows


# Each step of the search for the votes a campaign needs tries this many times the votes of the last.
SEARCH_STEP = 1.25


def _votes_needed(reaches, limit: int) -> int | None:
    """Fewest votes for which ``reaches(votes)`` holds: up from 16 votes in steps of ``SEARCH_STEP`` to the
    first that reaches, then bisection to 2% within that step; None if not even at ``limit`` itself (the
    last step is the limit, so a None is a lower bound checked at the limit).

    Steps, not doublings, because the check makes reaching come and go: a patient crowd may lift its
    target at 3,072 votes and be held out at 4,096, before it reaches again with many more (stop 30's
    check, the default log's second seed, target 35). A doubling that tried 2,048 then 4,096 votes missed
    that and reported the campaign as out of reach. A window narrower than one step can still be missed."""
    low, high = 0, min(16, limit)
    while not reaches(high):
        if high >= limit:
            return None
        low, high = high, min(int(high * SEARCH_STEP), limit)
    while high - low > max(1, high // 50):
        middle = (low + high) // 2
        if reaches(middle):
            high = middle
        else:
            low = middle
    return high


def interval_width(se: np.ndarray) -> float:
    """A board's typical 95% interval width: the median over its models of 2 x 1.96 standard errors."""
    return float(np.median(2 * 1.96 * se))


def lift(skills: np.ndarray, target: int, above: int, start_gap: float) -> float:
    """How far the target has gained on ``above`` (the model ranked just above it before the campaign)
    since the start: its gap to that model now, less the gap then. Relative to a rival, so it counts a
    rival pushed down as much as the target pushed up, and it does not depend on where a fit centres."""
    return float(skills[target] - skills[above] - start_gap)


def votes_to_move(skills_after, *, target: int, above: int, amount: float, limit: int) -> int | None:
    """Fewest votes of a campaign for which ``lift`` reaches ``amount``, where ``skills_after(votes)`` is
    the board's skills after the campaign's first ``votes`` votes (None if not within ``limit``)."""
    start = skills_after(0)
    start_gap = float(start[target] - start[above])
    return _votes_needed(lambda votes: lift(skills_after(votes), target, above, start_gap) >= amount, limit)


ATTACKS = {
    # name: (kind, identifier accuracy, networks the attacker's raters use, per-rater sizes Populus tries)
    "target_only_90": ("target_only", 0.9, 5, (1, 5, 20, 60)),
    "target_only_100": ("target_only", 1.0, 5, (1, 5, 20, 60)),
    "omnipresent_90": ("omnipresent", 0.9, 5, (1, 5, 20, 60)),
    "omnipresent_100": ("omnipresent", 1.0, 5, (1, 5, 20, 60)),
    "sybil_90": ("omnipresent", 0.9, 50, (1, 2, 5)),
    "sybil_100": ("omnipresent", 1.0, 50, (1, 2, 5)),
}


# The movement measure: attacks, and the mid-table targets (positions from the middle of the plain
# board's point-estimate order), each attacked with a stream of its own seed.
MOVE_ATTACKS = ("target_only_90", "omnipresent_90", "sybil_90", "target_only_100")
MOVE_TARGET_OFFSETS = (-4, 0, 4)
QUICK_MOVE_ATTACKS = ("target_only_90", "omnipresent_90")
QUICK_MOVE_TARGET_OFFSETS = (-1, 1)


def _attack_streams(name: str, *, target: int, rivals, honest: Honest, limit: int, practice: int, seed: int):
    """The attack ``name``'s votes as a plain arena takes them (seeded ``seed``) and its battles as
    Populus assigns them (``seed + 1``; a campaign with no practice to sit through skips most, so it
    needs more)."""
    kind, accuracy, *_ = ATTACKS[name]
    stream = attack_stream(
        kind,
        target=target,
        rivals=rivals,
        accuracy=accuracy,
        n_models=len(honest.theta),
        length=limit,
        seed=seed,
    )
    assigned = assigned_stream(
        kind,
        target=target,
        rivals=rivals,
        accuracy=accuracy,
        theta=honest.theta,
        length=limit * (4 if practice else 40),
        seed=seed + 1,
    )
    return stream, assigned


def _populus_board_unattacked(honest: Honest, *, practice: int) -> tuple:
    """`_populus_board` of the honest log alone."""
    empty = Assigned(VoteLog([], [], [], []), np.zeros(0, dtype=bool), np.zeros(0, dtype=bool))
    no_campaign = Campaign(*(np.zeros(0, dtype=dtype) for dtype in (np.intp, np.intp, bool)))
    return _populus_board(honest, empty, no_campaign, 0, networks=1, practice=practice)


def _cheapest_on_populus(
    honest, assigned, sizes, *, paces, practice, cap, reaches_with
) -> tuple[int | None, int, int]:
    """The attacker's cheapest campaign on Populus over its per-rater sizes and its paces (new raters per
    network per hour): votes (None if none within ``cap``), the size and the pace.
    ``reaches_with(campaign, pace)`` gives the campaign's ``reaches(votes)``."""
    best: tuple[int | None, int, int] = (None, sizes[0], paces[0])
    for per_rater in sizes:
        campaign = campaign_on_populus(assigned, per_rater=per_rater, practice=practice)
        for pace in paces:
            cost = _votes_needed(reaches_with(campaign, pace), min(cap, len(campaign.battle)))
            if cost is not None and (best[0] is None or cost < best[0]):
                best = (cost, per_rater, pace)
    return best


def movement(
    honest: Honest,
    *,
    order: np.ndarray,
    attacks: tuple[str, ...],
    offsets: tuple[int, ...],
    seed: int,
    practice: int,
    limit: int,
    limit_factor: int,
    paces: tuple[int, ...] = (NEW_RATERS_PER_NETWORK_HOUR,),
) -> dict:
    """Per attack: the votes that lift mid-table targets by one interval width of each board (see the
    module docstring), on the plain board and on Populus's, their medians and the paired ratios."""
    n_models = len(honest.theta)
    populus_start, *_ = _populus_board_unattacked(honest, practice=practice)
    amount = {
        "plain": interval_width(plain_board(honest.log, n_models)[1]),
        "populus": interval_width(populus_start[1]),
    }
    populus_order = np.argsort(-populus_start[0])
    results: dict = {"movement_amount_plain": amount["plain"], "movement_amount_populus": amount["populus"]}
    for name in attacks:
        *_, networks, sizes = ATTACKS[name]
        pairs = []
        for index, offset in enumerate(offsets):
            position = n_models // 2 + offset
            target = int(order[position])
            rivals = order[:position][::-1][:3]
            pair_seed = seed + 100 * (index + 1)
            stream, assigned = _attack_streams(
                name,
                target=target,
                rivals=rivals,
                honest=honest,
                limit=limit,
                practice=practice,
                seed=pair_seed,
            )
            plain_votes = votes_to_move(
                lambda votes, stream=stream: plain_skills(_plain_log(honest, stream, votes), n_models),
                target=target,
                above=int(order[position - 1]),
                amount=amount["plain"],
                limit=limit,
            )
            populus_above = int(populus_order[int(np.flatnonzero(populus_order == target)[0]) - 1])

            def reaches_with(
                campaign, pace, assigned=assigned, target=target, above=populus_above, networks=networks
            ):
                def skills_after(votes: int) -> np.ndarray:
                    board, *_ = _populus_board(
                        honest, assigned, campaign, votes, networks=networks, practice=practice, pace=pace
                    )
                    return board[0]

                start_gap = float(populus_start[0][target] - populus_start[0][above])
                return lambda votes: lift(skills_after(votes), target, above, start_gap) >= amount["populus"]

            cap = min(limit, limit_factor * (plain_votes or limit))
            populus_votes, per_rater, pace = _cheapest_on_populus(
                honest, assigned, sizes, paces=paces, practice=practice, cap=cap, reaches_with=reaches_with
            )
            pairs.append(
                _progress(
                    f"{name}.move",
                    {
                        "target_position": position + 1,
                        "plain_votes": plain_votes,
                        "populus_votes": populus_votes if populus_votes is not None else cap,
                        "populus_is_lower_bound": populus_votes is None,
                        "populus_per_rater": per_rater,
                        "populus_pace": pace,
                    },
                )
            )
        plain = [pair["plain_votes"] for pair in pairs if pair["plain_votes"]]
        ratios = [pair["populus_votes"] / pair["plain_votes"] for pair in pairs if pair["plain_votes"]]
        results[f"{name}.move"] = {
            "plain_votes_median": float(np.median(plain)) if plain else None,
            "populus_votes_median": float(np.median([pair["populus_votes"] for pair in pairs])),
            "cost_ratio_median": float(np.median(ratios)) if ratios else None,
            "cost_ratio_min": float(min(ratios)) if ratios else None,
            # Pairs where Populus was not moved within the cap: their ratio is a lower bound.
            "populus_lower_bounds": sum(pair["populus_is_lower_bound"] for pair in pairs),
            "pairs": pairs,
        }
    medians = [
        row["cost_ratio_median"]
        for key, row in results.items()
        if key.endswith(".move") and ATTACKS[key.split(".")[0]][1] < 1.0 and row["cost_ratio_median"]
    ]
    results["min_movement_cost_ratio"] = min(medians) if medians else None
    return results


def settling_cost(honest: Honest, *, publishes: int, margin_share: float, practice: int) -> dict:
    """What settled ranks cost the board's readers, on the honest log alone published as it arrives, in
    ``publishes`` equal steps of time (Populus's fit of the counted votes so far; the check holds out no
    honest rater without an attack): over the publishes after the first, the share of shown ranks that
    differ from the plain shared rule and the largest difference, and how many ranks changed (and how
    many of them rose) from one publish to the next under each rule."""
    n_models = len(honest.theta)
    counted = ~honest_practice(honest, practice)
    arrival = honest.arrival[honest.log.rater]
    shown = plain_before = None
    differs, largest, changes, rises = [], 0, {"plain": 0, "settled": 0}, {"plain": 0, "settled": 0}
    for step in range(1, publishes + 1):
        log = honest.log.subset(counted & (arrival <= HOURS * 3600.0 * step / publishes))
        fit = fit_btd(_counts(log, n_models), n_models=n_models, n_groups=0, with_groups=False)
        low, high = _intervals((fit.theta, fit.theta_se()))
        plain = shared_ranks(low, high)
        if shown is None:
            shown = plain
        else:
            settled = settled_ranks(low, high, shown, margin=rank_margin(low, high, margin_share))
            differs.append(float((settled != plain).mean()))
            largest = max(largest, int(np.abs(settled - plain).max()))
            changes["plain"] += int((plain != plain_before).sum())
            changes["settled"] += int((settled != shown).sum())
            rises["plain"] += int((plain < plain_before).sum())
            rises["settled"] += int((settled < shown).sum())
            shown = settled
        plain_before = plain
    return {
        "publishes": publishes,
        "shown_differs_from_plain": float(np.mean(differs)),
        "largest_rank_difference": largest,
        "rank_changes_plain": changes["plain"],
        "rank_changes_settled": changes["settled"],
        "rank_rises_plain": rises["plain"],
        "rank_rises_settled": rises["settled"],
    }


SETTLING_PUBLISHES = 30  # one a day over the simulated month


# The one-rank step is measured, like movement, on several mid-table targets (positions from the middle
# of the plain board's point-estimate order), the middle one first, as earlier runs measured it alone:
# one target's step prices where its neighbour's interval edge happens to fall, so an attack's figure is
# the median over targets, beside the smallest.
ONE_RANK_TARGET_OFFSETS = (0, -4, 4)
QUICK_ONE_RANK_TARGET_OFFSETS = (0, 2)
# New raters per network per hour the one-rank attacker may send: the cap's pace, or one at a time,
# which leaves no arrival hour with two raters from one network. The top 3 is tried at the cap's pace
# only: its campaigns need tens of thousands of raters, over a month at that pace already.
PACES = (NEW_RATERS_PER_NETWORK_HOUR, 1)
# Votes a campaign may cast: 200,000 (the honest log's size) for one rank; twice that for the top 3, whose
# plain cost reaches 37,000 votes, so that a campaign not there within the limit costs 10 times more.
TOP_3_LIMIT = 400_000


def _campaign_row(
    honest: Honest,
    *,
    name: str,
    target: int,
    rivals: np.ndarray,
    rank,
    wanted: dict,
    paces: tuple[int, ...],
    seed: int,
    limit: int,
    limit_factor: int,
    practice: int,
    honest_counted: np.ndarray,
) -> dict:
    """One attack on one target: the votes that bring each board's rank (``rank[name](board)``) to
    ``wanted[name]``, their ratio, and the raters held out at the attacker's cheapest Populus campaign
    (``honest_counted``: which honest raters cast a counted vote, for the ``_counted`` share)."""
    *_, networks, sizes = ATTACKS[name]
    n_models = len(honest.theta)
    stream, assigned = _attack_streams(
        name,
        target=target,
        rivals=rivals,
        honest=honest,
        limit=limit,
        practice=practice,
        seed=seed,
    )

    def plain_reaches(votes: int) -> bool:
        return rank["plain"](plain_board(_plain_log(honest, stream, votes), n_models)) <= wanted["plain"]

    plain_cost = _votes_needed(plain_reaches, limit)
    row: dict = {"plain_votes": plain_cost}
    cap = min(limit, limit_factor * (plain_cost or limit))

    def populus_reaches_with(campaign, pace):
        def reaches(votes: int) -> bool:
            board, *_ = _populus_board(
                honest, assigned, campaign, votes, networks=networks, practice=practice, pace=pace
            )
            return rank["populus"](board) <= wanted["populus"]

        return reaches

    cost, per_rater, pace = _cheapest_on_populus(
        honest, assigned, sizes, paces=paces, practice=practice, cap=cap, reaches_with=populus_reaches_with
    )
    campaign = campaign_on_populus(assigned, per_rater=per_rater, practice=practice)
    if cost is None:
        effective = min(cap, len(campaign.battle))
        row.update(populus_votes=None, populus_votes_at_least=effective)
    else:
        effective = cost
        row.update(populus_votes=effective, populus_per_rater=per_rater)
    board_at = {"networks": networks, "practice": practice, "pace": pace}
    _, held_attackers, n_attackers, honest_held = _populus_board(
        honest, assigned, campaign, effective, **board_at
    )
    _, held_before, _, honest_before = _populus_board(
        honest, assigned, campaign, effective, **board_at, detector=EARLIER_DETECTOR
    )
    rigged = riggers(assigned, campaign, effective)
    counted = with_counted_vote(campaign.rater[:effective], campaign.practice[:effective], n_attackers)
    row.update(
        cost_ratio=effective / plain_cost if plain_cost else None,
        cost_ratio_is_lower_bound=cost is None,
        pace=pace,
        hours=float(n_attackers / (pace * networks)),
        attackers=int(n_attackers),
        attackers_held=int(held_attackers.sum()),
        attackers_held_out=float(held_attackers.sum() / max(n_attackers, 1)),
        riggers=int(rigged.sum()),
        riggers_held=int((held_attackers & rigged).sum()),
        riggers_held_out=float((held_attackers & rigged).sum() / max(rigged.sum(), 1)),
        attackers_counted=int(counted.sum()),
        attackers_counted_held=int((held_attackers & counted).sum()),
        attackers_held_out_counted=float((held_attackers & counted).sum() / max(counted.sum(), 1)),
        honest_held_out=float(honest_held.mean()),
        honest_held_out_counted=float(honest_held[honest_counted].mean()),
        attackers_held_earlier_check=int(held_before.sum()),
        attackers_held_out_earlier_check=float(held_before.sum() / max(n_attackers, 1)),
        riggers_held_out_earlier_check=float((held_before & rigged).sum() / max(rigged.sum(), 1)),
        honest_held_out_earlier_check=float(honest_before.mean()),
        campaign_z=campaign_z(honest, assigned, campaign, effective, networks=networks, pace=pace),
    )
    return row


def _pooled_share(rows: list[dict], held: str, of: str) -> float:
    """A held-out share over several campaigns' rows: their ``held`` counts over their ``of`` counts."""
    return float(sum(row[held] for row in rows) / max(1, sum(row[of] for row in rows)))


def _over_targets(rows: list[dict]) -> dict:
    """One attack's one-rank figures over its targets: the medians of the votes and of the paired
    ratios, the smallest ratio, how many Populus figures are lower bounds (the campaign reached the cap),
    and the held-out shares of every target's campaign together."""
    ratios = [row["cost_ratio"] for row in rows if row["cost_ratio"] is not None]
    plain = [row["plain_votes"] for row in rows if row["plain_votes"]]
    populus = [row["populus_votes"] or row["populus_votes_at_least"] for row in rows]

    return {
        "plain_votes": float(np.median(plain)) if plain else None,
        "populus_votes": float(np.median(populus)),
        "cost_ratio": float(np.median(ratios)) if ratios else None,
        "cost_ratio_min": min(ratios, default=None),
        "populus_lower_bounds": sum(row["cost_ratio_is_lower_bound"] for row in rows),
        "attackers": sum(row["attackers"] for row in rows),
        "attackers_held_out": _pooled_share(rows, "attackers_held", "attackers"),
        "riggers_held_out": _pooled_share(rows, "riggers_held", "riggers"),
        "attackers_counted": sum(row["attackers_counted"] for row in rows),
        "attackers_held_out_counted": _pooled_share(rows, "attackers_counted_held", "attackers_counted"),
        "honest_held_out": max(row["honest_held_out"] for row in rows),
        "honest_held_out_counted": max(row["honest_held_out_counted"] for row in rows),
        "campaign_z": max(row["campaign_z"] for row in rows),
        "targets": rows,
    }


# Ways raters behind shared networks may differ from those alone on theirs: (care, network taste sd).
SHARED_NETWORKS_DIFFER = {"less_careful": (0.8, 0.0), "network_taste": (1.0, 0.2), "both": (0.8, 0.2)}


def shared_networks_differ(*, n_models: int, n_votes: int, seed: int, practice: int) -> dict:
    """The share of honest raters the check holds out, with no attack, on honest logs where the raters
    behind shared networks differ from those alone on theirs (``SHARED_NETWORKS_DIFFER``): the reference
    raters are nearly alone on theirs, so such a difference is what crowds behind networks show."""
    shares = {}
    for name, differ in SHARED_NETWORKS_DIFFER.items():
        honest = simulate_honest(n_models=n_models, n_votes=n_votes, seed=seed, shared_differ=differ)
        *_, held = _populus_board_unattacked(honest, practice=practice)
        shares[name] = float(held.mean())
    return shares


# The honest noise floor of the one-rank step: fresh honest votes, besides the one-rank campaigns' costs.
NOISE_SIZES = (30, 100, 300, 1_000, 3_000)
NOISE_DRAWS = 40
QUICK_NOISE_SIZES = (100, 1_000)
QUICK_NOISE_DRAWS = 5


def run(
    *,
    quick: bool = False,
    n_models: int = 60,
    n_votes: int = 200_000,
    seed: int = 0,
    limit_factor: int = 30,
    practice: int = PRACTICE_BATTLES,
    shared: bool = True,
    measure_movement: bool = True,
    paces: tuple[int, ...] = PACES,
    rank_margin_share: float | None = None,
) -> dict:
    """Per attack and goal: votes needed on each board, their ratio, and the raters held out. Ranks are
    the shared ranks each board shows (``shared``), else the order of the point estimates. Populus shows
    settled ranks (``rank_margin_share`` of the median interval width: by default the site's
    ``POPULUS_RANK_MARGIN_PERCENT``; 0, the plain shared rank), the board as published before the campaign
    (the unattacked one) giving the ranks they settle from."""
    started = time.perf_counter()
    if rank_margin_share is None:
        rank_margin_share = settings.POPULUS_RANK_MARGIN_PERCENT / 100
    if quick:
        n_models, n_votes = 20, 20_000
    honest = simulate_honest(n_models=n_models, n_votes=n_votes, seed=seed)
    clean_plain = plain_skills(honest.log, n_models)
    order = np.argsort(-clean_plain)
    clean_boards = {"plain": plain_board(honest.log, n_models)}
    clean_boards["populus"], _, _, honest_held_clean = _populus_board_unattacked(honest, practice=practice)

    published = shared_ranks(*_intervals(clean_boards["populus"]))

    def ranker(target: int) -> dict:
        if not shared:
            return {board: lambda shown: rank_of(shown[0], target) for board in clean_boards}
        return {
            "plain": lambda shown: rank_of(shown[0], target, shown[1]),
            "populus": lambda shown: rank_of(
                shown[0], target, shown[1], previous=published, margin_share=rank_margin_share
            ),
        }

    middle = ranker(int(order[n_models // 2]))
    honest_counted = with_counted_vote(honest.log.rater, honest_practice(honest, practice), honest.n_raters)
    results: dict = {
        "models": n_models,
        "honest_votes": n_votes,
        "honest_raters": honest.n_raters,
        "rank_rule": "shared rank (95% intervals)" if shared else "point estimate",
        "target_rank_plain": middle["plain"](clean_boards["plain"]),
        "target_rank_populus": middle["populus"](clean_boards["populus"]),
        "practice_battles": practice,
        "paces": list(paces),
        "rank_margin": rank_margin_share,
        "honest_votes_in_practice": float(honest_practice(honest, practice).mean()),
        "honest_held_out_without_attack": float(honest_held_clean.mean()),
        "honest_raters_counted": int(honest_counted.sum()),
    }
    attacks = list(ATTACKS)[::2] if quick else list(ATTACKS)
    offsets = QUICK_ONE_RANK_TARGET_OFFSETS if quick else ONE_RANK_TARGET_OFFSETS
    limits = {"one_rank": 2_000, "top_3": 4_000} if quick else {"one_rank": 200_000, "top_3": TOP_3_LIMIT}
    rows = []
    for name in attacks:
        for goal in ("one_rank", "top_3"):
            goal_rows = []
            for index, offset in enumerate(offsets if goal == "one_rank" else (0,)):
                position = n_models // 2 + offset
                rank = ranker(int(order[position]))
                start = {board: rank[board](clean) for board, clean in clean_boards.items()}
                wanted = {board: first - 1 if goal == "one_rank" else 3 for board, first in start.items()}
                row = _campaign_row(
                    honest,
                    name=name,
                    target=int(order[position]),
                    rivals=order[:position][::-1][:3] if goal == "one_rank" else order[:position][::-1],
                    rank=rank,
                    wanted=wanted,
                    paces=paces if goal == "one_rank" else paces[:1],
                    seed=seed + 1 + 1_000 * index,
                    limit=limits[goal],
                    limit_factor=limit_factor,
                    practice=practice,
                    honest_counted=honest_counted,
                )
                row = {"target_position": position + 1, "target_rank_at_start": start, **row}
                goal_rows.append(_progress(f"{name}.{goal}", row))
            rows += goal_rows
            results[f"{name}.{goal}"] = _over_targets(goal_rows) if goal == "one_rank" else goal_rows[0]

    def worst_ratio(figures) -> float | None:
        ratios = [row["cost_ratio"] for key, row in figures if ATTACKS[key][1] < 1.0]
        return min((ratio for ratio in ratios if ratio is not None), default=None)

    per_attack = [(key.split(".")[0], row) for key, row in results.items() if isinstance(row, dict)]
    results["min_cost_ratio"] = worst_ratio(per_attack)
    results["min_cost_ratio_any_target"] = worst_ratio(
        [(key, target) for key, row in per_attack for target in row.get("targets", [row])]
    )

    results["attackers_held_out"] = _pooled_share(rows, "attackers_held", "attackers")
    results["riggers_held_out"] = _pooled_share(rows, "riggers_held", "riggers")
    results["attackers_held_out_counted"] = _pooled_share(rows, "attackers_counted_held", "attackers_counted")
    results["attackers_held_out_earlier_check"] = _pooled_share(
        rows, "attackers_held_earlier_check", "attackers"
    )
    results["honest_held_out"] = max(
        [float(honest_held_clean.mean())] + [row["honest_held_out"] for row in rows]
    )
    results["honest_held_out_counted"] = max(
        [float(honest_held_clean[honest_counted].mean())] + [row["honest_held_out_counted"] for row in rows]
    )
    results["honest_held_out_earlier_check"] = max(row["honest_held_out_earlier_check"] for row in rows)
    # Is the one-rank step within what honest votes alone do? Fresh honest votes in the numbers the
    # middle target's one-rank campaigns cost on the plain board, and around them.
    one_rank_costs = {
        row["targets"][0]["plain_votes"]
        for key, row in results.items()
        if key.endswith(".one_rank") and row["targets"][0]["plain_votes"]
    }
    results["one_rank_honest_noise"] = one_rank_honest_noise(
        honest,
        rank=middle,
        sizes=sorted(one_rank_costs | set(QUICK_NOISE_SIZES if quick else NOISE_SIZES)),
        draws=QUICK_NOISE_DRAWS if quick else NOISE_DRAWS,
        seed=seed,
        practice=practice,
    )
    if measure_movement:
        results.update(
            movement(
                honest,
                order=order,
                attacks=QUICK_MOVE_ATTACKS if quick else MOVE_ATTACKS,
                offsets=QUICK_MOVE_TARGET_OFFSETS if quick else MOVE_TARGET_OFFSETS,
                seed=seed,
                practice=practice,
                limit=limits["one_rank"],
                limit_factor=limit_factor,
                paces=paces,
            )
        )
    results["honest_held_out_shared_networks_differ"] = shared_networks_differ(
        n_models=n_models, n_votes=n_votes, seed=seed, practice=practice
    )
    results["settling"] = settling_cost(
        honest, publishes=SETTLING_PUBLISHES, margin_share=rank_margin_share, practice=practice
    )
    results["seconds"] = time.perf_counter() - started
    return results
