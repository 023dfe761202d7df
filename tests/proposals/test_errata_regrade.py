"""Issue 37 end to end, with a real Celery worker and the bubblewrap sandbox: a published task carries a
deliberate scorer bug (an entry left out of the pre-submit self-check, whose thresholds no output can meet),
so its reference solution no longer scores 100. The beat job's check catches it, an erratum opens (private
until a maintainer confirms it), a fixed revision goes through the proposals' review and publication, the
board's runs are re-graded against it in the background keeping the old scores, the board shows the change
until a maintainer acknowledges it, and the moderation log records erratum, revision and re-grade."""

import hashlib
import io
import json

import numpy as np
import pytest
from django.core.cache import cache
from django.test import Client

from leaderboard import services as board
from leaderboard.models import LeaderboardEntry, ModerationEvent
from portal.submissions import scoring_runs
from portal.submissions import services as submissions
from portal.submissions.models import Submission
from proposals import services
from proposals.files import IncomingFile
from scoring.models import Dataset, Erratum, Instance, InstanceScore, ScoringRun, Task, TaskHealthCheck
from scoring.task_storage import reference_extract
from scoring.tasks import task_health_checks_schedule_task
from tests.proposals.proposal_support import finished_job, task_files
from tests.results_tree import write_result
from tests.support import bundle_of, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("clean_proposal_storage", "proposal_worker")]
TASK = "physics.toy_spectrum"
INSTANCE = f"{TASK}__seed42"
# The bug: a second numerical entry skipped by the self-check, with thresholds no output can meet.
BUGGY_ENTRY = """  scoring:
    - scorer: numerical
      weight: 100
      skip_in_gt_selfcheck: true
      config:
        metric: relative_l2
        pred_file: eigenvalues.npy
        ref_file: eigenvalues_ref.npy
        scoring: linear_interpolation
        full_score_threshold: -1
        zero_score_threshold: 0
"""
FIXED_ENTRY = BUGGY_ENTRY.replace("full_score_threshold: -1", "full_score_threshold: 0.000001").replace(
    "zero_score_threshold: 0\n", "zero_score_threshold: 0.1\n")


def incoming(files: dict[str, bytes]) -> list[IncomingFile]:
    return [IncomingFile(n, io.BytesIO(d), len(d), hashlib.sha256(d).hexdigest()) for n, d in files.items()]


def with_entry(files: dict[str, bytes], entry: str) -> dict[str, bytes]:
    text = files["task_eval.yaml"].decode()
    assert "  scoring:\n" in text
    return {**files, "task_eval.yaml": text.replace("  scoring:\n", entry, 1).encode()}


def publish(author, maintainer, files: dict[str, bytes]) -> Task:
    """One revision through the proposals' path: sync, pre-submit validation, review, publication."""
    proposal = services.proposal_cli_open(owner=author.user, task_id=TASK, name="Toy", domain="physics",
                                          subdomain=None).proposal
    services.proposal_files_sync(user=author.user, proposal_id=proposal.id, files=incoming(files),
                                 base_snapshot=proposal.snapshot, force=False)
    job = finished_job(services.proposal_submit(user=author.user, proposal_id=proposal.id))
    assert job.status == "passed", job.problems
    services.proposal_decide(maintainer=maintainer.user, proposal_id=proposal.id, revision_number=1,
                             decision="accept", reason="Sound.")
    job = finished_job(services.proposal_publish(maintainer=maintainer.user, proposal_id=proposal.id,
                                                 dataset_names=["seed42", "seed31415"], status="final"))
    assert job.status == "passed", job.problems
    return Task.objects.get(id=TASK)


def published_run(persona, maintainer, reference, tmp_path, scale: float, name: str) -> LeaderboardEntry:
    """A run of every level whose eigenvalues are the reference's times `scale`, scored and published."""
    results = tmp_path / name
    results.mkdir()
    (results / "run_metadata.json").write_text(json.dumps({"framework_version": "0.2.0"}))
    buffer = io.BytesIO()
    np.save(buffer, np.load(reference / "eigenvalues_ref.npy") * scale)
    params = Instance.objects.get(instance_id=INSTANCE).params
    for level in ("b1", "b2", "b3", "b4"):
        base = write_result(results, INSTANCE, level, {"eigenvalues.npy": buffer.getvalue(), "solve.py": b"print(1)\n"})
        record = json.loads((results / TASK / f"{base}.json").read_text())
        (results / TASK / f"{base}.json").write_text(json.dumps({**record, "parameters": params}))
    (tmp_path / "bundles").mkdir(exist_ok=True)
    archive = bundle_of(results, tmp_path / "bundles" / f"{name}.tar.gz")
    with archive.open("rb") as stream:
        intake = submissions.submission_intake(user=persona.user, stream=stream, content_length=None,
                                               filename=archive.name)
    submission = intake.submission
    Submission.objects.filter(id=submission.id).update(status=Submission.Status.QUEUED)
    run = scoring_runs.scoring_run_start(submission_id=str(submission.id))
    scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=INSTANCE)
    assert scoring_runs.scoring_run_finalize(scoring_run_id=run.id)
    return board.run_review_publish(submission_id=submission.id, actor=maintainer.user, display_name=name)


