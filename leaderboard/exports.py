"""Open data: every board as CSV or JSON, and the anonymised battles of a tournament as JSON lines.

Boards come from `leaderboard.boards`, so a suppressed board is exported exactly as the pages show it:
flagged `suppressed`, with no counts and no figures; and each board says, as the pages do, whether it
announces a leader (`leader_status`, `leader`: the model whose P(best) reached the tournament's
leader_threshold). Only fitted dimensions have boards here (a board
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
  dimension slug: a, b or tie), `conversation` (each turn's message and both replies with their times,
  obvious personal data masked: `leaderboard.redaction`), `timings`, `pair_probability` (how likely the
  matchmaker was to draw this pair) and `rater` (pseudonym and groups, see below).

Nobody can be picked out of the file:

- A rater's groups are published only where at least k raters of the export (k =
  POPULUS_MIN_GROUP_RATERS, 10 by default, the threshold of the boards) are published with exactly the
  same combination; elsewhere the combination is coarsened by dropping axes from the last (politics,
  then ethnicity, then age band in the default sampling frame) until it is, down to no groups at all
  (`stats.disclosure`). Groups too small for a board of their own are never published.
- Pseudonyms are keyed digests (Django's `salted_hmac`) of the rater within the tournament and of the
  battle, with a salt drawn afresh for every download: two downloads cannot be joined on a rater (or on a
  battle, which would join its raters). A researcher who needs a series that links up (e.g. to re-import
  newer exports without duplicates) asks staff with the permission `raters.export_linked` for the linked
  export, whose pseudonyms are stable and keyed on PANEL_ID_HMAC_KEY (which must never change anyway: the
  panel ids' hashes depend on it), not the secret key, which an operator rotates after a leak. Neither is
  ever equal to a panel id, a rater's or a battle's id, or a pseudonym in another tournament.
"""

import csv
import io
import json
import secrets
from collections import defaultdict
from collections.abc import Iterable, Iterator

from django.conf import settings
from django.utils.crypto import salted_hmac

from leaderboard.boards import Board, board_get, publishable_group_ids, snapshots_latest
from leaderboard.redaction import text_redact
from raters.models import Group, Rater
from stats.disclosure import combinations_coarsened
from tournaments.models import Battle, Reply, Tournament, Turn, Vote, VoteChoice

