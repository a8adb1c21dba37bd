from celery import shared_task

from raters import services


@shared_task
def release_abandoned_slots() -> int:
    return services.raters_release_abandoned()


@shared_task
def judge_topic(turn_id: int) -> None:
    services.turn_topic_judge(turn_id=turn_id)


@shared_task
def scan_consensus() -> int:
    return services.quality_consensus_scan()
