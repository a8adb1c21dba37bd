from celery import shared_task

from tournaments import matchmaking, quality, services, sessions


@shared_task
def generate_reply(reply_id: int) -> None:
    services.reply_generate(reply_id=reply_id)


@shared_task
def reconcile_replies() -> int:
    return services.replies_reconcile()


@shared_task
def refill_matchmaking_queue(tournament_id: int, group_id: int | None) -> int:
    return matchmaking.queue_refill(tournament_id=tournament_id, group_id=group_id)


@shared_task
def refill_matchmaking_queues() -> int:
    return matchmaking.queues_refill_all()


@shared_task
def judge_topic(turn_id: int) -> None:
    quality.turn_topic_judge(turn_id=turn_id)


@shared_task
def scan_consensus() -> int:
    return quality.quality_consensus_scan()


@shared_task
def release_abandoned_slots() -> int:
    return sessions.raters_release_abandoned()
