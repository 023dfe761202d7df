"""Integrity flags computed when a run is scored (the scoring pipeline's completion hook)."""

import pytest

from leaderboard.models import IntegrityFlag
from portal.submissions.scoring_runs import COMPLETION_HOOKS, scoring_run_completed_hooks
from scoring.models import Task
from tests.leaderboard.factories import RunSpec, scored_run

pytestmark = pytest.mark.django_db


def same_bytes(base: str, level: str) -> list[dict]:
    return [{"path": "result.json", "member": f"{base}.outputs/result.json", "sha256": "c0ffee" * 10 + "abcd",
             "bytes": 10}]


def flags_of(submission) -> list[tuple[str, str]]:
    return sorted(IntegrityFlag.objects.filter(submission=submission).values_list("kind", "base_name"))


def score(submission) -> None:
    scoring_run_completed_hooks(submission.scoring_runs.get().id)


def test_the_hooks_are_registered():
    names = {hook.__name__ for hook in COMPLETION_HOOKS}
    assert {"integrity_flags_compute_for_run", "owner_notify_scored"} <= names


def test_a_clean_run_has_no_flags(catalog, submitter):
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))
    score(run)
    assert flags_of(run) == []


def test_outputs_identical_to_another_users_run_flag_both_runs(catalog, submitter, other_user):
    original = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], outputs=same_bytes))
    score(original)
    copy = scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"], outputs=same_bytes))
    own_rerun = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], outputs=same_bytes))
    score(copy)
    score(own_rerun)
    flag = IntegrityFlag.objects.get(submission=copy, other_submission=original)
    assert flag.kind == "duplicate_outputs" and flag.base_name == ""
    assert flag.detail.startswith("20 result(s) byte-identical")
    assert IntegrityFlag.objects.get(submission=original, other_submission=copy).kind == "duplicate_outputs"
    # The same user's rerun matches the copy (another user) but not the user's own first run.
    assert set(IntegrityFlag.objects.filter(submission=own_rerun).values_list("other_submission_id", flat=True)) == {
        copy.id}
    score(copy)  # recomputing is idempotent
    assert IntegrityFlag.objects.filter(submission=copy).count() == 2


def test_scores_from_an_older_task_revision_are_flagged(catalog, submitter):
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))
    Task.objects.filter(id="chemistry.task_1").update(revision=2)
    score(run)
    flags = IntegrityFlag.objects.filter(submission=run)
    assert sorted(f.base_name for f in flags) == [f"chemistry.task_1__seed42__{lv}" for lv in ("b1", "b2", "b3", "b4")]
    assert {f.kind for f in flags} == {"stale_task_revision"}
    assert flags[0].detail == "scored against task revision 1; the current revision is 2"


def test_provenance_against_the_sandbox_policy_is_flagged(catalog, submitter):
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"][:1],
                             provenance={"sandbox": {"requested_mode": "none", "effective_mode": "none"}}))
    score(run)
    flags = IntegrityFlag.objects.filter(submission=run)
    assert len(flags) == 4 and {f.kind for f in flags} == {"sandbox_policy"}
    assert "sandbox mode 'none' is not accepted for this dataset (accepted: linux_ns, os)" in flags[0].detail


def test_timed_out_results_with_outputs_are_flagged(catalog, submitter):
    base = f"{catalog['seed42'][0].instance_id}__b3"
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], timed_out_with_outputs={base}))
    score(run)
    assert flags_of(run) == [("timed_out_outputs", base)]
