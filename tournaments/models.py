import os
import uuid

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from raters.models import Rater
from stats.trueskill import TrueSkillParams
from tournaments.providers import ProviderConfig, ProviderError

# Where models named only in an imported battle log "live": no such host, so nothing is ever sent there.
IMPORTED_BASE_URL = "https://imported.invalid/v1"


class LLMModelQuerySet(models.QuerySet):
    def available(self):
        """Models that may be matched into a new battle now."""
        now = timezone.now()
        return self.filter(is_active=True, disabled_reason="").filter(
            Q(cooldown_until__isnull=True) | Q(cooldown_until__lte=now)
        )


class LLMModel(models.Model):
    """A model that can enter battles, with how to reach it.

    API keys are never stored: `api_key_env` names the environment variable that holds the key.
    """

    class Provider(models.TextChoices):
        OPENAI_COMPATIBLE = "openai", "OpenAI-compatible chat completions endpoint"
        DEMO = "demo", "Built-in offline demo model"

    class DemoStyle(models.TextChoices):
        TERSE = "terse", "Terse"
        VERBOSE = "verbose", "Verbose"
        FORMAL = "formal", "Formal"
        FRIENDLY = "friendly", "Friendly"

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=120, help_text="Shown to raters only after they vote.")
    maker = models.CharField(max_length=120, blank=True)
    provider = models.CharField(max_length=10, choices=Provider.choices)
    base_url = models.URLField(
        blank=True, help_text="e.g. https://api.openai.com/v1 or http://localhost:11434/v1"
    )
    api_model = models.CharField(max_length=200, blank=True, help_text="The model name the endpoint expects.")
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        validators=[
            RegexValidator(r"^[A-Z_][A-Z0-9_]*$", "Use an environment variable name like OPENAI_API_KEY.")
        ],
        help_text="Name of the environment variable holding the API key (leave blank for keyless endpoints).",
    )
    system_prompt = models.TextField(blank=True)
    temperature = models.FloatField(default=0.7, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)])
    max_tokens = models.PositiveIntegerField(default=1024, validators=[MinValueValidator(1)])
    timeout_seconds = models.PositiveIntegerField(
        default=120, validators=[MinValueValidator(1), MaxValueValidator(600)]
    )
    demo_style = models.CharField(max_length=10, choices=DemoStyle.choices, blank=True)
    max_concurrency = models.PositiveSmallIntegerField(
        default=4,
        validators=[MinValueValidator(1)],
        help_text="Requests in flight at once, across all workers.",
    )
    requests_per_minute = models.PositiveIntegerField(
        default=60, validators=[MinValueValidator(1)], help_text="Across all workers, retries included."
    )
    # Set when the provider reports a spent quota or spend cap; a person clears it once that is fixed.
    disabled_reason = models.CharField(max_length=300, blank=True)
    # Repeated failures pause a model for a while; it comes back by itself.
    consecutive_failures = models.PositiveIntegerField(default=0, editable=False)
    cooldown_until = models.DateTimeField(null=True, blank=True)
    is_active = models.BooleanField(
        default=True, help_text="Inactive models are not matched into new battles."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = LLMModelQuerySet.as_manager()

    class Meta:
        verbose_name = "LLM model"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(provider="demo", demo_style__gt="")
                | Q(provider="openai", base_url__gt="", api_model__gt=""),
                name="llmmodel_provider_settings_complete",
                violation_error_message=(
                    "A demo model needs a style; an endpoint model needs a base URL and model name."
                ),
            ),
        ]

    def __str__(self):
        return self.name

    @property
    def is_imported(self) -> bool:
        """A placeholder for a model known only from an imported battle log (`tournaments.imports`)."""
        return self.base_url == IMPORTED_BASE_URL

    def provider_config(self) -> ProviderConfig:
        """How to call this model: its settings, with the API key read from the environment now."""
        api_key = ""
        if self.api_key_env:
            api_key = os.environ.get(self.api_key_env, "")
            if not api_key:
                raise ProviderError(
                    "missing_api_key", f"environment variable {self.api_key_env} is not set", kind="config"
                )
        return ProviderConfig(
            provider=self.provider,
            model_key=self.slug,
            max_concurrency=self.max_concurrency,
            requests_per_minute=self.requests_per_minute,
            base_url=self.base_url,
            api_model=self.api_model,
            api_key=api_key,
            system_prompt=self.system_prompt,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            timeout_seconds=self.timeout_seconds,
            demo_style=self.demo_style,
        )


