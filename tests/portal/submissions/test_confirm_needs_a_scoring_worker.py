"""Confirm refuses, with the reason, a run that no live worker could ever score (every worker seen
lately reported no usable sandbox); with no worker alive the run is accepted and waits for one. A
scoring attempt that meets an infrastructure error says so on the run page while it is retried."""

import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from portal.errors import ServiceUnavailable
from portal.status.models import WorkerHeartbeat
from portal.submissions import services
from portal.submissions.models import Submission, SubmissionEntry
from scoring.models import ScoringRun
from scoring.sandbox.modes import BWRAP_UNPRIVILEGED, DOCKER
from tests.leaderboard.factories import make_catalog
from tests.support import OUTPUT_DIR, start_celery_worker, stop_celery_worker, wait_for

NO_USERNS = "bubblewrap cannot start a sandbox here as uid 1001: user namespaces are disabled."


@pytest.fixture
def catalog(db):
    return make_catalog()


def draft(owner, instances) -> Submission:
    submission = Submission.objects.create(owner=owner, dataset_id=instances[0].dataset_id, archive="submissions/x",
                                           archive_sha256=uuid.uuid4().hex * 2, archive_bytes=1, agent="codex",
                                           model="gpt-x", effort="high", sandbox="os",
                                           expires_at=timezone.now() + timedelta(days=1))
    SubmissionEntry.objects.bulk_create(
        SubmissionEntry(submission=submission, base_name=f"{i.instance_id}__b1__a1", instance=i, task_id=i.task_id,
                        prompt_level="b1", attempt=1, result_status="completed")
        for i in instances[:1])
    return submission


def worker(name: str, *, problem: str = "", seen_ago: timedelta = timedelta(seconds=10)) -> None:
    WorkerHeartbeat.objects.create(hostname=name, last_seen=timezone.now() - seen_ago,
                                   sandbox_mode=DOCKER if problem else BWRAP_UNPRIVILEGED, sandbox_problem=problem)


@pytest.mark.django_db
def test_when_every_live_worker_has_no_usable_sandbox_confirm_refuses_with_the_reason(
        catalog, submitter, settings, django_capture_on_commit_callbacks):
    settings.WORKER_SEEN_MINUTES = 5
    worker("a@host", problem=NO_USERNS)
    worker("b@host", problem="Docker daemon unreachable.", seen_ago=timedelta(minutes=1))
    run = draft(submitter.user, catalog["seed42"])
    with django_capture_on_commit_callbacks(execute=False) as queued, pytest.raises(ServiceUnavailable) as refused:
        services.submission_confirm(user=submitter.user, submission_id=str(run.id))
    assert not queued
    assert refused.value.status_code == 503 and refused.value.code == "no_scoring_worker"
    assert refused.value.detail == (
        "No scoring worker of this Portal can score runs right now: bubblewrap cannot start a sandbox here as uid "
        "1001: user namespaces are disabled. Your draft stays; confirm it once the Portal's operator has started a "
        "worker with a usable sandbox.")
    assert Submission.objects.get(id=run.id).status == "draft"

    client = Client()
    client.force_login(submitter.user)
    page = client.post(f"/submit/submissions/{run.id}/confirm", follow=True).content.decode()
    assert "No scoring worker of this Portal can score runs right now: bubblewrap cannot start a sandbox" in page
    assert Submission.objects.get(id=run.id).status == "draft"

    # One worker that can score is enough.
    worker("c@host")
    assert services.submission_confirm(user=submitter.user, submission_id=str(run.id)).status == "queued"


@pytest.mark.django_db
def test_with_no_worker_alive_confirm_accepts_and_says_the_run_waits_for_one(catalog, submitter, settings):
    settings.WORKER_SEEN_MINUTES = 5
    worker("gone@host", problem=NO_USERNS, seen_ago=timedelta(minutes=30))  # not alive: does not count
    run = draft(submitter.user, catalog["seed42"])
    client = Client()
    client.force_login(submitter.user)
    page = client.post(f"/submit/submissions/{run.id}/confirm", follow=True).content.decode()
    assert Submission.objects.get(id=run.id).status == "queued"
    assert "No scoring worker is running right now; it will be scored as soon as one starts." in page

    worker("able@host")
    later = draft(submitter.user, catalog["seed42"])
    page = client.post(f"/submit/submissions/{later.id}/confirm", follow=True).content.decode()
    assert "Confirmed: your run is in the scoring queue" in page  # the run page's live status says it
    assert "No scoring worker is running" not in page


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_without_a_usable_sandbox_says_so_and_its_retries_show_on_the_run_page(catalog, submitter, settings):
    """A real worker whose sandbox (here: a container engine that is not there) cannot run."""
    settings.WORKER_SEEN_MINUTES = 5
    accepted = draft(submitter.user, catalog["seed42"])
    assert services.submission_confirm(user=submitter.user, submission_id=str(accepted.id)).status == "queued"
    proc = start_celery_worker("nosandbox", concurrency=1, extra_env={
        "ASIBENCH_SANDBOX": "docker", "DOCKER_HOST": "unix:///nonexistent/engine.sock",
        "ASIBENCH_SCORING_RETRIES": "2", "ASIBENCH_SCORING_RETRY_BACKOFF": "2",
        "ASIBENCH_WORKER_HEARTBEAT_SECONDS": "1"})
    log = OUTPUT_DIR / "celery-nosandbox.log"
    try:
        beat = wait_for(lambda: WorkerHeartbeat.objects.filter(hostname__startswith="nosandbox-").first(), 60,
                        "the worker's first heartbeat")
        assert beat.sandbox_mode == DOCKER
        assert beat.sandbox_problem.startswith("Docker daemon unreachable at unix:///nonexistent/engine.sock")
        assert f"sandbox {DOCKER}: CANNOT SCORE: Docker daemon unreachable" in log.read_text()

        # The run confirmed before the worker came is tried, and the page says why while it is retried.
        note = wait_for(lambda: Submission.objects.filter(id=accepted.id, status="scoring")
                        .exclude(status_reason="").values_list("status_reason", flat=True).first(), 60,
                        "a status reason while the scoring is retried")
        assert note.startswith("Scoring attempt 1 of 3 for one instance met an infrastructure error and is retried "
                               "in about "), note
        assert "Docker daemon unreachable" in note
        wait_for(lambda: Submission.objects.get(id=accepted.id).status == "failed", 120, "the retries to run out")
        failed = Submission.objects.get(id=accepted.id)
        assert failed.status_reason.startswith("infrastructure error: Docker daemon unreachable")
        assert ScoringRun.objects.get(submission=failed).status == "failed"

        # A new Confirm is refused now: the only live worker can never score it.
        refused = draft(submitter.user, catalog["seed42"])
        client = Client()
        client.force_login(submitter.user)
        page = client.post(f"/submit/submissions/{refused.id}/confirm", follow=True).content.decode()
        assert "No scoring worker of this Portal can score runs right now: Docker daemon unreachable" in page
        assert Submission.objects.get(id=refused.id).status == "draft"
    finally:
        stop_celery_worker(proc)
