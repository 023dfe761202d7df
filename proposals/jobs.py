"""The worker side of Submit and Publish (run by `proposals.tasks`): claim the job in the database,
run it, record its outcome. The web side (`proposals.services`) queues these jobs."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from portal.errors import PortalError
from proposals import diffs, selectors
from proposals.models import Proposal, ProposalJob, ReviewEvent, Revision
from proposals.notify import author_notify
from proposals.presubmit_sandbox import validate_in_sandbox
from proposals.publishing import publish_revision
from proposals.revisions import freeze_problems, revision_freeze

logger = logging.getLogger(__name__)


def _job_claim(job_id: int, kind: str, timeout_seconds: int) -> ProposalJob | None:
    """Take a queued job, or one whose worker died long ago; None when someone else has it."""
    now = timezone.now()
    abandoned = now - timedelta(seconds=timeout_seconds + 300)
    claimed = ProposalJob.objects.filter(
        Q(status=ProposalJob.Status.QUEUED) | Q(status=ProposalJob.Status.RUNNING, started_at__lt=abandoned),
        pk=job_id, kind=kind,
    ).update(status=ProposalJob.Status.RUNNING, started_at=now)
    return ProposalJob.objects.select_related("proposal").get(pk=job_id) if claimed else None


def _job_finish(job: ProposalJob, status: str, *, problems: list[str] | None = None, outcome: str = "",
                report: dict[str, Any] | None = None) -> None:
    ProposalJob.objects.filter(pk=job.pk, status=ProposalJob.Status.RUNNING).update(
        status=status, problems=problems or [], outcome=outcome, report=report or {}, finished_at=timezone.now())


def proposal_validation_run(*, job_id: int) -> None:
    """The worker's side of Submit: validate the draft in the sandbox; freeze it if it passes."""
    job = _job_claim(job_id, ProposalJob.Kind.VALIDATE, settings.PROPOSAL_VALIDATION_TIMEOUT_SECONDS)
    if job is None:
        return
    proposal = job.proposal
    changed = ["The draft changed while it was being validated; submit again."]
    if not proposal.is_editable or proposal.snapshot != job.snapshot:
        _job_finish(job, ProposalJob.Status.FAILED, problems=changed)
        return
    try:
        report = validate_in_sandbox(proposal.task_id, list(proposal.files.values_list("path", "blob")))
    except Exception as exc:  # the author sees a reason, never a validation stuck in "running"
        logger.exception("validation job %s could not run", job.pk)
        _job_finish(job, ProposalJob.Status.FAILED, problems=[f"The validation could not run: {exc}"])
        return
    Proposal.objects.filter(pk=proposal.pk).update(last_validation=report)
    if not report["ok"]:
        failed = [f"{c['name']}: {c['summary']}" for c in report["checks"] if c.get("status") == "fail"]
        _job_finish(job, ProposalJob.Status.FAILED, problems=failed or [report["error"]], report=report)
        return
    with transaction.atomic():
        proposal = Proposal.objects.select_for_update().get(pk=proposal.pk)
        if not proposal.is_editable or proposal.snapshot != job.snapshot:
            _job_finish(job, ProposalJob.Status.FAILED, problems=changed, report=report)
            return
        problems = freeze_problems(proposal)  # e.g. another author published this task id meanwhile
        if problems:
            _job_finish(job, ProposalJob.Status.FAILED, problems=problems, report=report)
            return
        revision = revision_freeze(proposal, job.requested_by, report)
        _job_finish(job, ProposalJob.Status.PASSED, outcome=str(revision.number), report=report)
        diffs.revision_diff_queue_for(revision)  # sent once the freeze commits


@contextmanager
def _publish_lock(task_id: str) -> Iterator[None]:
    """Publishes of one task id, one at a time across workers, so the first owner check and the publish it
    guards cannot interleave with another author's. A session lock: PostgreSQL frees it if the worker dies."""
    if connection.vendor != "postgresql":  # SQLite (local development) has one writer anyway
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", [f"proposals.publish:{task_id}"])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", [f"proposals.publish:{task_id}"])


def proposal_publish_run(*, job_id: int) -> None:
    """The worker's side of Publish: all or nothing (see proposals.publishing)."""
    job = _job_claim(job_id, ProposalJob.Kind.PUBLISH, settings.GENERATION_TIMEOUT_SECONDS * 8)
    if job is None:
        return
    proposal = job.proposal
    revision = selectors.accepted_revision(proposal)
    if proposal.status != Proposal.Status.ACCEPTED or revision is None:
        _job_finish(job, ProposalJob.Status.FAILED, problems=[f"The proposal is {proposal.status}, not accepted."])
        return
    datasets, status = job.options["datasets"], job.options["status"]
    with _publish_lock(revision.fields["task_id"]):
        taken = selectors.task_id_taken_problem(task_id=revision.fields["task_id"], owner_id=proposal.owner_id)
        if taken:
            _job_finish(job, ProposalJob.Status.FAILED, problems=[taken])
            return
        _publish(job, proposal, revision, datasets, status)


def _publish(job: ProposalJob, proposal: Proposal, revision: Revision, datasets: list[str], status: str) -> None:
    try:
        version = publish_revision(revision, dataset_names=datasets, status=status)
    except PortalError as exc:
        _job_finish(job, ProposalJob.Status.FAILED, problems=[exc.detail])
        return
    except Exception as exc:
        logger.exception("publish job %s could not run", job.pk)
        _job_finish(job, ProposalJob.Status.FAILED, problems=[f"Publishing could not run: {exc}"])
        return
    with transaction.atomic():
        Proposal.objects.filter(pk=proposal.pk, status=Proposal.Status.ACCEPTED).update(
            status=Proposal.Status.PUBLISHED, published_version=version, updated_at=timezone.now())
        _job_finish(job, ProposalJob.Status.PASSED, outcome=version)
        ReviewEvent.objects.create(
            proposal=proposal, revision=revision, actor=job.requested_by, kind=ReviewEvent.Kind.PUBLISHED,
            text=f"Published as version {version} in {', '.join(datasets)}.")
        author_notify(proposal, f"Published: {proposal.task_id} v{version}",
                       f"Your task {proposal.task_id} is now in the ASI-Bench catalog as version {version} "
                       f"(datasets: {', '.join(datasets)}).")
