"""The public read API and open-data downloads. Views are thin: validate the query, resolve slugs, read
through `leaderboard.boards` (where suppression lives), serialize, and answer with an ETag.

Board data (boards, model detail, head-to-head, snapshots, board exports) is cached whole under the
boards' site version (`boards_site_version`), which every published fit bumps: a repeated read is
answered from the cache before the request is even resolved, most often from the web process's own
copy. The other lists carry ETags only.
"""

from datetime import datetime

from django.http import StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.views import APIView

from config.answer_cache import Uncacheable
from config.api import (
    ApiPagination,
    ExportThrottle,
    PublicReadMixin,
    conditional_response,
)
from config.errors import NotFound
from leaderboard import exports
from leaderboard.api import serializers as s
from leaderboard.boards import (
    board_get,
    board_pair_results,
    boards_site_version,
    publishable_group_ids,
    snapshot_cutoff,
    snapshot_latest,
    snapshots_latest,
    tournament_entrants,
)
from leaderboard.models import FitSnapshot
from leaderboard.personal import personal_board
from leaderboard.quiz_contributions import contribution_lines
from leaderboard.selectors import board_choices, tournament_named
from raters.models import Axis, Country, Group
from tournaments.models import Dimension, Tournament
from tournaments.selectors import ModelReliability, model_reliability

# --- Resolving what a request names -------------------------------------------------------------------


def _query(serializer_class, request) -> dict:
    # A plain dict, not the QueryDict: DRF reads an empty form field as "not given", but in this API
    # `?group=` is a bad value and says so.
    query = serializer_class(data=request.query_params.dict())
    query.is_valid(raise_exception=True)
    return query.validated_data


def _board_named(query: dict) -> tuple[Tournament, Dimension, Group | None]:
    resolved = board_choices(
        tournament_slug=query.get("tournament"),
        dimension_slug=query.get("dimension"),
        group_slug=query.get("group"),
    )
    if resolved is None:
        raise NotFound("No tournament has been set up yet.")
    tournament, dimension, group = resolved
    if dimension is None:
        raise NotFound(f"The tournament '{tournament.slug}' has no dimensions yet.")
    return tournament, dimension, group


def _tournament_named(slug: str | None) -> Tournament:
    tournament = tournament_named(slug=slug)
    if tournament is None:
        raise NotFound("No tournament has been set up yet.")
    return tournament


def _snapshot_by(dimension: Dimension, as_of: datetime) -> FitSnapshot | None:
    """The latest fit of the dimension published by `as_of`."""
    return (
        FitSnapshot.objects.filter(dimension=dimension, created_at__lte=as_of)
        .order_by("-created_at", "-pk")
        .first()
    )


def _snapshot(dimension: Dimension, as_of: datetime | None) -> FitSnapshot | None:
    """The latest fit of the dimension, or the latest one published by `as_of`."""
    if as_of is None:
        return snapshot_latest(dimension=dimension)
    snapshot = _snapshot_by(dimension, as_of)
    if snapshot is None:
        raise NotFound(
            f"No fit of the dimension '{dimension.slug}' had been published by {as_of.isoformat()}."
        )
    return snapshot


# --- Catalogue ------------------------------------------------------------------------------------------


class ApiRoot(PublicReadMixin, APIView):
    """Links to every part of the API, its schema and docs, and each tournament's downloads."""

    @extend_schema(tags=["api"], responses=s.ApiRootSerializer)
    def get(self, request):
        def build():
            link = request.build_absolute_uri
            return {
                "tournaments": link(reverse("api:tournaments")),
                "dimensions": link(reverse("api:dimensions")),
                "groups": link(reverse("api:groups")),
                "models": link(reverse("api:models")),
                "boards": link(reverse("api:boards")),
                "head_to_head": link(reverse("api:head-to-head")),
                "snapshots": link(reverse("api:snapshots")),
                "schema": link(reverse("api:schema")),
                "docs": link(reverse("api:docs")),
                "downloads": {
                    slug: s.tournament_downloads(request, slug)
                    for slug in Tournament.objects.order_by("-created_at", "-pk").values_list(
                        "slug", flat=True
                    )
                },
            }

        return conditional_response(request, build)


