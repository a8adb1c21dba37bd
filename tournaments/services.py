import logging
import math
import secrets
import time
from collections.abc import Mapping
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from config.celery_app import enqueue_on_commit, task_named
from config.errors import Conflict, InvalidInput, SessionEnded, StrikeWarning
from raters.models import Rater
from raters.services import rater_audience_check, rater_battle_voted, rater_mark_completed
from tournaments.defaults import DEFAULT_DIMENSIONS
from tournaments.identity import self_identification
from tournaments.limits import ModelLimiter
from tournaments.matchmaking import pair_choose, pair_key, redis_client
from tournaments.models import (
    Battle,
    Dimension,
    LLMModel,
    Outcome,
    QualityRuleSetting,
    Reply,
    Side,
    Tournament,
    Turn,
    Vote,
    VoteChoice,
)
from tournaments.pacing import frozen_chars
from tournaments.providers import BAD_OUTPUT, ChatMessage, ProviderError, generate
from tournaments.quality import (
    LLM_JUDGE_RULE,
    STRIKES_TO_EXCLUDE,
    message_quality_check,
    quality_settings,
    vote_quality_check,
)
from tournaments.signals import vote_recorded

# Positions and pairs must be unpredictable to raters, so they come from the OS's random source.
_random = secrets.SystemRandom()

MAX_REPLY_ATTEMPTS = 3
# A model failing this many times in a row pauses for COOLDOWN_BASE_SECONDS, doubling up to the maximum.
COOLDOWN_AFTER_FAILURES = 3
COOLDOWN_BASE_SECONDS = 60
COOLDOWN_MAX_SECONDS = 30 * 60

logger = logging.getLogger(__name__)


def battle_start(*, rater: Rater) -> Battle:
    """The rater's battle in progress, or a new one between the two models the matchmaker picks for them
    (see `tournaments.matchmaking`), placed left and right at random."""
    rater_audience_check(study=rater.study, api_client=rater.api_client)
    if rater.status != Rater.Status.ADMITTED:
        raise Conflict("Only raters admitted to the study can start a battle.")
    current = Battle.objects.filter(rater=rater, state=Battle.State.ACTIVE).first()
    if current:
        return current
    tournament = rater.study.tournament
    models = list(tournament.llm_models.available().order_by("pk"))
    if len(models) < 2:
        raise Conflict(
            "No battle can start right now: fewer than two models are available. Please try later."
        )
    met = {
        pair_key(a, b) for a, b in Battle.objects.filter(rater=rater).values_list("model_a_id", "model_b_id")
    }
    try:
        model_a, model_b, probability = pair_choose(rater=rater, available=models, met=met)
    except ValueError:
        _end_session_when_every_pair_met(rater, met)
        raise Conflict(
            "Every pair of models available right now is one you have already compared. Please try later."
        ) from None
    try:
        with transaction.atomic():
            return Battle.objects.create(
                tournament=tournament,
                rater=rater,
                model_a=model_a,
                model_b=model_b,
                pair_probability=probability,
                attention_expected=_attention_check_for(
                    battle_number=Battle.objects.filter(rater=rater).count() + 1
                ),
                practice=_is_practice(rater),
            )
    except IntegrityError:
        # Two clicks raced; the database let only one active battle exist.
        return Battle.objects.get(rater=rater, state=Battle.State.ACTIVE)


def _end_session_when_every_pair_met(rater: Rater, met: set) -> None:
    """A rater who has compared every pair of the tournament's models has nothing left to do: their
    session is complete (a pair is never offered twice to one rater)."""
    model_ids = list(rater.study.tournament.llm_models.values_list("pk", flat=True))
    every_pair = {pair_key(a, b) for a in model_ids for b in model_ids if a < b}
    if every_pair <= met:
        rater_mark_completed(rater=rater)
        raise SessionEnded("You have compared every pair of models in this study. Thank you!")


def _is_practice(rater: Rater) -> bool:
    """Whether the rater's next battle is practice: one of the study's first battles of a rater who came
    through the open link (panel ids and API clients are not free to make; open-link raters are)."""
    open_link = rater.source == Rater.Source.OPEN and rater.api_client_id is None
    return open_link and rater.battles_voted < rater.study.practice_battles


def _attention_check_for(*, battle_number: int) -> str:
    """The answer this battle's attention item asks for, or "" for none. A rater's first two battles
    always carry one, so any session longer than a few minutes has at least two; later battles carry one
    at the configured rate."""
    setting = quality_settings()["attention"]
    if setting.mode == QualityRuleSetting.Mode.OFF:
        return ""
    if battle_number <= 2 or _random.random() < float(setting.params.get("rate", 0.25)):
        return _random.choice(Outcome.values)
    return ""


