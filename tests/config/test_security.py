import os
import secrets
import subprocess
import sys

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.django_db


def test_it_sends_a_strict_content_security_policy_and_frame_denial(client):
    response = client.get("/")
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "img-src 'self' data:" in policy
    assert "frame-ancestors 'none'" in policy
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"


def test_it_configures_htmx_to_refuse_scripts_and_other_origins(client):
    page = client.get("/").content.decode()
    assert '"selfRequestsOnly": true' in page and '"allowScriptTags": false' in page
    assert '"allowEval": false' in page


def test_production_settings_pass_the_deploy_checks():
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.prod",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "PANEL_ID_HMAC_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_production_settings_refuse_to_start_without_secrets():
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SECRET_KEY", "PANEL_ID_HMAC_KEY"}}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings.prod"
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is required" in result.stderr


def prod_env(secret_key: str, panel_key: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.prod",
        "DJANGO_SECRET_KEY": secret_key,
        "PANEL_ID_HMAC_KEY": panel_key,
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres",
    }


def run_prod_check(secret_key: str, panel_key: str) -> subprocess.CompletedProcess:
    env = prod_env(secret_key, panel_key)
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True
    )


def example_value(name: str) -> str:
    for line in (REPO / ".env.example").read_text().splitlines():
        if line.startswith(f"{name}="):
            return line.split("=", 1)[1]
    raise AssertionError(f"{name} is not in .env.example")


@pytest.mark.parametrize("name", ["DJANGO_SECRET_KEY", "PANEL_ID_HMAC_KEY"])
def test_production_settings_refuse_the_example_secrets(name):
    """Issue 22 scenario: a copy of .env.example used as is must not run a site. Pass: exit != 0 and a
    message naming the variable and what to do."""
    keys = {"DJANGO_SECRET_KEY": secrets.token_urlsafe(50), "PANEL_ID_HMAC_KEY": secrets.token_urlsafe(50)}
    keys[name] = example_value(name)
    result = run_prod_check(keys["DJANGO_SECRET_KEY"], keys["PANEL_ID_HMAC_KEY"])
    assert result.returncode != 0
    assert f"{name} still holds the example value from .env.example" in result.stderr


@pytest.mark.parametrize("name", ["DJANGO_SECRET_KEY", "PANEL_ID_HMAC_KEY"])
def test_production_settings_refuse_a_secret_under_50_characters(name):
    keys = {"DJANGO_SECRET_KEY": secrets.token_urlsafe(50), "PANEL_ID_HMAC_KEY": secrets.token_urlsafe(50)}
    keys[name] = "x" * 49
    result = run_prod_check(keys["DJANGO_SECRET_KEY"], keys["PANEL_ID_HMAC_KEY"])
    assert result.returncode != 0
    assert f"{name} is 49 characters long; a secret needs at least 50" in result.stderr
    keys[name] = "x" * 50
    assert run_prod_check(keys["DJANGO_SECRET_KEY"], keys["PANEL_ID_HMAC_KEY"]).returncode == 0


def test_the_production_worker_imports_its_views_before_its_first_request():
    # A new gunicorn worker pays Django's lazy imports of the URL configuration and the views at start-up,
    # not in the first request it serves (half a second or more on a busy machine).
    env = prod_env(secrets.token_urlsafe(50), secrets.token_urlsafe(50))
    views = ("leaderboard.views", "leaderboard.api.views")
    loaded = f"import sys, config.wsgi; print(all(m in sys.modules for m in {views!r}))"
    result = subprocess.run([sys.executable, "-c", loaded], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.stdout.strip() == "True", result.stdout + result.stderr