class PaginatedListView(PublicReadMixin, APIView):
    """A paginated list answered with an ETag; subclasses give the rows, serializer and cache version."""

    pagination_class = ApiPagination
    serializer_class: type[serializers.Serializer]
    query_class: type[serializers.Serializer] | None = None

    # Board data lists set this: cached under the boards' version.
    board_data = False

    def rows(self, query: dict):
        raise NotImplementedError

    def get(self, request):
        def build():
            query = _query(self.query_class, request) if self.query_class else {}
            paginator = self.pagination_class()
            page = paginator.paginate_queryset(self.rows(query), request, view=self)
            data = self.serializer_class(page, many=True, context={"request": request}).data
            return paginator.get_paginated_response(data).data

        return conditional_response(
            request, build, version=boards_site_version() if self.board_data else None
        )


class TournamentList(PaginatedListView):
    serializer_class = s.TournamentSerializer

    def rows(self, query):
        return Tournament.objects.prefetch_related("dimensions").order_by("-created_at", "-pk")

    @extend_schema(tags=["catalogue"], responses=s.TournamentSerializer(many=True))
    def get(self, request):
        return super().get(request)


class TournamentDetail(PublicReadMixin, APIView):
    @extend_schema(tags=["catalogue"], responses=s.TournamentSerializer)
    def get(self, request, slug: str):
        tournament = _tournament_named(slug)
        return conditional_response(
            request, lambda: s.TournamentSerializer(tournament, context={"request": request}).data
        )


class DimensionList(PaginatedListView):
    serializer_class = s.DimensionListSerializer

    query_class = s.TournamentQuery

    def rows(self, query):
        tournament = _tournament_named(query.get("tournament"))
        return tournament.dimensions.select_related("tournament").order_by("position", "pk")

    @extend_schema(
        tags=["catalogue"], parameters=[s.TournamentQuery], responses=s.DimensionListSerializer(many=True)
    )
    def get(self, request):
        return super().get(request)


class GroupList(PaginatedListView):
    serializer_class = s.GroupSerializer

    query_class = s.GroupQuery

    def rows(self, query):
        groups = Group.objects.select_related("axis__country")
        if code := query.get("country"):
            if not Country.objects.filter(code__iexact=code).exists():
                raise NotFound(f"There is no country with the code '{code}'.")
            groups = groups.filter(axis__country__code__iexact=code)
        if axis := query.get("axis"):
            if not Axis.objects.filter(slug=axis).exists():
                raise NotFound(f"There is no axis called '{axis}'.")
            groups = groups.filter(axis__slug=axis)
        return groups.order_by("axis__country__position", "axis__position", "position", "pk")

    @extend_schema(tags=["catalogue"], parameters=[s.GroupQuery], responses=s.GroupSerializer(many=True))
    def get(self, request):
        return super().get(request)


class ModelList(PaginatedListView):
    """Every model that entered the tournament, withdrawn ones included."""

    serializer_class = s.ModelSummarySerializer

    query_class = s.TournamentQuery

    def rows(self, query):
        return tournament_entrants(tournament=_tournament_named(query.get("tournament")))

    @extend_schema(
        tags=["catalogue"], parameters=[s.TournamentQuery], responses=s.ModelSummarySerializer(many=True)
    )
    def get(self, request):
        return super().get(request)


# --- Board data ------------------------------------------------------------------------------------------


