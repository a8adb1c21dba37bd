"""Matchmaking on the site: which two models a rater meets next.

The statistics live in `stats.matchmaker` (pure Python). This module feeds it from the database and
keeps its proposals ready in Redis so that starting a battle costs a few milliseconds.

Boards and queues
-----------------
A rater's votes feed the pooled board and one board per group they belong to, on every dimension. Each
(board, dimension) has its own matchmaker, fitted on that board's counted votes on that dimension, with
its own tie parameter (Trust is mostly ties, Overall seldom). Each board has one queue of *slots* in
Redis. A slot is one proposal: the board's distribution over pairs, the pair it drew, and the board's
*need*. The distribution is the mixture of the board's dimensions' distributions weighted by what each
still needs to reach the tournament's precision goal (`stats.board_mix`: leader announced, intervals
narrow enough, enough raters to publish, times the information a battle carries under that dimension's
ties); the need is their sum. Slots are made one after another, each counting the earlier slots' pairs
and the board's running battles as in flight, so raters who arrive together are spread over pairs.

Choosing for a rater
--------------------
1. Every board the rater feeds that has a slot ready offers it; one of them, chosen with probability
   proportional to its need, has its slot popped from its queue so that the next rater gets the next
   proposal (the others are only read). With no slot anywhere (Redis lost its keys, or a new
   tournament), a slot for the pooled board is built from the database on the spot: the battle still
   starts.
2. Pairs the rater cannot have are removed from every slot: a model that is cooled down or withdrawn, a
   pair the rater already met in this study. Each slot is renormalised over what is left.
3. The pair is drawn from the slots' need-weighted mixture (all equally when none needs anything), with
   no pair above the tournament's `matchmaking_pair_cap` (`stats.board_mix.pair_cap`): the boards
   mostly agree on who leads, and uncapped their leaders' pair took 7% of the battles.
4. The battle records the probability of its ordered pair under that capped mixture, halved for the
   random left/right placement.

Every guarantee of the single matchmaker (floor, in-flight awareness) holds for the mixture because it
holds for each part, and the cap keeps the floor: the excess of a capped pair goes to the others.

Redis holds only derived state. Its loss costs speed, never a battle or a vote. In the embedded demo
there is no Redis, and every battle builds its slot directly.
"""

import json
import logging
import math
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import redis
from django.conf import settings

from config.celery_app import enqueue_on_commit
from raters.models import Rater
from stats.board_mix import Goal, Weights, board_need, capped_mixture, mixture, mixture_weights, pair_cap
from stats.matchmaker import Matchmaker
from tournaments.models import Battle, Dimension, LLMModel, Tournament, Vote, VoteChoice

logger = logging.getLogger(__name__)

# Positions must be unpredictable to raters, so they come from the OS's random source.
_random = secrets.SystemRandom()

QUEUE_DEPTH = 40
# A queue shorter than this is topped up at once (not only by the periodic task).
REFILL_BELOW = 20
# Slots older than this were drawn from a stale posterior or a stale list of available models.
SLOT_MAX_AGE_SECONDS = 600
REFILL_LOCK_SECONDS = 60
POOLED = "pooled"

Pair = tuple[int, int]


@dataclass(frozen=True)
class Slot:
    probabilities: dict[Pair, float]  # unordered pair (lower pk first) -> probability
    pick: Pair  # drawn from the slot: the slots made after it count it as in flight
    made_at: float
    need: float = 1.0  # what the board still needs (stats.board_mix): its weight among the rater's boards

    def to_json(self) -> str:
        return json.dumps(
            {
                "pairs": [[a, b, round(p, 9)] for (a, b), p in self.probabilities.items()],
                "pick": list(self.pick),
                "made_at": self.made_at,
                "need": self.need,
            }
        )

    @classmethod
    def from_json(cls, raw: bytes | str) -> "Slot":
        data = json.loads(raw)
        return cls(
            probabilities={(a, b): p for a, b, p in data["pairs"]},
            pick=tuple(data["pick"]),
            made_at=data["made_at"],
            need=data.get("need", 1.0),
        )

    def is_stale(self) -> bool:
        return time.time() - self.made_at > SLOT_MAX_AGE_SECONDS


def pair_key(a: int, b: int) -> Pair:
    return (a, b) if a < b else (b, a)


# --- Reading a board from the database --------------------------------------------------------------


def board_votes(dimension: Dimension, group_id: int | None) -> list[tuple[int, int, str]]:
    """(model_a, model_b, outcome) of the board's counted votes on the dimension, in order."""
    choices = VoteChoice.objects.counted().filter(dimension=dimension)
    if group_id is not None:
        choices = choices.filter(vote__battle__rater__groups=group_id)
    # Outcome values ("a", "b", "tie") are the matchmaker's own.
    return list(
        choices.order_by("vote_id").values_list(
            "vote__battle__model_a_id", "vote__battle__model_b_id", "outcome"
        )
    )


