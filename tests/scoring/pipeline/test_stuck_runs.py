"""Runs never stick: the beat reaper re-queues (then fails, with a reason) a run that scores too long,
and a maintainer can re-queue a stuck run from the review page. Real Celery worker, Redis, bwrap."""

import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from portal.celery import app
from portal.submissions import scoring_runs
from portal.submissions import services as submissions
from portal.submissions.models import Submission
from portal.submissions.tasks import reap_stuck_runs
from scoring.models import ScoringRun
from tests.support import bundle_of, start_celery_worker, stop_celery_worker

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
STUCK_AFTER = 5  # seconds, for the worker under test


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
                                                    "ASIBENCH_SCORING_STUCK_REQUEUES": str(requeues)})


def status_of(run: Submission) -> str:
    return Submission.objects.get(id=run.id).status


def test_the_reaper_is_on_the_beat_schedule():
    entry = settings.CELERY_BEAT_SCHEDULE["reap-stuck-scoring"]
    assert entry["task"] == reap_stuck_runs.name
    assert entry["schedule"] == settings.SCORING_REAPER_INTERVAL


def test_a_stuck_run_is_requeued_by_the_reaper_and_then_scored(submit_catalog, submitter, run_results, tmp_path):
    run = stuck_run(submitter, run_results["reference"], tmp_path)
    assert run.status == "scoring"
    worker = reaper_worker()
    try:
        assert reap_stuck_runs.delay().get(timeout=60) == {"requeued": 1, "failed": 0, "resent": 0}
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
        assert reap_stuck_runs.delay().get(timeout=60) == {"requeued": 0, "failed": 1, "resent": 0}
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


def test_a_queued_run_whose_message_was_lost_is_sent_again(submit_catalog, submitter, run_results, tmp_path):
    archive = bundle_of(run_results["reference"], tmp_path / "run.tar.gz")
    with archive.open("rb") as stream:
        draft = submissions.submission_intake(user=submitter.user, stream=stream, content_length=None,
                                              filename=archive.name).submission
    submissions.submission_confirm(user=submitter.user, submission_id=str(draft.id))
    app.control.purge()  # the confirm's message is lost
    Submission.objects.filter(id=draft.id).update(confirmed_at=timezone.now() - timedelta(seconds=STUCK_AFTER + 1))
    worker = reaper_worker()
    try:
        assert reap_stuck_runs.delay().get(timeout=60)["resent"] == 1
        wait_for(lambda: status_of(draft) in ("scored", "failed"), 300, "the queued run to be scored")
    finally:
        stop_celery_worker(worker)
    assert status_of(draft) == "scored"
