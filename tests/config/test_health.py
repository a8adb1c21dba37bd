import pytest

pytestmark = pytest.mark.django_db


def checks(response) -> dict:
    return {name: check["ok"] for name, check in response.json()["checks"].items()}


def test_it_fails_health_when_no_worker_consumes_the_queues(client):
    response = client.get("/healthz")
    assert response.status_code == 503
    assert checks(response) == {"database": True, "redis": True, "worker": False}
    assert "no worker consuming" in response.json()["checks"]["worker"]["detail"]


def test_it_fails_health_when_redis_is_unreachable(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    response = client.get("/healthz")
    assert response.status_code == 503
    assert checks(response)["redis"] is False


def test_it_reports_embedded_mode_as_healthy_without_redis_or_workers(client, settings):
    settings.POPULUS_EMBEDDED = True
    response = client.get("/healthz")
    assert response.status_code == 200
    assert "embedded" in response.json()["checks"]["worker"]["detail"]
