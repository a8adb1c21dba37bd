import hashlib
import uuid
from dataclasses import dataclass

from django.db.models import Count, Q

from config.errors import NotFound
from raters.models import Rater, Study
from tournaments.models import Battle, Dimension, Outcome, Reply, RuleOutcome, Side, Tournament, Vote
from tournaments.pacing import SideProgress, revealed_chars
from tournaments.quality import STRIKES_TO_EXCLUDE


@dataclass(frozen=True)
class TurnView:
    index: int
    message: str
    # What the rater may see of each reply so far, at the common pace of `tournaments.pacing` (None before
    # anything is shown), so the speed at which each side grows cannot hint at which model is which.
    reply_a: str | None
    reply_b: str | None
    failed: bool = False
    complete: bool = False  # both replies are in and shown whole
    # A side that stopped at its token limit, marked "cut off" once shown whole.
    cut_off_a: bool = False
    cut_off_b: bool = False
    nudge: str = ""

    @property
    def waiting(self) -> bool:
        return not self.complete and not self.failed

    @property
    def sides(self) -> list[tuple[str, str, str | None, bool]]:
        """(side, label, text shown, cut off) for Model A and Model B, for templates."""
        return [
            (Side.A, Side.A.label, self.reply_a, self.cut_off_a),
            (Side.B, Side.B.label, self.reply_b, self.cut_off_b),
        ]


@dataclass(frozen=True)
class BattleView:
    battle: Battle
    turns: list[TurnView]
    dimensions: list[Dimension]
    warnings: list[str]

    @property
    def turns_done(self) -> int:
        return sum(not t.waiting for t in self.turns)

    @property
    def waiting(self) -> bool:
        return not self.is_void and any(t.waiting for t in self.turns)

    @property
    def is_void(self) -> bool:
        return self.battle.state == Battle.State.VOID

    @property
    def polling(self) -> bool:
        """Whether the page should ask again: until every turn is settled and a failed turn has voided the
        battle, so the page always converges to the battle's true state."""
        return self.battle.state == Battle.State.ACTIVE and any(t.waiting or t.failed for t in self.turns)

    @property
    def turns_to_unlock(self) -> int:
        return max(0, self.battle.tournament.min_turns - self.turns_done)

    @property
    def can_vote(self) -> bool:
        return self.battle.state == Battle.State.ACTIVE and not self.polling and self.turns_to_unlock == 0

    @property
    def can_send(self) -> bool:
        return (
            self.battle.state == Battle.State.ACTIVE
            and not self.polling
            and len(self.turns) < self.battle.tournament.max_turns
        )


@dataclass(frozen=True)
class RevealRow:
    dimension: str
    outcome: str
    winner: str


def battle_for_rater(*, rater: Rater, public_id: uuid.UUID) -> Battle:
    """The rater's own battle. Another rater's battle is indistinguishable from one that does not exist."""
    battle = Battle.objects.select_related("tournament").filter(public_id=public_id, rater=rater).first()
    if battle is None:
        raise NotFound("There is no such battle in your session.")
    return battle


def battle_view(*, battle: Battle) -> BattleView:
    # Read afresh: the caller's instance may predate a void committed since (by a task that ran after the
    # request's own commit), and a page rendered from it would offer a message box to a battle that ended.
    battle = Battle.objects.select_related("tournament", "rater").get(pk=battle.pk)
    replies = Reply.objects.filter(turn__battle=battle).select_related("turn").order_by("turn__index", "side")
    by_turn: dict[int, dict] = {}
    for reply in replies:
        entry = by_turn.setdefault(
            reply.turn.index,
            {"message": reply.turn.message, "nudge": reply.turn.nudge, "frozen": reply.turn.frozen_chars},
        )
        entry[reply.side] = reply
    turns = [_turn_view(index, entry) for index, entry in sorted(by_turn.items())]
    return BattleView(
        battle=battle,
        turns=turns,
        dimensions=list(battle.tournament.dimensions.order_by("position")),
        warnings=strike_warnings(rater=battle.rater, battle=battle),
    )


def _turn_view(index: int, entry: dict) -> TurnView:
    replies = [entry[side] for side in Side.values]
    states = {reply.state for reply in replies}
    complete = states == {Reply.State.DONE}
    shown = revealed_chars(
        [SideProgress(chars=len(r.content), finished=r.state == Reply.State.DONE) for r in replies],
        frozen=entry["frozen"],
    )
    text_a, text_b = (reply.content[:chars] or None for reply, chars in zip(replies, shown, strict=True))
    return TurnView(
        index=index,
        message=entry["message"],
        reply_a=text_a,
        reply_b=text_b,
        failed=Reply.State.FAILED in states,
        complete=complete,
        cut_off_a=complete and replies[0].cut_off,
        cut_off_b=complete and replies[1].cut_off,
        nudge=entry["nudge"],
    )


def strike_warnings(*, rater: Rater, battle: Battle | None = None, vote=None) -> list[str]:
    """ "Warning N of 3: ..." for the rater's standing strikes on this battle (or vote), N counting all
    of the rater's standing strikes."""
    standing = list(rater.strikes.filter(lifted_at__isnull=True).order_by("created_at"))
    return [
        f"Warning {number} of {STRIKES_TO_EXCLUDE}: {strike.reason}"
        for number, strike in enumerate(standing, start=1)
        if (battle is not None and strike.battle_id == battle.pk)
        or (vote is not None and strike.vote_id == vote.pk)
    ]


