import uuid

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q


class Country(models.Model):
    """A country raters can live in; each has its own screener axes and options."""

    code = models.CharField(max_length=3, unique=True, help_text="Short code, e.g. US or UK.")
    name = models.CharField(max_length=80)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "name"]
        verbose_name_plural = "countries"

    def __str__(self):
        return self.name


class Axis(models.Model):
    """One screener question within one country, e.g. "Age band" in the US."""

    country = models.ForeignKey(Country, on_delete=models.CASCADE, related_name="axes")
    slug = models.SlugField(max_length=40, help_text="e.g. age, ethnicity, politics")
    label = models.CharField(max_length=80, help_text="Short name shown on boards, e.g. 'Age'.")
    question = models.CharField(max_length=200, help_text="The screener's question.")
    allows_decline = models.BooleanField(
        default=False,
        help_text="Offer 'Prefer not to say': the rater then has no group on this axis (pooled board only).",
    )
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["country", "position"]
        verbose_name_plural = "axes"
        constraints = [
            models.UniqueConstraint(fields=["country", "slug"], name="axis_unique_slug_per_country")
        ]

    def __str__(self):
        return f"{self.country.code} · {self.label}"


class Group(models.Model):
    """One option on one axis within one country, e.g. "US, age 55+". A rater belongs to at most one
    group per axis."""

    slug = models.SlugField(max_length=60, unique=True)
    axis = models.ForeignKey(Axis, on_delete=models.CASCADE, related_name="groups")
    label = models.CharField(max_length=80)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["axis__country__position", "axis__position", "position"]
        constraints = [models.UniqueConstraint(fields=["axis", "label"], name="group_unique_label_per_axis")]

    def __str__(self):
        return f"{self.axis} · {self.label}"


