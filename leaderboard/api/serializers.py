"""Shapes of the public read API. Output serializers read plain objects (models, `boards.Board`); query
serializers validate filters, so a bad value is a 400 naming the parameter. Public ids are slugs: no
primary key leaves the API."""

from django.urls import reverse
from rest_framework import serializers

from leaderboard.boards import LEADER, NO_CLEAR_LEADER, style_coefficients
from leaderboard.personal import MAX_WEIGHT

SLUG_HELP = "A slug (letters, digits, '-' and '_')."


class DimensionSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    help_text = serializers.CharField(help_text="The question raters answered.")
    position = serializers.IntegerField(help_text="Display order within the tournament.")


class DimensionListSerializer(DimensionSerializer):
    tournament = serializers.SlugField(source="tournament.slug")


class GroupSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    label = serializers.CharField()
    country = serializers.CharField(source="axis.country.code", help_text="Country code, e.g. US.")
    country_name = serializers.CharField(source="axis.country.name")
    axis = serializers.SlugField(source="axis.slug", help_text="The screener question, e.g. age.")
    axis_label = serializers.CharField(source="axis.label")


class ModelSummarySerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    maker = serializers.CharField()


class TournamentSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    description = serializers.CharField()
    audience = serializers.ChoiceField(
        choices=["human", "automated"],
        help_text="Who rates: people, or automated raters (scripts, LLM judges). The two never share a "
        "tournament, so never a board.",
    )
    created_at = serializers.DateTimeField()
    min_turns = serializers.IntegerField()
    max_turns = serializers.IntegerField()
    dimensions = DimensionSerializer(many=True, source="dimensions.all")
    downloads = serializers.SerializerMethodField()

    def get_downloads(self, tournament) -> dict[str, str]:
        return tournament_downloads(self.context["request"], tournament.slug)


def tournament_downloads(request, slug: str) -> dict[str, str]:
    return {
        name: request.build_absolute_uri(reverse(f"api:export-{name.replace('_', '-')}", args=[slug]))
        for name in ("boards_csv", "boards_json", "battles_jsonl")
    }


class ApiRootSerializer(serializers.Serializer):
    tournaments = serializers.URLField()
    dimensions = serializers.URLField()
    groups = serializers.URLField()
    models = serializers.URLField()
    boards = serializers.URLField()
    head_to_head = serializers.URLField()
    snapshots = serializers.URLField()
    schema = serializers.URLField(help_text="The OpenAPI 3 schema (JSON).")
    docs = serializers.URLField(help_text="The API's documentation page.")
    downloads = serializers.DictField(
        child=serializers.DictField(child=serializers.URLField()),
        help_text="Open data of each tournament, by slug: boards_csv, boards_json, battles_jsonl.",
    )


class SnapshotSerializer(serializers.Serializer):
    """One published batch fit of one dimension. Pass its `fitted_at` as `as_of` to read that board."""

    dimension = serializers.SlugField(source="dimension.slug")
    fitted_at = serializers.DateTimeField(source="created_at")
    votes = serializers.IntegerField(help_text="Counted votes the fit used.")
    tie_parameter = serializers.FloatField(
        help_text="Davidson's tie parameter (nu) fitted on this dimension."
    )
    pooled_method = serializers.SerializerMethodField(help_text="How the pooled board was weighted.")
    style = serializers.SerializerMethodField(
        help_text="The style-controlled fit's coefficients: per feature (length, headers, list_items, bold, "
        "code_blocks; cut_off once replies record truncation), the change in log-odds of winning per "
        "typical difference between the two replies, with its 95% interval, for everyone and for each "
        "publishable group (with the group's offset from everyone and whether its interval excludes 0). "
        "Empty when the fit had no style variation."
    )

    def get_pooled_method(self, snapshot) -> str:
        return str(snapshot.settings.get("pooled", ""))

    def get_style(self, snapshot) -> list[dict]:
        def interval(effect) -> dict:
            return {"estimate": effect.estimate, "low": effect.low, "high": effect.high}

        return [
            {
                "feature": c.feature,
                **interval(c.effect),
                "groups": [
                    {
                        "group": g.group.slug,
                        **interval(g.effect),
                        "offset": interval(g.offset),
                        "differs": g.differs,
                    }
                    for g in c.groups
                ],
            }
            for c in style_coefficients(snapshot=snapshot)
        ]


class SnapshotListSerializer(SnapshotSerializer):
    tournament = serializers.SlugField(source="tournament.slug")


