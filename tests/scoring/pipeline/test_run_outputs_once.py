"""A run's stored bundle is read once per worker host, not once per task group: the first group unpacks
every result's declared outputs into the host's copy, the others stage from it. Real bwrap, real
PostgreSQL, the real stored bundle."""

import pytest
from django.core.files.storage import default_storage

from portal.submissions import scoring_runs
from scoring import pipeline
from scoring.models import InstanceScore
from scoring.task_storage import scratch_root
from tests.scoring.pipeline.test_instance_batches import CountingBwrap, started_run

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def counted_opens(monkeypatch: pytest.MonkeyPatch, name: str, fail_first: int = 0) -> list[str]:
    """Every open of the stored file `name` through the storage API; the first `fail_first` break off."""
    opens: list[str] = []
    real_open = default_storage.open

    def open_counted(path, mode="rb"):  # noqa: ANN001, ANN202
        if path == name:
            opens.append(path)
            if len(opens) <= fail_first:
                raise OSError("the storage service stopped answering")
        return real_open(path, mode)

    monkeypatch.setattr(default_storage, "open", open_counted)
    return opens


def host_copies(run_id: int) -> list:
    return sorted(scratch_root().glob(f"run-outputs-{run_id}-*"))


def test_every_task_group_of_a_run_is_staged_from_one_read_of_its_bundle(submit_catalog, submitter, run_results,
                                                                        tmp_path, monkeypatch):
    run = started_run(submitter, run_results["reference"], tmp_path)
    groups = scoring_runs.scoring_run_pending_task_groups(run)
    assert len(groups) == 2
    opens = counted_opens(monkeypatch, run.submission.archive)
    for first, *more in groups:
        scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=first, more_instance_ids=more,
                                         backend=CountingBwrap())
    assert len(opens) == 1  # before: once per task group
    scores = InstanceScore.objects.filter(scoring_run=run)
    assert scores.count() == run.submission.entries.count() == 8
    assert {s.outcome for s in scores} == {InstanceScore.Outcome.SCORED}
    assert all(s.percent == pytest.approx(100.0) for s in scores), [(s.entry_id, s.percent, s.reason) for s in scores]
    assert len(host_copies(run.id)) == 1
    assert scoring_runs.scoring_run_finalize(scoring_run_id=run.id)
    assert host_copies(run.id) == []  # the finished run's copy is gone from the host


def test_a_read_that_breaks_off_leaves_no_copy_and_the_retry_reads_again(submit_catalog, submitter, run_results,
                                                                        tmp_path, monkeypatch):
    run = started_run(submitter, run_results["reference"], tmp_path)
    (first, *more), _ = scoring_runs.scoring_run_pending_task_groups(run)
    opens = counted_opens(monkeypatch, run.submission.archive, fail_first=1)
    with pytest.raises(pipeline.InfrastructureError, match="could not read the stored bundle"):
        scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=first, more_instance_ids=more,
                                         backend=CountingBwrap())
    assert not InstanceScore.objects.filter(scoring_run=run).exists()
    assert [list(copy.iterdir()) for copy in host_copies(run.id)] == [[]]  # nothing half-unpacked is kept
    scores = scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=first, more_instance_ids=more,
                                              backend=CountingBwrap())
    assert len(opens) == 2 and len(scores) == 4
    assert {s.outcome for s in scores} == {InstanceScore.Outcome.SCORED}


def test_a_run_that_failed_leaves_no_copy_on_the_host(submit_catalog, submitter, run_results, tmp_path):
    run = started_run(submitter, run_results["reference"], tmp_path)
    (first, *more), _ = scoring_runs.scoring_run_pending_task_groups(run)
    scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=first, more_instance_ids=more,
                                     backend=CountingBwrap())
    assert len(host_copies(run.id)) == 1
    scoring_runs.scoring_run_fail(scoring_run_id=run.id, reason="stopped by a maintainer")
    assert host_copies(run.id) == []
