"""Automated raters rate only in automated tournaments, humans only in human ones: their votes never
share a board (boards are per tournament)."""

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from config.errors import Conflict, InvalidInput
from leaderboard.models import Rating
from leaderboard.services import ratings_apply_vote
from raters.models import ApiClient, Rater, Study
from raters.services import PendingEntry, api_client_create, api_token_new, rater_create
from tests.helpers import voted_battle
from tests.tournaments.rater_api_helpers import RaterApi, client_with_token
from tournaments.models import Battle, Tournament, Vote
from tournaments.services import battle_start, tournament_add_default_dimensions

pytestmark = pytest.mark.django_db


@pytest.fixture
def judge_tournament(tournament) -> Tournament:
    judges = Tournament.objects.create(
        slug="judges", name="LLM judges", audience=Tournament.Audience.AUTOMATED
    )
    judges.llm_models.set(tournament.llm_models.all())
    tournament_add_default_dimensions(tournament=judges)
    return judges


@pytest.fixture
def judge_study(judge_tournament, groups) -> Study:
    return Study.objects.create(
        slug="judge-study", name="Judge personas", tournament=judge_tournament, panel="generic"
    )


@pytest.fixture
def automated(judge_study):
    return client_with_token(judge_study, kind=ApiClient.Kind.AUTOMATED, name="Judge")


def forced_client(study: Study, kind: str) -> RaterApi:
    """A client whose kind does not fit its study's tournament, made past the checks (as a direct database
    write or a later edit could), to show the services refuse it anyway."""
    token, token_hash = api_token_new()
    ApiClient.objects.create(name="Misfiled", kind=kind, study=study, token_hash=token_hash)
    return RaterApi(token)


def board_counts(tournament: Tournament) -> dict:
    rows = Rating.objects.filter(dimension__tournament=tournament)
    return {(r.dimension_id, r.group_id, r.model_id): (r.wins, r.losses, r.ties) for r in rows}


def test_it_lets_automated_clients_name_personas_freely(automated):
    _, api = automated
    assert api.enter("judge-retiree-uk").status_code == 201


def test_automated_votes_land_on_their_own_board_and_leave_human_boards_alone(
    automated, study, tournament, judge_tournament
):
    from tests.conftest import admitted_rater

    _, human_vote = voted_battle(admitted_rater(study, participant_hash="1" * 64))
    ratings_apply_vote(vote_id=human_vote.pk)
    human_board = board_counts(tournament)
    assert human_board, "the human board has ratings to compare"

    _, api = automated
    battle_id = api.start(api.admitted_rater("judge-1"))["id"]
    api.chat_turns(battle_id, 3)
    assert api.vote(battle_id).status_code == 200
    judge_vote = Vote.objects.get(battle__public_id=battle_id)
    assert judge_vote.battle.tournament == judge_tournament
    ratings_apply_vote(vote_id=judge_vote.pk)

    assert board_counts(tournament) == human_board
    judged = Rating.objects.filter(dimension__tournament=judge_tournament, group=None)
    assert sum(r.wins + r.losses + r.ties for r in judged) == 2 * judge_tournament.dimensions.count()


def test_an_automated_client_cannot_rate_in_a_human_tournament(study, tournament, groups):
    api = forced_client(study, ApiClient.Kind.AUTOMATED)
    refused = api.enter("judge-2")
    assert refused.status_code == 409
    assert "for automated raters" in refused.json()["error"]["message"]
    assert not Rater.objects.exists()

    # A rater already linked to such a client (say, the study was moved) cannot start a battle either.
    web_rater = rater_create(entry=PendingEntry(study_id=study.pk, participant_hash="2" * 64))
    Rater.objects.filter(pk=web_rater.pk).update(
        api_client=ApiClient.objects.get(), status=Rater.Status.ADMITTED
    )
    start = api.post(f"raters/{web_rater.public_id}/battle/")
    assert start.status_code == 409
    assert not Battle.objects.exists()
    assert board_counts(tournament) == {}


