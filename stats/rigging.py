"""Vote-rigging detection: which raters' votes move one model's standing far more than chance.

Pure numpy and scipy (no Django), so the published fit, the benchmark (``bench/rigging.py``) and the tests
share it.

The statistic
-------------
Under the published fit each vote ``(i, j)`` gives model ``i`` an expected score ``e`` (win 1, tie 1/2,
loss 0) and a variance ``v``. For a unit ``u`` (a rater, or a crowd of raters) and a model ``m``,

    excess[u, m] = sum over u's votes with m of (m's score - e),   z[u, m] = excess / sqrt(var + 1).

An honest unit's excess has mean about zero whatever its size. A rater who votes for a target whenever
it appears piles up a positive excess on it; one who votes against the target's neighbours in battles
without the target (the "omnipresent" attack) piles up a negative excess on each neighbour. The ``+ 1``
in the denominator keeps one surprising vote (an upset at p = 0.02 would otherwise be z = 7) from ever
looking like a campaign: one vote can never reach |z| > 1.

The same is computed for each model's excess *over the models ranked above it* (its own excess minus
theirs), with the variance that follows vote by vote: an "omnipresent" attacker who spreads small losses
over every model above the target moves that sum a lot while moving no single rival much. And for each
model's excess over the ``neighbours`` (2) models ranked just above it: a campaign for one rank pushes
the target up and its nearest rivals down, each by too few votes to see alone, but together by a sum
whose z is well above any one of theirs (the benchmark's one-rank omnipresent campaigns: 5.6 and 8.3
against at most 4.0 and 5.3, judged as one crowd).

A unit is flagged when some model has |z| above ``z_threshold`` (default 5: under the normal
approximation about 6e-7 per model, so a few in ten thousand honest raters over 60 models). Raters with
at least ``min_votes`` compared votes are judged alone. Every rater is also judged together with the
raters who share their network fingerprint, and with those who arrived in the same arrival window, so
a crowd split into many small raters is seen as the crowd it is. An arrival window's crowd is only
the raters in it who arrived with others from their own network: the honest newcomers alone on theirs
would otherwise drown a small crowd in their noise. In a flagged crowd only the members who pushed the
flagged model the flagged way are held out (in an arrival window, only those of them who arrived with
others from their own network among them); then the rest of the crowd is looked at again, and the
members who pushed its next flagged model its way are held out too (``peels`` times in all), since each
member of a crowd that rigs several rivals pushes only some of them.

Last, every rater behind a network shared with others is judged in one crowd (unit ``networks``). A
patient crowd sends one new rater per network per hour over fifty networks: no arrival hour holds two of
its raters from one network, and each network alone is far under the threshold (z about 3), while the
fifty together are z 20 or more. That crowd is mostly honest, and so large that it shows any way in
which raters behind shared networks differ from those alone on theirs (on a scratch variant of the
benchmark's log with every one of them 20% less careful, its columns over the models above held out 11%
of the honest raters). So it is judged on the columns over the two neighbours above only: a campaign for
one rank moves them, and such a difference moves a model and its neighbours alike. Over their mean, not
their sum: a common loss of care pulls each model's excess towards the middle in proportion to its
distance from the mean skill, so the model less the sum of two neighbours of about its skill moves as
far as the model alone, and the model less their mean hardly moves (on the benchmark's honest log of
seed 3 with every shared network 20% less careful, over the sum held out 2.8% of the honest raters, over
the mean none). Where it is flagged, whole networks are taken, those that pushed the flagged column
hardest first, until the rest of it is unremarkable (z at most ``NETWORKS_REST_Z``, 2: as first built,
stopping at the threshold held out 21% of the benchmark's patient crowd on its dearest target, against
91% at 2), and their members who pushed that way are held out.

The same networks are also counted, not only summed (unit ``pushing``). Summed with every honest rater
behind a shared network, a patient crowd's push is drowned in their noise once the honest log is large:
the benchmark's patient crowds lifted their target one rank with 2,564 votes on one log (3.1 times the
plain board's cost) and 3,077 on another, unseen, though each was z 20 judged alone. But each of its
fifty networks pushes the same column: for each column over the neighbours and each way, the check
counts the networks whose own z there is past ``NETWORK_PUSH_Z`` (2), against the share that do on the
median column, at least chance's (``CHANCE_PUSH_SHARE``; most networks are too small to get there, so
the median is lower), and turns that count's exact binomial tail into a z. Where it is past the
threshold, the networks that pushed hardest are taken until the count left is unremarkable, and their
members who pushed that way are held out. Only raters no other unit has taken are counted: in the
benchmark's largest campaign (400,000 votes) counting them all held out 75 honest raters, counting the
rest 39. On the benchmark's 72 honest logs (seeds 0 to 17, each kind of
difference between shared networks and none), its z was at most 1.25 where the threshold is 5.

A big network is first read for its own care. Hundreds of honest raters behind one network (a class
rating for credit, say) may tell models apart less surely than the reference raters, or more: their
votes follow skills ``k * theta`` with ``k`` other than 1. That moves each model's excess with how fast
its expected scores move as skill differences widen (``care_slopes``), the top models down and the
bottom ones up, and each model's excess over the models above it far more: on the benchmark's honest log
of seed 5 with every shared network 20% less careful, one network of 280 raters was z 5.6 there and 250
of them were held out (1.25% of the honest raters). So for each network of at least
``MIN_SPREAD_VOTES_PER_MODEL`` votes a model, its residuals are regressed on their care slopes and the
fitted part is taken out of its members' columns before it is judged. A campaign reads as care in part
(one against every model above its target, as ``k - 1`` of about -3), so no more than ``MAX_CARE`` (0.5)
is taken out. On the benchmark's 72 honest logs (seeds 0 to 17, each kind of difference and none), the
most held out went from 1.25% to 0.05%.

A crowd behind one network is judged against its own spread. A network of hundreds of honest raters (a
campus, an office) may share a taste of its own: it moves every model a little, and enough votes make
some model's z pass the threshold as a campaign's would. So each such crowd's z is divided by the square
root of its ``overdispersion``: how much wider than chance its z spreads over the models, read off the
25th percentile of z squared, which a campaign for one rank (a target and two neighbours) does not move.
It is capped at ``MAX_OVERDISPERSION`` (2), since a crowd can widen its own spread at will by voting a
fixed order in its other battles: the cap bounds what that buys to z over 1.4 (at a cap of 4, the
benchmark's quick run had an omnipresent campaign move its target with 1,024 votes instead of 2,000 or
more). On the benchmark's honest logs where shared networks have a taste of their own (sd 0.2 per model,
seeds 0 to 5), the share of honest raters held out by crowds of one network went from up to 5.1% to at
most 0.75%. Raters alone and arrival hours are judged as before: no honest rater was held out there, and
judging them so too held out slightly fewer attackers. A crowd of fewer than ``MIN_SPREAD_VOTES_PER_MODEL``
(10) votes a model is taken at 1: its quartile is mostly noise, and clipped at 1 it runs above 1 even
under chance.

The crowd of networks is not judged against its own spread as a whole: it is wider than chance even when
honest (its thousands of votes show the reference fit's own error; 1.5 times chance on its neighbour
columns on the benchmark's second log), and dividing that out let the patient crowd through (2,560 votes
on that log's target 35, against 832 on the plain board). Instead each network's votes weigh in that
crowd's variance times the network's own overdispersion. The benchmark's networks are sized as in life, a
few of hundreds and many small, and a few big honest ones with tastes of their own lean on some model
and its neighbours together as a campaign does: on its honest logs with tastes per network, seeds 0 to
17, the crowd of networks held out 2.0% to 3.8% of the honest raters on three of 36, and none with the
weights. A patient crowd's networks are small, their spread is not read, and they weigh as before. A
difference every shared network has alike, which weights cannot see, is what the mean above is for.
Every other unit, the count above among them, keeps the sum: with the mean in every unit, the patient
crowd lifted the benchmark's seed 1 target 35 one rank with 2,564 votes (3.1 times the plain board's),
none of its raters held out.

Everyone is judged against a fit of the *reference raters* only: those on a network shared by at most
``reference_max_sharing`` raters (3). A campaign as large as the honest log drags a fit of every vote so
far that honest crowds behind shared networks (a thousand votes or more) look rigged against it; the cap
on new raters per network per hour forces a crowd that large onto shared networks, out of the reference.
The detector refits without the raters it holds out and looks again ``rounds`` times.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from scipy import stats as scipy_stats

DEFAULT_Z_THRESHOLD = 5.0
DEFAULT_MIN_VOTES = 20
DEFAULT_BURST_SECONDS = 3600.0
DEFAULT_REFERENCE_MAX_SHARING = 3
MIN_REFERENCE_SHARE = 0.3
MIN_REFERENCE_VOTES_PER_MODEL = 500
DEFAULT_PEELS = 10
DEFAULT_NEIGHBOURS = 2
NETWORKS_REST_Z = 2.0
# A network "pushes" a column when its own z there is past this; under chance one in 44 does each way.
NETWORK_PUSH_Z = 2.0
CHANCE_PUSH_SHARE = 0.02275  # the normal tail past 2, scipy.stats.norm.sf(2)
# The 25th percentile of z squared for one column under chance (chi-square with one degree of freedom,
# scipy.stats.chi2.ppf(0.25, 1)); a crowd whose columns spread more than that is over-dispersed.
CHANCE_Z2_QUARTILE = 0.10153
MAX_OVERDISPERSION = 2.0
MIN_SPREAD_VOTES_PER_MODEL = 10
# The most a network's care is taken to differ from the reference raters' (k - 1; skills k * theta): half
# as careful or half as careful again. An omnipresent campaign against every model above its target
# reads as k - 1 of about -3 (skill differences turned over), and beyond the cap it stays in the network's
# columns (see the module docstring).
MAX_CARE = 0.5


@dataclass
class VoteLog:
    """Votes as parallel arrays: rater index, the two models, and model i's score (1, 0.5 or 0)."""

    rater: np.ndarray
    i: np.ndarray
    j: np.ndarray
    score: np.ndarray

    def __post_init__(self) -> None:
        self.rater = np.asarray(self.rater, dtype=np.intp)
        self.i = np.asarray(self.i, dtype=np.intp)
        self.j = np.asarray(self.j, dtype=np.intp)
        self.score = np.asarray(self.score, dtype=float)

    def __len__(self) -> int:
        return len(self.rater)

    def subset(self, keep: np.ndarray) -> VoteLog:
        return VoteLog(self.rater[keep], self.i[keep], self.j[keep], self.score[keep])