class BoardView(PublicReadMixin, APIView):
    """One board: a dimension of a tournament, pooled or for one group, from the latest fit or the one
    published by `as_of`. Suppressed boards (too few distinct raters) say so and publish no figures.

    With `profile`, the board for someone in those groups instead (a ProfileBoard), on the named
    dimension or on several dimensions combined by `weights`."""

    @extend_schema(
        tags=["boards"],
        parameters=[s.BoardQuery],
        responses=PolymorphicProxySerializer(
            component_name="BoardOrProfileBoard",
            serializers=[s.BoardSerializer, s.ProfileBoardSerializer],
            resource_type_field_name=None,
        ),
    )
    def get(self, request):
        return conditional_response(request, lambda: _board_data(request), version=boards_site_version())


def _board_data(request):
    query = _query(s.BoardQuery, request)
    if "profile" in query:
        return _profile_board_data(query)
    _, dimension, group = _board_named(query)
    snapshot = _snapshot(dimension, query.get("as_of"))
    board = board_get(
        dimension=dimension,
        group=group,
        snapshot=snapshot,
        style_controlled=query.get("style") == "controlled",
    )
    data = s.BoardSerializer(board).data
    # Before the first fit a board counts live votes, which bump no version: not stored then.
    return data if snapshot else Uncacheable(data)


def _profile_board_data(query: dict):
    tournament, dimension, _ = _board_named({**query, "group": None})
    profile = _profile_groups(query["profile"].split(","))
    weights = query.get("weights") or {dimension.slug: 1.0}
    known = set(tournament.dimensions.values_list("slug", flat=True))
    if unknown := sorted(set(weights) - known):
        raise NotFound(f"The tournament '{tournament.slug}' has no dimension called '{unknown[0]}'.")
    board = personal_board(
        tournament=tournament,
        weights=weights,
        profile={group.axis.slug: group.slug for group in profile},
        country=profile[0].axis.country.code,
        style=query.get("style"),
    )
    if board.problems:  # checked above; anything personal_board still could not use is a bad request
        raise ValidationError({"profile": list(board.problems)})
    data = s.ProfileBoardSerializer(board).data
    return data if board.fitted_at else Uncacheable(data)  # before a fit, suppression follows live votes


def _profile_groups(slugs: list[str]) -> list[Group]:
    """The named groups: all known (404 otherwise), of one country, at most one per axis (400 otherwise)."""
    found = {g.slug: g for g in Group.objects.filter(slug__in=slugs).select_related("axis__country")}
    if missing := [slug for slug in slugs if slug not in found]:
        raise NotFound(f"There is no group called '{missing[0]}'.")
    groups = [found[slug] for slug in dict.fromkeys(slugs)]
    if len({g.axis.country_id for g in groups}) > 1:
        raise ValidationError({"profile": ["A profile's groups must all be of one country."]})
    if len({g.axis_id for g in groups}) < len(groups):
        raise ValidationError({"profile": ["A profile has at most one group per axis (one age band, ...)."]})
    return groups


class ModelDetail(PublicReadMixin, APIView):
    """A model's line on the pooled board and on every publishable group's board, for each fitted
    dimension (the latest fits, or those published by `as_of`)."""

    @extend_schema(tags=["boards"], parameters=[s.ModelQuery], responses=s.ModelDetailSerializer)
    def get(self, request, slug: str):
        return conditional_response(
            request, lambda: _model_data(request, slug), version=boards_site_version()
        )


def _model_data(request, slug: str):
    query = _query(s.ModelQuery, request)
    tournament = _tournament_named(query.get("tournament"))
    model = next((m for m in tournament_entrants(tournament=tournament) if m.slug == slug), None)
    if model is None:
        raise NotFound(f"No model called '{slug}' entered the tournament '{tournament.slug}'.")
    groups = [None, *Group.objects.filter(pk__in=publishable_group_ids(tournament=tournament))]
    lines = [
        _model_line(board_get(dimension=dimension, group=group, snapshot=snapshot), model.pk)
        for dimension, snapshot in _fitted(tournament, query.get("as_of"))
        for group in groups
    ]
    detail = {"slug": model.slug, "name": model.name, "maker": model.maker, "tournament": tournament.slug}
    reliability = model_reliability(tournament=tournament).get(
        model.pk, ModelReliability(model_id=model.pk, battles=0, void=0, replies=0, cut_off=0)
    )
    return s.ModelDetailSerializer({**detail, "boards": lines, "reliability": reliability}).data


