"""A run is dispatched as one scoring task per task's instances (one sandbox each), and one sandbox
never takes instances of two tasks. Real bwrap, real PostgreSQL, the real stored bundle."""

import pytest

from portal.submissions import scoring_runs
from scoring.models import Instance, InstanceScore
from tests.scoring.pipeline.test_instance_batches import CountingBwrap, started_run

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_pending_instances_are_grouped_by_task(submit_catalog, submitter, run_results, tmp_path):
    run = started_run(submitter, run_results["reference"], tmp_path)
    groups = scoring_runs.scoring_run_pending_task_groups(run)
    instances = scoring_runs.scoring_run_pending_instances(run)
    tasks = [{Instance.objects.get(instance_id=i).task_id for i in group} for group in groups]
    assert sorted(i for group in groups for i in group) == instances
    assert all(len(t) == 1 for t in tasks) and len({t.pop() for t in tasks}) == len(groups) == 2
    backend = CountingBwrap()
    first, *more = groups[0]
    scores = scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=first, more_instance_ids=more,
                                         backend=backend)
    assert len(scores) == 4 and backend.engine_commands("score-batch") == 1
    assert scoring_runs.scoring_run_pending_task_groups(run) == groups[1:]


def test_one_sandbox_refuses_instances_of_two_tasks_and_stores_nothing(submit_catalog, submitter, run_results,
                                                                        tmp_path):
    run = started_run(submitter, run_results["reference"], tmp_path)
    (a,), (b,) = scoring_runs.scoring_run_pending_task_groups(run)
    backend = CountingBwrap()
    with pytest.raises(ValueError, match="one sandbox scores the instances of one task"):
        scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=a, more_instance_ids=[b], backend=backend)
    assert backend.commands == [] and not InstanceScore.objects.filter(scoring_run=run).exists()
