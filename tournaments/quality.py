"""Quality control of what raters send and vote: rule outcomes, strikes, the three-strike exclusion, staff
review (lifting strikes, excluding raters), the consensus scan and the optional LLM topic judge.

The rules themselves are plain functions in `raters.qc`; this module records what they decide. Excluding
or reinstating a rater changes which votes count, which the ratings (a higher app) learn from the
`counted_votes_changed` signal.
"""

import logging
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import InvalidInput
from raters import qc
from raters.models import Rater
from tournaments.models import (
    Battle,
    LLMModel,
    QualityRuleSetting,
    Reply,
    RuleOutcome,
    StaffAction,
    Strike,
    Turn,
    Vote,
    VoteChoice,
)
from tournaments.providers import ChatMessage, ProviderError, complete
from tournaments.signals import counted_votes_changed

logger = logging.getLogger(__name__)

STRIKES_TO_EXCLUDE = 3
LLM_JUDGE_RULE = "llm_topic_judge"
CONSENSUS_RULE = "consensus"
MESSAGE_RULES = ("too_short", "copy", "gibberish", "topic_wandering")


@dataclass(frozen=True)
class RuleSetting:
    mode: str
    params: dict
    judge_model_id: int | None = None


def quality_settings() -> dict[str, RuleSetting]:
    """Each rule's mode and thresholds: the admin's row where there is one, else the defaults (every
    rule strikes, except the LLM judge, which is off until a judge model is chosen)."""
    rows = {row.rule: row for row in QualityRuleSetting.objects.all()}
    settings_by_rule = {}
    for rule in (*qc.RULES, LLM_JUDGE_RULE):
        row = rows.get(rule)
        default_mode = (
            QualityRuleSetting.Mode.OFF if rule == LLM_JUDGE_RULE else QualityRuleSetting.Mode.STRIKE
        )
        settings_by_rule[rule] = RuleSetting(
            mode=row.mode if row else default_mode,
            params={**qc.DEFAULT_PARAMS.get(rule, {}), **(row.params if row else {})},
            judge_model_id=row.judge_model_id if row else None,
        )
    return settings_by_rule


TOPIC_NUDGE = (
    "This looks like a new topic; please keep one task per battle and start new topics in your next battle."
)
SMALL_TALK_NUDGE = (
    "Please ask the models something about your task: a greeting or a thank-you gives them nothing to work "
    "on. This note is not a warning, but the next message like it in this battle will be."
)
# What a rater sees under a message that a rule let through as doubtful.
NUDGES = {"topic_wandering": TOPIC_NUDGE, "too_short": SMALL_TALK_NUDGE}


@dataclass(frozen=True)
class MessageJudgement:
    strike: Strike | None  # the message is not sent
    nudge: str = ""  # the message is sent; the rater sees this note, which counts for nothing


def message_quality_check(*, rater: Rater, battle: Battle, message: str) -> MessageJudgement:
    """Judge a message before it is sent to the models: a strike stops it; a doubtful one (a possible new
    topic, small talk) is sent with a nudge, and the case is flagged for staff with its score.

    A copy is judged against the tasks the rater opened their other battles with (see qc.check_copy)."""
    settings_by_rule = quality_settings()
    earlier = list(
        Turn.objects.filter(battle__rater=rater, index=0)
        .exclude(battle=battle)
        .values_list("message", flat=True)
    )
    context = _battle_context(battle)
    nudged_before = RuleOutcome.objects.filter(
        battle=battle, rule="too_short", action=RuleOutcome.Action.FLAGGED
    ).count()
    checks = {
        "too_short": lambda params: qc.check_too_short(
            message, params, context=context, nudged_before=nudged_before
        ),
        "copy": lambda params: qc.check_copy(message, earlier, params),
        "gibberish": lambda params: qc.check_gibberish(message, params),
        "topic_wandering": lambda params: _topic_result(message, context, params),
    }
    results = [
        (settings_by_rule[rule], checks[rule](settings_by_rule[rule].params))
        for rule in MESSAGE_RULES
        if settings_by_rule[rule].mode != QualityRuleSetting.Mode.OFF
    ]
    strike = _record_outcomes(rater=rater, battle=battle, results=results, message=message)
    doubtful = [result.rule for _, result in results if result.doubtful and not result.failed]
    return MessageJudgement(strike=strike, nudge=NUDGES[doubtful[0]] if doubtful and strike is None else "")


def _topic_result(message: str, context: list[str], params: dict) -> qc.RuleResult:
    """The embedded topic judge as a rule: "strike" fails, "nudge" passes as doubtful. The score is the
    message's similarity in meaning to its closest piece of the conversation (1.0 when not judged)."""
    assessment = qc.topic_assess(message, context, params)
    failed = assessment.verdict == "strike"
    if failed:
        reason = (
            "this message seems unrelated to the conversation so far; please keep each conversation to one "
            "task and save new topics for your next battle."
        )
    elif assessment.verdict == "nudge":
        reason = f"Possible new topic, sent with a nudge (similarity {assessment.similarity:.2f}): {message}"
    else:
        reason = ""
    return qc.RuleResult(
        rule="topic_wandering",
        failed=failed,
        score=assessment.similarity,
        reason=reason,
        doubtful=assessment.verdict == "nudge",
    )


