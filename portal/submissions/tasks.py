from celery import shared_task

from portal.submissions.services import drafts_expire


@shared_task(name="portal.submissions.tasks.expire_drafts")
def expire_drafts() -> int:
    return drafts_expire()
