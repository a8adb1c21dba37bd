"""Concurrent arrivals for the last slots of a quota, through the views, on separate database connections."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from raters.models import Group, Quota, Rater
from raters.services import PendingEntry, quota_set, rater_create, rater_screen
from tests.conftest import US_YOUNG_ASIAN_DEMOCRAT, client_for
from tests.helpers import slow_quota_statements

pytestmark = pytest.mark.django_db(transaction=True)

ARRIVALS = 100
SLOTS_LEFT = 20


def free_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('max_connections')::int - count(*) FROM pg_stat_activity")
        return cursor.fetchone()[0]


def test_it_never_overfills_a_quota_under_concurrent_arrivals(study, groups):
    study.quota_full_code = "FULL-CODE"
    study.save()
    cell = quota_set(
        study=study,
        groups=list(Group.objects.filter(slug__in=US_YOUNG_ASIAN_DEMOCRAT.values())),
        target=SLOTS_LEFT + 5,
    )
    Quota.objects.filter(pk=cell.pk).update(admitted=5)  # five slots taken earlier
    raters = [
        rater_screen(
            rater=rater_create(entry=PendingEntry(study_id=study.pk, participant_hash=f"{n:064x}")),
            country_code="US",
            answers=US_YOUNG_ASIAN_DEMOCRAT,
        )
        for n in range(ARRIVALS)
    ]
    # Every arrival holds its own database connection. PostgreSQL's max_connections (100 here) caps how
    # many can be open at once, so the pool takes what is free; all arrivals start on one signal.
    start = threading.Event()
    pool_size = max(8, min(ARRIVALS, free_connections() - 8))

    def arrive(rater: Rater) -> str:
        try:
            client = client_for(rater)
            start.wait()
            with connection.execute_wrapper(slow_quota_statements):
                return client.get("/rate/next/").content.decode()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=pool_size) as pool:
        futures = [pool.submit(arrive, rater) for rater in raters]
        start.set()
        pages = [future.result() for future in futures]

    cell.refresh_from_db()
    assert cell.admitted == SLOTS_LEFT + 5
    assert Rater.objects.filter(status=Rater.Status.ADMITTED).count() == SLOTS_LEFT
    full = [page for page in pages if 'data-testid="panel-code">FULL-CODE<' in page]
    assert len(full) == ARRIVALS - SLOTS_LEFT
    assert Rater.objects.filter(status=Rater.Status.QUOTA_FULL).count() == ARRIVALS - SLOTS_LEFT
