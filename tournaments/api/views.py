"""The rater API: what the website's rating pages do, for token-authenticated clients.

Every action goes through the same services as the website (entry, screener and admission; battle start,
turns, votes) with the same per-rater rate limits, so the rules, limits and quality control are the same.
A client acts only for its own raters; their battles are found by `Battle.public_id`.
"""

import uuid
from dataclasses import asdict

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import ErrorSerializer
from config.errors import ApplicationError, SessionEnded
from config.ratelimit import rate_limit
from raters.models import Rater
from raters.selectors import rater_outcome, screener_countries
from raters.services import api_rater_enter, rater_admit
from tournaments.api.authentication import ApiClientAuthentication, IsApiClient
from tournaments.api.selectors import client_battle, client_rater, rater_state
from tournaments.api.serializers import (
    BattleSerializer,
    RaterCreateSerializer,
    RaterSerializer,
    ScreenerCountrySerializer,
    TurnCreateSerializer,
    VoteCreateSerializer,
    VoteResultSerializer,
)
from tournaments.models import Battle
from tournaments.selectors import battle_view
from tournaments.services import battle_start, turn_submit, vote_submit
from tournaments.sessions import rater_complete_if_done, rater_finish

TAGS = ["rater"]
SESSION_ENDED = OpenApiResponse(
    response=ErrorSerializer,
    description="`session_ended`: the rater's session is over (finished, quota full, screened out, or three "
    "quality warnings); `details` holds the rater's `status` and the `outcome` with the panel's code. "
    "`conflict`: the request does not fit the battle's state (e.g. too few turns to vote).",
)
STRIKE = OpenApiResponse(
    response=ErrorSerializer,
    description="`quality_warning`: the message broke a quality rule and was not sent; `details.title` says "
    "which warning of three it is.",
)


class RaterSessionEnded(ApplicationError):
    """The rater may not go on. Where the website sends a person to their end page, a client gets the
    same outcome (the panel's code and return address) in the error's details."""

    status = 409
    code = "session_ended"

    def __init__(self, message: str, *, rater: Rater):
        super().__init__(message)
        outcome = rater_outcome(rater=rater)
        self.details = {
            "status": rater.status,
            "outcome": None if outcome is None else asdict(outcome),
        }


class RaterApiView(APIView):
    authentication_classes = [ApiClientAuthentication]
    permission_classes = [IsApiClient]
    throttle_classes: list = []  # the per-rater limits of config.ratelimit apply, as on the website
    rater: Rater | None = None

    @property
    def client(self):
        return self.request.auth

    def handle_exception(self, exc):
        if isinstance(exc, SessionEnded) and self.rater is not None:
            exc = RaterSessionEnded(exc.message, rater=Rater.objects.get(pk=self.rater.pk))
        return super().handle_exception(exc)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        # Conversations and codes are private to the client: no shared cache may keep them.
        response["Cache-Control"] = "private, no-store"
        return response

    def admitted(self, rater: Rater) -> Rater:
        """The rater, if they may rate now; as on the website, one whose slot was released for inactivity
        is readmitted if their quotas still have room."""
        self.rater = rater
        if rater.status == Rater.Status.RELEASED:
            rater = rater_admit(rater=rater)
        if rater.status != Rater.Status.ADMITTED:
            outcome = rater_outcome(rater=rater)
            raise RaterSessionEnded(
                outcome.message if outcome else "This rater has not been admitted to the study.", rater=rater
            )
        return rater


def _battle_body(battle: Battle) -> dict:
    return BattleSerializer(
        battle_view(battle=Battle.objects.select_related("tournament").get(pk=battle.pk))
    ).data


def _rater_body(rater: Rater) -> dict:
    return RaterSerializer(rater_state(rater=rater)).data


class ScreenerView(RaterApiView):
    @extend_schema(
        tags=TAGS,
        operation_id="rater_screener",
        summary="The screener's questions",
        description="Countries, and per country the questions (axes) with their options, as the website's "
        "screener asks them. Every configured country is listed, not only those the study samples.",
        responses=ScreenerCountrySerializer(many=True),
    )
    def get(self, request):
        countries = screener_countries()
        return Response(ScreenerCountrySerializer(countries, many=True).data)


