import hashlib
import uuid
from dataclasses import dataclass

from django.db.models import Count, Q

from config.errors import NotFound
from raters.models import Rater, Study
from tournaments.models import Battle, Dimension, Outcome, Reply, RuleOutcome, Side, Tournament
from tournaments.quality import STRIKES_TO_EXCLUDE


@dataclass(frozen=True)
class TurnView:
    index: int
    message: str
    # Both replies are shown together once both are done, so reply speed cannot hint at which model is which.
    reply_a: str | None
    reply_b: str | None
    failed: bool = False

    @property
    def waiting(self) -> bool:
        return self.reply_a is None and not self.failed


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
    def turns_to_unlock(self) -> int:
        return max(0, self.battle.tournament.min_turns - self.turns_done)

    @property
    def can_vote(self) -> bool:
        return not self.is_void and not self.waiting and self.turns_to_unlock == 0

    @property
    def can_send(self) -> bool:
        return not self.is_void and not self.waiting and len(self.turns) < self.battle.tournament.max_turns


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
    replies = Reply.objects.filter(turn__battle=battle).select_related("turn").order_by("turn__index", "side")
    by_turn: dict[int, dict] = {}
    for reply in replies:
        entry = by_turn.setdefault(reply.turn.index, {"message": reply.turn.message})
        entry[reply.side] = reply
    turns = []
    for index, entry in sorted(by_turn.items()):
        states = {entry[side].state for side in Side.values}
        both_done = states == {Reply.State.DONE}
        turns.append(
            TurnView(
                index=index,
                message=entry["message"],
                reply_a=entry[Side.A].content if both_done else None,
                reply_b=entry[Side.B].content if both_done else None,
                failed=Reply.State.FAILED in states,
            )
        )
    return BattleView(
        battle=battle,
        turns=turns,
        dimensions=list(battle.tournament.dimensions.order_by("position")),
        warnings=strike_warnings(rater=battle.rater, battle=battle),
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
    # looking among the few raters of the tournament's other studies avoids reading millions of battles.
    others = Rater.objects.filter(study__tournament=tournament).exclude(study=study)
    battles = Battle.objects.filter(tournament=tournament)
    return battles.exists() and not battles.filter(rater__in=others).exists()


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