FORMAT_VERSION = 1
BATTLES_PER_CHUNK = 200
ARENA_WINNERS = {"a": "model_a", "b": "model_b", "tie": "tie"}
# style: "default" (the board as voted) or "controlled" (reply length and formatting held equal).
BOARD_COLUMNS = [
    "tournament",
    "dimension",
    "group",
    "style",
    "fitted_at",
    "suppressed",
    "raters",
    "leader_status",
    "leader",
]
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
    ones included, as suppressed); each in the default view, then, where the fit has one, the
    style-controlled view."""
    groups = [None, *Group.objects.select_related("axis__country")]
    return [
        board_get(dimension=snapshot.dimension, group=group, snapshot=snapshot, style_controlled=controlled)
        for snapshot in snapshots_latest(tournament=tournament)
        for controlled in ([False, True] if snapshot.style else [False])
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
            "controlled" if board.style_controlled else "default",
            board.fitted_at.isoformat() if board.fitted_at else "",
            "true" if board.suppressed else "false",
            "" if board.raters is None else board.raters,
            board.leader_status,
            board.leader.slug if board.leader else "",
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


def battle_lines(
    *,
    tournament: Tournament,
    chunk_size: int = BATTLES_PER_CHUNK,
    linked: bool = False,
    salt: str | None = None,
) -> Iterator[bytes]:
    """The exported battles as JSON lines (bytes, one battle each), read in chunks of `chunk_size`.

    Pseudonyms are drawn with a fresh random salt (or `salt`), unless `linked` (staff only)."""
    context = _ExportContext(tournament, salt=None if linked else (salt or secrets.token_hex(16)))
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
    def __init__(self, tournament: Tournament, *, salt: str | None):
        self.tournament = tournament
        self.salt = salt
        self.dimension_slugs = dict(tournament.dimensions.values_list("pk", "slug"))
        publishable = publishable_group_ids(tournament=tournament)
        self.group_slugs = dict(Group.objects.filter(pk__in=publishable).values_list("pk", "slug"))
        self.published_groups = self._published_groups()

    def lines(self, votes: list[Vote]) -> Iterator[dict]:
        battle_ids = [vote.battle_id for vote in votes]
        outcomes = defaultdict(dict)
        for vote_id, dimension_id, outcome in VoteChoice.objects.filter(vote__in=votes).values_list(
            "vote_id", "dimension_id", "outcome"
        ):
            outcomes[vote_id][self.dimension_slugs[dimension_id]] = outcome
        conversations = self._conversations(battle_ids)
        for vote in votes:
            yield self._line(
                vote, outcomes[vote.pk], conversations.get(vote.battle_id, []), self.published_groups
            )

    def _line(self, vote: Vote, votes: dict, conversation: list, groups: dict) -> dict:
        battle = vote.battle
        rater = self.rater_pseudonym(battle.rater_id)
        question = self.battle_pseudonym(battle)
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
                "content": text_redact(content),
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
                {
                    "message": text_redact(message),
                    "sent_at": _iso(created_at),
                    "replies": replies.get(turn_id, {}),
                }
            )
        return conversations

    def _published_groups(self) -> dict[int, list[str]]:
        """Every exported rater's publishable groups, coarsened so that each published combination is
        shared by at least k of them (module docstring)."""
        # One read of the exported raters' ids (not their votes), before the votes are streamed in chunks.
        rater_ids = set(
            exported_votes(tournament=self.tournament)
            .order_by()
            .values_list("battle__rater_id", flat=True)
            .distinct()
        )
        axes_of_country: dict[int, list[int]] = defaultdict(list)
        for country_id, axis_id in (
            Group.objects.filter(pk__in=self.group_slugs)
            .order_by("axis__country__position", "axis__position")
            .values_list("axis__country_id", "axis_id")
            .distinct()
        ):
            if axis_id not in axes_of_country[country_id]:
                axes_of_country[country_id].append(axis_id)
        answers: dict[int, dict[int, int]] = defaultdict(dict)
        country_of: dict[int, int] = {}
        for rater_id, country_id, axis_id, group_id in Rater.groups.through.objects.filter(
            rater_id__in=rater_ids, group_id__in=self.group_slugs
        ).values_list("rater_id", "group__axis__country_id", "group__axis_id", "group_id"):
            answers[rater_id][axis_id] = group_id
            country_of[rater_id] = country_id
        combinations = {
            rater_id: (
                country_of.get(rater_id),
                *(answers[rater_id].get(axis) for axis in axes_of_country.get(country_of.get(rater_id), [])),
            )
            for rater_id in rater_ids
        }
        published = combinations_coarsened(combinations, k=settings.POPULUS_MIN_GROUP_RATERS)
        return {
            rater_id: [self.group_slugs[group] for group in prefix[1:] if group is not None]
            for rater_id, prefix in published.items()
        }

    def rater_pseudonym(self, rater_id: int) -> str:
        return "r-" + keyed_digest(self._salt("populus.exports.rater"), f"{self.tournament.pk}:{rater_id}")

    def battle_pseudonym(self, battle: Battle) -> str:
        return "b-" + keyed_digest(self._salt("populus.exports.battle"), str(battle.public_id))

    def _salt(self, purpose: str) -> str:
        return purpose if self.salt is None else f"{purpose}.{self.salt}"


def keyed_digest(salt: str, value: str) -> str:
    """A short HMAC of `value` under PANEL_ID_HMAC_KEY, separated by `salt`: stable, and not reversible."""
    return salted_hmac(salt, value, secret=settings.PANEL_ID_HMAC_KEY, algorithm="sha256").hexdigest()[:20]


def _model(model) -> dict:
    return {"slug": model.slug, "name": model.name, "maker": model.maker}


def _iso(value) -> str | None:
    return value.isoformat() if value else None
