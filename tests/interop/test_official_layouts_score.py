"""Tasks in the official layouts score the same in our engine and in the official 0.2.0 engine.

Our fixtures (tests/scoring/catalog/official_layouts/, written here in the official layouts): a legacy
`task.yaml` task whose generator plots with matplotlib and whose custom scorer imports the official API
(`core.scorer`, `core.types`, `core.task.TaskLoader`, `scorers._judge_common`) and pandas, and a formal
split task published without generator. Each is scored by both `asibench score` clients, with the
reference outputs fed back (the GT self-check: 100) and with half-right outputs; and our static checks
give the official `validate --static` verdict on every fixture directory.
"""

import json
import shutil
import subprocess
import sys
from io import BytesIO
from pathlib import Path

import numpy as np
import pytest

from scoring.engine import instance_id_for_seed, load_task, sample_params, static_validate
from tests.results_tree import write_result
from tests.support import OUR_CLI, REPO, cli_env, run_cli

pytestmark = [pytest.mark.slow]
LAYOUTS = REPO / "tests" / "scoring" / "catalog" / "official_layouts"
FIXTURES = ("physics/damped_fit", "chemistry/rate_table", "computer_science/sandboxed_replay")


def result(results: Path, instance_id: str, level: str, outputs: dict[str, bytes], params: dict) -> None:
    base = write_result(results, instance_id, level, outputs)
    path = results / instance_id.split("__")[0] / f"{base}.json"
    record = json.loads(path.read_text())
    record["parameters"] = params  # what `asibench run` records: the config templates read it
    path.write_text(json.dumps(record))


def npy(array: np.ndarray) -> bytes:
    buffer = BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def scored_tree(tmp_path_factory) -> tuple[Path, Path, Path]:
    base = tmp_path_factory.mktemp("layouts")
    tasks, instances, results = base / "tasks", base / "instances", base / "results"
    for name in FIXTURES[:2]:
        shutil.copytree(LAYOUTS / name, tasks / name)
    results.mkdir(parents=True)
    (results / "run_metadata.json").write_text(json.dumps({"framework_version": "0.2.0"}))

    legacy = tasks / "physics" / "damped_fit"
    iid = instance_id_for_seed("physics.damped_fit", 31415)
    subprocess.run([sys.executable, str(legacy / "generate_gt.py"), "--output-dir", str(instances / iid),
                    "--params", json.dumps(sample_params(load_task(legacy), 31415))], check=True, cwd=legacy)
    ref = instances / iid / "reference"
    params = json.loads((instances / iid / "instance_meta.json").read_text())["params_used"]
    curve = np.load(ref / "curve_ref.npy")
    table = (ref / "params_ref.csv").read_bytes()
    result(results, iid, "b1", {"curve.npy": npy(curve), "params.csv": table}, params)
    wrong = table.decode().splitlines()
    wrong[1] = f"damping,{float(wrong[1].split(',')[1]) * 1.5}"  # frequency right, damping not
    result(results, iid, "b3", {"curve.npy": npy(curve * 1.1), "params.csv": "\n".join(wrong).encode()}, params)

    # The formal task is never generated: its instance is written by hand, as an operator's would be.
    iid = instance_id_for_seed("chemistry.rate_table", 31415)
    (instances / iid / "reference").mkdir(parents=True)
    (instances / iid / "data").mkdir()
    rates = "temperature,k\n300,1.5e-3\n350,2.2e-2\n400,1.9e-1\n"
    (instances / iid / "reference" / "rates_ref.csv").write_text(rates)
    (instances / iid / "instance_meta.json").write_text(json.dumps({"params_used": {}}))
    result(results, iid, "b1", {"rates.csv": rates.encode()}, {})
    result(results, iid, "b3", {"rates.csv": rates.replace("1.9e-1", "3.1e-1").encode()}, {})
    return tasks, instances, results


def scores(report: Path) -> dict[tuple[str, str], float]:
    return {(r["instance_id"], r["prompt_level"]): r["final_score"] for r in json.loads(report.read_text())["results"]}


def test_both_engines_give_the_same_scores_and_full_marks_to_the_references(
        official_client_with_scoring, scored_tree, tmp_path):
    tasks, instances, results = scored_tree
    env = {**cli_env(tmp_path / "home"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    common = ["score", "--repo", "seed31415", "--results-dir", str(results), "--instances-dir", str(instances),
              "--tasks-dir", str(tasks)]
    ours = run_cli([*OUR_CLI, *common, "--output", str(tmp_path / "ours.json")], env, timeout=600)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    theirs = run_cli([str(official_client_with_scoring), *common, "--output", str(tmp_path / "official.json")],
                     env, timeout=600)
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    ours_scores, official_scores = scores(tmp_path / "ours.json"), scores(tmp_path / "official.json")
    assert len(ours_scores) == 4 and ours_scores.keys() == official_scores.keys()
    for key, value in ours_scores.items():
        assert value == pytest.approx(official_scores[key], abs=1e-6), key
    legacy, formal = (instance_id_for_seed(t, 31415) for t in ("physics.damped_fit", "chemistry.rate_table"))
    assert ours_scores[(legacy, "b1")] == pytest.approx(100) and ours_scores[(formal, "b1")] == pytest.approx(100)
    assert 0 < ours_scores[(legacy, "b3")] < 95 and 0 < ours_scores[(formal, "b3")] < 95


@pytest.mark.parametrize("name", FIXTURES)
def test_our_static_checks_give_the_official_verdict(official_client, name, tmp_path):
    task_dir = tmp_path / "tasks" / name
    shutil.copytree(LAYOUTS / name, task_dir)
    theirs = run_cli([str(official_client), "validate", "--static", str(task_dir)], cli_env(tmp_path / "home"))
    errors, _warnings = static_validate(task_dir)
    assert (theirs.returncode == 0) == (not errors), (theirs.stdout + theirs.stderr, errors)