def _fitted(tournament: Tournament, as_of: datetime | None) -> list[tuple[Dimension, FitSnapshot]]:
    """Each fitted dimension with its latest fit, or with its latest fit published by `as_of`."""
    if as_of is None:
        latest = snapshots_latest(tournament=tournament)
    else:
        latest = [
            snapshot
            for dimension in tournament.dimensions.order_by("position", "pk")
            if (snapshot := _snapshot_by(dimension, as_of))
        ]
        if not latest:
            raise NotFound(
                f"No fit of the tournament '{tournament.slug}' had been published by {as_of.isoformat()}."
            )
    return [(snapshot.dimension, snapshot) for snapshot in latest]


def _model_line(board, model_id: int) -> dict:
    entry = next((e for e in board.entries if e.model_id == model_id), None)
    share = entry.battles / board.battles if entry and board.battles else None
    return {"board": board, "entry": entry, "share_of_battles": share}


class HeadToHead(PublicReadMixin, APIView):
    """Counted results between models on one board, paginated."""

    pagination_class = ApiPagination

    @extend_schema(tags=["boards"], parameters=[s.HeadToHeadQuery], responses=s.HeadToHeadSerializer)
    def get(self, request):
        return conditional_response(request, lambda: self._data(request), version=boards_site_version())

    def _data(self, request):
        query = _query(s.HeadToHeadQuery, request)
        tournament, dimension, group = _board_named(query)
        model_slug = query.get("model")
        if model_slug and not any(m.slug == model_slug for m in tournament_entrants(tournament=tournament)):
            raise NotFound(f"No model called '{model_slug}' entered the tournament '{tournament.slug}'.")
        snapshot = snapshot_latest(dimension=dimension)
        board = board_get(dimension=dimension, group=group, snapshot=snapshot)
        rows = [] if board.suppressed else _pairs(board, snapshot, model_slug)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows, request, view=self)
        data = s.HeadToHeadSerializer(
            {
                "tournament": tournament.slug,
                "dimension": dimension.slug,
                "group": group.slug if group else None,
                "fitted_at": board.fitted_at,
                "suppressed": board.suppressed,
                **paginator.get_paginated_response(page).data,
            }
        ).data
        return data if snapshot else Uncacheable(data)


def _pairs(board, snapshot, model_slug: str | None) -> list[dict]:
    results = board_pair_results(
        dimension=board.dimension, group=board.group, up_to_vote_id=snapshot_cutoff(snapshot)
    )
    models = {e.model_id: e for e in board.entries}
    rows = []
    for (first, second), result in results.items():
        model, opponent = models.get(first), models.get(second)
        if model is None or opponent is None:
            continue
        if model_slug and model.slug != model_slug:
            continue
        if not model_slug and (model.name, model.slug) > (opponent.name, opponent.slug):
            continue  # every pair once, from the side of the name that sorts first
        rows.append(
            {
                "model": model,
                "opponent": opponent,
                "battles": result.battles,
                "wins": result.wins,
                "losses": result.losses,
                "ties": result.ties,
                "win_rate": result.win_rate,
                "tie_rate": result.tie_rate,
            }
        )
    rows.sort(
        key=lambda row: (row["model"].name, row["model"].slug, row["opponent"].name, row["opponent"].slug)
    )
    return rows


