"""Reads for the rater API. A client sees only its own raters and their battles: anything else is
indistinguishable from what does not exist (404), so ids cannot be probed."""

import uuid
from dataclasses import dataclass

from config.errors import NotFound
from raters.models import ApiClient, Rater
from raters.selectors import Outcome, rater_outcome
from tournaments.models import Battle
from tournaments.selectors import RevealRow, battle_reveal


def client_rater(*, client: ApiClient, public_id: uuid.UUID) -> Rater:
    rater = (
        Rater.objects.select_related("study__tournament", "api_client")
        .filter(public_id=public_id, api_client=client)
        .first()
    )
    if rater is None:
        raise NotFound("This client has no rater with that id.")
    return rater


def client_battle(*, client: ApiClient, public_id: uuid.UUID) -> Battle:
    battle = (
        Battle.objects.select_related("tournament", "rater__study__tournament", "rater__api_client")
        .filter(public_id=public_id, rater__api_client=client)
        .first()
    )
    if battle is None:
        raise NotFound("This client has no battle with that id.")
    return battle


@dataclass(frozen=True)
class RaterState:
    rater: Rater
    battles_done: int
    active_battle: uuid.UUID | None
    outcome: Outcome | None


def rater_state(*, rater: Rater) -> RaterState:
    battles = Battle.objects.filter(rater=rater)
    return RaterState(
        rater=rater,
        battles_done=battles.filter(state=Battle.State.VOTED).count(),
        active_battle=battles.filter(state=Battle.State.ACTIVE).values_list("public_id", flat=True).first(),
        outcome=rater_outcome(rater=rater),
    )


@dataclass(frozen=True)
class BattleResult:
    """What a rater learns after voting: their verdict per dimension and the two models' names."""

    rows: list[RevealRow]
    model_a: str
    model_b: str


def battle_result(*, battle: Battle) -> BattleResult | None:
    """None until the battle is voted on: no model identity before the vote."""
    if battle.state != Battle.State.VOTED:
        return None
    return BattleResult(
        rows=battle_reveal(battle=battle), model_a=battle.model_a.name, model_b=battle.model_b.name
    )
