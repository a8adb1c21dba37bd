import redis
from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from config.celery_app import app as celery_app


@require_safe
def home(request):
    return render(request, "home.html")


def staff_locked_out(request, response=None, credentials=None):
    """django-axes' answer to a refused staff sign-in: says how long the pause lasts, and Retry-After
    tells scripts the same."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    context = {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes}
    answer = render(request, "admin/locked_out.html", context, status=429)
    answer["Retry-After"] = str(minutes * 60)
    return answer


def csrf_failure(request, reason=""):
    context = {
        "title": "Your form expired",
        "message": "For your security this form could not be accepted (it may have been open too long). "
        "Please reload the page and try again; nothing you saved before was lost.",
    }
    return render(request, "error.html", context, status=403)


@never_cache
@require_safe
def healthz(request):
    """Liveness of the parts the site needs, as JSON; 200 only when every part is up."""
    checks = {"database": _check_database()}
    if settings.POPULUS_EMBEDDED:
        embedded = {"ok": True, "detail": "embedded mode: tasks run in the web process"}
        checks.update(redis=embedded, worker=embedded)
    else:
        checks["redis"] = _check_redis()
        # Asking workers over an unreachable broker would only hang until a timeout.
        checks["worker"] = (
            _check_worker() if checks["redis"]["ok"] else {"ok": False, "detail": "broker unreachable"}
        )
    healthy = all(check["ok"] for check in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "failing", "checks": checks}, status=200 if healthy else 503
    )


def _check_database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return {"ok": True}
    except Exception as exc:
        return {"ok": False, "detail": type(exc).__name__}


def _check_redis() -> dict:
    try:
        redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=1, socket_connect_timeout=1).ping()
        return {"ok": True}
    except redis.RedisError as exc:
        return {"ok": False, "detail": type(exc).__name__}


REQUIRED_QUEUES = ("llm", "ratings")


def _check_worker() -> dict:
    """Some worker must be consuming each queue: generation alone does not keep the leaderboard fed."""
    try:
        queues_by_worker = celery_app.control.inspect(timeout=1.0).active_queues() or {}
    except Exception as exc:
        return {"ok": False, "detail": type(exc).__name__}
    consumed = {queue["name"] for queues in queues_by_worker.values() for queue in queues}
    missing = [name for name in REQUIRED_QUEUES if name not in consumed]
    if missing:
        return {"ok": False, "detail": f"no worker consuming: {', '.join(missing)}"}
    return {"ok": True, "detail": f"{len(queues_by_worker)} worker(s) consuming {', '.join(REQUIRED_QUEUES)}"}
