"""Open data: every board as CSV or JSON, and the anonymised battles of a tournament as JSON lines.

Boards come from `leaderboard.boards`, so a suppressed board is exported exactly as the pages show it:
flagged `suppressed`, with no counts and no figures. Only fitted dimensions have boards here (a board
is what a published fit says).

Battles. One JSON object a line, in vote order, streamed from the database in chunks so a tournament of
any size is never loaded whole. Only finished battles whose vote counts (`vote_is_counted`: not flagged
for a model naming itself, rater not excluded by quality control) are exported. Each line is:

- a Chatbot Arena battle row, so `manage.py import_battles` re-imports the file: `model_a`, `model_b`
  (model names), `winner` (the *overall* dimension's verdict: model_a, model_b or tie; absent when the
  tournament has no overall dimension), `judge` (the rater's pseudonym), `tstamp` (the vote's unix
  time), `question_id` (the battle's pseudonym) and `anony` (always true: Populus votes are blind);
- and Populus's own fields: `populus` (format version), `tournament`, `battle`, `models` (slug, name and
  maker of sides a and b), `positions` (which side was shown left and right), `votes` (outcome per
  dimension slug: a, b or tie), `conversation` (each turn's message and both replies with their times),
  `timings`, `pair_probability` (how likely the matchmaker was to draw this pair) and `rater`
  (pseudonym and the rater's publishable groups only).

Pseudonyms are keyed digests (Django's `salted_hmac`) of the rater within the tournament and of the
battle: stable from one export of a tournament to the next, so re-importing a newer export adds only the
new battles, and never equal to a panel id, a rater's or a battle's id, or a pseudonym of the same rater
in another tournament. Their key is PANEL_ID_HMAC_KEY, which must never change anyway (the panel ids'
hashes depend on it), not the secret key, which an operator rotates after a leak: a rotation must not
make every exported battle look new to someone who re-imports it. A salt of their own per purpose keeps
the digests unrelated to the panel ids'.
"""

import csv
import io
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator

from django.conf import settings
from django.utils.crypto import salted_hmac

from leaderboard.boards import Board, board_get, publishable_group_ids, snapshots_latest
from raters.models import Group, Rater
from tournaments.models import Battle, Reply, Tournament, Turn, Vote, VoteChoice

FORMAT_VERSION = 1
BATTLES_PER_CHUNK = 200
ARENA_WINNERS = {"a": "model_a", "b": "model_b", "tie": "tie"}
BOARD_COLUMNS = ["tournament", "dimension", "group", "fitted_at", "suppressed", "raters"]
# CSV column and the BoardEntry field it holds.
ENTRY_COLUMNS = {
    "rank": "rank",
    "rank_low": "rank_low",
    "rank_high": "rank_high",
    "model": "slug",
    "model_name": "name",
    "maker": "maker",
    "status": "status",
    "score": "score",
    "score_low": "score_low",
    "score_high": "score_high",
    "p_best": "p_best",
    "rating": "rating",
    "rating_low": "rating_low",
    "rating_high": "rating_high",
    "battles": "battles",
    "wins": "wins",
    "losses": "losses",
    "ties": "ties",
    "win_rate": "win_rate",
}
CSV_COLUMNS = BOARD_COLUMNS + list(ENTRY_COLUMNS)


# --- Boards ----------------------------------------------------------------------------------------------


def boards_all(*, tournament: Tournament) -> list[Board]:
    """The latest board of every fitted dimension: pooled, then every group in display order (suppressed
    ones included, as suppressed)."""
    groups = [None, *Group.objects.select_related("axis__country")]
    return [
        board_get(dimension=snapshot.dimension, group=group, snapshot=snapshot)
        for snapshot in snapshots_latest(tournament=tournament)
        for group in groups
    ]


