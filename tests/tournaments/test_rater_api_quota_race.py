"""Concurrent entries through the rater API for the last places of a quota, each on its own database
connection: admission stays atomic, as on the website."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from raters.models import Group, Quota, Rater
from raters.services import quota_set
from tests.conftest import US_YOUNG_ASIAN_DEMOCRAT
from tests.helpers import slow_quota_statements
from tests.tournaments.rater_api_helpers import RaterApi, client_with_token

pytestmark = pytest.mark.django_db(transaction=True)

ARRIVALS = 40
SLOTS = 10


def test_it_never_overfills_a_quota_when_clients_enter_raters_at_once(study, groups):
    study.quota_full_code = "FULL-CODE"
    study.save()
    cell = quota_set(
        study=study,
        groups=list(Group.objects.filter(slug__in=US_YOUNG_ASIAN_DEMOCRAT.values())),
        target=SLOTS,
    )
    # Two clients of the same study race each other as well as themselves.
    tokens = [
        client_with_token(study, name="Front-end A")[1].http.defaults["HTTP_AUTHORIZATION"],
        client_with_token(study, name="Front-end B")[1].http.defaults["HTTP_AUTHORIZATION"],
    ]
    start = threading.Event()

    def arrive(n: int) -> dict:
        try:
            api = RaterApi(tokens[n % 2].split()[1])
            start.wait()
            with connection.execute_wrapper(slow_quota_statements):
                response = api.enter(n)
            assert response.status_code == 201, response.content
            return response.json()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=16) as pool:
        futures = [pool.submit(arrive, n) for n in range(ARRIVALS)]
        start.set()
        bodies = [future.result() for future in futures]

    assert Quota.objects.get(pk=cell.pk).admitted == SLOTS
    assert sum(body["status"] == "admitted" for body in bodies) == SLOTS
    full = [body for body in bodies if body["status"] == "quota_full"]
    assert len(full) == ARRIVALS - SLOTS and {body["outcome"]["code"] for body in full} == {"FULL-CODE"}
    assert Rater.objects.filter(status=Rater.Status.ADMITTED).count() == SLOTS
