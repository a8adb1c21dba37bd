"""docker-compose.yml: what can be checked without a Docker engine, plus `docker compose config` when a
client with the compose plugin is installed."""

import shutil
import subprocess

import pytest
import yaml

from tests.helpers import REPO
from tests.workers import compose_command

COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]


def test_it_runs_web_workers_beat_database_and_redis():
    assert {"web", "worker-llm", "worker-ratings", "beat", "db", "redis", "migrate"} <= set(SERVICES)
    assert SERVICES["web"]["command"][0] == "gunicorn"
    assert compose_command("beat")[:4] == ["celery", "-A", "config", "beat"]


def test_it_gates_app_services_on_healthy_database_redis_and_finished_migrations():
    for name in ("web", "worker-llm", "worker-ratings", "beat"):
        depends = SERVICES[name]["depends_on"]
        assert depends["db"]["condition"] == "service_healthy"
        assert depends["redis"]["condition"] == "service_healthy"
        assert depends["migrate"]["condition"] == "service_completed_successfully"
    for name in ("db", "redis", "web"):
        assert "healthcheck" in SERVICES[name]


def test_it_seeds_on_first_start():
    assert "seed_demo" in " ".join(SERVICES["migrate"]["command"])


def test_it_keeps_one_ratings_writer_and_a_broker_that_never_evicts():
    ratings = compose_command("worker-ratings")
    assert ratings[ratings.index("--queues") + 1] == "ratings"
    assert ratings[ratings.index("--concurrency") + 1] == "1"
    redis_command = SERVICES["redis"]["command"]
    assert redis_command[redis_command.index("--maxmemory-policy") + 1] == "noeviction"
    assert redis_command[redis_command.index("--appendonly") + 1] == "yes"


def test_it_keeps_secrets_out_of_the_file():
    text = (REPO / "docker-compose.yml").read_text()
    assert "DJANGO_SECRET_KEY" not in text and "PANEL_ID_HMAC_KEY" not in text
    assert "env_file" in text


def _compose_command() -> list[str] | None:
    """`docker compose` where the plugin is installed, else the standalone `docker-compose`."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone else None


@pytest.mark.skipif(
    _compose_command() is None, reason="neither docker compose nor docker-compose is installed"
)
def test_docker_compose_accepts_the_file():
    env_file = REPO / ".env"
    created = not env_file.exists()
    if created:
        shutil.copy(REPO / ".env.example", env_file)
    try:
        result = subprocess.run(
            [*_compose_command(), "config", "--quiet"], cwd=REPO, capture_output=True, text=True
        )
    finally:
        if created:
            env_file.unlink()
    assert result.returncode == 0, result.stderr
