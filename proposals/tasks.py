"""Thin Celery tasks: a job id in, one call of `proposals.jobs`, which claims the job in the database."""

from celery import shared_task

from proposals import diffs, jobs


@shared_task(name="proposals.validate_proposal", acks_late=True)
def proposal_validation_run_task(job_id: int) -> None:
    jobs.proposal_validation_run(job_id=job_id)


@shared_task(name="proposals.publish_proposal", acks_late=True)
def proposal_publish_run_task(job_id: int) -> None:
    jobs.proposal_publish_run(job_id=job_id)


@shared_task(name=diffs.DIFF_TASK, acks_late=True)
def revision_diff_task(old_id: int, new_id: int) -> None:
    diffs.revision_diff_store(old_id=old_id, new_id=new_id)
