from celery import shared_task

from tournaments import services


@shared_task
def generate_reply(reply_id: int) -> None:
    services.reply_generate(reply_id=reply_id)


@shared_task
def reconcile_replies() -> int:
    return services.replies_reconcile()
