"""Quality gates every catalog task must pass (tasks/<domain>/<name>/).

For each task directory the generator is run as the contract's subprocess
(``generate_gt.py --output-dir --params``) with the seed-42 parameters of
``sample_params(load_task(dir), 42)``; two runs must be byte-identical. One instance is
then solved by the task's reference solver (through ``examples/agents/reference_agent.py``),
its naive baseline (through ``naive_agent.py``) and ``solution/half_right.py``, and each
prediction is scored with the engine at b1..b4:

    reference >= 95,   naive < 40,   naive < half_right < reference.

The rendered prompts must thin out from b1 to b3, with b4 = b3 plus distracting material.

Instances and solver outputs are shared per task through module-scoped fixtures, so each
task costs three generator runs' worth of time plus three solver runs.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from scoring.engine import anonymised_task_id, load_task, sample_params, score_instance

pytestmark = pytest.mark.slow  # every task's generator and three solvers, as real subprocesses
REPO = Path(__file__).resolve().parents[2]
TASKS_DIR = REPO / "tasks"
AGENTS_DIR = REPO / "examples" / "agents"
LEVELS = ("b1", "b2", "b3", "b4")
RUN_SEED = 42
PLACEHOLDER = re.compile(r"\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}")  # the templates' {{ name }}
SOLVER_TIMEOUT = 300


def _task_dirs() -> list[Path]:
    found = []
    for path in sorted(TASKS_DIR.glob("*/*/")):
        if path.name.startswith(("_", ".")) or path.parent.name.startswith(("_", ".")):
            continue
        if not ((path / "task_meta.yaml").is_file() or (path / "task.yaml").is_file()):
            continue
        meta_file = path / "task_meta.yaml" if (path / "task_meta.yaml").is_file() else path / "task.yaml"
        meta = yaml.safe_load(meta_file.read_text(encoding="utf-8")) or {}
        if meta.get("status") == "abandoned":
            continue
        found.append(path)
    return found


TASK_DIRS = _task_dirs()


def _run(cmd: list[str], cwd: Path, timeout: int) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {done.returncode}\nstdout:\n{done.stdout[-2000:]}\n"
                    f"stderr:\n{done.stderr[-4000:]}")
    return done


def _generate(task_dir: Path, out_dir: Path, params: dict[str, Any]) -> None:
    task = load_task(task_dir)
    script = task_dir / str((task.get("generation") or {}).get("script", "generate_gt.py"))
    timeout = int((task.get("generation") or {}).get("timeout_seconds", 300))
    _run([sys.executable, str(script), "--output-dir", str(out_dir.resolve()), "--params", json.dumps(params)],
         cwd=task_dir, timeout=timeout)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module", params=TASK_DIRS, ids=[f"{p.parent.name}/{p.name}" for p in TASK_DIRS])
def task_dir(request: pytest.FixtureRequest) -> Path:
    return request.param


@pytest.fixture(scope="module")
def seed42_params(task_dir: Path) -> dict[str, Any]:
    return sample_params(load_task(task_dir), RUN_SEED)


@pytest.fixture(scope="module")
def instance(task_dir: Path, seed42_params: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp(f"{task_dir.name}_instance")
    _generate(task_dir, out, seed42_params)
    return out


@pytest.fixture(scope="module")
def scores(task_dir: Path, instance: Path, seed42_params: dict[str, Any],
           tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Any]]]:
    """{solver: {level: score_instance result}} for reference, naive and half_right."""
    task = load_task(task_dir)
    outputs = [str(f["name"]) for f in (task.get("output") or {}).get("files", [])]
    meta_path = instance / "instance_meta.json"
    params = seed42_params
    if meta_path.is_file():
        params = json.loads(meta_path.read_text(encoding="utf-8")).get("params_used") or params
    commands = {
        "reference": [sys.executable, str(AGENTS_DIR / "reference_agent.py"), "--tasks-dir", str(TASKS_DIR)],
        "naive": [sys.executable, str(AGENTS_DIR / "naive_agent.py"), "--tasks-dir", str(TASKS_DIR)],
        "half_right": [sys.executable, str(task_dir / "solution" / "half_right.py")],
    }
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for solver, cmd in commands.items():
        ws = tmp_path_factory.mktemp(f"{task_dir.name}_{solver}_ws")
        shutil.copytree(instance / "data", ws / "data")
        shutil.copyfile(instance / "prompt_b1.md", ws / "prompt.md")
        (ws / "task_info.json").write_text(json.dumps({
            "schema_version": 3, "task_id": anonymised_task_id(str(task["id"])), "prompt_level": "b1",
            "expected_outputs": [{"name": str(f["name"]), "type": str(f.get("type", "data"))}
                                 for f in (task.get("output") or {}).get("files", [])],
            "timeout_seconds": SOLVER_TIMEOUT}), encoding="utf-8")
        _run([*cmd, "--workspace", str(ws)], cwd=ws, timeout=SOLVER_TIMEOUT)
        # stage like local scoring: instance data/ plus the declared outputs only
        pred = tmp_path_factory.mktemp(f"{task_dir.name}_{solver}_pred")
        shutil.copytree(instance / "data", pred / "data")
        for name in outputs:
            if (ws / name).is_file():
                (pred / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(ws / name, pred / name)
        results[solver] = {level: score_instance(task_dir, pred, instance / "reference", params, level)
                           for level in LEVELS}
    return results


def _final(result: dict[str, Any]) -> float:
    assert result.get("final_score") is not None, f"evaluation invalid: {result.get('error')}"
    return float(result["final_score"])


def _summary(scores: dict[str, dict[str, dict[str, Any]]]) -> str:
    return "; ".join(f"{solver}: " + ", ".join(f"{lvl}={_final(r):.2f}" for lvl, r in by_level.items())
                     for solver, by_level in scores.items())


def test_generator_is_byte_deterministic(task_dir: Path, instance: Path, seed42_params: dict[str, Any],
                                         tmp_path: Path) -> None:
    _generate(task_dir, tmp_path / "again", seed42_params)
    first, second = _tree(instance), _tree(tmp_path / "again")
    assert sorted(first) == sorted(second), "the two runs wrote different file sets"
    differing = [name for name in first if first[name] != second[name]]
    assert not differing, f"files differ between identical runs: {differing}"
    assert (instance / "reference").is_dir() and any((instance / "reference").iterdir())
    for level in LEVELS:
        assert (instance / f"prompt_{level}.md").is_file()
    assert "params_used" in json.loads((instance / "instance_meta.json").read_text(encoding="utf-8"))


def test_reference_solver_scores_at_least_95(scores: dict[str, dict[str, dict[str, Any]]]) -> None:
    for level, result in scores["reference"].items():
        assert result["hard_gates_passed"], f"{level}: hard gates failed: {result['gate_results']}"
        assert _final(result) >= 95.0, f"{level}: reference scored {_final(result):.2f} ({_summary(scores)})"


def test_naive_solver_scores_below_40(scores: dict[str, dict[str, dict[str, Any]]]) -> None:
    for level, result in scores["naive"].items():
        assert _final(result) < 40.0, f"{level}: naive scored {_final(result):.2f} ({_summary(scores)})"


def test_half_right_lies_strictly_between_naive_and_reference(
        scores: dict[str, dict[str, dict[str, Any]]]) -> None:
    for level in LEVELS:
        naive, half, ref = (_final(scores[s][level]) for s in ("naive", "half_right", "reference"))
        assert naive < half < ref, f"{level}: naive {naive:.2f}, half {half:.2f}, ref {ref:.2f}"


def test_validate_pre_submit_passes(task_dir: Path) -> None:
    """The same checks an author runs before submitting: static rules, determinism, GT self-check."""
    from cli_client.authoring.presubmit import validate_task_dir

    report = validate_task_dir(task_dir)
    assert report.ok, [c.to_dict() for c in report.failures]


def test_prompt_levels_thin_out(task_dir: Path, instance: Path) -> None:
    """B1 (full method) > B2 (method, no recipe) > B3 (goal and constraints); B4 is B3 plus padding."""
    rendered = {level: (instance / f"prompt_{level}.md").read_text(encoding="utf-8") for level in LEVELS}
    for level, text in rendered.items():
        left = PLACEHOLDER.findall(text)
        assert not left, f"{level}: unrendered placeholders left in the prompt: {left}"
    sizes = {level: len(text) for level, text in rendered.items()}
    assert sizes["b1"] > sizes["b2"] > sizes["b3"], f"prompt levels do not thin out: {sizes}"
    b4_lines = set(rendered["b4"].splitlines())
    dropped = [line for line in rendered["b3"].splitlines() if line.strip() and line not in b4_lines]
    assert not dropped, f"b4 must keep every line of b3; missing: {dropped[:3]}"
    assert sizes["b4"] > sizes["b3"], "b4 adds no material to b3"