class BoardEntrySerializer(serializers.Serializer):
    slug = serializers.SlugField(help_text="The model's slug.")
    name = serializers.CharField()
    maker = serializers.CharField()
    status = serializers.ChoiceField(
        choices=["active", "provisional", "withdrawn", "imported"],
        help_text="provisional: too few battles on this board for the score to mean much yet; withdrawn: "
        "no longer in the tournament (its score stays published); imported: known only from an imported "
        "battle log.",
    )
    rank = serializers.IntegerField(
        allow_null=True,
        help_text="Shared rank: one plus the models whose interval lies wholly above; it rises from the "
        "previous fit's rank only past models that overlap it by the published margin (see the methodology).",
    )
    rank_low = serializers.IntegerField(allow_null=True)
    rank_high = serializers.IntegerField(allow_null=True)
    score = serializers.FloatField(
        allow_null=True, help_text="Expected points against the whole field (win 1, tie 1/2)."
    )
    score_low = serializers.FloatField(allow_null=True, help_text="95% interval, lower end.")
    score_high = serializers.FloatField(allow_null=True, help_text="95% interval, upper end.")
    p_best = serializers.FloatField(allow_null=True, help_text="Probability this model is the best.")
    rating = serializers.FloatField(
        allow_null=True,
        help_text="The skill on Chatbot Arena's scale: 400 / ln 10 points per unit of Bradley-Terry "
        "log-strength (400 points: ten wins to one loss), 1000 at the mean skill of the board's models. "
        "Null in fits published before it existed.",
    )
    rating_low = serializers.FloatField(allow_null=True, help_text="95% interval, lower end.")
    rating_high = serializers.FloatField(allow_null=True, help_text="95% interval, upper end.")
    battles = serializers.IntegerField(help_text="Counted battles on this board up to the fit's last vote.")
    wins = serializers.IntegerField()
    losses = serializers.IntegerField()
    ties = serializers.IntegerField()
    win_rate = serializers.FloatField(allow_null=True, help_text="(wins + ties / 2) / battles.")


class BoardSerializer(serializers.Serializer):
    """One board: a dimension of a tournament, for everyone (pooled, post-stratified) or for one group.

    A board with too few distinct raters is suppressed: `suppressed` is true, `notice` says so, and
    `raters` is null and `entries` empty, exactly as the pages show "not enough raters yet"."""

    tournament = serializers.SlugField(source="tournament.slug")
    dimension = DimensionSerializer()
    group = GroupSerializer(allow_null=True, help_text="null: the pooled board of everyone.")
    fitted_at = serializers.DateTimeField(allow_null=True, help_text="When the fit shown was published.")
    style_controlled = serializers.BooleanField(
        help_text="True: the style-controlled view (scores with reply length and formatting held equal); "
        "models have no scores there when the fit had no style variation."
    )
    snapshot = SnapshotSerializer(allow_null=True)
    suppressed = serializers.BooleanField()
    imported = serializers.BooleanField(
        help_text="An imported battle log: its raters are unknown (judge ids of the log, or one anonymous "
        "rater), so the pooled board is published whatever their number; there are no group boards."
    )
    notice = serializers.SerializerMethodField()
    raters = serializers.IntegerField(allow_null=True, help_text="Distinct raters with counted votes.")
    entries = BoardEntrySerializer(many=True, help_text="Every model that entered: ranked, then unranked.")
    leader = serializers.SerializerMethodField(
        help_text="The announced leader's slug: the model whose P(best) reached leader_threshold. null: no "
        "clear leader yet (or the board is suppressed or not fitted)."
    )
    leader_threshold = serializers.FloatField(source="tournament.leader_threshold")
    leader_status = serializers.ChoiceField(
        choices=[LEADER, NO_CLEAR_LEADER],
        help_text="'leader' when a leader is announced, otherwise 'no clear leader yet'.",
    )

    def get_notice(self, board) -> str | None:
        if board.suppressed:
            return "Not enough raters yet."
        if board.imported:
            return "An imported battle log: who voted is unknown."
        return None

    def get_leader(self, board) -> str | None:
        return board.leader.slug if board.leader else None

    def get_leader_status(self, board) -> str:
        return board.leader_status


class StandingSerializer(serializers.Serializer):
    """A model on one weighted dimension, for the profile."""

    dimension = serializers.SlugField(source="dimension.slug")
    score = serializers.FloatField()
    score_low = serializers.FloatField()
    score_high = serializers.FloatField()
    rank = serializers.IntegerField()
    rank_low = serializers.IntegerField()
    rank_high = serializers.IntegerField()


