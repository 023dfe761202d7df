"""Integrity flags computed when a run is scored (the scoring pipeline's completion hook)."""

import hashlib

import pytest

from leaderboard.models import IntegrityFlag
from portal.submissions.scoring_runs import completion_hooks, scoring_run_completed_hooks
from scoring.models import Task
from tests.leaderboard.factories import RunSpec, scored_run

pytestmark = pytest.mark.django_db


def output(base: str, path: str, content: str, size: int = 10) -> dict:
    return {"path": path, "member": f"{base}.outputs/{path}", "sha256": hashlib.sha256(content.encode()).hexdigest(),
            "bytes": size}


def same_bytes(base: str, level: str) -> list[dict]:
    return [output(base, "result.json", "shared result")]


def outputs_of(**files: str):
    """Outputs whose content depends on the result and the given tag per file (`None`: not shipped)."""
    return lambda base, level: [output(base, path.replace("_", "."), f"{tag}:{base}")
                                for path, tag in files.items() if tag is not None]


def flags_of(submission) -> list[tuple[str, str]]:
    return sorted(IntegrityFlag.objects.filter(submission=submission).values_list("kind", "base_name"))


def score(submission) -> None:
    scoring_run_completed_hooks(submission.scoring_runs.get().id)


def test_the_completion_hooks_are_the_leaderboards_flags_the_owners_mail_spot_validation_and_the_regrade():
    from leaderboard import integrity_flags, owner_mail, regrade, spot_validation

    assert completion_hooks() == [integrity_flags.integrity_flags_compute_for_run, owner_mail.owner_notify_scored,
                                  spot_validation.spot_validation_compare_for_run, regrade.regrade_scoring_completed]


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
    assert flag.detail.startswith("20 result(s) with identical declared outputs")
    assert IntegrityFlag.objects.get(submission=original, other_submission=copy).kind == "duplicate_outputs"
    # The same user's rerun matches the copy (another user) but not the user's own first run.
    duplicates = IntegrityFlag.objects.filter(kind="duplicate_outputs")
    assert set(duplicates.filter(submission=own_rerun).values_list("other_submission_id", flat=True)) == {copy.id}
    score(copy)  # recomputing is idempotent
    assert duplicates.filter(submission=copy).count() == 2
    # One output for every task is itself a gate-consistency flag (leaderboard.gate_consistency).
    assert IntegrityFlag.objects.filter(submission=copy, kind="same_across_tasks").count() == 1


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


def duplicate_details(submission) -> dict:
    return dict(IntegrityFlag.objects.filter(submission=submission, kind="duplicate_outputs")
                .values_list("other_submission_id", "detail"))


def test_a_copy_of_the_declared_outputs_plus_an_extra_unscored_file_is_flagged(catalog, submitter, other_user):
    # The catalog's tasks declare result.json and curve.npy; notes.txt is nobody's output, the scorer ignores it.
    original = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"],
                                  outputs=outputs_of(result_json="A", curve_npy="A")))
    score(original)
    copy = scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"],
                              outputs=outputs_of(result_json="A", curve_npy="A", notes_txt="padding")))
    score(copy)
    assert duplicate_details(copy) == {
        original.id: "20 result(s) with identical declared outputs, e.g. biology.task_1__seed42__b1, "
                     "biology.task_1__seed42__b2, biology.task_1__seed42__b3"}
    assert original.id in duplicate_details(copy) and copy.id in duplicate_details(original)


def test_sharing_one_declared_output_file_is_flagged_even_when_the_others_differ(catalog, submitter, other_user):
    original = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"],
                                  outputs=outputs_of(result_json="A", curve_npy="A")))
    score(original)
    partial = scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"],
                                 outputs=outputs_of(result_json="B", curve_npy="A")))
    score(partial)
    detail = duplicate_details(partial)[original.id]
    assert detail.startswith("20 result(s) sharing a declared output file (curve.npy), e.g. biology.task_1__seed42__b1")
    assert "identical declared outputs" not in detail
    assert partial.id in duplicate_details(original)


def test_identical_undeclared_or_empty_files_alone_do_not_flag_a_run(catalog, submitter, other_user):
    empty = {"path": "curve.npy", "sha256": hashlib.sha256(b"").hexdigest(), "bytes": 0}

    def with_shared_extras(tag: str):
        return lambda base, level: [output(base, "result.json", f"{tag}:{base}"), output(base, "notes.txt", "same"),
                                    {**empty, "member": f"{base}.outputs/curve.npy"}]

    first = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], outputs=with_shared_extras("A")))
    second = scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"], outputs=with_shared_extras("B")))
    score(first)
    score(second)
    assert duplicate_details(first) == duplicate_details(second) == {}
