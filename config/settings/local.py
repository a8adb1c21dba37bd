"""The embedded default: SQLite, tasks run in-process, local-memory cache. Nothing to install.

Used by the README's "run the site" command. Not for production: see prod.py.
"""

import secrets

import dj_database_url

from config.env import env_bool, env_int, env_str

from .base import *

DEBUG = env_bool("DJANGO_DEBUG", True)
POPULUS_EMBEDDED = True


def _local_secret(name: str) -> str:
    """A random secret kept in var/ (git-ignored), made on first use, so none is ever committed."""
    path = VAR_DIR / name
    if not path.exists():
        VAR_DIR.mkdir(exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = env_str("DJANGO_SECRET_KEY", "") or _local_secret("django_secret_key")
PANEL_ID_HMAC_KEY = env_str("PANEL_ID_HMAC_KEY", "") or _local_secret("panel_id_hmac_key")

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'populus.sqlite3'}"),
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # IMMEDIATE transactions take the write lock up front, so concurrent requests wait instead of
    # failing with "database is locked" when a read lock cannot be upgraded.
    # WAL lets the page's polls read while a background thread writes a reply's text.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL;",
    }

CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Background work runs in the web process, in a small pool of threads handed each task after the
# request's transaction commits, so no request waits for a model (config/background.py). With
# POPULUS_BACKGROUND_THREADS=0 tasks run eagerly inside the request instead.
POPULUS_BACKGROUND_THREADS = env_int("POPULUS_BACKGROUND_THREADS", 4)
CELERY_TASK_ALWAYS_EAGER = True
CELERY_BROKER_URL = "memory://"

# Serve static files straight from static/ without collectstatic.
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
