"""`asibench validate --pre-submit`: static checks, ids, determinism, seeds, GT self-check."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_client.authoring.presubmit import validate_task_dir
from tests.cli.agent_runs import cli
from tests.support import REPO, cli_env

pytestmark = pytest.mark.slow
CHECKS = ["static", "required_files", "task_id", "generator_contract", "determinism", "seeds", "official_seeds",
          "gt_selfcheck"]


def scaffold(tmp_path: Path, name: str = "demo_task") -> Path:
    done = cli(["task", "create", "--domain", "math", "--name", name, "--tasks-dir", str(tmp_path / "tasks")],
               cli_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    return tmp_path / "tasks" / "math" / name


def validate(task_dir: Path, home: Path):  # noqa: ANN201
    return cli(["validate", "--pre-submit", str(task_dir)], cli_env(home))


def test_a_real_catalog_task_passes(tmp_path: Path) -> None:
    done = validate(REPO / "tasks" / "materials" / "diatomic_chain_phonons", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in CHECKS:
        assert f"[PASS] {name}" in done.stdout
    assert "reference scores 100/100" in done.stdout


def test_a_fresh_scaffold_passes_every_check(tmp_path: Path) -> None:
    report = validate_task_dir(scaffold(tmp_path))
    assert [(c.name, c.ok) for c in report.checks] == [(name, True) for name in CHECKS]
    assert report.ok and report.task_id == "math.demo_task"
    assert report.to_dict()["ok"] is True


def test_a_non_deterministic_generator_fails_with_the_differing_file(tmp_path: Path) -> None:
    task = scaffold(tmp_path)
    generator = task / "generate_gt.py"
    source = generator.read_text()
    assert 'np.random.default_rng(p["seed"])' in source
    generator.write_text(source.replace('np.random.default_rng(p["seed"])', "np.random.default_rng()"))
    done = validate(task, tmp_path)
    assert done.returncode == 1
    assert "[FAIL] determinism" in done.stdout
    assert "differ in" in done.stdout and "data/matrix.npy" in done.stdout
    assert "(Portal check, not in the official pre-submit: the catalog generates every instance twice" in done.stdout
    assert "validation failed: determinism" in done.stderr


def test_a_broken_task_id_fails_with_the_reason(tmp_path: Path) -> None:
    task = scaffold(tmp_path)
    meta = task / "task_meta.yaml"
    meta.write_text(meta.read_text().replace("id: math.demo_task", "id: math.Demo-Task"))
    done = validate(task, tmp_path)
    assert done.returncode == 1
    assert "[FAIL] task_id" in done.stdout
    assert "id 'math.Demo-Task' must match" in done.stdout
    assert "(Portal check, not in the official pre-submit: the catalog id rule)" in done.stdout


def test_a_directory_named_other_than_the_task_is_a_warning_as_in_the_official_checks(tmp_path: Path) -> None:
    task = scaffold(tmp_path)
    renamed = task.rename(task.with_name("demo_task_v2"))
    report = validate_task_dir(renamed)
    assert report.ok, [(c.name, c.summary) for c in report.failures]
    assert "directory name 'demo_task_v2' differs from task name 'demo_task'" in report.warnings


def test_an_undeclared_b4_is_required_and_labelled_as_the_portals_rule(tmp_path: Path) -> None:
    task = scaffold(tmp_path)
    meta = task / "task_meta.yaml"
    text = meta.read_text()
    declared = "prompts: {b1: prompt_b1.md, b2: prompt_b2.md, b3: prompt_b3.md, b4: prompt_b4.md}"
    assert declared in text
    meta.write_text(text.replace(declared, "prompts: {b1: prompt_b1.md, b2: prompt_b2.md, b3: prompt_b3.md}"))
    (task / "prompt_b4.md").unlink()
    required = next(c for c in validate_task_dir(task).checks if c.name == "required_files")
    assert required.ok is False
    assert required.summary == ("missing: prompt_b4.md (Portal check, not in the official pre-submit: the Portal "
                                "serves all four levels)")


def test_a_missing_prompt_and_generator_fail_and_skip_generation(tmp_path: Path) -> None:
    task = scaffold(tmp_path)
    (task / "prompt_b4.md").unlink()
    (task / "generate_gt.py").unlink()
    report = validate_task_dir(task)
    status = {c.name: c.ok for c in report.checks}
    assert status["required_files"] is False
    assert "generate_gt.py" in report.checks[1].summary and "prompt_b4.md" in report.checks[1].summary
    assert status["determinism"] is None and status["gt_selfcheck"] is None and not report.ok


def test_a_generator_without_the_declared_contract_passes_with_a_warning(tmp_path: Path) -> None:
    # The official pre-submit asks for no INPUT_SPEC/OUTPUT_SPEC: a gap is our advice, not a failure.
    task = scaffold(tmp_path)
    generator = task / "generate_gt.py"
    source = generator.read_text()
    generator.write_text(source.replace("INPUT_SPEC", "_INPUT_LIST").replace("OUTPUT_SPEC", "_OUTPUT_LIST"))
    report = validate_task_dir(task)
    assert report.ok, [(c.name, c.summary, c.details) for c in report.failures]
    contract = next(c for c in report.checks if c.name == "generator_contract")
    assert contract.details == ["warning (Portal check, not in the official pre-submit): it lacks INPUT_SPEC, "
                                "OUTPUT_SPEC"]


@pytest.mark.parametrize(("recorded", "passes"), [
    ('{"solver": {"generation_seconds": time.perf_counter(), "iterations": 7}}', True),
    ('{"solver": {"nonce": time.perf_counter_ns(), "iterations": 7}}', False),
])
def test_a_timing_nested_in_a_reference_json_is_left_out_of_the_determinism_check(
        tmp_path: Path, recorded: str, passes: bool) -> None:
    # As robotics/minimum_snap_trajectory_conditioning does: a timing inside reference/*.json.
    task = scaffold(tmp_path)
    generator = task / "generate_gt.py"
    source = generator.read_text()
    anchor = '    meta = {\n        "params_used": p,'
    assert anchor in source
    generator.write_text(source.replace("import argparse\n", "import argparse\nimport time\n").replace(anchor, (
        '    (output_dir / "reference" / "diagnostics.json").write_text(json.dumps('
        f'{recorded}), encoding="utf-8")\n') + anchor))
    report = validate_task_dir(task)
    determinism = next(c for c in report.checks if c.name == "determinism")
    assert determinism.ok is passes, determinism.summary
    if not passes:
        assert "differ in 1 file(s): reference/diagnostics.json (Portal check" in determinism.summary


def test_seeds_whose_references_differ_only_in_a_timing_reveal_each_other(tmp_path: Path) -> None:
    task = scaffold(tmp_path)
    generator = task / "generate_gt.py"
    source = generator.read_text().replace('np.random.default_rng(p["seed"])', "np.random.default_rng(0)")
    source = source.replace('p["n"], p["seed"] = int(p["n"]), int(p["seed"])', 'p["n"], p["seed"] = 6, int(p["seed"])')
    anchor = '    meta = {\n        "params_used": p,'
    generator.write_text(source.replace("import argparse\n", "import argparse\nimport time\n").replace(anchor, (
        '    (output_dir / "reference" / "diagnostics.json").write_text(json.dumps('
        '{"generation_seconds": time.perf_counter()}), encoding="utf-8")\n') + anchor))
    report = validate_task_dir(task)
    official = next(c for c in report.checks if c.name == "official_seeds")
    assert official.ok is False and "would reveal the private seed42 ones" in official.summary
