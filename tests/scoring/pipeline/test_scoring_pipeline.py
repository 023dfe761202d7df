"""A confirmed run is scored end to end by real Celery workers on Redis + PostgreSQL, in bubblewrap.

Worker deaths and duplicate deliveries never drop or double-count a score.
"""

from pathlib import Path

import pytest

from config.celery import app
from portal.submissions import services as submissions
from portal.submissions.models import Submission
from portal.submissions.scoring_tasks import scoring_run_start_task
from scoring.models import InstanceScore, ScoringRun
from tests.support import (
    SUBMIT_TASKS,
    bundle_of,
    confirmed_run,
    start_celery_worker,
    stop_celery_worker,
    wait_for,
    wait_until_scored,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
FAST_REDELIVERY = {"CELERY_VISIBILITY_TIMEOUT": "8", "CELERY_UNACKED_RESTORE_INTERVAL": "2"}


@pytest.fixture(autouse=True)
def _empty_queue():
    app.control.purge()
    yield
    app.control.purge()


def workers_idle(count: int) -> bool:
    """All `count` workers answer, none has a task running or reserved, and the queue is empty."""
    inspector = app.control.inspect(timeout=1.0)
    active, reserved = inspector.active() or {}, inspector.reserved() or {}
    if len(active) < count or len(reserved) < count:
        return False
    with app.connection_for_write() as connection:
        try:
            queued = connection.default_channel.queue_declare(app.conf.task_default_queue, passive=True).message_count
        except connection.channel_errors:  # Redis deletes an empty list: no queue means nothing queued
            queued = 0
    return queued == 0 and not any(active.values()) and not any(reserved.values())


def test_a_confirmed_reference_run_is_scored_end_to_end(
    submit_catalog, submitter, run_results, tmp_path, celery_worker_process
):
    run = confirmed_run(submitter, run_results["reference"], tmp_path)
    assert run.status == "queued"
    run = wait_until_scored(run)
    assert run.status == "scored", run.status_reason
    scoring = ScoringRun.objects.get(submission=run)
    assert scoring.status == "complete" and scoring.number == 1
    levels = scoring.aggregate["levels"]
    assert all(levels[level] >= 95 for level in ("b1", "b2", "b3", "b4")), levels
    assert scoring.aggregate["overall"] == pytest.approx(run.overall_score)
    assert set(scoring.aggregate["tasks"]) == set(SUBMIT_TASKS)
    assert set(scoring.aggregate["domains"]) == {"chemistry", "robotics"}
    scores = InstanceScore.objects.filter(scoring_run=scoring)
    assert scores.count() == run.entries.count() == 8
    for score in scores.select_related("entry__instance"):
        assert score.sandbox_backend == "bwrap"
        assert score.engine_version and score.task_revision == score.entry.instance.task_revision
        assert score.reference_sha256 == score.entry.instance.reference_sha256
        assert score.result["score_results"], "per-scorer breakdown is kept for maintainers"


def test_a_naive_run_scores_low_and_missing_levels_stay_empty(
    submit_catalog, other_user, run_results, tmp_path, celery_worker_process
):
    run = wait_until_scored(confirmed_run(other_user, run_results["naive"], tmp_path))
    assert run.status == "scored"
    aggregate = ScoringRun.objects.get(submission=run).aggregate
    assert aggregate["overall"] < 40
    assert aggregate["levels"]["b2"] is None and aggregate["levels"]["b4"] is None


def test_killing_the_worker_mid_run_still_scores_every_result_exactly_once(
    submit_catalog, submitter, run_results, tmp_path
):
    first = start_celery_worker("doomed", concurrency=1, extra_env=FAST_REDELIVERY)
    try:
        run = confirmed_run(submitter, run_results["reference"], tmp_path)
        wait_for(lambda: InstanceScore.objects.filter(scoring_run__submission=run).exists(), 120, "a first score")
        assert InstanceScore.objects.filter(scoring_run__submission=run).count() < 8
    finally:
        stop_celery_worker(first, kill=True)
    second = start_celery_worker("survivor", concurrency=2, extra_env=FAST_REDELIVERY)
    try:
        run = wait_until_scored(run, timeout=300)
    finally:
        stop_celery_worker(second)
    assert run.status == "scored"
    scoring = ScoringRun.objects.get(submission=run)
    assert InstanceScore.objects.filter(scoring_run=scoring).count() == 8
    assert scoring.aggregate["results_counted"] == 8


def test_two_workers_and_duplicate_deliveries_never_double_count(
    submit_catalog, submitter, run_results, tmp_path
):
    workers = [start_celery_worker(f"twin{i}", concurrency=2) for i in range(2)]
    try:
        run = confirmed_run(submitter, run_results["reference"], tmp_path)
        for _ in range(3):
            scoring_run_start_task.delay(str(run.id))
        run = wait_until_scored(run)
        # Every duplicate delivery must have run to its end (finding the work done) before counting.
        wait_for(lambda: workers_idle(len(workers)), 120, "the duplicate deliveries to finish")
    finally:
        for worker in workers:
            stop_celery_worker(worker)
    assert run.status == "scored"
    assert ScoringRun.objects.filter(submission=run).count() == 1
    assert InstanceScore.objects.filter(scoring_run__submission=run).count() == 8
    assert Submission.objects.get(id=run.id).status == "scored"


def tamper_outputs(results: Path, dest: Path, task_id: str, output_name: str) -> dict[str, str]:
    """Copy a results dir and replace one declared output per level with a bad file."""
    import hashlib
    import json
    import shutil

    import numpy as np

    shutil.copytree(results, dest)
    bad_files = {
        "b1": ("pickled", lambda p: np.save(p, np.array([{"evil": 1}], dtype=object), allow_pickle=True)),
        "b2": ("nan", lambda p: np.save(p, np.full(np.load(p).shape, np.nan))),
        "b3": ("shape", lambda p: np.save(p, np.zeros((1, 1)))),
        "b4": ("garbage", lambda p: p.write_bytes(b"not an npy file at all")),
    }
    kinds = {}
    for result_file in (dest / task_id).glob(f"{task_id}__seed42__b*.json"):
        level = result_file.stem.rsplit("__", 1)[1]
        kind, write_bad = bad_files[level]
        output = dest / task_id / f"{result_file.stem}.outputs" / output_name
        write_bad(output)
        data = json.loads(result_file.read_text())
        for entry in data["agent_output"]["persisted_outputs"]["files"]:
            if entry["path"] == output_name:
                entry["sha256"] = hashlib.sha256(output.read_bytes()).hexdigest()
                entry["bytes"] = output.stat().st_size
        result_file.write_text(json.dumps(data, indent=2))
        kinds[f"{task_id}__seed42__{level}"] = kind
    return kinds


def test_malformed_outputs_score_zero_with_a_reason_and_never_stall_the_run(
    submit_catalog, submitter, run_results, tmp_path, celery_worker_process
):
    task_id = "chemistry.counterpoise_cbs_energies"
    kinds = tamper_outputs(run_results["reference"], tmp_path / "tampered", task_id, "cbs_interaction.npy")
    assert len(kinds) == 4
    run = wait_until_scored(confirmed_run(submitter, tmp_path / "tampered", tmp_path))
    assert run.status == "scored"
    for score in InstanceScore.objects.filter(scoring_run__submission=run).select_related("entry"):
        if score.entry.base_name in kinds:
            assert score.percent == 0, (kinds[score.entry.base_name], score.result)
            assert score.reason, kinds[score.entry.base_name]
            assert not score.hard_gates_passed
        else:
            assert score.percent >= 95


def test_rescore_flags_and_owner_mail_through_the_real_worker(
    submit_catalog, submitter, other_user, maintainer, run_results, tmp_path
):
    """Completion hooks run in the worker: the owner is mailed, copied outputs are flagged,
    and a maintainer's rescore adds a second scoring while keeping the first."""
    from leaderboard.models import IntegrityFlag
    from leaderboard.services import run_review_rescore

    mail_dir = tmp_path / "mail"
    worker = start_celery_worker("hooks", extra_env={
        "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend", "EMAIL_FILE_PATH": str(mail_dir)})
    try:
        original = wait_until_scored(confirmed_run(submitter, run_results["reference"], tmp_path / "a"))
        copy = wait_until_scored(confirmed_run(other_user, run_results["reference"], tmp_path / "b"))
        assert original.status == copy.status == "scored"

        def flagged() -> set:
            return set(IntegrityFlag.objects.filter(kind="duplicate_outputs").values_list("submission_id", flat=True))

        # Completion hooks run in the worker after the scoring commits, so they may trail the status.
        wait_for(lambda: {copy.id, original.id} <= flagged(), 30, "both runs flagged as duplicate outputs")

        def mailed() -> str:
            return "".join(p.read_text() for p in mail_dir.glob("*.log")) if mail_dir.exists() else ""

        wait_for(lambda: submitter.email in mailed() and other_user.email in mailed(), 30, "both owner mails")
        assert "scored" in mailed().lower()

        run_review_rescore(submission_id=original.id, actor=maintainer.user, reason="engine update")
        rescored = wait_until_scored(original)
    finally:
        stop_celery_worker(worker)
    assert rescored.status == "scored"
    runs = list(ScoringRun.objects.filter(submission=original).order_by("number"))
    assert [r.number for r in runs] == [1, 2] and all(r.status == "complete" for r in runs)
    assert runs[1].requested_by_id == maintainer.user.id
    assert runs[0].aggregate["overall"] == pytest.approx(runs[1].aggregate["overall"])
    assert InstanceScore.objects.filter(scoring_run=runs[0]).count() == 8, "the earlier scoring is kept"
    assert InstanceScore.objects.filter(scoring_run=runs[1]).count() == 8


def test_an_infrastructure_failure_is_retried_then_fails_the_run_with_a_reason(
    submit_catalog, submitter, run_results, tmp_path
):
    from django.core.files.storage import default_storage

    archive = bundle_of(run_results["reference"], tmp_path / "gone.tar.gz")
    with archive.open("rb") as stream:
        draft = submissions.submission_intake(user=submitter.user, stream=stream, content_length=None).submission
    default_storage.delete(draft.archive)  # the stored bundle vanished: not the submitter's fault
    worker = start_celery_worker("infra", extra_env={"ASIBENCH_SCORING_RETRIES": "1",
                                                     "ASIBENCH_SCORING_RETRY_BACKOFF": "1"})
    try:
        submissions.submission_confirm(user=submitter.user, submission_id=str(draft.id))
        run = wait_until_scored(draft, timeout=120)
    finally:
        stop_celery_worker(worker)
    assert run.status == "failed"
    assert "could not read the stored bundle" in run.status_reason
    assert ScoringRun.objects.get(submission=run).status == "failed"
    assert not InstanceScore.objects.filter(scoring_run__submission=run).exists(), "no result is scored 0 for it"