def _battle_context(battle: Battle) -> list[str]:
    """What a new message may relate to, in conversation order: each earlier message, then both models'
    replies to it (so the newest replies come last, where check_too_short looks for a question)."""
    context = []
    replies = Reply.objects.filter(turn__battle=battle, state=Reply.State.DONE).order_by(
        "turn__index", "side"
    )
    by_turn: dict[int, list[str]] = {}
    for turn_id, content in replies.values_list("turn_id", "content"):
        by_turn.setdefault(turn_id, []).append(content)
    for turn_id, text in battle.turns.order_by("index").values_list("pk", "message"):
        context += [text, *by_turn.get(turn_id, [])]
    return context


def vote_quality_check(*, vote: Vote) -> Strike | None:
    """Judge a vote just stored: time taken to read, the attention check, straight-lining."""
    battle = vote.battle
    rater = battle.rater
    settings_by_rule = quality_settings()
    last_turn = battle.turns.order_by("-index").first()
    reply_chars = sum(len(text) for text in last_turn.replies.values_list("content", flat=True))
    recent = list(
        Vote.objects.filter(battle__rater=rater).order_by("-pk")[: _straight_lining_window(settings_by_rule)]
    )
    recent_choices = [dict(v.choices.values_list("dimension__slug", "outcome")) for v in reversed(recent)]
    checks = {}
    if vote.seconds_to_vote is not None:
        checks["too_fast"] = lambda p: qc.check_too_fast(
            seconds_to_vote=vote.seconds_to_vote, reply_chars=reply_chars, params=p
        )
    if battle.attention_expected:
        checks["attention"] = lambda p: qc.check_attention(
            expected=battle.attention_expected, answer=vote.attention_answer
        )
    checks["straight_lining"] = lambda p: qc.check_straight_lining(recent_choices, p)
    results = [
        (settings_by_rule[rule], check(settings_by_rule[rule].params))
        for rule, check in checks.items()
        if settings_by_rule[rule].mode != QualityRuleSetting.Mode.OFF
    ]
    return _record_outcomes(rater=rater, battle=battle, results=results, vote=vote)


def _straight_lining_window(settings_by_rule: dict[str, RuleSetting]) -> int:
    return int(settings_by_rule["straight_lining"].params.get("run_length", 5))


def _record_outcomes(*, rater, battle, results, message: str = "", vote=None) -> Strike | None:
    """Record every rule's outcome; the first failure of a rule in strike mode strikes (one strike per
    message or vote at most), failures of rules in flag mode are flagged for staff."""
    strike = None
    with transaction.atomic():
        for setting, result in results:
            action = RuleOutcome.Action.NONE
            if (result.failed and setting.mode == QualityRuleSetting.Mode.FLAG) or (
                result.doubtful and not result.failed
            ):
                action = RuleOutcome.Action.FLAGGED
            elif result.failed and strike is None:
                strike = rater_strike(
                    rater=rater,
                    rule=result.rule,
                    reason=result.reason,
                    message=message,
                    battle=battle,
                    vote=vote,
                )
                action = RuleOutcome.Action.STRUCK if strike else RuleOutcome.Action.NONE
            RuleOutcome.objects.create(
                rater=rater,
                rule=result.rule,
                failed=result.failed,
                score=result.score,
                action=action,
                reason=result.reason[:300],
                battle=battle,
            )
    return strike


def rater_strike(
    *, rater: Rater, rule: str, reason: str, message: str = "", battle=None, vote=None
) -> Strike | None:
    """Give a strike; the third ends the session and takes every vote of the rater out of the ratings.

    The rater row is locked, so two strikes racing at two make exactly three, and nothing after the
    third counts (None is returned). `number` on the strike says which warning it is.
    """
    with transaction.atomic():
        locked = Rater.objects.select_for_update(of=("self",)).get(pk=rater.pk)
        if locked.status == Rater.Status.EXCLUDED:
            return None
        try:
            with transaction.atomic():
                strike = Strike.objects.create(
                    rater=locked, rule=rule, reason=reason[:300], message=message, battle=battle, vote=vote
                )
        except IntegrityError:
            return None  # this vote was already judged on this rule
        strike.number = locked.strikes.filter(lifted_at__isnull=True).count()
        if strike.number >= STRIKES_TO_EXCLUDE:
            _rater_exclude(locked)
    return strike


def _rater_exclude(rater: Rater) -> None:
    Rater.objects.filter(pk=rater.pk).update(status=Rater.Status.EXCLUDED)
    Battle.objects.filter(rater=rater, state=Battle.State.ACTIVE).update(
        state=Battle.State.VOID, void_reason="The rater's session ended.", ended_at=timezone.now()
    )
    counted_votes_changed.send(sender=Rater, tournament_ids=_voted_tournament_ids(rater))


def _voted_tournament_ids(rater: Rater) -> set[int]:
    return set(Vote.objects.filter(battle__rater=rater).values_list("battle__tournament_id", flat=True))


