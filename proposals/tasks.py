"""Thin Celery tasks: a job id in, one service call. The services claim the job in the database."""

from celery import shared_task

from proposals import services


@shared_task(name="proposals.validate_proposal", acks_late=True)
def validate_proposal(job_id: int) -> None:
    services.proposal_validation_run(job_id=job_id)


@shared_task(name="proposals.publish_proposal", acks_late=True)
def publish_proposal(job_id: int) -> None:
    services.proposal_publish_run(job_id=job_id)