def turn_submit(*, battle: Battle, message: str) -> Turn:
    """Send the rater's message to both models: one turn, two pending replies, two generation tasks."""
    tournament = battle.tournament
    if not message.strip():
        raise InvalidInput("Please type a message first.")
    if len(message) > tournament.max_message_chars:
        raise InvalidInput(
            f"Message too long ({len(message):,} characters; the limit is {tournament.max_message_chars:,})."
        )
    _ensure_can_send(battle)  # before judging the message: a message that cannot be sent is not judged
    nudge = _check_message_quality(battle, message)
    with transaction.atomic():
        battle = Battle.objects.select_for_update().get(pk=battle.pk)
        turns_done = _ensure_can_send(battle)
        turn = Turn.objects.create(battle=battle, index=turns_done, message=message, nudge=nudge)
        replies = Reply.objects.bulk_create([Reply(turn=turn, side=Side.A), Reply(turn=turn, side=Side.B)])
        for reply in replies:
            enqueue_on_commit("tournaments.tasks.generate_reply", reply.pk)
        if quality_settings()[LLM_JUDGE_RULE].mode != QualityRuleSetting.Mode.OFF:
            enqueue_on_commit("tournaments.tasks.judge_topic", turn.pk)
    return turn


def _ensure_can_send(battle: Battle) -> int:
    """Raise unless the battle takes another message now; returns the number of turns so far."""
    if battle.state != Battle.State.ACTIVE:
        raise Conflict("This battle has ended; no more messages can be sent.")
    turns_done = battle.turns.count()
    if turns_done >= battle.tournament.max_turns:
        raise InvalidInput(
            f"This battle has reached its limit of {battle.tournament.max_turns} turns. Please vote."
        )
    if Reply.objects.filter(turn__battle=battle).exclude(state=Reply.State.DONE).exists():
        raise Conflict("Please wait until both models have answered before sending another message.")
    return turns_done


def _check_message_quality(battle: Battle, message: str) -> str:
    """A message that fails a quality rule is not sent: the rater gets a warning, or after the third
    strike, the end of the session. Its strike is committed before the error is raised. A message that
    passes may carry a nudge for the rater, which is returned."""
    judgement = message_quality_check(rater=battle.rater, battle=battle, message=message)
    strike = judgement.strike
    if strike is None:
        return judgement.nudge
    if strike.number >= STRIKES_TO_EXCLUDE:
        raise SessionEnded("Your session has ended after three warnings.")
    raise StrikeWarning(
        strike.reason[:1].upper() + strike.reason[1:], number=strike.number, of=STRIKES_TO_EXCLUDE
    )


def reply_generate(*, reply_id: int) -> None:
    """Produce one side's reply. Safe to run any number of times: only the run that claims the reply works."""
    now = timezone.now()
    stale_before = now - timedelta(seconds=settings.REPLY_STALE_AFTER_SECONDS)
    claimable = Q(state=Reply.State.PENDING) | Q(state=Reply.State.RUNNING, started_at__lt=stale_before)
    claimed = Reply.objects.filter(claimable, pk=reply_id, attempts__lt=MAX_REPLY_ATTEMPTS).update(
        state=Reply.State.RUNNING, started_at=now, attempts=F("attempts") + 1
    )
    if claimed != 1:
        return
    reply = Reply.objects.select_related(
        "turn__battle__model_a", "turn__battle__model_b", "turn__battle__tournament"
    ).get(pk=reply_id)
    battle = reply.turn.battle
    if battle.state != Battle.State.ACTIVE:
        # The other side already failed: no one will read this reply, so no provider is paid for it.
        _reply_fail(reply, claimed_at=now, error="battle_ended")
        return
    if reply.content:
        # An earlier attempt's text may already be on the rater's screen; a new attempt would write
        # something else, and shown text is never taken back. So the turn fails (no penalty for the rater).
        _reply_fail(reply, claimed_at=now, error="attempt_lost_after_text_was_shown")
        return
    model = battle.model_a if reply.side == Side.A else battle.model_b
    partial = _PartialText(reply_id=reply.pk, claimed_at=now)
    try:
        completion = generate(
            model.provider_config(), _conversation(reply), limiter=_limiter(), on_text=partial
        )
        if completion.cut_off and battle.tournament.cut_off_replies == Tournament.CutOffReplies.VOID:
            raise ProviderError("truncated", "finish_reason=length", kind=BAD_OUTPUT)
    except ProviderError as exc:
        _reply_fail(reply, claimed_at=now, error=str(exc)[:300])
        model_record_failure(model=model, error=exc)
        return
    model_record_success(model=model)
    text = completion.text
    with transaction.atomic():
        # Only the claim that is still current may write: a slower duplicate run finds started_at changed.
        finished = Reply.objects.filter(pk=reply.pk, state=Reply.State.RUNNING, started_at=now).update(
            state=Reply.State.DONE, content=text, cut_off=completion.cut_off, finished_at=timezone.now()
        )
        if finished:
            # In the same transaction: no poll may see this side done without the display frozen.
            _turn_freeze_display(turn_id=reply.turn_id, finishing_reply_id=reply.pk, stored=partial.stored)
    identified = self_identification(text, [model.name, model.maker, model.api_model])
    if finished and identified:
        Battle.objects.filter(pk=battle.pk, flagged_reason="").update(
            flagged_reason=f"Model {reply.side.upper()} identified itself: {identified[:200]}"
        )