def test_a_scorer_bug_is_caught_fixed_through_review_and_the_board_regraded(
        submitter, other_user, maintainer, task_dir, tmp_path, settings):
    settings.TASKS_DIR = tmp_path / "repo_tasks"  # keep the repository catalog out of this
    settings.TASKS_DIR.mkdir()
    files = task_files(task_dir)
    task = publish(submitter, maintainer, with_entry(files, BUGGY_ENTRY))
    assert task.revision == 1
    reference = reference_extract(Instance.objects.get(instance_id=INSTANCE), tmp_path / "private")
    exact = published_run(submitter, maintainer, reference, tmp_path, 1.0, "Exact")
    close = published_run(other_user, maintainer, reference, tmp_path, 1.04, "Close")
    assert (exact.mean, round(close.mean, 1)) == (50.0, 30.0)  # the bug costs every run its second half

    # The weekly beat job queues a check of every task; the worker runs it and the bug shows.
    assert task_health_checks_schedule_task() == 1
    wait_for(lambda: Erratum.objects.exists(), 300, "the health checks and the erratum they open")
    checks = TaskHealthCheck.objects.filter(task_id=TASK)
    assert {c.outcome for c in checks} == {"failing"} and {c.trigger for c in checks} == {"schedule"}
    assert "the reference solution scored 50 (not 100) at B1, B2, B3, B4" in checks[0].reason
    erratum = Erratum.objects.get(task_id=TASK)
    assert erratum.status == "open" and not ModerationEvent.objects.filter(task_id=TASK).exists()
    visitor, staff = Client(), Client()
    staff.force_login(maintainer.user)
    assert "reference solution scored 50" not in visitor.get(f"/tasks/{TASK}/").content.decode()
    staff.post(f"/tasks/{TASK}/errata/{erratum.id}/confirm", {"confirmed": "yes"})
    assert "reference solution scored 50" in visitor.get(f"/tasks/{TASK}/").content.decode()

    # The fix: a new frozen revision by the same author, reviewed and published.
    versions = dict(Dataset.objects.values_list("name", "version"))
    fixed = publish(submitter, maintainer, with_entry(files, FIXED_ENTRY))
    assert fixed.revision == 2
    assert all(Dataset.objects.get(name=n).version == v + 1 for n, v in versions.items())
    assert f"Version {versions['seed42'] + 1}:" in Client().get("/datasets/seed42/").content.decode()
    assert Erratum.objects.get(id=erratum.id).status == "resolved"
    assert Erratum.objects.get(id=erratum.id).resolved_revision == 2
    wait_for(lambda: all(e.regrade.get("state") == "regraded" for e in LeaderboardEntry.objects.all()), 300,
             "the re-grade")
    exact, close = LeaderboardEntry.objects.get(id=exact.id), LeaderboardEntry.objects.get(id=close.id)
    assert (exact.mean, round(close.mean, 1)) == (100.0, 60.0)
    assert exact.regrade["mean_before"] == 50.0 and exact.regrade["rank_before"] == 1
    assert exact.provenance["task_revisions"] == {TASK: 2}
    # The old scores are kept: the first scoring run and its scores are untouched.
    first = ScoringRun.objects.get(submission_id=exact.submission_id, number=1)
    assert {s.percent for s in InstanceScore.objects.filter(scoring_run=first)} == {50.0}
    assert {s.task_revision for s in InstanceScore.objects.filter(scoring_run=exact.scoring_run)} == {2}

    cache.clear()
    page = visitor.get("/leaderboard/?dataset=seed42").content.decode()
    assert "re-graded: mean 50.0 → 100.0" in page and "re-graded: mean 30.0 → 60.0" in page
    assert "scored on an older revision" not in page
    log = visitor.get("/leaderboard/moderation").content.decode()
    for kind in ("erratum", "task_rev", "regrade"):
        assert f'data-testid="moderation-{kind}"' in log, kind
    assert ModerationEvent.objects.filter(kind="regrade").count() == 2

    staff.post(f"/leaderboard/entries/{exact.id}/regrade/acknowledge")
    staff.post(f"/leaderboard/entries/{close.id}/regrade/acknowledge")
    page = visitor.get("/leaderboard/?dataset=seed42").content.decode()
    assert "re-graded" not in page and LeaderboardEntry.objects.get(id=exact.id).regrade == {}

    # The fixed revision is healthy.
    TaskHealthCheck.objects.all().delete()
    task_health_checks_schedule_task()
    wait_for(lambda: TaskHealthCheck.objects.exclude(outcome="running").count() == 2, 300, "the health checks")
    assert {c.outcome for c in TaskHealthCheck.objects.all()} == {"healthy"}