def board_raters(tournament: Tournament, group_id: int | None) -> int:
    """Distinct raters with counted votes on the board (publication needs enough of them)."""
    votes = Vote.objects.counted().filter(battle__tournament=tournament)
    if group_id is not None:
        votes = votes.filter(battle__rater__groups=group_id)
    return votes.values("battle__rater_id").distinct().count()


def board_in_flight(tournament: Tournament, group_id: int | None) -> list[Pair]:
    battles = Battle.objects.filter(tournament=tournament, state=Battle.State.ACTIVE)
    if group_id is not None:
        battles = battles.filter(rater__groups=group_id)
    return [pair_key(a, b) for a, b in battles.values_list("model_a_id", "model_b_id")]


def matchmaking_goal(tournament: Tournament) -> tuple[Goal, Weights]:
    """The tournament's precision goal and the weights of its parts (stats.board_mix)."""
    goal = Goal(
        threshold=tournament.leader_threshold,
        interval_width=tournament.matchmaking_interval_width,
        min_raters=settings.POPULUS_MIN_GROUP_RATERS,
    )
    weights = Weights(
        leader=tournament.matchmaking_weight_leader,
        intervals=tournament.matchmaking_weight_intervals,
        raters=tournament.matchmaking_weight_raters,
    )
    return goal, weights


def board_parts(tournament: Tournament, group_id: int | None) -> list[tuple[Matchmaker, float]]:
    """One (matchmaker, need) per dimension of the board, all over the same models; a tournament with no
    dimension yet gets one matchmaker with no data (uniform over pairs, apart from placement)."""
    votes = {dimension: board_votes(dimension, group_id) for dimension in tournament.dimensions.all()}
    model_ids = set(tournament.llm_models.values_list("pk", flat=True))
    for rows in votes.values():
        model_ids |= {a for a, _, _ in rows} | {b for _, b, _ in rows}
    models = sorted(model_ids)
    if len(models) < 2:
        return []
    if not votes:
        return [(Matchmaker(models), 1.0)]
    goal, weights = matchmaking_goal(tournament)
    raters = board_raters(tournament, group_id)
    parts = []
    for rows in votes.values():
        # Seeded: the posterior draws behind P(best) and the policy depend only on the data, so a board's
        # need and distribution are the same in every process that rebuilds them.
        matchmaker = Matchmaker(models, seed=0)
        matchmaker.observe_many(rows)
        widest = max(high - low for low, high in matchmaker.intervals().values())
        need = board_need(
            p_best=max(matchmaker.probability_best().values()),
            models=len(models),
            widest_interval=widest,
            raters=raters,
            tie_parameter=matchmaker.tie_parameter(),
            goal=goal,
            weights=weights,
        )
        parts.append((matchmaker, need))
    return parts


def slots_make(
    tournament: Tournament, group_id: int | None, count: int, pending: Iterable[Pair] = ()
) -> list[Slot]:
    """`count` proposals for the board, each counting the earlier ones (and `pending`) as in flight."""
    available = set(tournament.llm_models.available().values_list("pk", flat=True))
    parts = board_parts(tournament, group_id)
    if not parts:
        return []
    everyone = parts[0][0].models
    unavailable = [pair_key(a, b) for a in everyone for b in everyone if a < b and not {a, b} <= available]
    in_flight = board_in_flight(tournament, group_id) + list(pending)
    needs = [need for _, need in parts]
    slots = []
    for _ in range(count):
        try:
            distributions = [
                matchmaker.pair_distribution(exclude_pairs=unavailable, in_flight=in_flight)
                for matchmaker, _ in parts
            ]
        except ValueError:  # fewer than two models available
            break
        # Keys are in the matchmakers' model order, which is ascending pk: already `pair_key` order.
        distribution = mixture(distributions, needs)
        pick = _random.choices(list(distribution), weights=list(distribution.values()))[0]
        slots.append(Slot(probabilities=distribution, pick=pick, made_at=time.time(), need=sum(needs)))
        in_flight.append(pick)
    return slots


# --- The queues in Redis ---------------------------------------------------------------------------------


@cache
def redis_client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def _queues_enabled() -> bool:
    return not settings.POPULUS_EMBEDDED


def queue_key(tournament_id: int, group_id: int | None) -> str:
    return f"populus:matchmaking:{tournament_id}:{POOLED if group_id is None else group_id}"


def queue_refill(*, tournament_id: int, group_id: int | None) -> int:
    """Top the board's queue up to QUEUE_DEPTH; returns how many slots were added. One refill per board
    at a time (a Redis lock), so a burst of arrivals does not rebuild the same matchmaker many times."""
    client = redis_client()
    key = queue_key(tournament_id, group_id)
    if not client.set(f"{key}:refill", 1, nx=True, ex=REFILL_LOCK_SECONDS):
        return 0
    try:
        waiting = [Slot.from_json(raw) for raw in client.lrange(key, 0, -1)]
        fresh = [slot for slot in waiting if not slot.is_stale()]
        if len(fresh) != len(waiting):  # stale slots lead the queue: start it again
            client.delete(key)
            fresh = []
        missing = QUEUE_DEPTH - len(fresh)
        if missing <= 0:
            return 0
        tournament = Tournament.objects.filter(pk=tournament_id).first()
        if tournament is None:  # deleted since the refill was asked for
            return 0
        slots = slots_make(tournament, group_id, missing, pending=[slot.pick for slot in fresh])
        if slots:
            client.rpush(key, *(slot.to_json() for slot in slots))
        return len(slots)
    finally:
        client.delete(f"{key}:refill")


