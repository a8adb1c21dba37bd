"""Real Celery workers for tests, started with the exact commands docker-compose.yml gives its images."""

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import redis
import yaml
from django.conf import settings
from django.db import connection
from django.utils import timezone

from config.celery_app import app as celery_app
from tests.helpers import REPO, next_message, verdict
from tournaments.models import Reply
from tournaments.services import battle_start, turn_submit, vote_submit

WORKER_SERVICES = ("worker-llm", "worker-ratings")


def compose_command(service: str) -> list[str]:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return list(compose["services"][service]["command"])


def _test_database_url() -> str:
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _consumed_queues() -> set[str]:
    queues = celery_app.control.inspect(timeout=0.5).active_queues() or {}
    return {queue["name"] for per_worker in queues.values() for queue in per_worker}


class Workers:
    def __init__(self, log_dir: Path, extra_env: dict[str, str] | None = None):
        self.log_dir = log_dir
        self.extra_env = extra_env or {}
        self.processes: dict[str, subprocess.Popen] = {}

    def start(self) -> "Workers":
        # Tasks left in the queues by an earlier, interrupted run would point at rows that no longer exist.
        redis.Redis.from_url(settings.CELERY_BROKER_URL).delete("llm", "ratings")
        for service in WORKER_SERVICES:
            self.start_service(service)
        self._wait_until_consuming()
        return self

    def start_service(self, service: str) -> None:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": _test_database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            **self.extra_env,
        }
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_dir / f"{service}.log", "ab")  # noqa: SIM115 - closed with the process
        # A session of its own, so a kill reaches the worker's pool processes too.
        self.processes[service] = subprocess.Popen(
            compose_command(service),
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self, service: str) -> None:
        """SIGKILL, as the kernel's OOM killer or a lost machine would: no warm shutdown, no acks."""
        process = self.processes.pop(service)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def restart(self, service: str) -> None:
        self.start_service(service)
        self._wait_until_consuming()

    def _wait_until_consuming(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if {"llm", "ratings"} <= _consumed_queues():
                return
            if any(p.poll() is not None for p in self.processes.values()):
                break
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"Celery workers did not start; see the logs in {self.log_dir}")

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes = {}


def wait_for(condition, *, timeout: float = 30, interval: float = 0.2, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"Timed out after {timeout} s waiting for {message}")


def chat_through_workers(battle) -> None:
    """One turn whose replies come from the real generation worker."""
    turn = turn_submit(battle=battle, message=next_message(battle))
    wait_for(
        lambda: Reply.objects.filter(turn=turn, state=Reply.State.DONE).count() == 2,
        message="both replies from the llm worker",
    )
    # As if the rater had taken a minute to read them (votes faster than reading speed are struck).
    Reply.objects.filter(turn=turn).update(finished_at=timezone.now() - timedelta(minutes=1))


def voted_battle_through_workers(rater, outcome: str = "a"):
    battle = battle_start(rater=rater)
    for _ in range(3):
        chat_through_workers(battle)
    return battle, vote_submit(battle=battle, choices=verdict(battle, outcome))