class Study(models.Model):
    """A recruitment campaign for one tournament: where panel links land, and its sampling quotas."""

    class Panel(models.TextChoices):
        PROLIFIC = "prolific", "Prolific (PROLIFIC_PID, STUDY_ID, SESSION_ID)"
        GENERIC = "generic", "Generic (pid, study, session)"

    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=120)
    tournament = models.ForeignKey("tournaments.Tournament", on_delete=models.PROTECT, related_name="studies")
    is_open = models.BooleanField(default=True)
    allows_open_entry = models.BooleanField(
        default=False,
        help_text="Anyone may start rating from the site's 'Rate models' link, without a panel id.",
    )
    panel = models.CharField(
        max_length=10,
        choices=Panel.choices,
        default=Panel.PROLIFIC,
        help_text="Which URL parameters carry the ids.",
    )
    external_study_id = models.CharField(
        max_length=64,
        blank=True,
        help_text="If set, links must carry this study id (e.g. Prolific's STUDY_ID).",
    )
    countries = models.ManyToManyField(
        Country, blank=True, help_text="Raters from other countries are screened out. Empty: any country."
    )
    completion_code = models.CharField(max_length=64, blank=True)
    screen_out_code = models.CharField(max_length=64, blank=True)
    quota_full_code = models.CharField(max_length=64, blank=True)
    return_url = models.URLField(
        max_length=300,
        blank=True,
        help_text="Where raters go back to, with {code} for the code, e.g. "
        "https://app.prolific.com/submissions/complete?cc={code}",
    )
    battles_per_session = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Empty: no limit (open demo studies).",
    )
    abandon_after_minutes = models.PositiveIntegerField(
        default=60,
        validators=[MinValueValidator(1)],
        help_text="An admitted rater with no vote after this long gives their quota slots back.",
    )
    # Sybil friction on entries without a panel id: raters are free to make, networks are not.
    new_raters_per_network_hour = models.PositiveIntegerField(
        null=True,
        blank=True,
        default=20,
        help_text="Entries without a panel id: at most this many new raters from one network (an IPv4 "
        "address or an IPv6 /64, kept only as a keyed fingerprint) per hour. Empty: no cap.",
    )
    honeypot = models.BooleanField(
        default=True,
        help_text="The consent form carries a field people never see; an entry that fills it is refused.",
    )
    proof_of_effort_bits = models.PositiveSmallIntegerField(
        default=13,
        validators=[MaxValueValidator(24)],
        help_text="Entries without a panel id: the consent page's browser must find a SHA-256 hash with "
        "this many leading zero bits before it may submit (each bit doubles the work; 13 takes Chromium "
        "about 0.1 s on a desktop, about 0.3 s with the CPU slowed 4x as a phone's). 0: off. The page "
        "then needs JavaScript.",
    )
    practice_battles = models.PositiveSmallIntegerField(
        default=1,
        help_text="Entries without a panel id: each rater's first this many battles are practice, voted as "
        "usual and kept, but never counted on published boards. A battle cannot be skipped, so a crowd of "
        "new raters pays for every battle it cannot use instead of only the ones it can. 0: none.",
    )
    # Panel reconciliation: staff upload the panel's export of approved submissions (raters.services.
    # panel_export_reconcile), which stamps the matching raters' reconciled_at.
    count_only_reconciled = models.BooleanField(
        default=False,
        help_text="Published boards count only the votes of raters the panel approved (reconciled from the "
        "panel's export on the study's staff page). Raters without a panel id never count then.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "studies"
        # What each staff action needs (raters.permissions); "is staff" alone lets a user log in, nothing
        # more. The groups "study viewer" and "study manager" bundle them (migration 0004).
        permissions = [
            ("view_study_dashboard", "Can view a study's quotas, raters and quality control"),
            ("manage_study", "Can change a study's quota targets and open or close it"),
            ("moderate_raters", "Can exclude raters and lift strikes"),
            ("export_study", "Can export a study's data"),
            ("export_linked", "Can export open data with pseudonyms linkable across exports"),
        ]

    def __str__(self):
        return self.name

    def clean(self):
        if not self.tournament_id:
            return
        automated = self.tournament.audience == "automated"  # tournaments.Tournament.Audience.AUTOMATED
        if automated and self.allows_open_entry:
            raise ValidationError(
                {
                    "allows_open_entry": "This study's tournament is for automated raters, who only join "
                    "through automated API clients; open entry from the website is for human tournaments."
                }
            )
        misfit = ApiClient.Kind.HUMAN_PANEL if automated else ApiClient.Kind.AUTOMATED
        if self.pk and self.api_clients.filter(kind=misfit).exists():
            raise ValidationError(
                {
                    "tournament": f"This tournament is for {self.tournament.audience} raters, but API "
                    "clients of the other kind rate in this study; their votes would land on its boards."
                }
            )


class Rater(models.Model):
    class Source(models.TextChoices):
        PANEL = "panel", "Panel link"
        OPEN = "open", "Open link"

    class Status(models.TextChoices):
        CONSENTED = "consented", "Consented, not screened"
        ADMITTED = "admitted", "Admitted"
        SCREENED_OUT = "screened_out", "Screened out"
        QUOTA_FULL = "quota_full", "Quota full"
        COMPLETED = "completed", "Completed"
        RELEASED = "released", "Slot released (abandoned)"
        # Set by quality control (three strikes); counted as "struck" on the quota dashboard.
        EXCLUDED = "excluded", "Excluded by quality control"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="raters")
    source = models.CharField(max_length=10, choices=Source.choices)
    # Keyed hashes (HMAC-SHA256) of the panel's ids; the raw ids are never stored. NULL, not "", for
    # open-link raters: NULLs never collide in the one-rater-per-participant constraint.
    participant_hash = models.CharField(max_length=64, null=True, blank=True, editable=False)  # noqa: DJ001
    panel_session_hash = models.CharField(max_length=64, blank=True, editable=False)
    # HMAC of the network the rater entered from (never the address): for the per-network entry cap and
    # for judging small raters together with the others from their network.
    network_fingerprint = models.CharField(max_length=64, blank=True, editable=False)
    # Set by the rigging check (leaderboard.services.raters_rigging_hold_out): the rater's votes moved one
    # model's standing far more than chance, so they are left out of published boards until staff restore
    # them. A restored rater is never held out automatically again.
    held_out_at = models.DateTimeField(null=True, blank=True, editable=False)
    held_out_reason = models.CharField(max_length=300, blank=True, editable=False)
    restored_by = models.CharField(max_length=150, blank=True, editable=False)
    # When the panel's export of approved submissions first listed this participant.
    reconciled_at = models.DateTimeField(null=True, blank=True, editable=False)
    status = models.CharField(max_length=15, choices=Status.choices, default=Status.CONSENTED)
    consented_at = models.DateTimeField()
    country = models.ForeignKey(Country, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    screened_at = models.DateTimeField(null=True, blank=True)
    admitted_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # Battles voted on in this session, counted by the battle flow when it stores a vote: what tells a
    # session with a set number of battles that it is complete.
    battles_voted = models.PositiveIntegerField(default=0, editable=False)
    groups = models.ManyToManyField(Group, blank=True, related_name="raters")
    # The rater API client that created this rater; null for raters who came through the website.
    api_client = models.ForeignKey(
        "ApiClient", on_delete=models.PROTECT, null=True, blank=True, related_name="raters"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "participant_hash"], name="rater_one_per_participant"),
            models.CheckConstraint(
                condition=Q(source="open", participant_hash__isnull=True)
                | Q(source="panel", participant_hash__isnull=False),
                name="rater_panel_has_participant",
            ),
        ]
        indexes = [
            models.Index(
                fields=["study", "network_fingerprint", "created_at"], name="rater_network_arrivals"
            ),
        ]

    def __str__(self):
        return f"Rater {self.public_id}"

    @property
    def is_screened(self) -> bool:
        return self.screened_at is not None


