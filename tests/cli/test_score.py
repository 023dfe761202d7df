"""`asibench score --repo seed31415`: local scoring of real runs in scorer subprocesses (§7)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.agent_runs import TASK_IDS, agent_run, cli, make_instances, snapshot
from tests.support import cli_env

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "cli_runs"


def score(results: Path, instances: Path, home: Path, *extra: str) -> tuple[int, str, dict | None]:
    done = cli(["score", "--repo", "seed31415", "--results-dir", str(results), "--instances-dir", str(instances),
                *extra], cli_env(home))
    report_path = results / "local_score_seed31415.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    return done.returncode, done.stdout + done.stderr, report


@pytest.mark.parametrize(("agent", "sandbox", "check"), [
    ("reference", "none", lambda pct: pct >= 95),
    ("naive", "linux_ns", lambda pct: pct < 40),
])
def test_it_scores_reference_high_and_naive_low(base: Path, tmp_path: Path, agent: str, sandbox: str,
                                                check: object) -> None:
    results = agent_run(base, agent, sandbox)
    before = snapshot(results)
    code, output, report = score(results, make_instances(base), tmp_path)
    assert code == 0, output
    assert report is not None
    assert {k: report[k] for k in ("schema_version", "repo", "official", "score_scope", "instance_count",
                                   "scored_instance_count", "scorer_error_count")} == {
        "schema_version": 2, "repo": "seed31415", "official": False, "score_scope": "public_local",
        "instance_count": 2, "scored_instance_count": 2, "scorer_error_count": 0}
    assert report["generated_at"].endswith("+00:00")
    assert check(report["mean_percent"]), report["mean_percent"]  # type: ignore[operator]
    entries = {e["task_id"]: e for e in report["results"]}
    assert set(entries) == set(TASK_IDS)
    for task_id, entry in entries.items():
        assert entry["source_result"] == f"{task_id}/{task_id}__seed31415__b1.json"
        assert (entry["instance_id"], entry["prompt_level"], entry["attempt"]) == (
            f"{task_id}__seed31415", "b1", 1)
        assert entry["evaluation_status"] == "completed" and entry["scorer_internal_error"] is False
        assert entry["max_score"] == 100.0 and entry["score_divisor"] == 1.0
        assert entry["gate_results"] and entry["score_results"]
    assert report["total_max_score"] == 200.0
    after = snapshot(results)
    del after["local_score_seed31415.json"]
    assert after == before, "source results are never modified"


def test_it_refuses_seed42_before_touching_any_path(tmp_path: Path) -> None:
    missing = tmp_path / "does_not_exist"
    done = cli(["score", "--repo", "seed42", "--results-dir", str(missing), "--instances-dir", str(missing)],
               cli_env(tmp_path / "home"))
    assert done.returncode == 1
    assert "supports only --repo seed31415" in done.stderr
    assert not missing.exists()


def test_a_batch_with_a_non_seed31415_result_is_refused_whole(base: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(agent_run(base, "reference", "none"), results)
    (results / "local_score_seed31415.json").unlink(missing_ok=True)
    path = results / TASK_IDS[0] / f"{TASK_IDS[0]}__seed31415__b1.json"
    data = json.loads(path.read_text())
    data["instance_id"] = f"{TASK_IDS[0]}__seed42"
    path.write_text(json.dumps(data))
    code, output, report = score(results, make_instances(base), tmp_path)
    assert code == 1
    assert "is not a seed31415 instance" in output
    assert report is None


def test_an_invalid_evaluation_is_reported_and_fails_the_command(base: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(agent_run(base, "reference", "none"), results)
    (results / "local_score_seed31415.json").unlink(missing_ok=True)
    # An output that would overwrite an instance input cannot be staged: missing_evaluator_input.
    outputs = results / "math.homotopy_poly_roots" / "math.homotopy_poly_roots__seed31415__b1.outputs"
    (outputs / "data").mkdir()
    (outputs / "data" / "system.json").write_text("{}")
    code, output, report = score(results, make_instances(base), tmp_path)
    assert code == 1 and "1 evaluation(s) invalid" in output
    assert report is not None and report["scorer_error_count"] == 1 and report["scored_instance_count"] == 1
    [bad] = [e for e in report["results"] if e["task_id"] == "math.homotopy_poly_roots"]
    assert (bad["evaluation_status"], bad["final_score"], bad["scorer_internal_error"], bad["failure_kind"]) == (
        "evaluation_invalid", None, True, "missing_evaluator_input")
    assert report["total_max_score"] == 100.0