class _PartialText:
    """Stores a reply's text as it streams in, at most every REPLY_PARTIAL_WRITE_SECONDS, so the page can
    show it (at the common pace of tournaments.pacing) before the reply is done. Only the current claim
    writes."""

    def __init__(self, *, reply_id: int, claimed_at) -> None:
        self.reply_id = reply_id
        self.claimed_at = claimed_at
        self.every = settings.REPLY_PARTIAL_WRITE_SECONDS
        self.last_write = -math.inf
        self.stored = 0  # characters of the text as last written: what a poll may have seen of it

    def __call__(self, text: str) -> None:
        now = time.monotonic()
        if now - self.last_write < self.every:
            return
        self.last_write = now
        Reply.objects.filter(pk=self.reply_id, state=Reply.State.RUNNING, started_at=self.claimed_at).update(
            content=text
        )
        self.stored = len(text)


def _turn_freeze_display(*, turn_id: int, finishing_reply_id: int, stored: int) -> None:
    """The first side to finish fixes what both sides show until the last one finishes
    (tournaments.pacing); a later finish leaves the count as it is."""
    others = Reply.objects.filter(turn_id=turn_id).exclude(pk=finishing_reply_id)
    frozen = frozen_chars(
        finishing_side_stored=stored,
        other_sides_stored=[len(content) for content in others.values_list("content", flat=True)],
    )
    Turn.objects.filter(pk=turn_id, frozen_chars__isnull=True).update(frozen_chars=frozen)


def _reply_fail(reply: Reply, *, claimed_at, error: str) -> None:
    """A side with no reply can never be voted on: the battle is set aside, without penalty for the rater."""
    with transaction.atomic():
        updated = Reply.objects.filter(pk=reply.pk, state=Reply.State.RUNNING, started_at=claimed_at).update(
            state=Reply.State.FAILED, error=error, finished_at=timezone.now()
        )
        if updated:
            battle_void(battle_id=reply.turn.battle_id, reason="A model could not answer.")


def reply_give_up(*, reply_id: int) -> None:
    """Fail a reply whose attempts are spent (its workers kept dying), so the rater is not left waiting."""
    with transaction.atomic():
        updated = Reply.objects.filter(
            pk=reply_id,
            state__in=[Reply.State.PENDING, Reply.State.RUNNING],
            attempts__gte=MAX_REPLY_ATTEMPTS,
        ).update(state=Reply.State.FAILED, error="attempts_exhausted", finished_at=timezone.now())
        if updated:
            battle_id = Reply.objects.values_list("turn__battle_id", flat=True).get(pk=reply_id)
            battle_void(battle_id=battle_id, reason="A model could not answer.")


def model_record_failure(*, model: LLMModel, error: ProviderError) -> None:
    """Take a model with a spent quota or broken settings out of matchmaking until a person fixes it;
    pause one that keeps failing for a while, longer each time, so it comes back by itself."""
    now = timezone.now()
    if error.kind in ("quota", "config"):
        reason = f"{error.code} at {now:%Y-%m-%d %H:%M} UTC: {error.detail}"[:300]
        LLMModel.objects.filter(pk=model.pk).update(disabled_reason=reason)
        logger.error("Model %s taken out of matchmaking: %s", model.slug, reason)
        return
    LLMModel.objects.filter(pk=model.pk).update(consecutive_failures=F("consecutive_failures") + 1)
    failures = LLMModel.objects.values_list("consecutive_failures", flat=True).get(pk=model.pk)
    if failures >= COOLDOWN_AFTER_FAILURES:
        pause = min(COOLDOWN_BASE_SECONDS * 2 ** (failures - COOLDOWN_AFTER_FAILURES), COOLDOWN_MAX_SECONDS)
        LLMModel.objects.filter(pk=model.pk).update(cooldown_until=now + timedelta(seconds=pause))
        logger.warning("Model %s cooling down for %s s after %s failures", model.slug, pause, failures)