def boards_in_demand() -> list[tuple[int, int | None]]:
    """(tournament, group) of every board an admitted rater feeds: the queues worth keeping full."""
    rows = Rater.objects.filter(status=Rater.Status.ADMITTED).values_list("study__tournament_id", "groups")
    boards = set()
    for tournament_id, group_id in rows:
        boards.add((tournament_id, None))
        if group_id is not None:
            boards.add((tournament_id, group_id))
    return sorted(boards, key=lambda board: (board[0], board[1] or 0))


def queues_refill_all() -> int:
    return sum(queue_refill(tournament_id=t, group_id=g) for t, g in boards_in_demand())


# --- Choosing a pair for a rater -------------------------------------------------------------------------


def pair_choose(
    *, rater: Rater, available: list[LLMModel], met: set[Pair]
) -> tuple[LLMModel, LLMModel, float]:
    """Two models for the rater's next battle, in random left/right order, and the probability of that
    ordered pair. `met` holds the pairs the rater has already compared (never offered again).

    Raises ValueError when no allowed pair is left."""
    by_pk = {model.pk: model for model in available}
    allowed = {pair_key(a, b) for a in by_pk for b in by_pk if a < b and pair_key(a, b) not in met}
    if not allowed:
        raise ValueError("no pair left for this rater")
    tournament = rater.study.tournament
    boards = [None, *rater.groups.values_list("pk", flat=True)]
    slots = [slot for slot in _candidate_slots(tournament, boards) if _allowed_mass(slot, allowed) > 0]
    if not slots:  # nothing ready, or only slots made before a model came back
        slots = slots_make(tournament, None, 1)
    distribution = _combined(
        slots, allowed, cap=tournament.matchmaking_pair_cap, pairs=math.comb(len(by_pk), 2)
    )
    pair = _random.choices(list(distribution), weights=list(distribution.values()))[0]
    first, second = pair if _random.random() < 0.5 else pair[::-1]
    return by_pk[first], by_pk[second], distribution[pair] / 2


def _allowed_mass(slot: Slot, allowed: set[Pair]) -> float:
    return sum(p for pair, p in slot.probabilities.items() if pair in allowed)


def _restricted(slot: Slot, allowed: set[Pair]) -> dict[Pair, float]:
    mass = _allowed_mass(slot, allowed)
    return {pair: p / mass for pair, p in slot.probabilities.items() if pair in allowed}


def _combined(slots: list[Slot], allowed: set[Pair], *, cap: float, pairs: int) -> dict[Pair, float]:
    """Each board's slot restricted to the allowed pairs and renormalised, then their need-weighted
    mixture with no pair above the tournament's cap (stats.board_mix)."""
    restricted = [_restricted(slot, allowed) for slot in slots]
    offered = len(set().union(*restricted))
    cap = pair_cap(cap, pairs=pairs, allowed=offered)
    return capped_mixture(restricted, [slot.need for slot in slots], cap)


def _candidate_slots(tournament: Tournament, boards: list[int | None]) -> list[Slot]:
    """One slot per board that has one ready, the randomly chosen board's first (popped from its queue,
    so the next rater gets the next proposal); the others are only read."""
    if not _queues_enabled():
        return []
    try:
        return _slots_from_redis(tournament.pk, boards)
    except redis.RedisError:
        logger.warning("Matchmaking queues unreachable; building a pair from the database.", exc_info=True)
        return []


def _slots_from_redis(tournament_id: int, boards: list[int | None]) -> list[Slot]:
    client = redis_client()
    keys = [queue_key(tournament_id, board) for board in boards]
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.lindex(key, 0)
    heads = {
        board: Slot.from_json(raw)
        for board, raw in zip(boards, pipe.execute(), strict=True)
        if raw is not None
    }
    for board in boards:
        if board not in heads or heads[board].is_stale():
            heads.pop(board, None)
            _refill_soon(tournament_id, board)
    if not heads:
        return []
    ready = sorted(heads, key=lambda board: board or 0)
    chosen_board = _random.choices(ready, weights=mixture_weights([heads[board].need for board in ready]))[0]
    popped = client.lpop(queue_key(tournament_id, chosen_board))
    if client.llen(queue_key(tournament_id, chosen_board)) < REFILL_BELOW:
        _refill_soon(tournament_id, chosen_board)
    others = [slot for board, slot in heads.items() if board != chosen_board]
    if popped is None:  # another rater took the last one a moment ago
        return others
    return [Slot.from_json(popped), *others]


def _refill_soon(tournament_id: int, group_id: int | None) -> None:
    enqueue_on_commit(
        "tournaments.tasks.refill_matchmaking_queue", tournament_id=tournament_id, group_id=group_id
    )