class Tournament(models.Model):
    class Audience(models.TextChoices):
        # Who rates: people (the web flow and human-panel API clients) or programs (automated API clients,
        # e.g. an LLM judge with a persona). Boards are per tournament, so the two never share a board.
        HUMAN = "human", "Human raters"
        AUTOMATED = "automated", "Automated raters"

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    llm_models = models.ManyToManyField(LLMModel, related_name="tournaments", verbose_name="models")
    min_turns = models.PositiveSmallIntegerField(default=3, validators=[MinValueValidator(1)])
    max_turns = models.PositiveSmallIntegerField(default=10, validators=[MinValueValidator(1)])
    max_message_chars = models.PositiveIntegerField(default=4000, validators=[MinValueValidator(1)])
    audience = models.CharField(
        max_length=12,
        choices=Audience.choices,
        default=Audience.HUMAN,
        help_text="Human tournaments take the web flow and human-panel API clients; automated ones take only "
        "automated API clients, so their votes land on boards of their own.",
    )

    class CutOffReplies(models.TextChoices):
        # Voiding every reply that reaches max_tokens biases the boards: a model that tends to write long
        # loses exactly its long battles, and only its brief ones count. So by default such a reply is
        # shown, marked as cut off, and the battle stays votable.
        SHOW = "show", "Show them marked as cut off; the battle stays votable"
        VOID = "void", "Set the battle aside, as for a failed reply"

    cut_off_replies = models.CharField(
        max_length=4,
        choices=CutOffReplies.choices,
        default=CutOffReplies.SHOW,
        help_text="What to do with a reply that stops at the model's token limit (max_tokens).",
    )
    # TrueSkill's model parameters for the live ratings (the package's defaults); each dimension sets its
    # own draw probability.
    trueskill_mu = models.FloatField(default=25.0)
    trueskill_sigma = models.FloatField(default=25 / 3, validators=[MinValueValidator(0.001)])
    trueskill_beta = models.FloatField(default=25 / 6, validators=[MinValueValidator(0.001)])
    trueskill_tau = models.FloatField(default=25 / 3 / 100, validators=[MinValueValidator(0.0)])
    # A board names its leader only when the top model's P(best) reaches this (stats.announce).
    leader_threshold = models.FloatField(
        default=0.95,
        validators=[MinValueValidator(0.51), MaxValueValidator(0.999)],
        help_text="A board announces its leader only when the top model's P(best) is at least this; "
        "until then it shows 'no clear leader yet'.",
    )
    # Matchmaking serves every board a battle feeds, each weighted by what it still needs to reach the
    # precision goal (stats.board_mix): an announced leader (leader_threshold), 95% skill intervals no
    # wider than matchmaking_interval_width nats, enough raters to publish. The weights say how much each
    # part of the goal counts.
    matchmaking_interval_width = models.FloatField(
        default=1.0,
        validators=[MinValueValidator(0.01)],
        help_text="Precision goal of matchmaking: width of a model's 95% skill interval on a board, in "
        "nats (1.0 is about +-87 Elo points).",
    )
    matchmaking_weight_leader = models.FloatField(default=1.0, validators=[MinValueValidator(0.0)])
    matchmaking_weight_intervals = models.FloatField(default=0.5, validators=[MinValueValidator(0.0)])
    matchmaking_weight_raters = models.FloatField(default=1.0, validators=[MinValueValidator(0.0)])
    matchmaking_pair_cap = models.FloatField(
        default=0.05,
        validators=[MinValueValidator(0.001), MaxValueValidator(1.0)],
        help_text="The most one pair may have of the battles matchmaking offers a rater, all boards "
        "together. A tournament of under eight models gets 1.4 times an even share instead, when that is "
        "more.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    matchmaking_interval_width__gt=0,
                    matchmaking_weight_leader__gte=0,
                    matchmaking_weight_intervals__gte=0,
                    matchmaking_weight_raters__gte=0,
                    matchmaking_pair_cap__gt=0,
                    matchmaking_pair_cap__lte=1,
                ),
                name="tournament_matchmaking_goal_valid",
            ),
            models.CheckConstraint(
                condition=Q(min_turns__gte=1, max_turns__gte=F("min_turns")),
                name="tournament_turn_limits_valid",
            ),
            # Above one half, so at most one model can be announced; below one, so it can be reached.
            models.CheckConstraint(
                condition=Q(leader_threshold__gt=0.5, leader_threshold__lt=1.0),
                name="tournament_leader_threshold_valid",
            ),
        ]

    def __str__(self):
        return self.name

    def clean(self):
        if self.pk is None:
            return
        stored = Tournament.objects.filter(pk=self.pk).values_list("audience", flat=True).first()
        if stored is None or stored == self.audience:
            return
        if self.battles.exists():
            raise ValidationError(
                {
                    "audience": "The audience cannot change once battles have been fought: their votes "
                    "would move between human and automated boards. Make a new tournament instead."
                }
            )
        if self.audience == self.Audience.AUTOMATED and self.studies.filter(allows_open_entry=True).exists():
            raise ValidationError(
                {"audience": "A study of this tournament takes raters from the website; turn that off first."}
            )
        if self.studies.filter(api_clients__isnull=False).exists():
            raise ValidationError(
                {"audience": "API clients already rate in this tournament; revoke them or make a new one."}
            )

    def trueskill_params(self, *, draw_probability: float) -> TrueSkillParams:
        return TrueSkillParams(
            mu=self.trueskill_mu,
            sigma=self.trueskill_sigma,
            beta=self.trueskill_beta,
            tau=self.trueskill_tau,
            draw_probability=draw_probability,
        )