def model_record_success(*, model: LLMModel) -> None:
    LLMModel.objects.filter(pk=model.pk, consecutive_failures__gt=0).update(
        consecutive_failures=0, cooldown_until=None
    )


def _limiter() -> ModelLimiter | None:
    """Caps shared by every worker through Redis; the embedded mode runs one process and has no Redis."""
    if settings.POPULUS_EMBEDDED:
        return None
    return ModelLimiter(redis_client())


def battle_void(*, battle_id: int, reason: str) -> None:
    Battle.objects.filter(pk=battle_id, state=Battle.State.ACTIVE).update(
        state=Battle.State.VOID, void_reason=reason, ended_at=timezone.now()
    )


def _conversation(reply: Reply) -> list[ChatMessage]:
    """This side's own history: every earlier message with this side's answers, then the new message."""
    messages = []
    earlier = (
        Turn.objects.filter(battle_id=reply.turn.battle_id, index__lt=reply.turn.index)
        .order_by("index")
        .prefetch_related("replies")
    )
    for turn in earlier:
        messages.append(ChatMessage("user", turn.message))
        answer = next(r for r in turn.replies.all() if r.side == reply.side)
        messages.append(ChatMessage("assistant", answer.content))
    messages.append(ChatMessage("user", reply.turn.message))
    return messages


def vote_submit(*, battle: Battle, choices: Mapping[str, str]) -> Vote:
    """Record the rater's verdict on every dimension. Submitting the same verdict again returns the vote
    already stored; a different verdict for a voted battle is a conflict."""
    dimensions = list(battle.tournament.dimensions.order_by("position"))
    unanswered = [d.name for d in dimensions if choices.get(d.slug) not in Outcome.values]
    if unanswered:
        raise InvalidInput("Please choose Model A, Model B or Tie for: " + "; ".join(unanswered) + ".")
    verdict = {d.pk: choices[d.slug] for d in dimensions}
    attention_answer = choices.get("attention", "")
    if battle.attention_expected and attention_answer not in Outcome.values:
        raise InvalidInput("Please answer the check question too.")
    with transaction.atomic():
        # Lock the battle only: a join would also lock the tournament and queue every vote behind it.
        battle = Battle.objects.select_for_update(of=("self",)).select_related("tournament").get(pk=battle.pk)
        if battle.state == Battle.State.VOTED:
            return _vote_already_cast(battle, verdict)
        if battle.state == Battle.State.VOID:
            raise Conflict(
                "This battle was set aside because a model could not answer, so it cannot be voted on."
            )
        _check_votable(battle)
        last_reply_at = (
            Reply.objects.filter(turn__battle=battle)
            .order_by("-finished_at")
            .values_list("finished_at", flat=True)[0]
        )
        vote = Vote.objects.create(
            battle=battle,
            seconds_to_vote=(timezone.now() - last_reply_at).total_seconds(),
            attention_answer=attention_answer if battle.attention_expected else "",
        )
        VoteChoice.objects.bulk_create(
            VoteChoice(vote=vote, dimension_id=dimension_id, outcome=outcome)
            for dimension_id, outcome in verdict.items()
        )
        Battle.objects.filter(pk=battle.pk).update(state=Battle.State.VOTED, ended_at=timezone.now())
        rater_battle_voted(rater_id=battle.rater_id)
        vote_quality_check(vote=vote)
        vote_recorded.send(sender=Vote, vote_id=vote.pk)
    return vote


def _vote_already_cast(battle: Battle, verdict: dict[int, str]) -> Vote:
    vote = battle.vote
    stored = dict(vote.choices.values_list("dimension_id", "outcome"))
    if stored != verdict:
        raise Conflict("You have already voted on this battle; a vote cannot be changed.")
    return vote


