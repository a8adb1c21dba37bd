"""Shared fixtures. A fixed cast: one tournament of three endpoint models served by a local fake
OpenAI-compatible server, one open study, the 22 default groups, and a screened rater."""

import pytest
import redis
from django.core.cache import cache
from django.test import Client

from config.answer_cache import process_answers
from leaderboard.boards import boards_site_version_forget
from raters.models import Study
from raters.selectors import SESSION_RATER_KEY
from raters.services import (
    PendingEntry,
    rater_admit,
    rater_create,
    rater_screen,
    sampling_frame_ensure_defaults,
)
from tests.fake_llm import FakeLLM
from tournaments.models import LLMModel, Tournament
from tournaments.services import tournament_add_default_dimensions

# Display names, slugs and makers never appear in what a rater sees before voting. The endpoints' model
# names ("model-x1"...) are what the fake server answers under; they are checked separately.
CAST = [
    {"slug": "alpha-large", "name": "Alpha Large", "maker": "Alpha Labs", "api_model": "model-x1"},
    {"slug": "beta-chat", "name": "Beta Chat", "maker": "Beta Systems", "api_model": "model-x2"},
    {"slug": "gamma-instruct", "name": "Gamma Instruct", "maker": "Gamma AI", "api_model": "model-x3"},
]


@pytest.fixture(autouse=True)
def fresh_counters(settings):
    """Throttle counters and cached answers (in the cache), provider limits and matchmaking queues (in
    Redis) outlive a test's database transaction; each test starts with none."""
    cache.clear()
    process_answers.clear()
    boards_site_version_forget()
    client = redis.Redis.from_url(settings.REDIS_URL)
    stale = list(client.scan_iter(match="populus:*"))
    if stale:
        client.delete(*stale)


@pytest.fixture
def fake_llm():
    with FakeLLM() as server:
        yield server


@pytest.fixture
def tournament(db, fake_llm) -> Tournament:
    tournament = Tournament.objects.create(slug="pilot", name="Pilot tournament")
    for fields in CAST:
        model = LLMModel.objects.create(
            **fields,
            provider=LLMModel.Provider.OPENAI_COMPATIBLE,
            base_url=fake_llm.base_url,
            timeout_seconds=5,
        )
        tournament.llm_models.add(model)
    tournament_add_default_dimensions(tournament=tournament)
    return tournament


@pytest.fixture
def study(tournament) -> Study:
    return Study.objects.create(
        slug="pilot-study", name="Pilot study", tournament=tournament, allows_open_entry=True
    )


@pytest.fixture
def groups(db):
    sampling_frame_ensure_defaults()


US_YOUNG_ASIAN_DEMOCRAT = {
    "age": "us-age-18-34",
    "ethnicity": "us-ethnicity-asian",
    "politics": "us-politics-democrat",
}


def admitted_rater(study, *, country_code: str = "US", answers: dict | None = None, participant_hash=None):
    """A rater through consent, screener and admission, as the views would make one."""
    rater = rater_create(entry=PendingEntry(study_id=study.pk, participant_hash=participant_hash))
    rater = rater_screen(rater=rater, country_code=country_code, answers=answers or US_YOUNG_ASIAN_DEMOCRAT)
    return rater_admit(rater=rater)


@pytest.fixture
def rater(study, groups):
    return admitted_rater(study)


def client_for(rater) -> Client:
    client = Client()
    session = client.session
    session[SESSION_RATER_KEY] = str(rater.public_id)
    session.save()
    return client


@pytest.fixture
def rater_client(rater) -> Client:
    return client_for(rater)


@pytest.fixture(scope="module")
def celery_workers(django_db_setup, django_db_blocker, tmp_path_factory):
    """Both real workers (generation and the single ratings writer) for the tests of one module.

    Tests using them need `transactional_db`, so that what they write is committed and visible to the
    workers' own database connections.
    """
    from tests.workers import Workers

    with django_db_blocker.unblock():
        workers = Workers(tmp_path_factory.mktemp("celery-logs")).start()
    yield workers
    workers.stop()
