"""The official client's `asibench score` scores our tasks through the same registration API, with our result.

Each task's custom scorer imports `ai4sci_bench.core.scorer`; our engine provides that module to
custom scorers, and the official package provides its own. Both must give the same scores.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.engine import instance_id_for_seed, load_task, sample_params
from scoring.generation import discover_task_dirs
from tests.support import OUR_CLI, REPO, cli_env, run_cli

pytestmark = [pytest.mark.slow]
HALF_RIGHT_AGENT = f"python {REPO}/tests/interop/half_right_agent.py --workspace {{workspace}}"


@pytest.fixture(scope="module")
def seed31415_run(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("parity")
    instances = base / "instances"
    for task_dir in discover_task_dirs(REPO / "tasks"):
        task_id = f"{task_dir.parent.name}.{task_dir.name}"
        subprocess.run(
            [sys.executable, str(task_dir / "generate_gt.py"), "--output-dir",
             str(instances / instance_id_for_seed(task_id, 31415)),
             "--params", json.dumps(sample_params(load_task(task_dir), 31415))],
            check=True, capture_output=True,
        )
    results = base / "results"
    done = run_cli([*OUR_CLI, "run", "--instances-dir", str(instances), "--agent-cmd", HALF_RIGHT_AGENT,
                    "--sandbox", "none", "--prompt-levels", "b3", "--output-dir", str(results)],
                   cli_env(base / "home"), timeout=600)
    assert done.returncode == 0, done.stderr
    return instances, results


def scores(report: Path) -> dict[str, float]:
    return {r["instance_id"]: r["final_score"] for r in json.loads(report.read_text())["results"]}


def test_both_clients_score_every_task_the_same(official_client_with_scoring, seed31415_run, tmp_path):
    instances, results = seed31415_run
    env = {**cli_env(tmp_path / "home"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    common = ["score", "--repo", "seed31415", "--results-dir", str(results), "--instances-dir", str(instances),
              "--tasks-dir", str(REPO / "tasks")]
    ours = run_cli([*OUR_CLI, *common, "--output", str(tmp_path / "ours.json")], env, timeout=600)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    theirs = run_cli([str(official_client_with_scoring), *common, "--output", str(tmp_path / "official.json")],
                     env, timeout=600)
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    ours_scores, official_scores = scores(tmp_path / "ours.json"), scores(tmp_path / "official.json")
    assert len(ours_scores) == len(discover_task_dirs(REPO / "tasks"))
    assert ours_scores.keys() == official_scores.keys()
    for instance_id, value in ours_scores.items():
        assert value == pytest.approx(official_scores[instance_id], abs=1e-6), instance_id
    partial = [v for v in ours_scores.values() if 0 < v < 95]
    assert len(partial) >= len(ours_scores) // 2, "half-right answers must exercise the scorers' middle range"
