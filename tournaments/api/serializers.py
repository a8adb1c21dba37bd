"""Request and response bodies of the rater API. Responses are built from the selectors' views of a rater
and a battle; nothing here reads the models' identities except `result`, which exists only after the
vote."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from raters.models import Rater
from tournaments.api.selectors import battle_result
from tournaments.models import Battle, Outcome

TURN_STATES = [
    ("waiting", "Both models are still answering (or one is)"),
    ("done", "Both replies are in"),
    ("failed", "A model could not answer; the battle is set aside"),
]


# --- Requests -------------------------------------------------------------------------------------------


class RaterCreateSerializer(serializers.Serializer):
    participant_id = serializers.CharField(
        max_length=64,
        help_text="The participant's id. Human-panel clients pass the panel's id (checked like the study's "
        "panel links, e.g. Prolific's 24-character hex id); automated clients name their rater (persona) "
        "with 1 to 64 letters, digits, '-' or '_'. Stored only as a keyed hash. The same id again returns "
        "the same rater.",
    )
    session_id = serializers.CharField(
        max_length=64, required=False, allow_blank=True, default="", help_text="The panel's session id."
    )
    consent = serializers.BooleanField(
        default=False,
        help_text="The participant has read the study information and agreed. Required for human-panel "
        "clients.",
    )
    country = serializers.CharField(max_length=3, help_text="Screener: the country code, e.g. US or UK.")
    answers = serializers.DictField(
        child=serializers.CharField(allow_blank=True, max_length=60),
        required=False,
        default=dict,
        help_text='Screener answers: axis slug → group slug, e.g. {"age": "us-age-18-34"} (see '
        "GET screener/). A blank answer declines where the axis allows it.",
    )


class TurnCreateSerializer(serializers.Serializer):
    message = serializers.CharField(
        allow_blank=True,
        trim_whitespace=False,
        help_text="The rater's message, sent to both models. The tournament's length limit and the quality "
        "rules apply as on the website.",
    )


class VoteCreateSerializer(serializers.Serializer):
    choices = serializers.DictField(
        child=serializers.ChoiceField(choices=Outcome.choices),
        help_text="One outcome per dimension slug (see the battle's dimensions): a, b or tie.",
    )
    attention = serializers.ChoiceField(
        choices=Outcome.choices,
        required=False,
        help_text="The answer to the battle's attention check, when it has one.",
    )


# --- Responses ------------------------------------------------------------------------------------------


class SessionOutcomeSerializer(serializers.Serializer):
    title = serializers.CharField()
    message = serializers.CharField()
    code = serializers.CharField(help_text="The panel's code: completion, screen-out or quota-full.")
    return_url = serializers.CharField(help_text="Where the participant goes back to, or empty.")


class RaterSerializer(serializers.Serializer):
    """A rater's session as it stands (built from `RaterState`)."""

    id = serializers.UUIDField(source="rater.public_id")
    status = serializers.ChoiceField(source="rater.status", choices=Rater.Status.choices)
    battles_done = serializers.IntegerField(help_text="Battles voted on.")
    battles_per_session = serializers.IntegerField(
        source="rater.study.battles_per_session", allow_null=True, help_text="Null: no limit."
    )
    active_battle = serializers.UUIDField(allow_null=True, help_text="The battle in progress, if any.")
    outcome = SessionOutcomeSerializer(
        allow_null=True, help_text="Once the session is decided (finished, full, screened out, ended)."
    )


class BattleDimensionSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    help_text = serializers.CharField()


class BattleTurnSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="0 for the first message.")
    message = serializers.CharField()
    nudge = serializers.CharField(
        help_text="A friendly note on this message (e.g. it looks like a new topic); it counts for nothing."
    )
    state = serializers.SerializerMethodField()
    # The text so far, at the common pace of tournaments.pacing, so reply speed cannot hint at which model
    # is which; the whole replies once both are done.
    reply_a = serializers.CharField(allow_null=True, help_text="Model A's text so far (null before any).")
    reply_b = serializers.CharField(allow_null=True, help_text="Model B's text so far (null before any).")
    cut_off_a = serializers.BooleanField(help_text="Model A's reply stopped at its token limit.")
    cut_off_b = serializers.BooleanField(help_text="Model B's reply stopped at its token limit.")

    @extend_schema_field(serializers.ChoiceField(choices=TURN_STATES))
    def get_state(self, turn) -> str:
        return "failed" if turn.failed else "waiting" if turn.waiting else "done"


class AttentionCheckSerializer(serializers.Serializer):
    field = serializers.CharField(help_text="Send the answer as this field of the vote.")
    question = serializers.CharField()


class BattleResultRowSerializer(serializers.Serializer):
    dimension = serializers.CharField()
    outcome = serializers.CharField()
    winner = serializers.CharField(help_text="The model's name, or Tie.")


class BattleResultSerializer(serializers.Serializer):
    rows = BattleResultRowSerializer(many=True)
    model_a = serializers.CharField()
    model_b = serializers.CharField()


ATTENTION_ANSWERS = {"a": "Model A", "b": "Model B", "tie": "Tie"}


class BattleSerializer(serializers.Serializer):
    """A battle as the rater sees it (built from `BattleView`): Model A and Model B, never their names
    until the vote is in."""

    id = serializers.UUIDField(source="battle.public_id")
    state = serializers.ChoiceField(source="battle.state", choices=Battle.State.choices)
    void_reason = serializers.CharField(source="battle.void_reason")
    turns = BattleTurnSerializer(many=True)
    turns_done = serializers.IntegerField()
    min_turns = serializers.IntegerField(source="battle.tournament.min_turns")
    max_turns = serializers.IntegerField(source="battle.tournament.max_turns")
    max_message_chars = serializers.IntegerField(source="battle.tournament.max_message_chars")
    waiting = serializers.BooleanField(help_text="Replies are being written: poll again in a second or two.")
    can_send = serializers.SerializerMethodField()
    can_vote = serializers.SerializerMethodField()
    dimensions = BattleDimensionSerializer(many=True)
    attention_check = serializers.SerializerMethodField()
    warnings = serializers.ListField(
        child=serializers.CharField(), help_text="Quality warnings on this battle."
    )
    result = serializers.SerializerMethodField()

    def get_can_send(self, view) -> bool:
        return view.battle.state == Battle.State.ACTIVE and view.can_send

    def get_can_vote(self, view) -> bool:
        return view.battle.state == Battle.State.ACTIVE and view.can_vote

    @extend_schema_field(AttentionCheckSerializer(allow_null=True))
    def get_attention_check(self, view):
        expected = view.battle.attention_expected
        if not expected or view.battle.state != Battle.State.ACTIVE:
            return None
        question = (
            "This question checks that the form is being read with care. "
            f"Please choose {ATTENTION_ANSWERS[expected]} here."
        )
        return {"field": "attention", "question": question}

    @extend_schema_field(BattleResultSerializer(allow_null=True))
    def get_result(self, view):
        result = battle_result(battle=view.battle)
        return BattleResultSerializer(result).data if result else None


class VoteResultSerializer(serializers.Serializer):
    battle = BattleSerializer()
    rater = RaterSerializer()


class ScreenerOptionSerializer(serializers.Serializer):
    slug = serializers.CharField()
    label = serializers.CharField()


class ScreenerAxisSerializer(serializers.Serializer):
    slug = serializers.CharField()
    label = serializers.CharField()
    question = serializers.CharField()
    allows_decline = serializers.BooleanField()
    options = ScreenerOptionSerializer(source="groups.all", many=True)


class ScreenerCountrySerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField()
    axes = ScreenerAxisSerializer(source="axes.all", many=True)
