"""A task in the official legacy layout, end to end through the Portal: loaded by catalog_load (its
generator plots with matplotlib in bwrap), its reference outputs uploaded through the real intake and
confirmed, then scored by a real Celery worker in bwrap. Its custom scorer was written for the official
engine: it imports `ai4sci_bench` (the compatibility layer) and pandas, and the references earn 100."""

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from django.core.files.storage import default_storage

from config.celery import app
from contracts.bundle import build_bundle, write_archive
from portal.submissions import services as submissions
from scoring.models import Instance, InstanceScore, ScoringRun
from scoring.task_loading import catalog_load
from tests.results_tree import write_result
from tests.support import read_archive_members, wait_until_scored

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
LEGACY = Path(__file__).parents[1] / "catalog" / "official_layouts" / "physics" / "damped_fit"
TASK = "physics.damped_fit"


@pytest.fixture(autouse=True)
def _empty_queue():
    app.control.purge()
    yield
    app.control.purge()


def reference_outputs(instance: Instance) -> dict[str, bytes]:
    """What a perfect agent writes: the references under the declared output names."""
    with default_storage.open(instance.reference_archive, "rb") as handle:
        members = read_archive_members(handle.read())
    top = f"{instance.instance_id}/reference"
    buffer = io.BytesIO()
    np.save(buffer, np.load(io.BytesIO(members[f"{top}/curve_ref.npy"])))
    return {"curve.npy": buffer.getvalue(), "params.csv": members[f"{top}/params_ref.csv"]}


def test_a_legacy_layout_task_scores_its_references_100_on_a_worker(
        submitter, tmp_path, celery_worker_process):
    root = tmp_path / "tasks"
    shutil.copytree(LEGACY, root / "physics" / "damped_fit", ignore=shutil.ignore_patterns("__pycache__"))
    report = catalog_load(tasks_root=root, dataset_names=["seed42"])
    assert not report.failures, report.lines
    instance = Instance.objects.get(task_id=TASK, dataset="seed42")

    results = tmp_path / "results"
    results.mkdir()
    (results / "run_metadata.json").write_text(json.dumps({"framework_version": "0.2.0"}))
    for level in ("b1", "b2", "b3", "b4"):
        write_result(results, instance.instance_id, level, reference_outputs(instance))
    build_bundle(results, tmp_path / "bundle")
    archive = write_archive(tmp_path / "bundle", tmp_path / "bundle.tar.gz")
    with archive.open("rb") as stream:
        intake = submissions.submission_intake(user=submitter.user, stream=stream, content_length=None,
                                               filename=archive.name)
    assert intake.created and intake.submission.incomplete_instances == []
    run = submissions.submission_confirm(user=submitter.user, submission_id=str(intake.submission.id))

    run = wait_until_scored(run)
    assert run.status == "scored", run.status_reason
    scoring = ScoringRun.objects.get(submission=run)
    assert scoring.aggregate["levels"] == {level: pytest.approx(100) for level in ("b1", "b2", "b3", "b4")}
    assert InstanceScore.objects.filter(scoring_run=scoring).count() == 4
    for score in InstanceScore.objects.filter(scoring_run=scoring):
        assert score.sandbox_backend == "bwrap"
        assert score.outcome == "scored" and score.hard_gates_passed and score.percent == pytest.approx(100)
        by_scorer = {entry["scorer_name"]: entry for entry in score.result["score_results"]}
        custom = by_scorer["damped_fit_params"]  # the official-API scorer, reading both tables with pandas
        assert (custom["score"], custom["max_score"]) == (pytest.approx(60), pytest.approx(60))
        assert custom["details"]["hits"] == ["damping", "frequency"] and custom["details"]["mode"] == "infinite"
        assert len(by_scorer) == 2 and sum(e["score"] for e in by_scorer.values()) == pytest.approx(100)
