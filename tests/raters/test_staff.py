import csv
import io

import pytest
from django.utils.html import escape

from raters.models import Group, Quota, Study
from raters.services import quota_set
from stats.census import PRESETS
from tests.conftest import admitted_rater
from tests.helpers import study_manager

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    client.force_login(study_manager())
    return client


@pytest.fixture
def quota(study, groups):
    return quota_set(study=study, groups=[Group.objects.get(slug="us-age-18-34")], target=4)


def test_it_keeps_the_dashboard_from_non_staff(client, study):
    response = client.get(f"/staff/studies/{study.slug}/")
    assert response.status_code == 302 and "login" in response.url
    assert client.post(f"/staff/studies/{study.slug}/open/", {"open": "no"}).status_code == 302
    assert Study.objects.get().is_open


def test_it_shows_target_admitted_completed_and_struck_per_quota(staff_client, study, quota):
    admitted_rater(study)
    page = staff_client.get(f"/staff/studies/{study.slug}/").content.decode()
    assert "US: Age 18–34" in page  # noqa: RUF001
    assert '<progress max="4" value="1">' in page
    assert 'hx-trigger="every 5s"' in page
    fragment = staff_client.get(f"/staff/studies/{study.slug}/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and 'data-testid="quota-table"' in fragment
    assert "Admitted 1" in fragment


def test_it_exports_the_quota_table_as_csv(staff_client, study, quota):
    admitted_rater(study)
    response = staff_client.get(f"/staff/studies/{study.slug}/quotas.csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["quota", "groups", "target", "admitted", "completed", "struck"]
    assert rows[1][2:] == ["4", "1", "0", "0"]
    assert "participant" not in response.content.decode().lower()


def test_it_changes_a_target_and_rejects_nonsense(staff_client, study, quota):
    staff_client.post(f"/staff/studies/{study.slug}/quotas/{quota.pk}/target/", {"target": "9"})
    assert Quota.objects.get().target == 9
    response = staff_client.post(f"/staff/studies/{study.slug}/quotas/{quota.pk}/target/", {"target": "many"})
    assert response.status_code == 400 and b"whole number" in response.content
    assert Quota.objects.get().target == 9


def test_it_opens_and_closes_a_study(staff_client, study):
    staff_client.post(f"/staff/studies/{study.slug}/open/", {"open": "no"})
    assert not Study.objects.get().is_open
    staff_client.post(f"/staff/studies/{study.slug}/open/", {"open": "yes"})
    assert Study.objects.get().is_open


def test_it_applies_a_census_preset_from_the_dashboard(staff_client, study, groups):
    staff_client.post(
        f"/staff/studies/{study.slug}/preset/", {"country": "US", "total": "300", "marginal": "yes"}
    )
    assert Quota.objects.count() == 10
    page = staff_client.get(f"/staff/studies/{study.slug}/").content.decode()
    for axes in PRESETS.values():
        for preset in axes.values():
            assert escape(preset.source) in page
