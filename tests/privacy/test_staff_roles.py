"""Issue 22, scenario "every staff member has every staff power".

Pass criteria: a staff user with no permission gets 403 on every staff page and action, and nothing
changes; the "study viewer" group may look but not change or export; the "study manager" group may do
each action; every change leaves an audit entry naming who, what, and the value before and after; the
groups come from a migration with exactly the permissions raters.permissions documents.
"""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group as AuthGroup
from django.test import Client

from raters.models import AuditEntry, Group, Quota, Rater, Study
from raters.permissions import GROUP_PERMISSIONS
from raters.services import quota_set
from tests.conftest import admitted_rater
from tournaments.models import Strike
from tournaments.quality import rater_strike

pytestmark = pytest.mark.django_db


def staff_client(name: str, *groups: str) -> Client:
    user = get_user_model().objects.create_user(name, password="x", is_staff=True)
    for group in groups:
        user.groups.add(AuthGroup.objects.get(name=group))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def world(study, groups):
    quota = quota_set(study=study, groups=[Group.objects.get(slug="us-age-18-34")], target=4)
    rater = admitted_rater(study)
    strike = rater_strike(rater=rater, rule="too_short", reason="too short.")
    return {"study": study, "quota": quota, "rater": rater, "strike": strike}


def reads(world) -> list[str]:
    slug = world["study"].slug
    return ["/staff/studies/", f"/staff/studies/{slug}/", f"/staff/studies/{slug}/quality/"]


def exports(world) -> list[str]:
    return [f"/staff/studies/{world['study'].slug}/quotas.csv"]


def changes(world) -> list[tuple[str, dict]]:
    slug = world["study"].slug
    return [
        (f"/staff/studies/{slug}/open/", {"open": "no"}),
        (f"/staff/studies/{slug}/quotas/{world['quota'].pk}/target/", {"target": "999"}),
        (f"/staff/studies/{slug}/preset/", {"country": "US", "total": "100", "marginal": "yes"}),
        (f"/staff/studies/{slug}/strikes/{world['strike'].pk}/lift/", {"reason": "Mistake."}),
        (f"/staff/studies/{slug}/raters/{world['rater'].public_id}/exclude/", {"reason": "Bot."}),
    ]


def state() -> tuple:
    return (
        list(Study.objects.values_list("is_open", flat=True)),
        sorted(Quota.objects.values_list("cell_key", "target")),
        list(Strike.objects.values_list("lifted_at", flat=True)),
        list(Rater.objects.values_list("status", flat=True)),
    )


def test_a_staff_user_without_permissions_is_refused_everything(world):
    client = staff_client("nobody")
    before = state()
    for url in reads(world) + exports(world):
        assert client.get(url).status_code == 403, url
    for url, data in changes(world):
        assert client.post(url, data).status_code == 403, url
    assert state() == before
    assert not AuditEntry.objects.exists()


def test_a_study_viewer_may_look_but_not_change_or_export(world):
    client = staff_client("viewer", "study viewer")
    for url in reads(world):
        assert client.get(url).status_code == 200, url
    page = client.get(f"/staff/studies/{world['study'].slug}/").content.decode()
    assert "Close it" not in page and "quotas.csv" not in page and "census preset" not in page
    quality = client.get(f"/staff/studies/{world['study'].slug}/quality/").content.decode()
    assert "Lift</button>" not in quality
    for url in exports(world):
        assert client.get(url).status_code == 403, url
    before = state()
    for url, data in changes(world):
        assert client.post(url, data).status_code == 403, url
    assert state() == before


def test_a_study_manager_may_act_and_every_change_is_audited(world):
    client = staff_client("manager", "study manager")
    for url in reads(world) + exports(world):
        assert client.get(url).status_code == 200, url
    for url, data in changes(world):
        assert client.post(url, data).status_code == 302, url
    entries = {entry.action: entry for entry in AuditEntry.objects.all()}
    assert set(entries) == {
        "study_export_quotas",
        "study_set_open",
        "quota_set_target",
        "study_apply_preset",
        "strike_lift",
        "rater_exclude",
    }
    assert all(entry.actor == "manager" for entry in entries.values())
    assert entries["study_set_open"].before == {"is_open": True}
    assert entries["study_set_open"].after == {"is_open": False}
    assert entries["quota_set_target"].before == {"target": 4}
    assert entries["quota_set_target"].after == {"target": 999}
    assert entries["strike_lift"].before["strike_lifted"] is False
    assert entries["strike_lift"].after["strike_lifted"] is True
    assert entries["rater_exclude"].before == {"status": "admitted"}
    assert entries["rater_exclude"].after["status"] == "excluded"
    assert entries["study_apply_preset"].before["targets"] != entries["study_apply_preset"].after["targets"]


def test_the_ready_groups_hold_exactly_the_documented_permissions():
    for name, codenames in GROUP_PERMISSIONS.items():
        group = AuthGroup.objects.get(name=name)
        assert sorted(group.permissions.values_list("codename", flat=True)) == sorted(codenames)


def test_a_superuser_has_every_staff_power(world):
    user = get_user_model().objects.create_superuser("root", password="x")
    client = Client()
    client.force_login(user)
    assert client.get(f"/staff/studies/{world['study'].slug}/").status_code == 200