class ApiClient(models.Model):
    """A program that runs raters through the rater API: a custom front-end for people from a panel, or
    automated raters (scripts, LLM judges with personas). Its raters join one study, and so one tournament,
    whose audience must match the client's kind.

    Only a SHA-256 hash of the token is stored; the token itself is shown once, when the client is made.
    """

    class Kind(models.TextChoices):
        HUMAN_PANEL = "human_panel", "Human panel (a custom front-end for people)"
        AUTOMATED = "automated", "Automated (scripted or LLM-judge raters)"

    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="api_clients")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    is_active = models.BooleanField(default=True, help_text="Untick to revoke the token at once.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = "API client"
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=["human_panel", "automated"]), name="apiclient_kind")
        ]

    def __str__(self):
        return self.name

    @property
    def audience(self) -> str:
        """The tournament audience this client's raters belong to (a value of Tournament.Audience)."""
        return "automated" if self.kind == self.Kind.AUTOMATED else "human"

    def clean(self):
        if self.study_id and self.study.tournament.audience != self.audience:
            raise ValidationError(
                {
                    "study": f"A {self.get_kind_display().split(' (')[0].lower()} client needs a study whose "
                    f"tournament is for {self.audience} raters; this study's tournament is for "
                    f"{self.study.tournament.audience} raters. Boards of the two never mix."
                }
            )


class Quota(models.Model):
    """A sampling target for one study: one group (a marginal quota) or one cell of groups on different
    axes of one country (an interlocking quota). `admitted` counts the raters holding a slot now."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="quotas")
    groups = models.ManyToManyField(Group, related_name="+")
    # Sorted group ids joined by "-": how admission finds a rater's quotas without a join per axis.
    cell_key = models.CharField(max_length=200, editable=False)
    label = models.CharField(max_length=300, editable=False)
    target = models.PositiveIntegerField()
    admitted = models.PositiveIntegerField(default=0, editable=False)

    class Meta:
        ordering = ["study", "pk"]
        constraints = [models.UniqueConstraint(fields=["study", "cell_key"], name="quota_unique_cell")]

    def __str__(self):
        return f"{self.study}: {self.label}"


class QuotaSlot(models.Model):
    """A rater holding a place in a quota."""

    quota = models.ForeignKey(Quota, on_delete=models.CASCADE, related_name="slots")
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="quota_slots")
    taken_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["quota", "rater"], name="quotaslot_one_per_rater")]

    def __str__(self):
        return f"{self.rater} in {self.quota}"


class ErasureRecord(models.Model):
    """Audit trail of erasures: what was removed and by whom, never what it contained."""

    rater_public_id = models.UUIDField()
    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="+")
    erased_by = models.CharField(max_length=150, help_text="Staff username, or 'command' for the CLI.")
    votes_removed = models.PositiveIntegerField()
    battles_removed = models.PositiveIntegerField()
    erased_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"Erasure of {self.rater_public_id} at {self.erased_at:%Y-%m-%d %H:%M}"


class AuditEntry(models.Model):
    """Who changed what, from what to what: every change a staff member makes through the staff pages
    (and each export they take), kept apart from the data it describes so it survives it."""

    actor = models.CharField(max_length=150)
    action = models.CharField(max_length=50)
    target = models.CharField(max_length=200, help_text="What was changed, e.g. 'study pilot-study'.")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        verbose_name_plural = "audit entries"
        ordering = ["-created_at", "-pk"]

    def __str__(self):
        return f"{self.actor}: {self.action} {self.target}"
