import importlib
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("populus")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def task_named(name: str):
    """The task registered as `name` ("app.tasks.function"), its module imported first.

    Services enqueue their tasks by name, so that a tasks module (which imports its services) and the
    services it runs never import each other.
    """
    importlib.import_module(name.rpartition(".")[0])
    return app.tasks[name]


def enqueue_on_commit(name: str, *args, **kwargs) -> None:
    """Enqueue the task `name` once the current transaction commits (at once outside a transaction)."""
    task_named(name).delay_on_commit(*args, **kwargs)