def _check_votable(battle: Battle) -> None:
    turns_done = battle.turns.count()
    if turns_done < battle.tournament.min_turns:
        minimum = battle.tournament.min_turns
        raise Conflict(f"Please chat for at least {minimum} turns before voting ({turns_done} so far).")
    if Reply.objects.filter(turn__battle=battle).exclude(state=Reply.State.DONE).exists():
        raise Conflict("Please wait until both models have answered before voting.")


def tournament_add_default_dimensions(*, tournament: Tournament) -> None:
    for position, fields in enumerate(DEFAULT_DIMENSIONS):
        Dimension.objects.get_or_create(
            tournament=tournament, slug=fields["slug"], defaults={**fields, "position": position}
        )


def replies_reconcile() -> int:
    """Re-enqueue replies whose task was lost (broker flushed, worker killed); fail those out of attempts.

    Returns how many replies were acted on. Run periodically by Celery beat.
    """
    now = timezone.now()
    lost = Reply.objects.filter(
        Q(state=Reply.State.PENDING, turn__created_at__lt=now - timedelta(seconds=60))
        | Q(
            state=Reply.State.RUNNING,
            started_at__lt=now - timedelta(seconds=settings.REPLY_STALE_AFTER_SECONDS),
        )
    )
    acted = 0
    for reply_id, attempts in lost.values_list("pk", "attempts"):
        if attempts >= MAX_REPLY_ATTEMPTS:
            reply_give_up(reply_id=reply_id)
        else:
            task_named("tournaments.tasks.generate_reply").delay(reply_id)
        acted += 1
    return acted


DEMO_MODELS = [
    {"slug": "demo-brisk", "name": "Brisk (demo)", "demo_style": LLMModel.DemoStyle.TERSE},
    {"slug": "demo-scholar", "name": "Scholar (demo)", "demo_style": LLMModel.DemoStyle.VERBOSE},
    {"slug": "demo-clerk", "name": "Clerk (demo)", "demo_style": LLMModel.DemoStyle.FORMAL},
    {"slug": "demo-buddy", "name": "Buddy (demo)", "demo_style": LLMModel.DemoStyle.FRIENDLY},
]


def demo_tournament_seed() -> Tournament:
    """The demo tournament with four offline demo models and the default dimensions. Idempotent."""
    tournament, _ = Tournament.objects.get_or_create(
        slug="demo",
        defaults={
            "name": "Populus demo",
            "description": "Offline demo models that need no network or API key. Not real language models.",
        },
    )
    for fields in DEMO_MODELS:
        model, _ = LLMModel.objects.get_or_create(
            slug=fields["slug"],
            defaults={**fields, "provider": LLMModel.Provider.DEMO, "maker": "Populus demo"},
        )
        tournament.llm_models.add(model)
    tournament_add_default_dimensions(tournament=tournament)
    return tournament


# The switch `POPULUS_REAL_LLM=1 make run` adds these to the demo tournament, served by llama.cpp's server
# running SmolLM2-135M-Instruct on loopback (scripts/llama_server.py), one server per configuration.
LOCAL_LLM_MODELS = [
    {
        "slug": "local-smollm2-chatty",
        "name": "SmolLM2 chatty (local)",
        "system_prompt": "You are a warm, talkative assistant. Answer helpfully, with details and examples.",
        "temperature": 0.8,
        "max_tokens": 200,
    },
    {
        "slug": "local-smollm2-precise",
        "name": "SmolLM2 precise (local)",
        "system_prompt": "You are a precise assistant. Answer in a few clear sentences.",
        "temperature": 0.2,
        "max_tokens": 120,
    },
]


def demo_local_models_set(*, base_urls: list[str]) -> list[LLMModel]:
    """Put the two local SmolLM2 configurations in the demo tournament, at these servers (one each), or
    with no servers take them out of matchmaking, so a plain `make run` never waits on a server that is
    not there. Idempotent."""
    tournament = demo_tournament_seed()
    models = []
    for index, fields in enumerate(LOCAL_LLM_MODELS):
        serving = index < len(base_urls)
        model, _ = LLMModel.objects.update_or_create(
            slug=fields["slug"],
            defaults={
                **fields,
                "maker": "Hugging Face (run locally by llama.cpp)",
                "provider": LLMModel.Provider.OPENAI_COMPATIBLE,
                "base_url": base_urls[index] if serving else "http://127.0.0.1:8613/v1",
                "api_model": "smollm2-135m-instruct",
                "timeout_seconds": 180,
                "is_active": serving,
            },
        )
        if serving:
            tournament.llm_models.add(model)
        models.append(model)
    return models
