"""Panel reconciliation: staff upload the panel's export of submissions; its approved participants are
matched to raters by the keyed hash of their id (never stored raw), and a study may count only reconciled
raters on its published boards."""

import codecs
import io
import json

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from leaderboard.models import FitSnapshot
from leaderboard.services import fits_publish
from raters.models import AuditEntry, Rater
from raters.panel import InvalidPanelExport, keyed_hash, panel_export_read
from raters.services import panel_entry_read, panel_export_reconcile, rater_create
from tests.helpers import study_manager
from tests.leaderboard.board_data import raters_in, votes_cast

pytestmark = pytest.mark.django_db

PIDS = [f"{n:024x}" for n in range(1, 6)]
HEADER = "Submission id,Participant id,Status,Started at,Age\n"


def export(*rows: tuple[str, str], header: str = HEADER) -> str:
    return header + "".join(f"sub{n},{pid},{status},2026-11-20,31\n" for n, (pid, status) in enumerate(rows))


def panel_rater(study, pid: str) -> Rater:
    return rater_create(entry=panel_entry_read(study=study, params={"PROLIFIC_PID": pid}))


def upload(client, study, text: str, name: str = "export.csv"):
    file = SimpleUploadedFile(name, text.encode(), content_type="text/csv")
    return client.post(f"/staff/studies/{study.slug}/reconcile/", {"export": file}, follow=True)


@pytest.fixture
def manager(client):
    client.force_login(study_manager())
    return client


def test_it_reads_only_approved_rows_by_any_of_the_participant_column_names():
    for column in ("Participant id", "participant_id", "PROLIFIC_PID", " participant ID"):
        text = export(
            (PIDS[0], "APPROVED"),
            (PIDS[1], "RETURNED"),
            (PIDS[2], "REJECTED"),
            (PIDS[3].upper(), "approved"),
            (PIDS[0].upper(), "APPROVED"),  # one participant however the id is spelled
            header=f"Submission id,{column},Status,Started at,Age\n",
        )
        read = panel_export_read(io.StringIO(text))
        assert read.approved == [PIDS[0], PIDS[3].upper()] and read.not_approved == 2


def test_it_names_the_lines_of_approved_rows_without_a_valid_id():
    text = export((PIDS[0], "APPROVED"), ("not-an-id", "APPROVED"), ("", "AWAITING REVIEW"), ("", "APPROVED"))
    read = panel_export_read(io.StringIO(text + "sub9,short\n"))
    assert read.approved == [PIDS[0]] and read.bad_lines == [3, 5, 6] and read.bad_line_count == 3


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "The file is empty"),
        (
            b"name,email\nAda,ada@example.org\n",
            'no participant id column. A panel\'s CSV export of submissions has one named "Participant id"',
        ),
        (b"Participant id,Age\n" + PIDS[0].encode() + b",31\n", 'no "Status" column'),
        (
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe",
            "Line 1 is not text (UTF-8): this does not look like a CSV file",
        ),
        (b"Participant id,Status\n" + PIDS[0].encode() + b",APPROVED\n\xff\xfe\n", "Line 3 is not text"),
    ],
)
def test_it_refuses_a_file_that_is_not_a_panel_export_with_a_clear_message(content, says):
    with pytest.raises(InvalidPanelExport, match=None) as refused:
        panel_export_read(codecs.iterdecode(io.BytesIO(content), "utf-8-sig"))
    assert says in str(refused.value)


def test_it_reconciles_approved_participants_and_says_what_it_did(manager, study):
    raters = [panel_rater(study, pid) for pid in PIDS[:3]]
    text = export(
        (PIDS[0].upper(), "APPROVED"),  # the hash is of the case-folded id, as links are stored
        (PIDS[1], "APPROVED"),
        (PIDS[2], "REJECTED"),
        (PIDS[4], "APPROVED"),  # no rater
        ("oops", "APPROVED"),
    )
    page = upload(manager, study, "\ufeff" + text).content.decode()
    assert (
        "Reconciled 2 raters; 1 approved id matched no rater; 0 were already reconciled. Rows not approved "
        "(skipped): 1. Rows without a valid participant id or status (skipped), by line: 6." in page
    )
    reconciled = set(Rater.objects.filter(reconciled_at__isnull=False).values_list("pk", flat=True))
    assert reconciled == {raters[0].pk, raters[1].pk}
    assert Rater.objects.get(pk=raters[0].pk).participant_hash == keyed_hash(
        settings.PANEL_ID_HMAC_KEY, PIDS[0]
    )


def test_it_changes_nothing_when_the_same_export_is_uploaded_again(manager, study):
    for pid in PIDS[:2]:
        panel_rater(study, pid)
    text = export((PIDS[0], "APPROVED"), (PIDS[1], "APPROVED"))
    upload(manager, study, text)
    first = dict(Rater.objects.values_list("pk", "reconciled_at"))
    page = upload(manager, study, text).content.decode()
    assert "Reconciled 0 raters; 0 approved ids matched no rater; 2 were already reconciled." in page
    assert dict(Rater.objects.values_list("pk", "reconciled_at")) == first


