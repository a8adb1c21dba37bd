"""Settings shared by every environment. Environment-specific modules import this and override."""

from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from csp.constants import NONE, SELF

from config.env import env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"

DEBUG = False
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "csp",
    "rest_framework",
    "drf_spectacular",
    "axes",
    "raters",
    "tournaments",
    "leaderboard",
    "bench",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "config.errors.ApplicationErrorMiddleware",
    # Last, so that under /api/ errors get the API's JSON shape before the HTML error pages.
    "config.api.ApiErrorMiddleware",
    # After everything else, as django-axes requires: it answers a locked-out login itself.
    "axes.middleware.AxesMiddleware",
]

# The staff door (django-axes): failed logins are counted per account and, separately, per client
# network; either reaching the limit within the cool-off window refuses further attempts (429, with a
# page saying when to retry) until the window passes, so nobody outside can lock staff out for good.
# Every failure is kept in the admin's access-failure log for audit.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("STAFF_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("STAFF_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_CLIENT_IP_CALLABLE = "config.client_ip.client_network"
AXES_RESET_ON_SUCCESS = True
AXES_ENABLE_ACCESS_FAILURE_LOG = True
AXES_LOCKOUT_CALLABLE = "config.views.staff_locked_out"
AXES_VERBOSE = False

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]

# The admin lives away from the default path so that scanners probing /admin/ find nothing.
ADMIN_URL_PATH = env_str("DJANGO_ADMIN_PATH", "staff/admin/")

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CONTENT_TYPE_NOSNIFF = True
CSRF_FAILURE_VIEW = "config.views.csrf_failure"
# Pages load scripts, styles and images from this site only; model output can never pull in anything.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "form-action": [SELF],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
    }
}


