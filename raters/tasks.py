from celery import shared_task

from raters import services


@shared_task
def release_abandoned_slots() -> int:
    return services.raters_release_abandoned()
