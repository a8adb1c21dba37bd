"""COPY into PostgreSQL (config/bulk.py): columns the caller leaves out take their field's default."""

import uuid

import pytest
from django.utils import timezone

from config.bulk import pg_copy, pg_ids_allocate
from raters.models import Rater

pytestmark = pytest.mark.django_db


def test_it_fills_left_out_columns_with_their_defaults(study):
    (rater_id,) = pg_ids_allocate(model=Rater, count=1)
    now = timezone.now().isoformat()
    pg_copy(
        model=Rater,
        columns=[
            "id",
            "public_id",
            "study_id",
            "source",
            "participant_hash",
            "status",
            "consented_at",
            "created_at",
        ],
        lines=[f"{rater_id}\t{uuid.uuid4()}\t{study.pk}\tpanel\t{'ab' * 32}\tadmitted\t{now}\t{now}\n"],
    )
    rater = Rater.objects.get(pk=rater_id)
    assert (rater.battles_voted, rater.network_fingerprint, rater.held_out_at) == (0, "", None)


def test_it_refuses_a_left_out_column_with_no_default(study):
    with pytest.raises(ValueError, match="needs a value for study_id"):
        pg_copy(model=Rater, columns=["id", "public_id"], lines=[f"1\t{uuid.uuid4()}\n"])
