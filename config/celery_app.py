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
