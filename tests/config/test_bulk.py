"""Bulk writes to PostgreSQL (config/bulk.py): COPY, where columns the caller leaves out take their field's
default; ids drawn ahead; foreign keys checked by the caller instead of per-row triggers."""

import uuid

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from config.bulk import pg_copy, pg_ids_allocate, pg_rows_key_share, pg_triggers_skipped
from raters.models import Rater, Study

pytestmark = pytest.mark.django_db
# A rater's columns without a default; the rest are left to their fields' defaults.
RATER_COLUMNS = [
    "id",
    "public_id",
    "study_id",
    "source",
    "participant_hash",
    "status",
    "consented_at",
    "created_at",
]


def test_it_fills_left_out_columns_with_their_defaults(study):
    (rater_id,) = pg_ids_allocate(model=Rater, count=1)
    now = timezone.now().isoformat()
    pg_copy(
        model=Rater,
        columns=RATER_COLUMNS,
        lines=[f"{rater_id}\t{uuid.uuid4()}\t{study.pk}\tpanel\t{'ab' * 32}\tadmitted\t{now}\t{now}\n"],
    )
    rater = Rater.objects.get(pk=rater_id)
    assert (rater.battles_voted, rater.network_fingerprint, rater.held_out_at) == (0, "", None)


def test_it_refuses_a_left_out_column_with_no_default(study):
    with pytest.raises(ValueError, match="needs a value for study_id"):
        pg_copy(model=Rater, columns=["id", "public_id"], lines=[f"1\t{uuid.uuid4()}\n"])


def test_ids_come_from_the_sequence_in_increasing_order(study):
    first = pg_ids_allocate(model=Rater, count=3)
    second = pg_ids_allocate(model=Rater, count=2)
    assert first == sorted(first) and len(set(first + second)) == 5
    assert min(second) > max(first)
    assert pg_ids_allocate(model=Rater, count=0) == []


def test_copy_takes_lines_as_they_come(study, monkeypatch):
    monkeypatch.setattr("config.bulk.COPY_CHUNK_LINES", 2)
    ids = pg_ids_allocate(model=Rater, count=5)
    now = timezone.now().isoformat()
    pg_copy(
        model=Rater,
        columns=RATER_COLUMNS,
        lines=(f"{i}\t{uuid.uuid4()}\t{study.pk}\tpanel\t{i:064x}\tadmitted\t{now}\t{now}\n" for i in ids),
    )
    assert Rater.objects.filter(pk__in=ids).count() == 5


def _vote_for_no_battle() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO tournaments_vote (battle_id, created_at, attention_answer) VALUES (-1, now(), '')"
        )


@pytest.mark.django_db(transaction=True)
def test_triggers_are_skipped_only_inside_a_transaction():
    with pytest.raises(RuntimeError, match="inside a transaction"), pg_triggers_skipped():
        pass


def test_triggers_are_skipped_inside_the_block_only():
    with transaction.atomic():
        sid = transaction.savepoint()
        with pg_triggers_skipped():
            _vote_for_no_battle()  # no foreign-key check queued
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # nothing to check: passes
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        transaction.savepoint_rollback(sid)
    with pytest.raises(IntegrityError), transaction.atomic():
        _vote_for_no_battle()
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # outside the block the trigger checks


def test_key_share_checks_that_referenced_rows_exist(study):
    with transaction.atomic():
        pg_rows_key_share(model=Study, ids=[study.pk, study.pk])
        with pytest.raises(Study.DoesNotExist):
            pg_rows_key_share(model=Study, ids=[study.pk, -5])
    pg_rows_key_share(model=Study, ids=[])