def boards_csv(boards: Iterable[Board]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for board in boards:
        head = [
            board.tournament.slug,
            board.dimension.slug,
            board.group.slug if board.group else "",
            board.fitted_at.isoformat() if board.fitted_at else "",
            "true" if board.suppressed else "false",
            "" if board.raters is None else board.raters,
        ]
        if board.suppressed or not board.entries:
            writer.writerow([*(_cell(value) for value in head), *[""] * len(ENTRY_COLUMNS)])
            continue
        for entry in board.entries:
            row = [*head, *(getattr(entry, field) for field in ENTRY_COLUMNS.values())]
            writer.writerow([_cell(value) for value in row])
    return out.getvalue().encode()


def _cell(value) -> str:
    """A CSV cell. Text that a spreadsheet would run as a formula is quoted with a leading apostrophe."""
    if value is None:
        return ""
    if isinstance(value, str):
        return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value
    return str(value)


# --- Battles ---------------------------------------------------------------------------------------------


def exported_votes(*, tournament: Tournament):
    """Votes of finished battles that count (`leaderboard.services.vote_is_counted` as a query)."""
    return Vote.objects.counted().filter(battle__tournament=tournament, battle__state=Battle.State.VOTED)


def battle_lines(*, tournament: Tournament, chunk_size: int = BATTLES_PER_CHUNK) -> Iterator[bytes]:
    """The exported battles as JSON lines (bytes, one battle each), read in chunks of `chunk_size`."""
    context = _ExportContext(tournament)
    last_vote_id = 0
    while True:
        votes = list(
            exported_votes(tournament=tournament)
            .filter(pk__gt=last_vote_id)
            .select_related("battle__model_a", "battle__model_b")
            .order_by("pk")[:chunk_size]
        )
        if not votes:
            return
        yield from (json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in context.lines(votes))
        last_vote_id = votes[-1].pk


class _ExportContext:
    def __init__(self, tournament: Tournament):
        self.tournament = tournament
        self.dimension_slugs = dict(tournament.dimensions.values_list("pk", "slug"))
        publishable = publishable_group_ids(tournament=tournament)
        self.group_slugs = dict(Group.objects.filter(pk__in=publishable).values_list("pk", "slug"))

    def lines(self, votes: list[Vote]) -> Iterator[dict]:
        battle_ids = [vote.battle_id for vote in votes]
        outcomes = defaultdict(dict)
        for vote_id, dimension_id, outcome in VoteChoice.objects.filter(vote__in=votes).values_list(
            "vote_id", "dimension_id", "outcome"
        ):
            outcomes[vote_id][self.dimension_slugs[dimension_id]] = outcome
        conversations = self._conversations(battle_ids)
        groups = self._groups({vote.battle.rater_id for vote in votes})
        for vote in votes:
            yield self._line(vote, outcomes[vote.pk], conversations.get(vote.battle_id, []), groups)

    def _line(self, vote: Vote, votes: dict, conversation: list, groups: dict) -> dict:
        battle = vote.battle
        rater = self.rater_pseudonym(battle.rater_id)
        question = battle_pseudonym(battle)
        line = {
            "model_a": battle.model_a.name,
            "model_b": battle.model_b.name,
            "judge": rater,
            "tstamp": vote.created_at.timestamp(),
            "question_id": question,
            "anony": True,
        }
        if "overall" in votes:
            line["winner"] = ARENA_WINNERS[votes["overall"]]
        line.update(
            {
                "populus": FORMAT_VERSION,
                "tournament": self.tournament.slug,
                "battle": question,
                "models": {
                    side: _model(model) for side, model in (("a", battle.model_a), ("b", battle.model_b))
                },
                # Model A is always shown on the left; the matchmaker draws which model is A.
                "positions": {"left": "a", "right": "b"},
                "votes": votes,
                "conversation": conversation,
                "timings": {
                    "started_at": _iso(battle.created_at),
                    "ended_at": _iso(battle.ended_at),
                    "voted_at": _iso(vote.created_at),
                    "seconds_to_vote": vote.seconds_to_vote,
                },
                "pair_probability": battle.pair_probability,
                "rater": {"id": rater, "groups": groups.get(battle.rater_id, [])},
            }
        )
        return line

    def _conversations(self, battle_ids: list[int]) -> dict[int, list]:
        replies = defaultdict(dict)
        for turn_id, side, content, started_at, finished_at in (
            Reply.objects.filter(turn__battle_id__in=battle_ids)
            .order_by("pk")
            .values_list("turn_id", "side", "content", "started_at", "finished_at")
        ):
            replies[turn_id][side] = {
                "content": content,
                "started_at": _iso(started_at),
                "finished_at": _iso(finished_at),
            }
        conversations = defaultdict(list)
        for turn_id, battle_id, message, created_at in (
            Turn.objects.filter(battle_id__in=battle_ids)
            .order_by("battle_id", "index")
            .values_list("pk", "battle_id", "message", "created_at")
        ):
            conversations[battle_id].append(
                {"message": message, "sent_at": _iso(created_at), "replies": replies.get(turn_id, {})}
            )
        return conversations

    def _groups(self, rater_ids: set[int]) -> dict[int, list[str]]:
        groups = defaultdict(list)
        for rater_id, group_id in (
            Rater.groups.through.objects.filter(rater_id__in=rater_ids, group_id__in=self.group_slugs)
            .order_by("group__axis__country__position", "group__axis__position", "group__position")
            .values_list("rater_id", "group_id")
        ):
            groups[rater_id].append(self.group_slugs[group_id])
        return groups

    def rater_pseudonym(self, rater_id: int) -> str:
        return "r-" + _keyed_digest("populus.exports.rater", f"{self.tournament.pk}:{rater_id}")


def battle_pseudonym(battle: Battle) -> str:
    return "b-" + _keyed_digest("populus.exports.battle", str(battle.public_id))


def _keyed_digest(salt: str, value: str) -> str:
    return salted_hmac(salt, value, secret=settings.PANEL_ID_HMAC_KEY, algorithm="sha256").hexdigest()[:20]


def _model(model) -> dict:
    return {"slug": model.slug, "name": model.name, "maker": model.maker}


def _iso(value) -> str | None:
    return value.isoformat() if value else None
