from django.db import models
from django.db.models import Q

from tournaments.models import Outcome, Tournament


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


class FitSnapshot(models.Model):
    """One published batch fit of one dimension: what it was fitted on, with what settings, and when.
    Boards show the latest; every earlier one stays, so any past board can be shown again."""

    tournament = models.ForeignKey("tournaments.Tournament", on_delete=models.CASCADE, related_name="+")
    dimension = models.ForeignKey("tournaments.Dimension", on_delete=models.CASCADE, related_name="snapshots")
    created_at = models.DateTimeField(auto_now_add=True)
    first_vote_id = models.BigIntegerField(null=True)
    last_vote_id = models.BigIntegerField(null=True)
    votes = models.PositiveIntegerField()
    settings = models.JSONField(default=dict)
    tie_parameter = models.FloatField(help_text="Davidson's nu for this dimension.")
    # The style-controlled fit's coefficients (services._style_summary): features kept, their scales,
    # and per feature the global coefficient and each group's, with 95% intervals. {} = no style fit.
    style = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.dimension} fitted {self.created_at:%Y-%m-%d %H:%M}"


class FitScore(models.Model):
    """A model's published score on one board (pooled when group is null) of one snapshot."""

    snapshot = models.ForeignKey(FitSnapshot, on_delete=models.CASCADE, related_name="scores")
    group = models.ForeignKey(
        "raters.Group", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    model = models.ForeignKey("tournaments.LLMModel", on_delete=models.CASCADE, related_name="+")
    # Expected points against the whole field (win 1, tie 1/2), with its 95% interval.
    score = models.FloatField()
    score_low = models.FloatField()
    score_high = models.FloatField()
    rank = models.PositiveIntegerField(
        help_text="Shared: one plus the models whose interval lies wholly above; it rises from the previous "
        "snapshot's rank only past models overlapping it by the margin (stats.summaries.settled_ranks)."
    )
    rank_low = models.PositiveIntegerField()
    rank_high = models.PositiveIntegerField()
    p_best = models.FloatField()
    # False: the default board. True: the style-controlled board (scores with style held equal).
    style_controlled = models.BooleanField(default=False)
    # The skill on Chatbot Arena's scale (400 / ln 10 points per unit of log-strength, 1000 at the field's
    # mean: stats.arena_scale) with its 95% interval. Null in snapshots published before it existed.
    rating = models.FloatField(null=True)
    rating_low = models.FloatField(null=True)
    rating_high = models.FloatField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["snapshot", "style_controlled", "model"],
                condition=Q(group__isnull=True),
                name="fitscore_unique_pooled",
            ),
            models.UniqueConstraint(
                fields=["snapshot", "style_controlled", "group", "model"],
                condition=Q(group__isnull=False),
                name="fitscore_unique_group",
            ),
        ]

    def __str__(self):
        return f"{self.model}: {self.score:.3f}"


class BattleStyle(models.Model):
    """Each side's raw style counts over a battle's replies (stats.style.side_style), derived once per
    battle when a fit first needs it: replies do not change once voted on, so re-parsing every reply of
    the whole history at each publish would be wasted work. Raw counts, not the normalised differences,
    so the normalisation can change without re-reading replies."""

    battle = models.OneToOneField(
        "tournaments.Battle", on_delete=models.CASCADE, primary_key=True, related_name="style"
    )
    side_a = models.JSONField()
    side_b = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"Style of {self.battle_id}"


class FitBoardCounts(models.Model):
    """A board's counts as fitted, written with its snapshot so the first request after a fit reads one
    row instead of counting millions of votes: the distinct raters, and the counted results of every
    ordered pair that met, ``[[model_a_id, model_b_id, a_wins, b_wins, ties], ...]``. `leaderboard.boards`
    uses them for the board of this snapshot's dimension and last vote, and counts from the votes where
    a snapshot has none (those published before they existed)."""

    snapshot = models.ForeignKey(FitSnapshot, on_delete=models.CASCADE, related_name="board_counts")
    group = models.ForeignKey(
        "raters.Group", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    raters = models.PositiveIntegerField()
    pairs = models.JSONField(default=list)

    class Meta:
        verbose_name_plural = "fit board counts"
        constraints = [
            models.UniqueConstraint(
                fields=["snapshot"], condition=Q(group__isnull=True), name="fitboardcounts_unique_pooled"
            ),
            models.UniqueConstraint(
                fields=["snapshot", "group"],
                condition=Q(group__isnull=False),
                name="fitboardcounts_unique_group",
            ),
        ]

    def __str__(self):
        return f"Counts of {self.snapshot} ({self.group or 'pooled'})"


class FitPosterior(models.Model):
    """What a board for any profile needs from one snapshot's fit, kept for the latest few snapshots of
    each dimension (older ones are pruned when a fit lands; their published scores stay in FitScore).

    `data` is an `np.savez_compressed` archive made and read only by `services.posterior_encode` and
    `services.posterior_decode`:
    model and group ids (the fit's index order), the posterior mode (theta, offsets, log nu) and the
    covariance of the centred parameters in float32 (upper triangle), plus the pooled board's score
    draws, so a personal board can say how it differs from the pooled one without refitting.
    """

    snapshot = models.OneToOneField(
        FitSnapshot, on_delete=models.CASCADE, primary_key=True, related_name="posterior"
    )
    data = models.BinaryField()
    format = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"Posterior of {self.snapshot}"


class QuizContribution(models.Model):
    """A quiz visitor's answers, stored only because they ticked "add my answers to the open data".

    An audience of its own: no rater, session or cookie is attached, and nothing that fits, rates or
    exports a study's boards reads this table (they read `tournaments.VoteChoice`); the answers have a
    board and a download of their own (`leaderboard.quiz_contributions`). `encoded` is the quiz's
    address form of the answers; `digest` keys it, so the same answers sent twice store once.
    """

    tournament = models.ForeignKey(Tournament, on_delete=models.PROTECT, related_name="+")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    encoded = models.TextField(editable=False)
    # The publishable groups of the visitor's profile, as their board used them.
    groups = models.ManyToManyField("raters.Group", blank=True, related_name="+")
    # The one other dimension they judged, if any.
    dimension = models.ForeignKey(
        "tournaments.Dimension", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"Quiz answers {self.pk} on {self.tournament}"


class QuizAnswer(models.Model):
    """One verdict of a contribution on one battle and dimension, relative to the battle's model A."""

    contribution = models.ForeignKey(QuizContribution, on_delete=models.CASCADE, related_name="answers")
    # Erasing a rater deletes their battles, and the answers about them go too.
    battle = models.ForeignKey("tournaments.Battle", on_delete=models.CASCADE, related_name="+")
    dimension = models.ForeignKey("tournaments.Dimension", on_delete=models.PROTECT, related_name="+")
    outcome = models.CharField(max_length=3, choices=Outcome.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["contribution", "battle", "dimension"], name="quizanswer_one_per_battle_dimension"
            )
        ]

    def __str__(self):
        return f"{self.dimension}: {self.outcome}"


class TournamentBoards(Tournament):
    """A tournament seen from its published boards: where staff fit and publish them on demand."""

    class Meta:
        proxy = True
        verbose_name = "tournament's boards"
        verbose_name_plural = "tournaments' boards"
