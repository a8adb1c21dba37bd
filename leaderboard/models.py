from django.db import models
from django.db.models import Q


class Rating(models.Model):
    """Live TrueSkill rating of one model on one dimension, for the pooled population (group is null)
    or for one demographic group."""

    dimension = models.ForeignKey("tournaments.Dimension", on_delete=models.CASCADE, related_name="+")
    group = models.ForeignKey(
        "raters.Group", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    model = models.ForeignKey("tournaments.LLMModel", on_delete=models.CASCADE, related_name="ratings")
    mu = models.FloatField()
    sigma = models.FloatField()
    wins = models.PositiveIntegerField(default=0)
    losses = models.PositiveIntegerField(default=0)
    ties = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["dimension", "model"], condition=Q(group__isnull=True), name="rating_unique_pooled"
            ),
            models.UniqueConstraint(
                fields=["dimension", "group", "model"],
                condition=Q(group__isnull=False),
                name="rating_unique_group",
            ),
        ]

    def __str__(self):
        return f"{self.model} on {self.dimension} ({self.group or 'pooled'})"

    @property
    def battles(self) -> int:
        return self.wins + self.losses + self.ties


class AppliedVote(models.Model):
    """Marks a vote as applied to the live ratings. Written in the same transaction as the rating update,
    and unique per vote, so a vote is applied exactly once however often its task runs."""

    vote = models.OneToOneField("tournaments.Vote", on_delete=models.CASCADE, related_name="applied")
    # False when the vote was handled but left out of ratings (its battle was flagged).
    counted = models.BooleanField(default=True)
    applied_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"Applied {self.vote}"