class Dimension(models.Model):
    """One question of the vote, e.g. "Overall winner", with its own TrueSkill draw probability."""

    tournament = models.ForeignKey(Tournament, on_delete=models.CASCADE, related_name="dimensions")
    slug = models.SlugField(max_length=60)
    name = models.CharField(max_length=120)
    help_text = models.CharField(max_length=300, blank=True)
    position = models.PositiveSmallIntegerField(default=0)
    draw_probability = models.FloatField(
        default=0.3,
        validators=[MinValueValidator(0.0), MaxValueValidator(0.95)],
        help_text="Share of ties expected on this dimension (about 0.10 for Overall, 0.65 for Trust).",
    )

    class Meta:
        ordering = ["tournament", "position"]
        constraints = [
            models.UniqueConstraint(fields=["tournament", "slug"], name="dimension_unique_slug"),
            models.CheckConstraint(
                condition=Q(draw_probability__gte=0, draw_probability__lt=1),
                name="dimension_draw_probability_range",
            ),
        ]

    def __str__(self):
        return self.name


class Battle(models.Model):
    class State(models.TextChoices):
        ACTIVE = "active", "Active"
        VOTED = "voted", "Voted"
        VOID = "void", "Void"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    tournament = models.ForeignKey(Tournament, on_delete=models.PROTECT, related_name="battles")
    rater = models.ForeignKey("raters.Rater", on_delete=models.PROTECT, related_name="battles")
    model_a = models.ForeignKey(LLMModel, on_delete=models.PROTECT, related_name="+")
    model_b = models.ForeignKey(LLMModel, on_delete=models.PROTECT, related_name="+")
    state = models.CharField(max_length=10, choices=State.choices, default=State.ACTIVE)
    # Probability with which this ordered pair was drawn, for inverse-probability weighting later.
    pair_probability = models.FloatField()
    void_reason = models.CharField(max_length=200, blank=True)
    # A model named itself or its maker: the vote is kept for audit and left out of ratings.
    flagged_reason = models.CharField(max_length=300, blank=True)
    # The answer the vote form's attention-check item asks for ("a", "b" or "tie"); blank: no check.
    attention_expected = models.CharField(max_length=3, blank=True)
    # A practice battle (the study's first battles of an open-link rater) is voted and kept like any other,
    # but published boards never count it: see `raters.Study.practice_battles`.
    practice = models.BooleanField(default=False, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=~Q(model_a=F("model_b")), name="battle_two_different_models"),
            models.CheckConstraint(
                condition=Q(pair_probability__gt=0, pair_probability__lte=1),
                name="battle_pair_probability_range",
            ),
            # At most one battle in progress per rater: a double click on "next battle" cannot open two.
            models.UniqueConstraint(
                fields=["rater"], condition=Q(state="active"), name="battle_one_active_per_rater"
            ),
        ]

    def __str__(self):
        return f"Battle {self.public_id}"


