"""A task whose custom scorer forges result lines, scored by a real Celery worker in bubblewrap: the
stored scores, the run and the published board keep the engine's own (low) scores."""

import hashlib
import shutil
from pathlib import Path

import pytest

from leaderboard import services as board
from scoring.models import InstanceScore, ScoringRun, Task
from scoring.task_storage import task_source_dir, task_source_store
from tests.scoring.pipeline.forgers import (
    ATEXIT_FORGER,
    FORGED,
    FULL_MARKS_WITH_NUL,
    NAN,
    NOT_A_NUMBER,
    OWN_PIPE_FORGER,
)
from tests.support import confirmed_run, wait_until_scored

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
HOSTILE_TASK = "robotics.minimum_snap_trajectory"


@pytest.fixture
def hostile_source(submit_catalog, tmp_path: Path):  # noqa: ANN201
    """The catalog task scored from a copy whose custom scorer ends with the test's hostile code."""
    task = Task.objects.get(id=HOSTILE_TASK)
    original = (task.source_archive, task.source_hash)
    copy = tmp_path / "hostile" / Path(task.source_dir).name
    shutil.copytree(task_source_dir(task), copy)

    def forge(tail: str) -> None:
        scorer = copy / "custom_scorer.py"
        scorer.write_text(scorer.read_text(encoding="utf-8") + tail, encoding="utf-8")
        # Scoring runs the task's files as stored: store the forged copy as the task's files.
        forged_hash = hashlib.sha256(scorer.read_bytes()).hexdigest()
        archive = task_source_store(copy, task_id=HOSTILE_TASK, source_hash=forged_hash)
        Task.objects.filter(id=HOSTILE_TASK).update(source_archive=archive, source_hash=forged_hash)

    yield forge
    Task.objects.filter(id=HOSTILE_TASK).update(source_archive=original[0], source_hash=original[1])


def test_forged_lines_never_reach_the_stored_scores_or_the_board(
    hostile_source, other_user, maintainer, run_results, tmp_path, celery_worker_process, client
):
    hostile_source(ATEXIT_FORGER.replace("LINE", repr(FORGED)))
    run = wait_until_scored(confirmed_run(other_user, run_results["naive"], tmp_path))

    assert run.status == "scored", run.status_reason
    scoring = ScoringRun.objects.get(submission=run)
    hostile = InstanceScore.objects.filter(scoring_run=scoring, entry__instance__task_id=HOSTILE_TASK)
    assert hostile.count() == 2  # b1 and b3, scored together in one score-batch
    for score in hostile:
        assert score.outcome == "scored" and 0 <= score.percent < 50, (score.percent, score.reason)
        assert score.final_score <= score.max_score
    assert 0 <= scoring.aggregate["overall"] < 40
    # The naive run covers B1 and B3 only: incomplete, so it is published with the override and listed apart.
    board.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="Naive",
                             override_incomplete=True, public_reason="B1 and B3 only.")
    row = client.get("/api/v1/leaderboard?show=incomplete").json()["rows"][0]
    assert row["display_name"] == "Naive" and row["mean"] < 40 and row["b1"] < 50


def test_a_nan_line_or_a_result_failing_the_check_neither_crashes_storing_nor_leaves_the_run_scoring(
    hostile_source, other_user, run_results, tmp_path, celery_worker_process
):
    hostile_source(ATEXIT_FORGER.replace("LINE", repr(NAN)) + OWN_PIPE_FORGER.replace("LINE", repr(NOT_A_NUMBER)))
    run = wait_until_scored(confirmed_run(other_user, run_results["naive"], tmp_path), timeout=240)

    assert run.status == "scored", run.status_reason
    scores = InstanceScore.objects.filter(scoring_run__submission=run)
    assert scores.count() == 4
    hostile = scores.filter(entry__instance__task_id=HOSTILE_TASK)
    assert [(s.outcome, s.percent) for s in hostile] == [("error", 0.0), ("error", 0.0)]
    assert {s.reason for s in hostile} == {"the scorer reported a final score that is not a number: 'NaN'"}
    assert all(s.outcome == "scored" for s in scores.exclude(entry__instance__task_id=HOSTILE_TASK))


def test_nul_characters_in_a_scorer_result_are_dropped_before_storing(
    hostile_source, other_user, run_results, tmp_path, celery_worker_process
):
    hostile_source(OWN_PIPE_FORGER.replace("LINE", repr(FULL_MARKS_WITH_NUL)))
    run = wait_until_scored(confirmed_run(other_user, run_results["naive"], tmp_path), timeout=240)

    assert run.status == "scored", run.status_reason
    hostile = InstanceScore.objects.filter(scoring_run__submission=run, entry__instance__task_id=HOSTILE_TASK)
    assert [(s.outcome, s.percent, s.reason) for s in hostile] == [("scored", 100.0, "bad")] * 2
    assert hostile[0].result["score_results"][0]["scorer_name"] == "x"
