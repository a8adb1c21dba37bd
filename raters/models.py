import uuid

from django.db import models


class Country(models.TextChoices):
    US = "US", "United States"
    UK = "UK", "United Kingdom"


class Axis(models.TextChoices):
    AGE = "age", "Age"
    ETHNICITY = "ethnicity", "Ethnicity"
    POLITICS = "politics", "Political affiliation"


class Group(models.Model):
    """One option on one demographic axis within one country, e.g. "US, age 55+".

    A rater belongs to at most one group per axis; a rater who prefers not to say belongs to none on that
    axis and still counts on the pooled board.
    """

    slug = models.SlugField(max_length=60, unique=True)
    country = models.CharField(max_length=2, choices=Country.choices)
    axis = models.CharField(max_length=20, choices=Axis.choices)
    label = models.CharField(max_length=80)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["country", "axis", "position"]
        constraints = [
            models.UniqueConstraint(fields=["country", "axis", "label"], name="group_unique_label_per_axis"),
        ]

    def __str__(self):
        return f"{self.country} · {self.get_axis_display()} · {self.label}"


class Study(models.Model):
    """A recruitment campaign for one tournament: where panel links and the open demo link land."""

    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=120)
    tournament = models.ForeignKey("tournaments.Tournament", on_delete=models.PROTECT, related_name="studies")
    is_open = models.BooleanField(default=True)
    allows_open_entry = models.BooleanField(
        default=False,
        help_text="Anyone may start rating from the site's 'Rate models' link, without a panel id.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "studies"

    def __str__(self):
        return self.name


class Rater(models.Model):
    class Source(models.TextChoices):
        PANEL = "panel", "Panel link"
        OPEN = "open", "Open link"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="raters")
    source = models.CharField(max_length=10, choices=Source.choices)
    # Keyed hashes (HMAC-SHA256) of the panel's ids; the raw ids are never stored.
    # NULL, not "", for open-link raters: NULLs never collide in the one-rater-per-participant constraint.
    participant_hash = models.CharField(max_length=64, null=True, blank=True, editable=False)  # noqa: DJ001
    panel_session_hash = models.CharField(max_length=64, blank=True, editable=False)
    consented_at = models.DateTimeField()
    country = models.CharField(max_length=2, choices=Country.choices, blank=True)
    screened_at = models.DateTimeField(null=True, blank=True)
    groups = models.ManyToManyField(Group, blank=True, related_name="raters")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # NULLs are distinct, so open-link raters (no participant id) are not limited by this.
            models.UniqueConstraint(fields=["study", "participant_hash"], name="rater_one_per_participant"),
            models.CheckConstraint(
                condition=models.Q(source="open", participant_hash__isnull=True)
                | models.Q(source="panel", participant_hash__isnull=False),
                name="rater_panel_has_participant",
            ),
        ]

    def __str__(self):
        return f"Rater {self.public_id}"

    @property
    def is_screened(self) -> bool:
        return self.screened_at is not None
