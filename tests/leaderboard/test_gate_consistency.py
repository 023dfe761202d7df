"""Gate consistency (issue 32): each anomaly of hard-gate passes and failures becomes an integrity flag with its
evidence when a run is scored, and is not raised where the pattern is ordinary."""

import hashlib
from collections.abc import Callable

import pytest
from django.test import Client

from leaderboard.models import IntegrityFlag
from portal.submissions.models import Submission
from portal.submissions.scoring_runs import scoring_run_completed_hooks
from scoring.models import InstanceScore, Task
from tests.leaderboard.factories import RunSpec, scored_run

pytestmark = pytest.mark.django_db


def output(base: str, content: str) -> list[dict]:
    return [{"path": "result.json", "member": f"{base}.outputs/result.json",
             "sha256": hashlib.sha256(content.encode()).hexdigest(), "bytes": 10}]


def gated(passes: Callable[[str, str], bool], checks: Callable[[str, str], bool] = lambda t, lv: True):
    """Results whose gate passes and scored check pass as given per (task, level)."""
    def write(run: Submission) -> None:
        for score in InstanceScore.objects.filter(scoring_run__submission=run).select_related("entry"):
            task, level = score.entry.task_id, score.entry.prompt_level
            gate = passes(task, level)
            score.hard_gates_passed = gate
            score.result = {"gate_results": [{"scorer_name": "file_exists", "passed": gate, "score": 0,
                                              "max_score": 0}],
                            "score_results": [{"scorer_name": "rmse", "passed": checks(task, level),
                                               "score": 10, "max_score": 10}]}
            score.save(update_fields=["hard_gates_passed", "result"])
    return write


def flagged(run: Submission, gates: Callable[[Submission], None]) -> dict[str, list[IntegrityFlag]]:
    gates(run)
    scoring_run_completed_hooks(run.scoring_runs.get().id)
    found: dict[str, list[IntegrityFlag]] = {}
    for flag in IntegrityFlag.objects.filter(submission=run):
        found.setdefault(flag.kind, []).append(flag)
    return found


def test_a_clean_run_with_ordinary_gates_raises_none(catalog, submitter):
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))
    assert flagged(run, gated(lambda t, lv: lv != "b4", lambda t, lv: lv == "b1")) == {}


def test_identical_outputs_that_pass_the_gates_at_one_level_and_fail_them_at_another_are_flagged(catalog, submitter):
    same = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"],
                              outputs=lambda base, level: output(base, base.rsplit("__", 1)[0])))
    flags = flagged(same, gated(lambda t, lv: not (t == "math.task_1" and lv == "b3")))
    [flag] = flags["gate_inconsistent"]
    assert flag.base_name == "math.task_1__seed42__b3"
    assert "of math.task_1__seed42 pass the hard gates in math.task_1__seed42__b1, math.task_1__seed42__b2, " \
           "math.task_1__seed42__b4 and fail them in math.task_1__seed42__b3" in flag.detail
    # Different outputs that pass at one level and fail at another are ordinary.
    other = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], model="other"))
    assert "gate_inconsistent" not in flagged(other, gated(lambda t, lv: lv != "b3"))


def test_outputs_identical_across_levels_are_flagged_only_where_the_task_forbids_it(catalog, submitter):
    Task.objects.filter(id="chemistry.task_1").update(public_meta={"review": {"outputs_vary_by_level": True}})
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"],
                             outputs=lambda base, level: output(base, base.rsplit("__", 1)[0])))
    flags = flagged(run, gated(lambda t, lv: True))
    assert [f.detail for f in flags["same_across_levels"]] == [
        "chemistry.task_1: identical outputs at b1, b2, b3, b4, though the task requires outputs that differ by level"]
    assert "gate_inconsistent" not in flags and "same_across_tasks" not in flags


def test_outputs_byte_identical_across_tasks_are_flagged(catalog, submitter):
    clean = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], model="clean"))
    assert "same_across_tasks" not in flagged(clean, gated(lambda t, lv: True))
    copied = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"],
                                outputs=lambda base, level: output(base, "one answer for every task"
                                                                   if level == "b2" else base)))
    [flag] = flagged(copied, gated(lambda t, lv: True))["same_across_tasks"]
    assert "for 5 different tasks: biology.task_1__seed42__b2, chemistry.task_1__seed42__b2" in flag.detail


@pytest.mark.parametrize(("gate", "check", "words"), [
    (True, False, "pass while all 20 scored checks fail"), (False, True, "fail while all 20 scored checks pass")])
def test_every_gate_passing_while_every_scored_check_fails_or_the_reverse_is_flagged(catalog, submitter, gate,
                                                                                     check, words):
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))
    [flag] = flagged(run, gated(lambda t, lv: gate, lambda t, lv: check))["gates_vs_scores"]
    assert flag.detail.startswith("all 20 hard-gate checks of 20 results") and words in flag.detail


def test_the_flags_reach_the_review_page_and_the_queue_with_their_evidence(catalog, submitter, maintainer):
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))
    flagged(run, gated(lambda t, lv: True, lambda t, lv: False))
    reviewer = Client()
    reviewer.force_login(maintainer.user)
    page = reviewer.get(f"/leaderboard/review/{run.id}/").content.decode()
    assert "every gate passes while every scored check fails (or the reverse)" in page
    assert "all 20 hard-gate checks of 20 results pass while all 20 scored checks fail" in page
    queue = reviewer.get("/leaderboard/review/").content.decode()
    assert 'data-testid="queue-integrity">1 integrity flag<' in queue


def test_identical_outputs_that_pass_the_gates_in_another_run_and_fail_them_here_are_flagged(catalog, submitter,
                                                                                             other_user):
    same = lambda base, level: output(base, base.rsplit("__", 1)[0])  # noqa: E731
    passing = scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"], outputs=same))
    assert flagged(passing, gated(lambda t, lv: True)).get("gate_inconsistent") is None
    failing = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], outputs=same, model="again"))
    flags = flagged(failing, gated(lambda t, lv: t != "biology.task_1"))
    [flag] = flags["gate_inconsistent"]
    assert flag.base_name == "biology.task_1__seed42__b1"
    assert "pass the hard gates in biology.task_1__seed42__b1 (another run)" in flag.detail
