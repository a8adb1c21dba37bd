"""Settings for the test suite: real PostgreSQL and real Redis at their usual local addresses."""

import dj_database_url

from config.env import env_int, env_str

from .base import *

# Fixed values for tests only; they protect nothing.
SECRET_KEY = "test-only-key-not-used-anywhere-else-0123456789abcdefghijklmnopqrstuvwxyz"  # noqa: S105
PANEL_ID_HMAC_KEY = "test-only-panel-key"

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/populus"),
    )
}
# Two suites on one machine (say, two branches) each set their own test database and Redis databases.
DATABASES["default"]["TEST"] = {"NAME": env_str("TEST_DATABASE_NAME", "test_populus")}
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": redis_url_with_db(REDIS_URL, env_int("CACHE_REDIS_DB", 1)),
    }
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Serve static files straight from static/ without collectstatic.
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