class Turn(models.Model):
    battle = models.ForeignKey(Battle, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveSmallIntegerField()
    message = models.TextField()
    # A friendly word shown under a message the topic judge doubted; it is sent on and counts for nothing.
    nudge = models.CharField(max_length=300, blank=True)
    # Characters shown on each side from the moment the first side finished until the last one did
    # (tournaments.pacing): the display stands still meanwhile, so no side is seen to finish first. Null
    # until a side finishes.
    frozen_chars = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["battle", "index"]
        constraints = [models.UniqueConstraint(fields=["battle", "index"], name="turn_unique_index")]

    def __str__(self):
        return f"Turn {self.index + 1} of {self.battle}"


class Side(models.TextChoices):
    A = "a", "Model A"
    B = "b", "Model B"


class Reply(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="replies")
    side = models.CharField(max_length=1, choices=Side.choices)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    content = models.TextField(blank=True)
    # The model stopped at its token limit: shown with a "cut off" marker (see Tournament.cut_off_replies).
    cut_off = models.BooleanField(default=False)
    # Internal diagnosis for staff; never shown to raters, since it can name the provider.
    error = models.CharField(max_length=300, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "replies"
        ordering = ["turn", "side"]
        constraints = [models.UniqueConstraint(fields=["turn", "side"], name="reply_one_per_side")]

    def __str__(self):
        return f"{self.get_side_display()} reply to {self.turn}"


class Outcome(models.TextChoices):
    A = "a", "Model A is better"
    B = "b", "Model B is better"
    TIE = "tie", "Tie"


def _counted(path_to_vote: str) -> Q:
    """`leaderboard.services.vote_is_counted` as a condition on the vote at `path_to_vote`: not from a
    battle flagged for a model giving its identity away, nor from a rater quality control excluded."""
    return Q(**{f"{path_to_vote}battle__flagged_reason": ""}) & ~Q(
        **{f"{path_to_vote}battle__rater__status": Rater.Status.EXCLUDED}
    )


class VoteQuerySet(models.QuerySet):
    def counted(self):
        """Votes that move ratings."""
        return self.filter(_counted(""))


class VoteChoiceQuerySet(models.QuerySet):
    def counted(self):
        """Choices of the votes that move ratings."""
        return self.filter(_counted("vote__"))


class Vote(models.Model):
    battle = models.OneToOneField(Battle, on_delete=models.PROTECT, related_name="vote")
    created_at = models.DateTimeField(auto_now_add=True)
    # Seconds from the last reply being shown to the vote, kept for quality control.
    seconds_to_vote = models.FloatField(null=True)
    attention_answer = models.CharField(max_length=3, blank=True)

    objects = VoteQuerySet.as_manager()

    def __str__(self):
        return f"Vote on {self.battle}"


class VoteChoice(models.Model):
    # No index of its own: the unique (vote, dimension) constraint's index starts with the vote, and every
    # imported or cast choice would otherwise write a second entry that no query needs.
    vote = models.ForeignKey(Vote, on_delete=models.CASCADE, related_name="choices", db_index=False)
    dimension = models.ForeignKey(Dimension, on_delete=models.PROTECT, related_name="+")
    outcome = models.CharField(max_length=3, choices=Outcome.choices)

    objects = VoteChoiceQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["vote", "dimension"], name="votechoice_one_per_dimension")
        ]

    def __str__(self):
        return f"{self.dimension}: {self.outcome}"