def test_a_human_panel_client_cannot_rate_in_an_automated_tournament(judge_study):
    api = forced_client(judge_study, ApiClient.Kind.HUMAN_PANEL)
    assert api.enter(f"{1:024x}").status_code == 409
    assert not Rater.objects.exists()


def test_it_refuses_to_make_a_client_that_does_not_fit_its_study(study, judge_study):
    with pytest.raises(InvalidInput, match="tournament is for human raters"):
        api_client_create(name="Judge", kind=ApiClient.Kind.AUTOMATED, study=study)
    with pytest.raises(CommandError, match="tournament is for automated raters"):
        call_command("create_api_client", study=judge_study.slug, kind="human_panel", name="Panel")
    assert not ApiClient.objects.exists()


def test_the_website_refuses_studies_of_automated_tournaments(judge_study, client):
    response = client.get(f"/s/{judge_study.slug}/?pid=abc&study=x")
    assert response.status_code == 409
    assert b"automated raters only" in response.content
    with pytest.raises(Conflict):
        rater_create(entry=PendingEntry(study_id=judge_study.pk))
    assert not Rater.objects.exists()


def test_a_website_rater_cannot_battle_in_an_automated_tournament(study, judge_tournament, groups):
    from tests.conftest import admitted_rater

    rater = admitted_rater(study)
    Study.objects.filter(pk=study.pk).update(tournament=judge_tournament)
    with pytest.raises(Conflict, match="automated raters only"):
        battle_start(rater=Rater.objects.get(pk=rater.pk))
    assert not Battle.objects.exists()


def test_a_tournaments_audience_is_fixed_once_battles_exist(rater, tournament, study):
    tournament.audience = Tournament.Audience.AUTOMATED
    with pytest.raises(ValidationError, match="takes raters from the website"):
        tournament.full_clean()
    Study.objects.filter(pk=study.pk).update(allows_open_entry=False)
    tournament.full_clean()  # no battles and no website entry: allowed
    battle_start(rater=rater)
    with pytest.raises(ValidationError, match="cannot change once battles"):
        tournament.full_clean()


def test_an_automated_tournament_takes_no_open_entry_from_the_website(judge_study, tournament):
    judge_study.allows_open_entry = True
    with pytest.raises(ValidationError, match="open entry from the website"):
        judge_study.full_clean()
    study = Study(slug="other", name="Other", tournament=tournament, allows_open_entry=True)
    study.full_clean()


def test_a_study_with_automated_clients_cannot_move_to_a_human_tournament(automated, judge_study, tournament):
    judge_study.tournament = tournament
    with pytest.raises(ValidationError, match="API clients of the other kind"):
        judge_study.full_clean()


def test_the_admin_shows_a_new_token_once_and_keeps_only_its_hash(admin_client, study, judge_study, settings):
    url = f"/{settings.ADMIN_URL_PATH}raters/apiclient/"
    fields = {"name": "Panel front-end", "kind": "human_panel", "study": study.pk, "is_active": "on"}
    added = admin_client.post(url + "add/", fields)
    assert added.status_code == 200
    token = added.context["token"]
    assert token.startswith("pop_") and token in added.content.decode()
    client = ApiClient.objects.get()
    assert RaterApi(token).get("screener/").status_code == 200
    change = admin_client.get(f"{url}{client.pk}/change/").content.decode()
    assert token not in change and client.token_hash not in change

    mismatched = admin_client.post(url + "add/", {**fields, "kind": "automated"})
    assert mismatched.status_code == 200 and "tournament is for human raters" in mismatched.content.decode()
    assert ApiClient.objects.count() == 1


def test_the_admin_revokes_tokens(admin_client, study, settings):
    client, api = client_with_token(study)
    admin_client.post(
        f"/{settings.ADMIN_URL_PATH}raters/apiclient/",
        {"action": "revoke", "_selected_action": [client.pk]},
    )
    assert api.get("screener/").status_code == 401
