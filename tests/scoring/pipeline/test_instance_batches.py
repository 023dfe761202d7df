"""One bubblewrap sandbox scores all of an instance's results; a batch that dies still leaves every
result with its own score or its own reason. Real bwrap, real PostgreSQL, the real stored bundle."""

from pathlib import Path

import pytest

from portal.submissions import scoring_runs
from scoring.models import InstanceScore
from scoring.sandbox import Limits, SandboxBackend, SandboxResult, get_backend
from tests.support import confirmed_run

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


class CountingBwrap(SandboxBackend):
    """The real bwrap backend, recording each command; runs `squeeze` matches get a wall clock too
    short for Python to start, so bwrap kills them exactly as it kills a runaway scorer."""

    name = "bwrap"

    def __init__(self, squeeze=lambda argv: False):  # noqa: ANN001
        self.inner = get_backend("bwrap")
        self.squeeze = squeeze
        self.commands: list[list[str]] = []

    def run(self, argv: list[str], workdir: Path, read_only_mounts: list, limits: Limits) -> SandboxResult:
        self.commands.append(argv)
        if self.squeeze(argv):
            limits = limits.replace(wall_clock_seconds=0.05)
        return self.inner.run(argv, workdir, read_only_mounts, limits)

    def python_command(self) -> list[str]:
        return self.inner.python_command()

    def runtime_mounts(self) -> list:
        return self.inner.runtime_mounts()

    def engine_commands(self, command: str) -> int:
        return sum(1 for argv in self.commands if command in argv)


def started_run(persona, results: Path, tmp_path: Path):  # noqa: ANN001, ANN201
    submission = confirmed_run(persona, results, tmp_path)
    run = scoring_runs.scoring_run_start(submission_id=str(submission.id))
    assert run is not None
    return run


def test_each_instance_is_scored_in_one_sandbox_and_only_once(submit_catalog, submitter, run_results, tmp_path):
    run = started_run(submitter, run_results["reference"], tmp_path)
    instances = scoring_runs.scoring_run_pending_instances(run)
    assert len(instances) == 2  # two tasks, four levels each
    backend = CountingBwrap()
    for instance_id in instances:
        scores = scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=instance_id, backend=backend)
        assert len(scores) == 4 and {s.entry.instance_id for s in scores} == {instance_id}
    assert backend.engine_commands("score-batch") == 2 and len(backend.commands) == 2
    scores = InstanceScore.objects.filter(scoring_run=run)
    assert scores.count() == 8
    assert all(s.percent >= 95 and s.outcome == "scored" and s.sandbox_backend == "bwrap" for s in scores)
    assert all(s.result["score_results"] for s in scores)
    # Redelivered: nothing left to score, no sandbox started, nothing stored twice.
    for instance_id in instances:
        assert scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=instance_id, backend=backend) == []
    assert len(backend.commands) == 2 and InstanceScore.objects.filter(scoring_run=run).count() == 8
    assert scoring_runs.scoring_run_pending_instances(run) == []
    assert scoring_runs.scoring_run_finalize(scoring_run_id=run.id)


def test_a_partly_scored_instance_batches_only_its_unscored_results(submit_catalog, submitter, run_results,
                                                                    tmp_path):
    run = started_run(submitter, run_results["reference"], tmp_path)
    instance_id = scoring_runs.scoring_run_pending_instances(run)[0]
    first = scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=instance_id, backend=CountingBwrap())
    kept = first[0]
    InstanceScore.objects.filter(scoring_run=run, entry__instance_id=instance_id).exclude(id=kept.id).delete()
    backend = CountingBwrap()
    again = scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=instance_id, backend=backend)
    assert len(again) == 3 and kept.entry_id not in {s.entry_id for s in again}
    assert backend.engine_commands("score-batch") == 1
    assert InstanceScore.objects.get(id=kept.id).percent == kept.percent


def test_a_killed_batch_falls_back_to_one_sandbox_per_result(submit_catalog, submitter, run_results, tmp_path):
    run = started_run(submitter, run_results["reference"], tmp_path)
    instance_id = scoring_runs.scoring_run_pending_instances(run)[0]
    backend = CountingBwrap(squeeze=lambda argv: "score-batch" in argv)
    scores = scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=instance_id, backend=backend)
    assert backend.engine_commands("score-batch") == 1 and backend.engine_commands("score") == 4
    assert len(scores) == 4 and all(s.percent >= 95 and s.outcome == "scored" for s in scores), \
        [(s.percent, s.reason) for s in scores]


def test_results_that_cannot_be_scored_each_get_their_own_reason(submit_catalog, submitter, run_results, tmp_path):
    run = started_run(submitter, run_results["reference"], tmp_path)
    instance_id = scoring_runs.scoring_run_pending_instances(run)[0]
    backend = CountingBwrap(squeeze=lambda argv: True)
    scores = scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=instance_id, backend=backend)
    assert len(scores) == 4 and len({s.entry_id for s in scores}) == 4
    for score in scores:
        assert score.outcome == "error" and score.percent == 0
        assert score.reason.startswith("the scorer was stopped: killed: wall-clock limit"), score.reason
