"""Runs never stick: the beat reaper re-queues (then fails, with a reason) a run that scores too long,
and a maintainer can re-queue a stuck run from the review page. Real Celery worker, Redis, bwrap."""

import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from config.celery import app
from portal.submissions import scoring_runs
from portal.submissions import services as submissions
from portal.submissions.models import Submission
from portal.submissions.reaper import stuck_runs_reap
from portal.submissions.tasks import stuck_runs_reap_task
from scoring.models import ScoringRun
from tests.support import REPO, bundle_of, start_celery_worker, stop_celery_worker

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
STUCK_AFTER = 5  # seconds, for the worker under test
RESEND_AFTER = 2  # seconds a queued run may wait unstarted, for the worker under test


@pytest.fixture(autouse=True)
def _empty_queue():
    app.control.purge()
    yield
    app.control.purge()


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def stuck_run(persona, results: Path, tmp_path: Path) -> Submission:
    """A confirmed run whose scoring started and then lost every message (a worker died with them)."""
    archive = bundle_of(results, tmp_path / "run.tar.gz")
    with archive.open("rb") as stream:
        draft = submissions.submission_intake(user=persona.user, stream=stream, content_length=None,
                                              filename=archive.name).submission
    submissions.submission_confirm(user=persona.user, submission_id=str(draft.id))
    run = scoring_runs.scoring_run_start(submission_id=str(draft.id))  # claimed as a worker would...
    assert run is not None
    app.control.purge()  # ...and then every message is gone: nothing will ever move this run
    ScoringRun.objects.filter(id=run.id).update(created_at=timezone.now() - timedelta(seconds=STUCK_AFTER + 1))
    Submission.objects.filter(id=draft.id).update(confirmed_at=timezone.now() - timedelta(seconds=STUCK_AFTER + 1))
    return Submission.objects.get(id=draft.id)


def reaper_worker(requeues: int = 1):
    return start_celery_worker("reaper", extra_env={"ASIBENCH_SCORING_STUCK_AFTER": str(STUCK_AFTER),
                                                    "ASIBENCH_SCORING_STUCK_REQUEUES": str(requeues),
                                                    "ASIBENCH_SCORING_QUEUED_RESEND_AFTER": str(RESEND_AFTER)})


def queued_run(persona, results: Path, tmp_path: Path) -> Submission:
    """A confirmed run whose message is gone (lost by the broker, or its task died before it started)."""
    archive = bundle_of(results, tmp_path / "run.tar.gz")
    with archive.open("rb") as stream:
        draft = submissions.submission_intake(user=persona.user, stream=stream, content_length=None,
                                              filename=archive.name).submission
    submissions.submission_confirm(user=persona.user, submission_id=str(draft.id))
    app.control.purge()
    return Submission.objects.get(id=draft.id)


def status_of(run: Submission) -> str:
    return Submission.objects.get(id=run.id).status


def test_the_reaper_is_on_the_beat_schedule_often_enough_to_resend_within_minutes():
    entry = settings.CELERY_BEAT_SCHEDULE["reap-stuck-scoring"]
    assert entry["task"] == stuck_runs_reap_task.name
    assert entry["schedule"] == settings.SCORING_REAPER_INTERVAL
    # A lost queued run is sent again within minutes, not after SCORING_STUCK_SECONDS (hours).
    assert settings.SCORING_QUEUED_RESEND_SECONDS + settings.SCORING_REAPER_INTERVAL <= 5 * 60
    assert settings.SCORING_QUEUED_RESEND_SECONDS < settings.SCORING_STUCK_SECONDS
    # `make run` runs beat beside its worker.
    assert '"$VENV/celery" -A config beat' in (REPO / "scripts" / "run-portal.sh").read_text()


def test_a_stuck_run_is_requeued_by_the_reaper_and_then_scored(submit_catalog, submitter, run_results, tmp_path):
    run = stuck_run(submitter, run_results["reference"], tmp_path)
    assert run.status == "scoring"
    worker = reaper_worker()
    try:
        assert stuck_runs_reap_task.delay().get(timeout=60) == {"requeued": 1, "failed": 0, "resent": 0}
        wait_for(lambda: status_of(run) in ("scored", "failed"), 300, "the re-queued run to be scored")
    finally:
        stop_celery_worker(worker)
    run.refresh_from_db()
    assert run.status == "scored", run.status_reason
    first, second = ScoringRun.objects.filter(submission=run).order_by("number")
    assert first.status == "failed" and first.reason.startswith("stuck: scoring run did not finish within 5 s")
    assert second.status == "complete" and second.aggregate["overall"] == pytest.approx(run.overall_score)