class RaterCreateView(RaterApiView):
    @extend_schema(
        tags=TAGS,
        operation_id="rater_create",
        summary="Enter a participant into the client's study",
        description="Consent, screener and admission in one step. The answer says whether the rater was "
        "admitted; a full quota or a screen-out is not an error: `status` says which and `outcome` holds "
        "the panel's code. A participant already entered gets their rater back (200) as it stands. A client "
        "may enter a limited number of participants a minute (429 with Retry-After).",
        request=RaterCreateSerializer,
        responses={201: RaterSerializer, 200: RaterSerializer},
    )
    def post(self, request):
        rate_limit(
            action="participant entries",
            key=f"api-client:{self.client.pk}",
            limit=settings.RATE_LIMIT_API_ENTRIES_PER_MINUTE,
        )
        serializer = RaterCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        rater, created = api_rater_enter(
            client=self.client,
            participant_id=data["participant_id"],
            session_id=data["session_id"],
            consented=data["consent"],
            country_code=data["country"],
            answers=data["answers"],
        )
        rater = rater_complete_if_done(rater=rater)
        return Response(_rater_body(rater), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class RaterDetailView(RaterApiView):
    @extend_schema(
        tags=TAGS, operation_id="rater_detail", summary="A rater's session", responses=RaterSerializer
    )
    def get(self, request, rater_id: uuid.UUID):
        rater = client_rater(client=self.client, public_id=rater_id)
        return Response(_rater_body(rater))


class RaterFinishView(RaterApiView):
    @extend_schema(
        tags=TAGS,
        operation_id="rater_finish",
        summary="End a rater's session",
        description="For a study without a set number of battles, completes the session of a rater who "
        "has voted (the outcome holds the completion code). A rater who has not voted gives their quota "
        "place back. Any battle in progress is set aside without penalty. In a study with a set number "
        "of battles the session completes by itself with the last vote; finishing earlier is a 409.",
        request=None,
        responses=RaterSerializer,
    )
    def post(self, request, rater_id: uuid.UUID):
        self.rater = client_rater(client=self.client, public_id=rater_id)
        return Response(_rater_body(rater_finish(rater=self.rater)))


class BattleStartView(RaterApiView):
    @extend_schema(
        tags=TAGS,
        operation_id="battle_start",
        summary="Start or resume a battle",
        description="The rater's battle in progress, or a new one between two models the matchmaker picks, "
        "shown as Model A and Model B.",
        request=None,
        responses={200: BattleSerializer, 409: SESSION_ENDED},
    )
    def post(self, request, rater_id: uuid.UUID):
        rater = self.admitted(client_rater(client=self.client, public_id=rater_id))
        return Response(_battle_body(battle_start(rater=rater)))


class BattleDetailView(RaterApiView):
    @extend_schema(
        tags=TAGS,
        operation_id="battle_detail",
        summary="Poll a battle",
        description="The conversation so far. A turn's replies appear together once both models have "
        "answered; poll while `waiting` is true. `result` (the verdict and the models' names) appears "
        "only after the vote.",
        responses=BattleSerializer,
    )
    def get(self, request, battle_id: uuid.UUID):
        return Response(_battle_body(client_battle(client=self.client, public_id=battle_id)))


class TurnCreateView(RaterApiView):
    @extend_schema(
        tags=TAGS,
        operation_id="turn_create",
        summary="Send a message to both models",
        description="Both replies are written in the background: poll the battle. The website's rules "
        "apply: one message at a time, the tournament's turn and length limits, the quality rules (a "
        "failed rule is a 422 warning and the message is not sent; the third ends the session: 409) and "
        "the per-rater rate limit (429 with Retry-After).",
        request=TurnCreateSerializer,
        responses={202: BattleSerializer, 422: STRIKE, 409: SESSION_ENDED},
    )
    def post(self, request, battle_id: uuid.UUID):
        battle = client_battle(client=self.client, public_id=battle_id)
        rater = self.admitted(battle.rater)
        serializer = TurnCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        rate_limit(action="messages", key=str(rater.public_id), limit=settings.RATE_LIMIT_MESSAGES_PER_MINUTE)
        turn_submit(battle=battle, message=serializer.validated_data["message"])
        return Response(_battle_body(battle), status=status.HTTP_202_ACCEPTED)


class VoteCreateView(RaterApiView):
    @extend_schema(
        tags=TAGS,
        operation_id="vote_create",
        summary="Vote on a battle",
        description="One outcome per dimension, and the attention check's answer when the battle has one. "
        "Allowed once the tournament's minimum number of turns is done and both models have answered. "
        "Sending the same vote again returns it; a different one is a 409. The answer reveals the models.",
        request=VoteCreateSerializer,
        responses={200: VoteResultSerializer, 409: SESSION_ENDED},
    )
    def post(self, request, battle_id: uuid.UUID):
        battle = client_battle(client=self.client, public_id=battle_id)
        rater = self.admitted(battle.rater)
        serializer = VoteCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        rate_limit(action="votes", key=str(rater.public_id), limit=settings.RATE_LIMIT_VOTES_PER_MINUTE)
        choices = dict(serializer.validated_data["choices"])
        choices["attention"] = serializer.validated_data.get("attention", "")
        vote_submit(battle=battle, choices=choices)
        rater = rater_complete_if_done(rater=Rater.objects.select_related("study").get(pk=rater.pk))
        if rater.status == Rater.Status.EXCLUDED:
            raise SessionEnded("Your session has ended after three warnings.")
        body = {"battle": _battle_body(battle), "rater": _rater_body(rater)}
        return Response(body)