class SnapshotList(PaginatedListView):
    """Every published fit, newest first. Pass a snapshot's `fitted_at` as `as_of` to see its board."""

    serializer_class = s.SnapshotListSerializer
    board_data = True

    query_class = s.SnapshotQuery

    def rows(self, query):
        tournament = _tournament_named(query.get("tournament"))
        snapshots = FitSnapshot.objects.filter(tournament=tournament)
        if slug := query.get("dimension"):
            dimension = tournament.dimensions.filter(slug=slug).first()
            if dimension is None:
                raise NotFound(f"The tournament '{tournament.slug}' has no dimension called '{slug}'.")
            snapshots = snapshots.filter(dimension=dimension)
        return snapshots.select_related("dimension", "tournament").order_by("-created_at", "-pk")

    @extend_schema(
        tags=["boards"], parameters=[s.SnapshotQuery], responses=s.SnapshotListSerializer(many=True)
    )
    def get(self, request):
        return super().get(request)


# --- Open data ------------------------------------------------------------------------------------------

EXPORT_CACHE_SECONDS = 300


class BoardsExportJson(PublicReadMixin, APIView):
    """Every board of the tournament (each dimension, pooled and every group) from its latest fit, as
    JSON. Suppressed boards are listed with `suppressed: true` and no figures."""

    throttle_classes = [ExportThrottle]

    @extend_schema(
        tags=["open data"], responses=s.BoardSerializer(many=True), operation_id="export_boards_json"
    )
    def get(self, request, slug: str):
        return conditional_response(
            request,
            lambda: s.BoardSerializer(exports.boards_all(tournament=_tournament_named(slug)), many=True).data,
            version=boards_site_version(),
            max_age=EXPORT_CACHE_SECONDS,
        )


class BoardsExportCsv(PublicReadMixin, APIView):
    """Every board of the tournament as CSV, one row per model and board; a suppressed board is one row
    with `suppressed` true and no figures."""

    throttle_classes = [ExportThrottle]

    @extend_schema(
        tags=["open data"],
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV with a header row.")
        },
        operation_id="export_boards_csv",
    )
    def get(self, request, slug: str):
        response = conditional_response(
            request,
            lambda: exports.boards_all(tournament=_tournament_named(slug)),
            version=boards_site_version(),
            max_age=EXPORT_CACHE_SECONDS,
            content_type="text/csv; charset=utf-8",
            render=exports.boards_csv,
        )
        response["Content-Disposition"] = f'attachment; filename="{slug}-boards.csv"'
        return response


class QuizAnswersExport(PublicReadMixin, APIView):
    """The quiz answers visitors added to the open data (an audience of its own, on none of the study's
    boards), one contribution a line, streamed."""

    throttle_classes = [ExportThrottle]
    throttle_after_cache = False  # streamed, never cached: every download counts

    @extend_schema(
        tags=["open data"],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                OpenApiTypes.STR, description="JSON lines: one visitor's shared quiz answers per line."
            )
        },
        operation_id="export_quiz_answers_jsonl",
    )
    def get(self, request, slug: str):
        tournament = _tournament_named(slug)
        return _json_lines_download(
            contribution_lines(tournament=tournament), f"{tournament.slug}-quiz-answers"
        )


class BattlesExport(PublicReadMixin, APIView):
    """The tournament's counted, finished battles, anonymised, one JSON object a line, streamed.

    Each line is also a Chatbot Arena battle row (model_a, model_b, winner on the overall dimension,
    judge, tstamp, question_id, anony), so `manage.py import_battles` re-imports the file."""

    throttle_classes = [ExportThrottle]
    throttle_after_cache = False  # streamed, never cached: every download counts

    @extend_schema(
        tags=["open data"],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                OpenApiTypes.STR, description="JSON lines: one battle per line (see the docs page)."
            )
        },
        operation_id="export_battles_jsonl",
    )
    def get(self, request, slug: str):
        tournament = _tournament_named(slug)
        return _json_lines_download(exports.battle_lines(tournament=tournament), f"{tournament.slug}-battles")


def _json_lines_download(lines, name: str) -> StreamingHttpResponse:
    """A streamed JSON-lines attachment, ``<name>.jsonl``."""
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}.jsonl"'
    response["Cache-Control"] = f"public, max-age={EXPORT_CACHE_SECONDS}"
    return response
