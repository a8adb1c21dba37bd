"""`POPULUS_REAL_LLM=1 make run` adds two local SmolLM2 configurations to the demo tournament; a plain
`make run` leaves them out of matchmaking, so it stays offline."""

import pytest
from django.core.management import call_command

from tournaments.models import LLMModel, Tournament

pytestmark = pytest.mark.django_db


def test_it_adds_the_local_models_to_the_demo_tournament_and_takes_them_out_again():
    call_command(
        "local_llm", "--base-url", "http://127.0.0.1:8613/v1", "--base-url", "http://127.0.0.1:8614/v1"
    )
    demo = Tournament.objects.get(slug="demo")
    local = list(demo.llm_models.filter(slug__startswith="local-").order_by("slug"))
    assert [m.base_url for m in local] == ["http://127.0.0.1:8613/v1", "http://127.0.0.1:8614/v1"]
    assert all(m.is_active and m.provider == LLMModel.Provider.OPENAI_COMPATIBLE for m in local)
    assert {m.slug for m in demo.llm_models.available()} >= {m.slug for m in local}

    call_command("local_llm")
    assert not demo.llm_models.available().filter(slug__startswith="local-").exists()
    assert demo.llm_models.available().count() == 4  # the offline demo models only