class FitReportSerializer(serializers.Serializer):
    """Where the model is strongest and weakest for the profile, relative to the field (null with one
    weighted dimension), and its rank here against the pooled boards' under the same weights."""

    strongest = serializers.SlugField(source="strongest.dimension.slug", allow_null=True, default=None)
    weakest = serializers.SlugField(source="weakest.dimension.slug", allow_null=True, default=None)
    rank = serializers.IntegerField()
    pooled_rank = serializers.IntegerField()


class ProfileEntrySerializer(serializers.Serializer):
    slug = serializers.SlugField(help_text="The model's slug.")
    name = serializers.CharField()
    maker = serializers.CharField()
    status = serializers.ChoiceField(choices=["active", "provisional", "withdrawn"])
    rank = serializers.IntegerField(
        allow_null=True, help_text="null: not on every weighted fitted board yet."
    )
    rank_low = serializers.IntegerField(allow_null=True)
    rank_high = serializers.IntegerField(allow_null=True)
    score = serializers.FloatField(
        allow_null=True, help_text="Weighted expected points against the field, for this profile."
    )
    score_low = serializers.FloatField(allow_null=True)
    score_high = serializers.FloatField(allow_null=True)
    p_best = serializers.FloatField(allow_null=True)
    pooled_rank = serializers.IntegerField(
        allow_null=True, help_text="The model's rank on the pooled boards under the same weights."
    )
    standings = StandingSerializer(many=True)
    report = FitReportSerializer(allow_null=True, help_text="For the top models only.")


class WeightSerializer(serializers.Serializer):
    dimension = serializers.SlugField(source="dimension.slug")
    weight = serializers.FloatField(help_text="0 to 10.")
    share = serializers.FloatField(help_text="Share of the combined score (0: left out or not fitted).")
    fitted = serializers.BooleanField()


class ProfileBoardSerializer(serializers.Serializer):
    """The board for a profile (groups, one per axis of one country) and dimension weights: each model's
    skill for that cell of the batch fit, with intervals. Built from the groups' effects measured on all
    of each group's raters, so it has scores but no counts. Groups with too few raters are left out of
    the profile (named in `notes`); while a weighted dimension's pooled board is suppressed, no figures."""

    tournament = serializers.SlugField(source="tournament.slug")
    country = serializers.CharField(source="country.code", allow_null=True, default=None)
    profile = GroupSerializer(many=True, help_text="The groups the board uses.")
    left_out = serializers.SerializerMethodField(help_text="Groups given but not used: too few raters yet.")
    weights = WeightSerializer(many=True)
    style_controlled = serializers.BooleanField(
        help_text="True: from the style-controlled fits (scores with reply length and formatting held equal)."
    )
    fitted_at = serializers.DateTimeField(allow_null=True, help_text="The oldest of the fits combined.")
    suppressed = serializers.BooleanField()
    notice = serializers.SerializerMethodField()
    notes = serializers.ListField(
        child=serializers.CharField(), help_text="What the board leaves out, and why."
    )
    entries = ProfileEntrySerializer(many=True, source="rows")

    def get_left_out(self, board) -> list[str]:
        used = {group.pk for group in board.profile}
        return [group.slug for group in board.profile_given if group.pk not in used]

    def get_notice(self, board) -> str | None:
        return "Not enough raters yet." if board.suppressed else None


class ModelBoardSerializer(serializers.Serializer):
    """One model's line on one board."""

    dimension = serializers.SlugField(source="board.dimension.slug")
    group = serializers.SlugField(source="board.group.slug", allow_null=True, default=None)
    fitted_at = serializers.DateTimeField(source="board.fitted_at", allow_null=True)
    suppressed = serializers.BooleanField(source="board.suppressed")
    raters = serializers.IntegerField(source="board.raters", allow_null=True)
    entry = BoardEntrySerializer(allow_null=True, help_text="null when the board is suppressed.")
    share_of_battles = serializers.FloatField(
        allow_null=True, help_text="The model's share of the board's battles: how often it was sampled."
    )


class ReliabilitySerializer(serializers.Serializer):
    battles = serializers.IntegerField(help_text="Ended battles the model fought in (voted or set aside).")
    void = serializers.IntegerField(help_text="Of those, battles set aside because a model could not answer.")
    void_rate = serializers.FloatField(allow_null=True)
    replies = serializers.IntegerField(help_text="The model's finished replies.")
    cut_off = serializers.IntegerField(help_text="Of those, replies that stopped at the token limit.")
    cut_off_rate = serializers.FloatField(allow_null=True)


class ModelDetailSerializer(ModelSummarySerializer):
    tournament = serializers.SlugField()
    reliability = ReliabilitySerializer(
        help_text="How often the model's battles are set aside and its replies cut off: a model's failures "
        "change which of its battles count."
    )
    boards = ModelBoardSerializer(
        many=True,
        help_text="The pooled board and every publishable group's board, for each fitted dimension.",
    )


