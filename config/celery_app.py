import importlib
import os

from celery import Celery
from celery.contrib.django.task import DjangoTask

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")


class PopulusTask(DjangoTask):
    """A Celery task that, in the embedded mode (POPULUS_BACKGROUND_THREADS > 0), runs in the web process's
    background pool instead of being sent to a broker, so no request blocks on it."""

    def apply_async(
        self,
        args=None,
        kwargs=None,
        task_id=None,
        producer=None,
        link=None,
        link_error=None,
        shadow=None,
        **options,
    ):
        from django.conf import settings

        threads = getattr(settings, "POPULUS_BACKGROUND_THREADS", 0)
        if threads > 0:
            from celery.result import AsyncResult

            from config.background import background_submit

            background_submit(task=self, args=tuple(args or ()), kwargs=dict(kwargs or {}), threads=threads)
            return AsyncResult(task_id or "embedded", app=self.app)
        return super().apply_async(args, kwargs, task_id, producer, link, link_error, shadow, **options)


app = Celery("populus", task_cls=PopulusTask)
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