def test_a_run_that_sticks_again_fails_with_a_reason_and_a_maintainer_requeues_it(
    submit_catalog, submitter, maintainer, run_results, tmp_path
):
    run = stuck_run(submitter, run_results["reference"], tmp_path)
    worker = reaper_worker(requeues=0)
    try:
        assert stuck_runs_reap_task.delay().get(timeout=60) == {"requeued": 0, "failed": 1, "resent": 0}
        run.refresh_from_db()
        assert run.status == "failed"
        assert run.status_reason == ("stuck: scoring did not finish within 5 s after 1 tries; "
                                     "a maintainer can re-queue it")
        assert ScoringRun.objects.get(submission=run).status == "failed"
        # Stuck again in scoring (claimed, messages lost); the maintainer re-queues it from the review page.
        Submission.objects.filter(id=run.id).update(status="queued")
        assert scoring_runs.scoring_run_start(submission_id=str(run.id)) is not None
        app.control.purge()
        reviewer = Client()
        reviewer.force_login(maintainer.user)
        page = reviewer.get(f"/leaderboard/review/{run.id}/").content.decode()
        assert 'data-testid="requeue"' in page
        reviewer.post(f"/leaderboard/review/{run.id}/rescore", {"reason": "worker lost"})
        wait_for(lambda: status_of(run) in ("scored", "failed"), 300, "the re-queued run to be scored")
    finally:
        stop_celery_worker(worker)
    run.refresh_from_db()
    assert run.status == "scored", run.status_reason
    runs = list(ScoringRun.objects.filter(submission=run).order_by("number").values_list("status", "reason"))
    assert runs[1] == ("failed", "re-queued by a maintainer (worker lost)")
    assert runs[2][0] == "complete" and len(runs) == 3


def test_a_queued_run_whose_message_was_lost_is_sent_again_within_minutes_and_says_so(
    submit_catalog, submitter, run_results, tmp_path
):
    draft = queued_run(submitter, run_results["reference"], tmp_path)
    # Sent moments ago (default threshold: minutes): it may still be on its way to a worker.
    assert stuck_runs_reap()["resent"] == 0
    worker = reaper_worker()  # RESEND_AFTER seconds, far below SCORING_STUCK_AFTER's default of hours
    try:
        time.sleep(RESEND_AFTER + 1)
        assert stuck_runs_reap_task.delay().get(timeout=60)["resent"] == 1
        wait_for(lambda: status_of(draft) in ("scored", "failed"), 300, "the queued run to be scored")
    finally:
        stop_celery_worker(worker)
    assert status_of(draft) == "scored"


def test_a_queued_run_waiting_behind_a_scoring_run_is_not_sent_twice(submit_catalog, submitter, other_user,
                                                                     run_results, tmp_path, settings):
    settings.SCORING_QUEUED_RESEND_SECONDS = 1
    ahead = queued_run(submitter, run_results["reference"], tmp_path / "a")
    behind = queued_run(other_user, run_results["naive"], tmp_path / "b")
    assert scoring_runs.scoring_run_start(submission_id=str(ahead.id)) is not None  # a worker is busy with it
    later = timezone.now() + timedelta(seconds=5)
    assert stuck_runs_reap(now=later)["resent"] == 0  # in line behind the busy worker: its message is live
    # A run sent after it started first: its own message was lost.
    Submission.objects.filter(id=ahead.id).update(enqueued_at=Submission.objects.get(id=behind.id).enqueued_at
                                                  + timedelta(milliseconds=1))
    assert stuck_runs_reap(now=later)["resent"] == 1
    app.control.purge()
    owner = Client()
    owner.force_login(other_user.user)
    page = owner.get(f"/submit/submissions/{behind.id}").content.decode()
    assert f"Re-sent to the scoring queue at {later:%Y-%m-%d %H:%M} UTC: no worker had started it within 1 s" in page
    assert 'data-testid="queue-position"' in page