def battle_reveal(*, battle: Battle) -> list[RevealRow]:
    """What the rater chose on each dimension, with the models' names, for the page after the vote."""
    names = {Outcome.A: battle.model_a.name, Outcome.B: battle.model_b.name, Outcome.TIE: "Tie"}
    choices = battle.vote.choices.select_related("dimension").order_by("dimension__position")
    return [
        RevealRow(dimension=c.dimension.name, outcome=Outcome(c.outcome).label, winner=names[c.outcome])
        for c in choices
    ]


@dataclass(frozen=True)
class ModelReliability:
    """How often a model's battles end void and its replies stop at the token limit in one tournament.
    Public, since a model's failures change which of its battles count."""

    model_id: int
    battles: int  # ended battles it fought in: voted or void
    void: int
    replies: int  # its finished replies
    cut_off: int

    @property
    def void_rate(self) -> float | None:
        return self.void / self.battles if self.battles else None

    @property
    def cut_off_rate(self) -> float | None:
        return self.cut_off / self.replies if self.replies else None


def model_reliability(*, tournament) -> dict[int, ModelReliability]:
    """Per model id of the tournament's entrants: void and cut-off counts and rates."""
    tally: dict[int, dict[str, int]] = {
        pk: {"battles": 0, "void": 0, "replies": 0, "cut_off": 0}
        for pk in tournament.llm_models.values_list("pk", flat=True)
    }
    ended = Battle.objects.filter(tournament=tournament, state__in=[Battle.State.VOTED, Battle.State.VOID])
    done = Reply.objects.filter(turn__battle__tournament=tournament, state=Reply.State.DONE)
    for side, field in ((Side.A, "model_a"), (Side.B, "model_b")):
        for row in ended.values(field).annotate(
            battles=Count("pk"), void=Count("pk", filter=Q(state=Battle.State.VOID))
        ):
            counts = tally.setdefault(row[field], {"battles": 0, "void": 0, "replies": 0, "cut_off": 0})
            counts["battles"] += row["battles"]
            counts["void"] += row["void"]
        path = f"turn__battle__{field}"
        for row in (
            done.filter(side=side)
            .values(path)
            .annotate(replies=Count("pk"), cut_off=Count("pk", filter=Q(cut_off=True)))
        ):
            counts = tally.setdefault(row[path], {"battles": 0, "void": 0, "replies": 0, "cut_off": 0})
            counts["replies"] += row["replies"]
            counts["cut_off"] += row["cut_off"]
    return {pk: ModelReliability(model_id=pk, **counts) for pk, counts in tally.items()}


def import_study_slug(tournament: Tournament) -> str:
    """The study that holds the raters of battles imported into the tournament (`tournaments.imports`)."""
    slug = f"import-{tournament.slug}"
    max_length = Study._meta.get_field("slug").max_length
    if len(slug) <= max_length:
        return slug
    digest = hashlib.sha256(tournament.slug.encode()).hexdigest()[:8]
    return f"{slug[: max_length - 9]}-{digest}"


def tournament_is_imported(*, tournament: Tournament) -> bool:
    """Whether the tournament holds an imported battle log and nothing else: it has battles, and every
    one is from a rater of its import study. Such raters stand for judge ids of someone else's log (or
    for nobody, when the log has none), never for people in Populus's panels, and have no groups."""
    study = Study.objects.filter(slug=import_study_slug(tournament), tournament=tournament).first()
    if study is None:
        return False
    # A battle's rater is always of a study of the battle's tournament (battle_start, the import), so
    # the question is whether any of the few raters of its other studies has a battle: asked from the
    # raters' side (the battles' rater index), it never reads the millions of an imported log's battles,
    # which an IN over the tournament's battles did on every cold board request.
    others_voted = Rater.objects.filter(study__tournament=tournament, battles__isnull=False).exclude(
        study=study
    )
    return Battle.objects.filter(tournament=tournament).exists() and not others_voted.exists()


def rule_outcome_stats(*, study: Study) -> list[dict]:
    """Per rule: how often it was evaluated, failed, struck and flagged, so a threshold can be judged
    (a rule in flag mode shows how it would have struck)."""
    rows = (
        RuleOutcome.objects.filter(rater__study=study)
        .values("rule")
        .annotate(
            evaluated=Count("pk"),
            failed=Count("pk", filter=Q(failed=True)),
            struck=Count("pk", filter=Q(action=RuleOutcome.Action.STRUCK)),
            flagged=Count("pk", filter=Q(action=RuleOutcome.Action.FLAGGED)),
        )
        .order_by("rule")
    )
    return list(rows)


@dataclass(frozen=True)
class Reconciliation:
    """Panel reconciliation of a study: raters the panel's export has approved, and the panel raters (and
    their counted votes) it has not listed yet. Votes of raters held out by the rigging check are left
    out: reconciling them would not put them on a board."""

    raters_reconciled: int
    raters_waiting: int
    votes_waiting: int


def study_reconciliation(*, study: Study) -> Reconciliation:
    panel_raters = Rater.objects.filter(study=study, participant_hash__isnull=False)
    waiting = {"battle__rater__study": study, "battle__rater__participant_hash__isnull": False}
    return Reconciliation(
        raters_reconciled=panel_raters.filter(reconciled_at__isnull=False).count(),
        raters_waiting=panel_raters.filter(reconciled_at__isnull=True).count(),
        votes_waiting=Vote.objects.counted()
        .filter(**waiting, battle__rater__reconciled_at__isnull=True, battle__rater__held_out_at__isnull=True)
        .count(),
    )