def test_it_audits_the_upload_with_counts_and_no_ids(manager, study):
    panel_rater(study, PIDS[0])
    upload(manager, study, export((PIDS[0], "APPROVED"), (PIDS[1], "APPROVED"), (PIDS[2], "RETURNED")))
    entry = AuditEntry.objects.get(action="study_reconcile_panel")
    assert entry.actor == "staff" and entry.target == f"study {study.slug}"
    assert entry.after == {
        "reconciled": 1,
        "unmatched": 1,
        "already_reconciled": 0,
        "not_approved": 1,
        "bad_lines": 0,
    }
    assert not any(pid in json.dumps([entry.before, entry.after, entry.target]) for pid in PIDS)


def test_it_shows_a_clear_error_for_a_file_that_is_not_an_export(manager, study):
    response = upload(manager, study, "name,email\nAda,ada@example.org\n")
    assert response.status_code == 400 and "no participant id column" in response.content.decode()
    missing = manager.post(f"/staff/studies/{study.slug}/reconcile/", {})
    assert missing.status_code == 400 and "Choose the panel" in missing.content.decode()
    assert not AuditEntry.objects.filter(action="study_reconcile_panel").exists()


def test_it_lets_only_a_study_manager_upload(study):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group as AuthGroup

    viewer = get_user_model().objects.create_user("viewer", password="x", is_staff=True)
    viewer.groups.add(AuthGroup.objects.get(name="study viewer"))
    client = Client()
    client.force_login(viewer)
    panel_rater(study, PIDS[0])
    assert upload(client, study, export((PIDS[0], "APPROVED"))).status_code == 403
    assert 'enctype="multipart/form-data"' not in client.get(f"/staff/studies/{study.slug}/").content.decode()
    assert not Rater.objects.filter(reconciled_at__isnull=False).exists()


def test_the_dashboard_shows_the_votes_waiting_for_reconciliation(manager, tournament, study, groups):
    raters = raters_in(study, "us-age-18-34", count=3)
    for rater, pid in zip(raters, PIDS, strict=False):
        Rater.objects.filter(pk=rater.pk).update(
            source=Rater.Source.PANEL, participant_hash=keyed_hash(settings.PANEL_ID_HMAC_KEY, pid)
        )
    votes_cast(tournament, raters, per_rater=4)
    page = manager.get(f"/staff/studies/{study.slug}/").content.decode()
    fragment_url = f"/staff/studies/{study.slug}/reconciliation/"
    assert f'hx-get="{fragment_url}"' in page and f'href="{fragment_url}"' in page
    assert (
        "<strong>12</strong> votes waiting for reconciliation" in manager.get(fragment_url).content.decode()
    )
    upload(manager, study, export((PIDS[0], "APPROVED")))
    fragment = manager.get(fragment_url).content.decode()
    assert "<strong>8</strong> votes waiting for reconciliation, from\n  2 panel raters" in fragment
    assert "1 rater reconciled" in fragment


def overall_votes(tournament) -> int | None:
    snapshot = (
        FitSnapshot.objects.filter(tournament=tournament, dimension__slug="overall").order_by("pk").last()
    )
    return snapshot.votes if snapshot else None


def test_a_study_can_count_only_reconciled_raters_on_published_boards(
    tournament, study, groups, django_capture_on_commit_callbacks
):
    raters = raters_in(study, "us-age-18-34", count=20)
    votes_cast(tournament, raters, per_rater=5, seed=3)
    panel = raters[:10]
    pids = [f"{n:024x}" for n in range(100, 110)]
    for rater, pid in zip(panel, pids, strict=True):
        Rater.objects.filter(pk=rater.pk).update(
            source=Rater.Source.PANEL, participant_hash=keyed_hash(settings.PANEL_ID_HMAC_KEY, pid)
        )
    fits_publish(tournament_id=tournament.pk)
    assert overall_votes(tournament) == 100  # off by default: every rater counts
    study.count_only_reconciled = True
    study.save()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        summary = panel_export_reconcile(
            study=study, lines=io.StringIO(export(*[(p, "APPROVED") for p in pids[:4]]))
        )
    assert summary.reconciled == 4 and len(callbacks) == 1  # the refit, once the upload commits
    fits_publish(tournament_id=tournament.pk)
    assert overall_votes(tournament) == 20  # four reconciled panel raters; open raters never count then


def test_the_admin_sets_the_study_to_count_only_reconciled_raters_and_refits(
    admin_client, study, django_capture_on_commit_callbacks
):
    url = f"/staff/admin/raters/study/{study.pk}/change/"
    page = admin_client.get(url).content.decode()
    assert 'name="count_only_reconciled"' in page and 'name="proof_of_effort_bits"' in page
    fields = {
        "name": study.name,
        "slug": study.slug,
        "tournament": study.tournament_id,
        "is_open": "on",
        "allows_open_entry": "on",
        "panel": study.panel,
        "abandon_after_minutes": 60,
        "new_raters_per_network_hour": 20,
        "honeypot": "on",
        "proof_of_effort_bits": 13,
        "practice_battles": 1,
    }
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert admin_client.post(url, {**fields, "count_only_reconciled": "on"}).status_code == 302
    study.refresh_from_db()
    assert study.count_only_reconciled and len(callbacks) == 1  # the boards are refitted at once
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        renamed = admin_client.post(url, {**fields, "count_only_reconciled": "on", "name": "Renamed"})
    assert renamed.status_code == 302 and callbacks == []  # nothing that changes the boards
