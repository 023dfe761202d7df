"""Issue 32, through a real Celery worker in bubblewrap: a scorer that crashes is an evaluation error, shown as
invalid and never counted as 0; the run is incomplete, so it is not ranked and publishing it needs the
override."""

import pytest

from leaderboard import services as board
from portal.errors import Conflict
from scoring.models import InstanceScore, ScoringRun
from tests.scoring.pipeline.test_forged_results_end_to_end import HOSTILE_TASK, hostile_source  # noqa: F401
from tests.support import confirmed_run, wait_until_scored

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CRASH = "\nimport os\nos._exit(3)\n"


def test_a_crashing_scorer_is_an_invalid_result_never_a_zero(hostile_source, other_user, maintainer,  # noqa: F811
                                                               run_results, tmp_path, celery_worker_process, client):
    hostile_source(CRASH)
    run = wait_until_scored(confirmed_run(other_user, run_results["naive"], tmp_path), timeout=240)
    assert run.status == "scored", run.status_reason
    scoring = ScoringRun.objects.get(submission=run)
    crashed = InstanceScore.objects.filter(scoring_run=scoring, entry__instance__task_id=HOSTILE_TASK)
    assert crashed.count() == 2 and all(s.outcome == "error" for s in crashed)
    valid = InstanceScore.objects.filter(scoring_run=scoring).exclude(entry__instance__task_id=HOSTILE_TASK)
    coverage = scoring.aggregate["coverage"]
    assert coverage["outcomes"].get("evaluation_error") == 2 and coverage["invalid"] == 2
    assert coverage["complete"] is False
    # The figures are the valid results' alone: the crashed ones are not averaged in as zeros.
    assert scoring.aggregate["results_counted"] == valid.count()
    assert HOSTILE_TASK not in scoring.aggregate["tasks"]
    expected = round(sum(s.percent for s in valid) / valid.count(), 4)
    assert scoring.aggregate["overall"] == pytest.approx(expected, abs=1e-3)

    with pytest.raises(Conflict, match="This run is incomplete"):
        board.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="Naive")
    board.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="Naive",
                             override_incomplete=True, public_reason="Scorer crash under investigation.")
    assert client.get("/api/v1/leaderboard").json()["rows"] == []
    [row] = client.get("/api/v1/leaderboard?show=incomplete").json()["rows"]
    assert row["rank"] is None and row["coverage"]["invalid"] == 2