def redis_url_with_db(url: str, db: int) -> str:
    """The same Redis server with another logical database, so cache and broker never share keys."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", parts.query, parts.fragment))


REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")

# Celery: tasks take ids, are idempotent and may be delivered twice; a killed worker's task goes back
# to the queue (acks_late + reject_on_worker_lost). The visibility timeout stays far above the longest
# task so Redis never hands a running task to a second worker.
CELERY_BROKER_URL = REDIS_URL
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# One reply may take up to about 570 s: three attempts of up to 120 s each, waits for the shared rate
# limit (30 s each) and for Retry-After (60 s at most). The limits sit above that and far below the
# visibility timeout.
CELERY_TASK_SOFT_TIME_LIMIT = 660
CELERY_TASK_TIME_LIMIT = 720
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Generation is slow network I/O; ratings have one writer so votes apply in order. Other small tasks
# (releasing abandoned quota slots) share the llm workers through the default queue.
CELERY_TASK_ROUTES = {
    "tournaments.tasks.*": {"queue": "llm"},
    "leaderboard.tasks.*": {"queue": "ratings"},
}
CELERY_TASK_DEFAULT_QUEUE = "llm"
CELERY_BEAT_SCHEDULE = {
    "reconcile-replies": {"task": "tournaments.tasks.reconcile_replies", "schedule": 60.0},
    "refill-matchmaking": {"task": "tournaments.tasks.refill_matchmaking_queues", "schedule": 20.0},
    "reconcile-ratings": {"task": "leaderboard.tasks.reconcile_ratings", "schedule": 60.0},
    "release-abandoned-slots": {"task": "tournaments.tasks.release_abandoned_slots", "schedule": 60.0},
    "scan-consensus": {"task": "tournaments.tasks.scan_consensus", "schedule": 3600.0},
    "publish-fits": {"task": "leaderboard.tasks.publish_fits", "schedule": 3600.0},
}

# Populus settings.
# Participant ids from panels are stored only as HMAC-SHA256 under this key.
PANEL_ID_HMAC_KEY = ""
# In embedded mode there is no Redis and no separate worker: tasks run in-process.
POPULUS_EMBEDDED = False
# Threads of the in-process background pool that runs tasks when there is no broker (the embedded mode);
# 0 sends tasks to Celery. See config/background.py.
POPULUS_BACKGROUND_THREADS = 0
# Per-rater throttles; the turn and vote rules already bound what a rater can do in a battle.
RATE_LIMIT_MESSAGES_PER_MINUTE = env_int("RATE_LIMIT_MESSAGES_PER_MINUTE", 12)
RATE_LIMIT_VOTES_PER_MINUTE = env_int("RATE_LIMIT_VOTES_PER_MINUTE", 10)
# Per rater-API client: participants it may enter a minute (quotas bound a study, but not one without).
RATE_LIMIT_API_ENTRIES_PER_MINUTE = env_int("RATE_LIMIT_API_ENTRIES_PER_MINUTE", 120)
# Per network: quiz answers a visitor adds to the open data (anonymous: keyed on the network fingerprint).
RATE_LIMIT_QUIZ_CONTRIBUTIONS_PER_MINUTE = env_int("RATE_LIMIT_QUIZ_CONTRIBUTIONS_PER_MINUTE", 5)
# A streaming reply's text so far is stored at most this often (seconds), for the page to show it.
REPLY_PARTIAL_WRITE_SECONDS = env_int("REPLY_PARTIAL_WRITE_MS", 300) / 1000
# A reply still "running" after this long is taken to belong to a dead worker and is retried. It must
# exceed the longest a live generation can take (see the task time limits above), or a slow reply would
# be generated, and paid for, twice.
REPLY_STALE_AFTER_SECONDS = env_int("REPLY_STALE_AFTER_SECONDS", 900)
# Public boards (leaderboard/boards.py). A group's figures are published only once this many distinct
# raters have counted votes on its board (and no published figure lets anyone derive a smaller group).
POPULUS_MIN_GROUP_RATERS = env_int("POPULUS_MIN_GROUP_RATERS", 10)
# A model with fewer counted battles than this on a board is marked provisional there.
POPULUS_PROVISIONAL_BATTLES = env_int("POPULUS_PROVISIONAL_BATTLES", 30)
# A board announces its leader only once it has counted this many battles (stats.announce): P(best)
# read again and again as the votes come in crosses the threshold by chance too often early on.
POPULUS_MIN_ANNOUNCE_BATTLES = env_int("POPULUS_MIN_ANNOUNCE_BATTLES", 300)
# A published shared rank rises from the previous snapshot's only past models that overlap it by this
# share of the board's median interval width, in percent (stats.summaries.settled_ranks): a few votes that
# nudge an interval's edge past its neighbour's, honest or rigged, do not lift a model. 0: the plain rule.
POPULUS_RANK_MARGIN_PERCENT = env_int("POPULUS_RANK_MARGIN_PERCENT", 25)

# REST API (config/api.py): JSON only, one error shape, strict pagination, anonymous reads throttled per
# address. No browsable API: its pages need scripts our CSP would have to loosen; /api/v1/docs/ is the
# browsable documentation instead.
REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["config.api_parsers.ApiJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_PAGINATION_CLASS": "config.api.ApiPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_THROTTLE_RATES": {
        "public_read": env_str("API_READ_RATE", "600/min"),
        "exports": env_str("API_EXPORT_RATE", "60/hour"),
    },
    # Proxies in front of the web server: the client address is read this many X-Forwarded-For entries
    # from the right, so a client cannot reset its throttle with a forged header (0: REMOTE_ADDR only).
    "NUM_PROXIES": env_int("DJANGO_NUM_PROXIES", 0),
    "EXCEPTION_HANDLER": "config.api.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "config.api_schema.ApiAutoSchema",
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Populus API",
    "DESCRIPTION": "Read the public leaderboards, models, head-to-head results and fit snapshots of "
    "Populus, download open data, and run battles as a programmatic rater.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    # Choice sets that share a field name with another get a name of their own.
    "ENUM_NAME_OVERRIDES": {
        "RaterStatusEnum": "raters.models.Rater.Status",
        "ModelStatusEnum": ["active", "provisional", "withdrawn"],
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.api_schema.schema_add_documentation",
    ],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
