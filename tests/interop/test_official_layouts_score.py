"""Tasks in the official layouts score the same in our engine and in the official 0.2.0 engine.

Our fixtures (tests/scoring/catalog/official_layouts/, written here in the official layouts): a legacy
`task.yaml` task whose generator plots with matplotlib and whose custom scorer imports the official API
(`core.scorer`, `core.types`, `core.task.TaskLoader`, `scorers._judge_common`) and pandas, and formal
split tasks published without generator: one scored with pandas, one whose figure a Pillow scorer reads,
one whose task_eval.yaml shares a config through a YAML anchor (`&id001`). Each is scored by both
`asibench score` clients, with the reference outputs fed back (the GT self-check: 100) and with
half-right outputs; and our static checks give the official `validate --static` verdict on every
fixture directory.
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
FIXTURES = ("physics/damped_fit", "chemistry/rate_table", "computer_science/sandboxed_replay",
            "materials/lattice_figure", "computer_science/shared_tour_config")
SCORED = (*FIXTURES[:2], *FIXTURES[3:])


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
    for name in SCORED:
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

    iid = instance_id_for_seed("materials.lattice_figure", 31415)
    hand_written(instances / iid, {"density_ref.png": png()})
    result(results, iid, "b1", {"density.png": png()}, {})
    result(results, iid, "b3", {"density.png": png(shift=24)}, {})

    iid = instance_id_for_seed("computer_science.shared_tour_config", 31415)
    angles = np.linspace(0.0, 2 * np.pi, 6, endpoint=False)
    cities = "x,y\n" + "".join(f"{np.cos(a):.6f},{np.sin(a):.6f}\n" for a in angles)
    hand_written(instances / iid, {"cities_ref.csv": cities.encode(),
                                   "best_length_ref.json": json.dumps({"length": 6.0}).encode()})
    result(results, iid, "b1", {"tour.csv": b"0\n1\n2\n3\n4\n5\n"}, {})
    result(results, iid, "b3", {"tour.csv": b"0\n2\n1\n3\n4\n5\n"}, {})
    return tasks, instances, results


def hand_written(instance: Path, references: dict[str, bytes]) -> None:
    """An instance of a formal task, written as an operator's would be (the task is never generated)."""
    (instance / "reference").mkdir(parents=True)
    (instance / "data").mkdir()
    for name, data in references.items():
        (instance / "reference" / name).write_bytes(data)
    (instance / "instance_meta.json").write_text(json.dumps({"params_used": {}}))


def png(shift: int = 0) -> bytes:
    from PIL import Image

    buffer = BytesIO()
    pixels = bytes((x * 8 + y * 4 + shift) % 256 for y in range(24) for x in range(32))
    Image.frombytes("L", (32, 24), pixels).save(buffer, format="PNG")
    return buffer.getvalue()


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
    assert len(ours_scores) == 8 and ours_scores.keys() == official_scores.keys()
    for key, value in ours_scores.items():
        assert value == pytest.approx(official_scores[key], abs=1e-6), key
    for task in ("physics.damped_fit", "chemistry.rate_table", "materials.lattice_figure",
                 "computer_science.shared_tour_config"):
        iid = instance_id_for_seed(task, 31415)
        assert ours_scores[(iid, "b1")] == pytest.approx(100), task
        assert 0 < ours_scores[(iid, "b3")] < 95, task


@pytest.mark.parametrize("name", FIXTURES)
def test_our_static_checks_give_the_official_verdict(official_client, name, tmp_path):
    task_dir = tmp_path / "tasks" / name
    shutil.copytree(LAYOUTS / name, task_dir)
    theirs = run_cli([str(official_client), "validate", "--static", str(task_dir)], cli_env(tmp_path / "home"))
    errors, _warnings = static_validate(task_dir)
    assert (theirs.returncode == 0) == (not errors), (theirs.stdout + theirs.stderr, errors)