def strike_lift(*, strike: Strike, staff: str, reason: str) -> Strike:
    """Lift a strike with a reason. A rater excluded by it is reinstated and their votes count again."""
    if not reason.strip():
        raise InvalidInput("Please give a reason for lifting the strike.")
    with transaction.atomic():
        rater = Rater.objects.select_for_update(of=("self",)).get(pk=strike.rater_id)
        if Strike.objects.filter(pk=strike.pk, lifted_at__isnull=True).update(
            lifted_at=timezone.now(), lifted_by=staff, lift_reason=reason[:300]
        ):
            StaffAction.objects.create(
                kind=StaffAction.Kind.LIFT_STRIKE,
                staff=staff,
                rater_public_id=rater.public_id,
                strike=strike,
                reason=reason[:300],
            )
            active = rater.strikes.filter(lifted_at__isnull=True).count()
            if rater.status == Rater.Status.EXCLUDED and active < STRIKES_TO_EXCLUDE:
                Rater.objects.filter(pk=rater.pk).update(status=Rater.Status.ADMITTED)
                counted_votes_changed.send(sender=Rater, tournament_ids=_voted_tournament_ids(rater))
    strike.refresh_from_db()
    return strike


def rater_exclude_by_staff(*, rater: Rater, staff: str, reason: str) -> None:
    if not reason.strip():
        raise InvalidInput("Please give a reason for excluding the rater.")
    with transaction.atomic():
        locked = Rater.objects.select_for_update(of=("self",)).get(pk=rater.pk)
        if locked.status == Rater.Status.EXCLUDED:
            return
        StaffAction.objects.create(
            kind=StaffAction.Kind.EXCLUDE, staff=staff, rater_public_id=locked.public_id, reason=reason[:300]
        )
        _rater_exclude(locked)


def quality_consensus_scan() -> int:
    """Flag raters whose overall verdicts disagree with other raters on the same pairs far more than
    chance allows, for staff review. Never strikes. Returns how many raters were newly flagged."""
    already = set(RuleOutcome.objects.filter(rule=CONSENSUS_RULE).values_list("rater_id", flat=True))
    choices = VoteChoice.objects.filter(dimension__slug="overall").exclude(
        vote__battle__rater__status=Rater.Status.EXCLUDED
    )
    votes = []
    for rater_id, model_a, model_b, outcome in choices.values_list(
        "vote__battle__rater_id", "vote__battle__model_a_id", "vote__battle__model_b_id", "outcome"
    ):
        # Name each pair in a fixed order so A-vs-B and B-vs-A battles are compared.
        x, y = sorted((model_a, model_b))
        won = {"a": model_a, "b": model_b}.get(outcome)
        votes.append((str(rater_id), str(x), str(y), "tie" if won is None else ("x" if won == x else "y")))
    params = {**qc.DEFAULT_PARAMS.get(CONSENSUS_RULE, {}), **_consensus_params()}
    flagged = 0
    for rater_id, p_value, compared in qc.consensus_outliers(votes, params):
        if int(rater_id) in already:
            continue
        RuleOutcome.objects.create(
            rater_id=int(rater_id),
            rule=CONSENSUS_RULE,
            failed=True,
            score=p_value,
            action=RuleOutcome.Action.FLAGGED,
            reason=f"Overall verdicts disagree with other raters in {compared} comparisons "
            f"(p = {p_value:.2g}).",
        )
        flagged += 1
    return flagged


def _consensus_params() -> dict:
    row = QualityRuleSetting.objects.filter(rule=CONSENSUS_RULE).first()
    return row.params if row else {}


def turn_topic_judge(*, turn_id: int) -> Strike | None:
    """The optional LLM judge of topic wandering: asks the configured judge model whether a message
    (already sent) pursues the battle's task. Off unless an admin turns it on and picks a judge model."""
    setting = quality_settings()[LLM_JUDGE_RULE]
    if setting.mode == QualityRuleSetting.Mode.OFF or setting.judge_model_id is None:
        return None
    turn = Turn.objects.select_related("battle__rater").get(pk=turn_id)
    earlier = list(
        turn.battle.turns.filter(index__lt=turn.index).order_by("index").values_list("message", flat=True)
    )
    if not earlier:
        return None
    judge = LLMModel.objects.get(pk=setting.judge_model_id)
    prompt = qc.JUDGE_PROMPT.format(context="\n".join(earlier), message=turn.message)
    try:
        same_task = qc.parse_judge_answer(complete(judge.provider_config(), [ChatMessage("user", prompt)]))
    except ProviderError as error:
        logger.warning("Topic judge %s gave no verdict on turn %s: %s", judge.slug, turn_id, error)
        return None
    result = qc.RuleResult(
        rule=LLM_JUDGE_RULE,
        failed=same_task is False,
        score=0.0 if same_task is False else 1.0,
        reason="please keep to one task in a battle; start a new battle for a new topic."
        if same_task is False
        else "",
    )
    return _record_outcomes(
        rater=turn.battle.rater, battle=turn.battle, results=[(setting, result)], message=turn.message
    )
