"""Settings for the server `manage.py bench web` starts, and nothing else: production's stack (DEBUG off,
PostgreSQL with persistent connections, the Redis cache, the same middleware) on loopback HTTP, with a
trivial view beside the real ones (config/bench_urls.py) to measure them against.

Everything comes from the environment the benchmark sets: a scratch database it creates and drops, and a
cache key prefix of its own on the shared Redis.
"""

import dj_database_url

from config.env import env_str

from .base import *

SECRET_KEY = env_str("DJANGO_SECRET_KEY")
PANEL_ID_HMAC_KEY = env_str("PANEL_ID_HMAC_KEY")
DATABASES = {"default": dj_database_url.parse(env_str("DATABASE_URL"), conn_max_age=60)}
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env_str("CACHE_URL"),
        "KEY_PREFIX": env_str("CACHE_KEY_PREFIX"),
    }
}
ROOT_URLCONF = "config.bench_urls"
# The load comes from one address; throttles still run (their cache reads are part of the cost) but
# never refuse.
REST_FRAMEWORK = {
    **REST_FRAMEWORK,
    "DEFAULT_THROTTLE_RATES": {"public_read": "100000000/s", "exports": "100000000/s"},
}
LOGGING = {**LOGGING, "root": {"handlers": ["console"], "level": "WARNING"}}