# --- Quality control of what raters send and vote ----------------------------------------------------


class QualityRuleSetting(models.Model):
    """How one quality-control rule acts. Rules without a row act on their defaults (raters/qc.py)."""

    class Mode(models.TextChoices):
        STRIKE = "strike", "Strike (warns the rater; three strikes end the session)"
        FLAG = "flag", "Flag only (recorded for staff, the rater is not told)"
        OFF = "off", "Off"

    rule = models.CharField(max_length=30, unique=True)
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.STRIKE)
    params = models.JSONField(
        default=dict,
        blank=True,
        help_text='Thresholds that replace the rule\'s defaults, e.g. {"min_overlap": 0.05}.',
    )
    judge_model = models.ForeignKey(
        LLMModel,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Only for the LLM topic judge: the model that judges whether a message stays on task.",
    )

    def __str__(self):
        return f"{self.rule}: {self.get_mode_display()}"


class RuleOutcome(models.Model):
    """Every rule evaluation, passed or failed, so staff can see how a threshold acts before using it."""

    class Action(models.TextChoices):
        NONE = "none", "None"
        STRUCK = "struck", "Struck"
        FLAGGED = "flagged", "Flagged for review"

    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="rule_outcomes")
    rule = models.CharField(max_length=30)
    failed = models.BooleanField()
    score = models.FloatField()
    action = models.CharField(max_length=10, choices=Action.choices, default=Action.NONE)
    reason = models.CharField(max_length=300, blank=True)
    battle = models.ForeignKey(Battle, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["rule", "failed"])]

    def __str__(self):
        return f"{self.rule} {'failed' if self.failed else 'passed'} for {self.rater}"


class Strike(models.Model):
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="strikes")
    rule = models.CharField(max_length=30)
    reason = models.CharField(max_length=300)
    # What it concerns: the rejected message's text, or the vote.
    message = models.TextField(blank=True)
    battle = models.ForeignKey(Battle, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    vote = models.ForeignKey(Vote, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    lifted_at = models.DateTimeField(null=True, blank=True)
    lifted_by = models.CharField(max_length=150, blank=True)
    lift_reason = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            # A vote is judged once per rule, however often its checks run.
            models.UniqueConstraint(
                fields=["rater", "vote", "rule"],
                condition=Q(vote__isnull=False),
                name="strike_once_per_vote_rule",
            ),
        ]

    def __str__(self):
        return f"Strike ({self.rule}) for {self.rater}"


class StaffAction(models.Model):
    """Audit log of staff decisions about raters: lifted strikes, hand exclusions."""

    class Kind(models.TextChoices):
        LIFT_STRIKE = "lift_strike", "Lifted a strike"
        EXCLUDE = "exclude", "Excluded a rater"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    staff = models.CharField(max_length=150)
    rater_public_id = models.UUIDField()
    strike = models.ForeignKey(Strike, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    reason = models.CharField(max_length=300)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.staff}: {self.get_kind_display()} ({self.rater_public_id})"