class PairSerializer(serializers.Serializer):
    model = ModelSummarySerializer()
    opponent = ModelSummarySerializer()
    battles = serializers.IntegerField()
    wins = serializers.IntegerField(help_text="Battles `model` won against `opponent`.")
    losses = serializers.IntegerField()
    ties = serializers.IntegerField()
    win_rate = serializers.FloatField(allow_null=True, help_text="(wins + ties / 2) / battles.")
    tie_rate = serializers.FloatField(allow_null=True)


class HeadToHeadSerializer(serializers.Serializer):
    """Counted results between pairs of models on one board, up to the fit's last vote, paginated."""

    tournament = serializers.SlugField()
    dimension = serializers.SlugField()
    group = serializers.SlugField(allow_null=True)
    fitted_at = serializers.DateTimeField(allow_null=True)
    suppressed = serializers.BooleanField()
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = PairSerializer(many=True)


# --- Query parameters ---------------------------------------------------------------------------------


class TournamentQuery(serializers.Serializer):
    tournament = serializers.SlugField(
        required=False, help_text=f"Tournament slug; default: the newest tournament. {SLUG_HELP}"
    )


AS_OF_HELP = (
    "The board of the latest fit published at or before this time (ISO 8601), e.g. a snapshot's "
    "fitted_at. Default: the latest fit."
)


class BoardQuery(TournamentQuery):
    dimension = serializers.SlugField(required=False, help_text="Dimension slug; default: overall.")
    group = serializers.SlugField(required=False, help_text="Group slug; default: the pooled board.")
    as_of = serializers.DateTimeField(required=False, help_text=AS_OF_HELP)
    style = serializers.ChoiceField(
        choices=["default", "controlled"],
        required=False,
        help_text="controlled: the style-controlled board (scores with reply length and formatting held "
        "equal); default: the board as voted. With profile too (dimensions without a style-controlled fit "
        "are then left out, named in notes).",
    )
    profile = serializers.RegexField(
        r"^[-a-zA-Z0-9_]+(,[-a-zA-Z0-9_]+)*$",
        required=False,
        help_text="The board for someone like you: group slugs, comma-separated, at most one per axis of "
        "one country, e.g. us-age-55-plus,us-politics-democrat. Answered as a ProfileBoard. Not with "
        "group or as_of.",
    )
    weights = serializers.RegexField(
        r"^[-a-zA-Z0-9_]+:[0-9]+(\.[0-9]+)?(,[-a-zA-Z0-9_]+:[0-9]+(\.[0-9]+)?)*$",
        required=False,
        help_text="With profile: combine dimensions, as slug:weight pairs (0 to 10), e.g. "
        "overall:5,trust-safety:2. Default: the one dimension named. Not with dimension.",
    )

    def validate_weights(self, value: str) -> dict[str, float]:
        weights = {slug: float(number) for slug, number in (pair.split(":") for pair in value.split(","))}
        if any(number > MAX_WEIGHT for number in weights.values()):
            raise serializers.ValidationError(f"Each weight is from 0 to {MAX_WEIGHT}.")
        if not any(weights.values()):
            raise serializers.ValidationError("At least one weight must be above 0.")
        return weights

    def validate(self, data):
        if "weights" in data and "profile" not in data:
            raise serializers.ValidationError({"weights": ["Weights go with a profile."]})
        if "profile" in data:
            clashes = [name for name in ("group", "as_of") if name in data]
            if "weights" in data and "dimension" in data:
                clashes.append("dimension")
            if clashes:
                raise serializers.ValidationError(
                    {name: ["Not with a profile: give one or the other."] for name in clashes}
                )
        return data


class ModelQuery(TournamentQuery):
    as_of = serializers.DateTimeField(required=False, help_text=AS_OF_HELP)


class HeadToHeadQuery(TournamentQuery):
    dimension = serializers.SlugField(required=False, help_text="Dimension slug; default: overall.")
    group = serializers.SlugField(required=False, help_text="Group slug; default: the pooled board.")
    model = serializers.SlugField(
        required=False,
        help_text="Only this model's results against each opponent, from its side. Default: every pair "
        "once, from the side of the model whose name sorts first.",
    )


class SnapshotQuery(TournamentQuery):
    dimension = serializers.SlugField(required=False, help_text="Only fits of this dimension.")


class GroupQuery(serializers.Serializer):
    country = serializers.RegexField(
        r"^[A-Za-z]{2,3}$", required=False, help_text="Only groups of this country code, e.g. US."
    )
    axis = serializers.SlugField(required=False, help_text="Only groups of this axis, e.g. age.")
