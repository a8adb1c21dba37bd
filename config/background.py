"""Background work for the embedded default: a small pool of threads in the web process.

The embedded mode has no broker and no worker, but a request must never wait for a language model. So
there, a task enqueued after commit (`delay_on_commit`, `delay`) is handed to this pool instead of run in
the request; the page then polls exactly as it does when Celery workers do the work. With a broker
(`POPULUS_BACKGROUND_THREADS = 0`, every setting but the embedded one) tasks go to Celery as usual.
"""

import fnmatch
import logging
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from django.db import close_old_connections, connections

logger = logging.getLogger(__name__)

# Queues whose tasks must run one at a time, as their Celery worker does (concurrency 1): the ratings
# single writer applies votes in order.
SINGLE_WRITER_QUEUES = frozenset({"ratings"})

_lock = threading.Lock()
_pools: dict[tuple[str, int], ThreadPoolExecutor] = {}


def background_pool(*, queue: str, threads: int) -> ThreadPoolExecutor:
    """The process's pool for one queue, made on first use."""
    size = 1 if queue in SINGLE_WRITER_QUEUES else threads
    with _lock:
        pool = _pools.get((queue, size))
        if pool is None:
            pool = _pools[(queue, size)] = ThreadPoolExecutor(
                max_workers=size, thread_name_prefix=f"populus-{queue}"
            )
        return pool


def task_queue(*, name: str, routes: dict[str, dict], default: str) -> str:
    """The queue CELERY_TASK_ROUTES sends a task to (glob patterns, as Celery reads them)."""
    for pattern, route in routes.items():
        if fnmatch.fnmatchcase(name, pattern):
            return route.get("queue", default)
    return default


def background_submit(*, task: Any, args: tuple, kwargs: dict, threads: int) -> Future:
    """Run a Celery task's body in a pool thread, with Celery's eager machinery (retries included)."""
    from django.conf import settings

    queue = task_queue(
        name=task.name,
        routes=getattr(settings, "CELERY_TASK_ROUTES", {}),
        default=getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery"),
    )
    task_id = str(uuid.uuid4())
    return background_pool(queue=queue, threads=threads).submit(_run, task, args, kwargs, task_id)


def _run(task: Any, args: tuple, kwargs: dict, task_id: str) -> None:
    close_old_connections()
    try:
        result = task.apply(args=args, kwargs=kwargs, task_id=task_id)
        if result.failed():
            logger.error("Background task %s failed: %r", task.name, result.result)
    finally:
        # A thread's database connection is its own; closing it keeps SQLite and PostgreSQL tidy.
        connections.close_all()