@dataclass
class Finding:
    """Why a rater is held out: the model whose standing their unit moved, which way, and how far."""

    rater: int
    model: int
    z: float
    unit: str  # "rater", "network", "burst", "networks" or "pushing" (see ``raters_judge``)
    over_above: bool = False  # moved against the models ranked above it, rather than alone
    over_neighbours: bool = False  # moved against the few models ranked just above it


@dataclass
class Detection:
    held_out: np.ndarray  # bool per rater
    findings: dict[int, Finding] = field(default_factory=dict)


def expected_scores(theta: np.ndarray, log_nu: float, i: np.ndarray, j: np.ndarray):
    """Model i's expected score against j under Bradley-Terry-Davidson, and its variance."""
    half = (theta[i] - theta[j]) / 2
    nu = np.exp(log_nu) if np.isfinite(log_nu) else 0.0
    win, loss = np.exp(half), np.exp(-half)
    total = win + loss + nu
    p_win, p_tie = win / total, nu / total
    mean = p_win + p_tie / 2
    return mean, p_win + p_tie / 4 - mean**2


def _summed(index: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """``weights`` summed by ``index`` into ``size`` cells (``np.add.at``, at a fraction of its time)."""
    return np.bincount(index, weights=weights, minlength=size)


def excess_table(
    log: VoteLog,
    theta: np.ndarray,
    log_nu: float,
    n_raters: int,
    neighbours: int = DEFAULT_NEIGHBOURS,
    *,
    residuals: np.ndarray | None = None,
):
    """Per rater, 3 x n_models columns of summed excess and its variance: first each model's own excess,
    then each model's excess *over the models ranked above it* (its own minus theirs), which is what an
    attacker who spreads small losses over every rival moves, while no single rival moves much; then
    each model's excess over the ``neighbours`` models ranked just above it, which is what a small
    campaign for one rank moves: the target up and the one or two rivals just above it down, each too
    little to see alone (0 ``neighbours``: that block is all zeros): ``over_neighbours`` of the first.
    Given ``residuals`` per vote, they are summed in place of each vote's score less its expected one."""
    n_models = len(theta)
    mean, var = expected_scores(theta, log_nu, log.i, log.j)
    resid = log.score - mean if residuals is None else residuals
    cells = n_raters * n_models
    cell_i, cell_j = log.rater * n_models + log.i, log.rater * n_models + log.j
    excess = (_summed(cell_i, resid, cells) - _summed(cell_j, resid, cells)).reshape(n_raters, n_models)
    variance = (_summed(cell_i, var, cells) + _summed(cell_j, var, cells)).reshape(n_raters, n_models)
    order = np.argsort(-theta, kind="stable")
    rank = np.empty(n_models, dtype=np.intp)
    rank[order] = np.arange(n_models)
    by_rank = excess[:, order]
    over_above = np.empty_like(by_rank)
    over_above[:, order] = by_rank - (np.cumsum(by_rank, axis=1) - by_rank)
    # A vote between the models ranked lo < hi changes "m over those above" by its residual for every m
    # ranked in [lo, hi) and by twice it for m at hi (one side is m, the other above it); 0 elsewhere.
    low, high = np.minimum(rank[log.i], rank[log.j]), np.maximum(rank[log.i], rank[log.j])
    edges = n_raters * (n_models + 1)
    steps = _summed(log.rater * (n_models + 1) + low, var, edges) - _summed(
        log.rater * (n_models + 1) + high, var, edges
    )
    points = _summed(log.rater * n_models + high, 4 * var, cells)
    spread = np.cumsum(steps.reshape(n_raters, n_models + 1), axis=1)[:, :n_models]
    over_variance = np.empty_like(spread)
    over_variance[:, order] = spread + points.reshape(n_raters, n_models)
    near, near_variance = over_neighbours(log, theta, log_nu, excess, variance, neighbours)
    return np.hstack([excess, over_above, near]), np.hstack([variance, over_variance, near_variance])


def over_neighbours(
    log: VoteLog,
    theta: np.ndarray,
    log_nu: float,
    excess: np.ndarray,
    variance: np.ndarray,
    neighbours: int = DEFAULT_NEIGHBOURS,
    *,
    mean: bool = False,
):
    """Per rater, each model's excess minus the sum (or the ``mean``) of the ``neighbours`` models ranked
    just above it, and its variance vote by vote, from ``excess`` and ``variance``: the own-model block
    of ``excess_table`` for the same votes. A vote between two models of one such set moves that column
    by other than one residual on each side (the sum: twice or none of it), so those votes' variance is
    corrected."""
    n_raters, n_models = excess.shape
    if not neighbours:
        return np.zeros_like(excess), np.zeros_like(variance)
    _, var = expected_scores(theta, log_nu, log.i, log.j)
    order = np.argsort(-theta, kind="stable")
    sides = np.zeros((n_models, n_models))  # sides[m, k]: how model k's excess counts in m's column
    for position, model in enumerate(order[neighbours + 1 :], start=neighbours + 1):
        # Models with no more than ``neighbours`` above them have this column in the one before.
        sides[model, model] = 1.0
        sides[model, order[position - neighbours : position]] = -1.0 / neighbours if mean else -1.0
    near = excess @ sides.T
    near_variance = variance @ (sides**2).T
    rank = np.empty(n_models, dtype=np.intp)
    rank[order] = np.arange(n_models)
    close = np.flatnonzero(np.abs(rank[log.i] - rank[log.j]) <= neighbours)  # the only votes in one set
    both = sides[:, log.i[close]] * sides[:, log.j[close]]
    model, nonzero = np.nonzero(both)
    vote = close[nonzero]
    cell = log.rater[vote] * n_models + model
    correction = _summed(cell, 2 * both[model, nonzero] * var[vote], excess.size)
    return near, near_variance - correction.reshape(n_raters, n_models)


def care_slopes(theta: np.ndarray, log_nu: float, log: VoteLog) -> np.ndarray:
    """Per vote, how fast model i's expected score moves as every skill difference widens (its derivative
    in k at k = 1, skills k * theta): raters more careful than the fit's (k > 1) leave this in their
    residuals times k - 1, less careful ones (k < 1) the same with the sign turned."""
    step = 1e-4
    wider, _ = expected_scores(theta * (1 + step), log_nu, log.i, log.j)
    narrower, _ = expected_scores(theta * (1 - step), log_nu, log.i, log.j)
    return (wider - narrower) / (2 * step)


def _networks_care_taken_out(
    log: VoteLog,
    theta: np.ndarray,
    log_nu: float,
    network: np.ndarray,
    members: np.ndarray,
    excess: np.ndarray,
    votes: np.ndarray,
    neighbours: int,
) -> np.ndarray:
    """``excess`` with each network's own care taken out of its members' rows, for networks of at least
    ``MIN_SPREAD_VOTES_PER_MODEL`` votes a model (see the module docstring): their votes' residuals are
    regressed on their ``care_slopes`` (least squares, each vote weighed by its variance's inverse, the
    slope at most ``MAX_CARE`` either way), and the fitted part summed into the table's columns is
    subtracted. The variance is left as it was: one degree of freedom in hundreds of votes, which only
    lowers z a little."""
    n_raters, n_models = excess.shape[0], len(theta)
    keys, inverse = np.unique(network[members], return_inverse=True)
    inverse = inverse.ravel()
    measured = np.bincount(inverse, weights=votes[members]) >= MIN_SPREAD_VOTES_PER_MODEL * n_models
    read = members[measured[inverse]]
    if not len(read):
        return excess
    unit_of = np.full(n_raters, -1)
    unit_of[members] = inverse
    in_read = np.zeros(n_raters, dtype=bool)
    in_read[read] = True
    theirs = log.subset(in_read[log.rater])
    mean, var = expected_scores(theta, log_nu, theirs.i, theirs.j)
    slope = care_slopes(theta, log_nu, theirs)
    unit = unit_of[theirs.rater]
    weighed = slope / np.maximum(var, np.finfo(float).tiny)
    covariance = np.bincount(unit, weights=(theirs.score - mean) * weighed, minlength=len(keys))
    spread = np.bincount(unit, weights=slope * weighed, minlength=len(keys))
    care = np.clip(covariance / np.maximum(spread, np.finfo(float).tiny), -MAX_CARE, MAX_CARE)  # k - 1
    slopes_summed, _ = excess_table(theirs, theta, log_nu, n_raters, neighbours, residuals=slope)
    taken_out = excess.copy()
    taken_out[read] -= care[unit_of[read]][:, None] * slopes_summed[read]
    return taken_out


def crowd_z(excess: np.ndarray, variance: np.ndarray, rows) -> np.ndarray:
    """Per column, the z of the given raters' rows summed as one crowd (plus one vote's variance)."""
    return excess[rows].sum(axis=0) / np.sqrt(variance[rows].sum(axis=0) + 1.0)


def overdispersion(own_z: np.ndarray, votes) -> np.ndarray:
    """How much wider than chance a crowd's z spreads over the models (per row of ``own_z``, its own-model
    columns, cast ``votes`` votes): the 25th percentile of z squared over its value under chance, at least
    1 and at most ``MAX_OVERDISPERSION``. A big honest network with a taste of its own spreads over every
    model; a campaign for one rank moves a few models and leaves that quantile alone. The cap bounds what
    a crowd buys by voting a fixed order in every other battle, which spreads it as wide as it likes.
    A crowd of fewer than ``MIN_SPREAD_VOTES_PER_MODEL`` votes a model is taken at 1: its spread is
    mostly noise, and a noisy quartile clipped at 1 runs above it (twelve models and 90 votes: 1.4)."""
    quartile = np.quantile(np.square(own_z), 0.25, axis=-1)
    measured = np.asarray(votes) >= MIN_SPREAD_VOTES_PER_MODEL * own_z.shape[-1]
    return np.where(measured, np.clip(quartile / CHANCE_Z2_QUARTILE, 1.0, MAX_OVERDISPERSION), 1.0)


def _units_z(units: np.ndarray, members: np.ndarray, excess: np.ndarray, variance: np.ndarray):
    """The ``members`` grouped by their ``units``: the units' keys, each member's unit (an index into
    them), and per unit and column the z of its members' rows summed (``crowd_z`` of every unit at once)."""
    keys, inverse = np.unique(units[members], return_inverse=True)
    inverse = inverse.ravel()
    # One row per unit, a 1 for each of its members: a sparse product sums their rows fast.
    grouping = sparse.csr_matrix(
        (np.ones(len(members)), (inverse, members)), shape=(len(keys), excess.shape[0])
    )
    return keys, inverse, (grouping @ excess) / np.sqrt(grouping @ variance + 1.0)


def _units_overdispersion(z: np.ndarray, inverse: np.ndarray, members: np.ndarray, votes: np.ndarray):
    """Per unit of ``_units_z``, the ``overdispersion`` of its own-model columns, its votes its members'."""
    return overdispersion(z[:, : z.shape[1] // 3], np.bincount(inverse, weights=votes[members]))


def _record_findings(found: dict, raters, column: int, z: float, unit: str, n_models: int) -> None:
    """Record why each of ``raters`` is held out, unless an earlier unit already did: ``column`` of the
    excess table, which tells the model and whether alone, over those above or over its neighbours."""
    for rater in raters:
        found.setdefault(
            int(rater),
            Finding(
                int(rater),
                column % n_models,
                z,
                unit,
                over_above=column // n_models == 1,
                over_neighbours=column // n_models == 2,
            ),
        )


def _crowd_findings(
    units: np.ndarray,
    members: np.ndarray,
    excess: np.ndarray,
    variance: np.ndarray,
    z_threshold: float,
    label: str,
    companions: np.ndarray | None = None,
    peels: int = DEFAULT_PEELS,
    votes: np.ndarray | None = None,
) -> dict[int, Finding]:
    """Sum the members' rows per unit; in each flagged unit, the members who pushed the flagged way, then
    (up to ``peels`` times in all) the members who pushed the way the rest of the crowd is flagged
    (given each rater's ``votes``: each crowd's z over the square root of its ``overdispersion``)."""
    found: dict[int, Finding] = {}
    if not len(members):
        return found
    _, inverse, z = _units_z(units, members, excess, variance)
    n_models = excess.shape[1] // 3
    if votes is not None:
        z /= np.sqrt(_units_overdispersion(z, inverse, members, votes))[:, None]
    for unit in np.flatnonzero(np.abs(z).max(axis=1) > z_threshold):
        inside = members[inverse == unit]
        for _ in range(peels):
            # Peel: hold out who pushed the worst model the worst way, then look at the rest of the
            # crowd again, since a crowd may push several rivals and each member only some of them.
            unit_z = crowd_z(excess, variance, inside)
            if votes is not None:
                unit_z /= np.sqrt(overdispersion(unit_z[:n_models], votes[inside].sum()))
            model = int(np.abs(unit_z).argmax())
            if abs(unit_z[model]) <= z_threshold:
                break
            sign = np.sign(unit_z[model])
            pushed = inside[sign * excess[inside, model] > 0]
            if companions is not None:
                # An arrival window holds honest newcomers too; of those who pushed the flagged way,
                # only the ones who came with others from their own network are taken to be the crowd.
                shared = np.unique(companions[pushed], return_counts=True)
                crowded = shared[0][shared[1] > 1]
                pushed = pushed[np.isin(companions[pushed], crowded)]
            if not len(pushed):
                break
            _record_findings(found, pushed, model, float(unit_z[model]), label, n_models)
            inside = np.setdiff1d(inside, pushed)
    return found


def _networks_overdispersion(members, network, excess, variance, votes) -> np.ndarray:
    """Per rater, the ``overdispersion`` of the crowd behind its network (1 for raters not ``members``)."""
    _, inverse, z = _units_z(network, members, excess, variance)
    factor = np.ones(len(excess))
    factor[members] = _units_overdispersion(z, inverse, members, votes)[inverse]
    return factor


def _crowd_of_networks_findings(
    members: np.ndarray,
    network: np.ndarray,
    near: np.ndarray,
    near_variance: np.ndarray,
    z_threshold: float,
    peels: int = DEFAULT_PEELS,
) -> dict[int, Finding]:
    """The ``members`` judged as one crowd, on each model's excess over its neighbours only (``near``, with
    its ``near_variance``: see the module docstring). Such a crowd is mostly honest, so where it is flagged
    the check takes networks, not raters: those that pushed the flagged column hardest, one by one, until the
    rest of the crowd is unremarkable (``NETWORKS_REST_Z``), and holds out their members who pushed it. Fifty
    networks at z 2.8 each are z 20 together; honest networks that push as hard are a few in a thousand. Then
    the rest is looked at again (``peels`` times in all), as in ``_crowd_findings``, with one difference:
    networks taken before are the suspects, and once the crowd without them is no longer flagged only they are
    taken. Otherwise each later column, flagged by what is left of a campaign by a little, takes the honest
    networks that happen to push it too (a benchmark campaign of 20,000 votes: 1.8% of the honest raters)."""
    found: dict[int, Finding] = {}
    n_models = near.shape[1]
    inside = members
    suspects = np.zeros(0, dtype=network.dtype)
    for _ in range(peels):
        if not len(inside):
            break
        unit_z = crowd_z(near, near_variance, inside)
        model = int(np.abs(unit_z).argmax())
        if abs(unit_z[model]) <= z_threshold:
            break
        pushing = np.sign(unit_z[model]) * near[inside, model]
        keys, by_network = np.unique(network[inside], return_inverse=True)
        by_network = by_network.ravel()
        pushes = np.bincount(by_network, weights=pushing)
        spreads = np.bincount(by_network, weights=near_variance[inside, model])
        hardest = np.argsort(-pushes / np.sqrt(spreads + 1.0), kind="stable")
        suspect = np.isin(keys, suspects)
        if pushes[~suspect].sum() / np.sqrt(spreads[~suspect].sum() + 1.0) <= z_threshold:
            hardest = hardest[suspect[hardest]]
        rest_z = (pushes.sum() - np.cumsum(pushes[hardest])) / np.sqrt(
            spreads.sum() - np.cumsum(spreads[hardest]) + 1.0
        )
        unremarkable = rest_z <= NETWORKS_REST_Z
        taken = hardest[: int(np.argmax(unremarkable)) + 1] if unremarkable.any() else hardest
        suspects = np.union1d(suspects, keys[taken])
        pushed = inside[np.isin(by_network, taken) & (pushing > 0)]
        column = 2 * n_models + model  # the excess table's column over the neighbours
        _record_findings(found, pushed, column, float(unit_z[model]), "networks", n_models)
        inside = np.setdiff1d(inside, pushed)
    return found


def _count_z(counts, trials: int, share: float) -> np.ndarray:
    """How surprising ``counts`` successes of ``trials`` are at ``share`` each, as the normal z of the
    same upper tail (exact: a handful of networks is far from normal)."""
    tail = scipy_stats.binom.sf(np.asarray(counts) - 1, trials, share)
    return scipy_stats.norm.isf(np.maximum(tail, np.finfo(float).tiny))  # at most about 37, never infinite


def _pushing_networks_findings(
    members: np.ndarray,
    network: np.ndarray,
    excess: np.ndarray,
    variance: np.ndarray,
    z_threshold: float,
    peels: int = DEFAULT_PEELS,
) -> dict[int, Finding]:
    """Many networks that each push one model over its neighbours a little, counted rather than summed:
    per column over the neighbours and way, how many of the ``members``' networks push it past
    ``NETWORK_PUSH_Z``, against the share that do on the median column (at least chance), as a binomial
    z. The sum over every shared network drowns a patient crowd of fifty small networks in the honest
    networks' noise; the count does not, since each of its networks pushes the one column. Where it is
    flagged, the networks that pushed hardest are taken until the count left is unremarkable
    (``NETWORKS_REST_Z``), and their members who pushed that way are held out; then it looks again."""
    found: dict[int, Finding] = {}
    n_models = excess.shape[1] // 3
    inside = members
    for _ in range(peels):
        if not len(inside):
            break
        keys, inverse, z = _units_z(network, inside, excess, variance)
        near = z[:, 2 * n_models :]
        pushes = np.hstack([near, -near])  # each column over the neighbours, up then down
        counts = (pushes > NETWORK_PUSH_Z).sum(axis=0)
        share = max(float(np.median(counts)) / len(keys), CHANCE_PUSH_SHARE)
        count_z = _count_z(counts, len(keys), share)
        column = int(count_z.argmax())
        if count_z[column] <= z_threshold:
            break
        hardest = np.argsort(-pushes[:, column], kind="stable")[: counts[column]]
        rest_z = _count_z(counts[column] - np.arange(1, len(hardest) + 1), len(keys), share)
        taken = hardest[: int(np.argmax(rest_z <= NETWORKS_REST_Z)) + 1]
        model_column = 2 * n_models + column % n_models
        sign = 1.0 if column < n_models else -1.0
        pushed = inside[np.isin(inverse, taken) & (sign * excess[inside, model_column] > 0)]
        if not len(pushed):
            break
        # Signed as the push, so that staff read which way the model was moved.
        _record_findings(found, pushed, model_column, float(sign * count_z[column]), "pushing", n_models)
        inside = np.setdiff1d(inside, pushed)
    return found


def raters_judge(
    log: VoteLog,
    *,
    theta: np.ndarray,
    log_nu: float,
    n_raters: int,
    network: np.ndarray | None = None,
    arrival: np.ndarray | None = None,
    z_threshold: float = DEFAULT_Z_THRESHOLD,
    min_votes: int = DEFAULT_MIN_VOTES,
    burst_seconds: float = DEFAULT_BURST_SECONDS,
    peels: int = DEFAULT_PEELS,
    neighbours: int = DEFAULT_NEIGHBOURS,
    crowd_of_networks: bool = True,
    overdispersed: bool = True,
    pushing_networks: bool = True,
    careless_networks: bool = True,
) -> dict[int, Finding]:
    """One pass of the detector against a given fit: the raters to hold out, each with its reason
    (``crowd_of_networks``: judge every rater behind a shared network in one crowd too;
    ``overdispersed``: judge each network's crowd against its own spread over the models, and weigh
    each network in the crowd of networks by it; ``pushing_networks``: count the networks in that crowd
    that each push one model; ``careless_networks``: take each big network's own care out of its crowd
    before judging it)."""
    excess, variance = excess_table(log, theta, log_nu, n_raters, neighbours)
    votes = np.bincount(log.rater, minlength=n_raters)
    active = votes > 0
    alone = np.flatnonzero(active & (votes >= min_votes))
    found = _crowd_findings(np.arange(n_raters), alone, excess, variance, z_threshold, "rater", peels=peels)
    # Crowds take every rater, not only the small ones: otherwise a crowd of raters just above
    # min_votes, each harmless alone, would be judged by no one.
    small = np.flatnonzero(active)
    if network is not None:
        # A big network may be more or less careful than the reference raters as a whole: taken out
        # first, or it moves every model with its distance from the middle as no campaign does.
        network_excess = excess
        if careless_networks:
            network_excess = _networks_care_taken_out(
                log, theta, log_nu, np.asarray(network), small, excess, votes, neighbours
            )
        for rater, finding in _crowd_findings(
            np.asarray(network),
            small,
            network_excess,
            variance,
            z_threshold,
            "network",
            peels=peels,
            votes=votes if overdispersed else None,
        ).items():
            found.setdefault(rater, finding)
    if arrival is not None:
        windows = np.floor(np.asarray(arrival, dtype=float) / burst_seconds).astype(np.int64)
        companions = np.asarray(network) if network is not None else None
        crowd = small
        if companions is not None:
            # The crowd in an arrival window is the raters who came with others from their own network
            # (the only ones it would hold out): honest newcomers alone on theirs would drown a small
            # crowd's excess in their own noise.
            _, pair, sizes = np.unique(
                np.column_stack([windows[small], companions[small]]),
                axis=0,
                return_inverse=True,
                return_counts=True,
            )
            crowd = small[sizes[pair.ravel()] > 1]
        burst = _crowd_findings(windows, crowd, excess, variance, z_threshold, "burst", companions, peels)
        for rater, finding in burst.items():
            found.setdefault(rater, finding)
    if network is not None and crowd_of_networks:
        # Every rater behind a shared network, as one crowd: a crowd spread thinly over many networks
        # and arriving slowly enough never to share an arrival hour is seen only together. Raters of
        # any size, so that giving each sybil more votes does not take it out of the crowd.
        shared = ~reference_raters(network, n_raters, max_sharing=1)
        members = small[shared[small]]
        # Read over the mean of each model's neighbours, not their sum: a loss of care common to every
        # shared network moves a model's column over the sum in proportion to its distance from the
        # mean skill, and over the mean hardly at all (see the module docstring).
        n_models = len(theta)
        near, near_variance = over_neighbours(
            log, theta, log_nu, excess[:, :n_models], variance[:, :n_models], neighbours, mean=True
        )
        weight = np.ones(n_raters)
        if overdispersed:
            # Each network's votes weigh in the crowd's variance as widely as that network spreads: a
            # few big honest networks with tastes of their own would otherwise lean on some model and
            # its neighbours together as a campaign does.
            weight = _networks_overdispersion(members, np.asarray(network), excess, variance, votes)
        for rater, finding in _crowd_of_networks_findings(
            members, np.asarray(network), near, near_variance * weight[:, None], z_threshold, peels
        ).items():
            found.setdefault(rater, finding)
        if pushing_networks:
            # The rest of that crowd: the members the sum has taken need not be counted again.
            rest = members[~np.isin(members, list(found))]
            for rater, finding in _pushing_networks_findings(
                rest, np.asarray(network), excess, variance * weight[:, None], z_threshold, peels
            ).items():
                found.setdefault(rater, finding)
    return found


def reference_raters(network: np.ndarray | None, n_raters: int, max_sharing: int | None) -> np.ndarray:
    """The raters whose votes make the fit everyone is judged against: those on a network shared by at
    most ``max_sharing`` raters (all raters when ``max_sharing`` or ``network`` is None).

    A campaign large enough to drag a fit of every vote makes honest crowds look rigged against it (a
    crowd of hundreds behind one network has thousands of votes, enough to show any bias in the fit). The
    new-rater cap per network per hour forces a large crowd to share networks, so raters who are nearly
    alone on theirs give a reference that such a crowd cannot reach."""
    if network is None or max_sharing is None:
        return np.ones(n_raters, dtype=bool)
    _, inverse, sizes = np.unique(np.asarray(network), return_inverse=True, return_counts=True)
    return sizes[inverse] <= max_sharing


def fit_reference(
    log: VoteLog, network: np.ndarray | None, n_raters: int, max_sharing: int | None
) -> np.ndarray:
    """The raters whose votes the check fits everyone against: the ``reference_raters``, or every rater
    if those cast too few votes for a fit to judge crowds by: under ``MIN_REFERENCE_SHARE`` of the votes
    and under ``MIN_REFERENCE_VOTES_PER_MODEL`` a model. The second floor is absolute so that a campaign
    cannot switch the check to a fit it drags by outvoting the reference raters (one of twice the
    honest log's size did, and a quarter of the honest raters were held out)."""
    reference = reference_raters(network, n_raters, max_sharing)
    if not len(log):
        return np.ones(n_raters, dtype=bool)
    votes = int(reference[log.rater].sum())
    n_models = int(max(log.i.max(), log.j.max())) + 1
    if votes < min(MIN_REFERENCE_SHARE * len(log), MIN_REFERENCE_VOTES_PER_MODEL * n_models):
        return np.ones(n_raters, dtype=bool)
    return reference


def raters_hold_out(
    log: VoteLog,
    *,
    fit: Callable[[VoteLog], tuple[np.ndarray, float]],
    n_raters: int,
    network: np.ndarray | None = None,
    arrival: np.ndarray | None = None,
    rounds: int = 2,
    reference_max_sharing: int | None = DEFAULT_REFERENCE_MAX_SHARING,
    **thresholds,
) -> Detection:
    """Judge, hold out, refit without the held-out raters and judge again (``rounds`` times).

    ``fit(log)`` returns ``(theta, log_nu)`` for the votes given; everyone is judged against the fit of
    the votes still counted from the reference raters (``fit_reference``), so a large campaign cannot
    hide by dragging the fit along with it, nor make honest crowds look rigged against a dragged fit.
    """
    held = np.zeros(n_raters, dtype=bool)
    reference = fit_reference(log, network, n_raters, reference_max_sharing)
    findings: dict[int, Finding] = {}
    for _ in range(rounds):
        theta, log_nu = fit(log.subset(reference[log.rater] & ~held[log.rater]))
        found = raters_judge(
            log, theta=theta, log_nu=log_nu, n_raters=n_raters, network=network, arrival=arrival, **thresholds
        )
        new = [rater for rater in found if not held[rater]]
        if not new:
            break
        for rater in new:
            held[rater] = True
            findings[rater] = found[rater]
    return Detection(held_out=held, findings=findings)
