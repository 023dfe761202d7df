"""`asibench task create`: the scaffold and its refusals."""

from __future__ import annotations

from pathlib import Path

import yaml

from scoring.engine import load_task, static_validate
from tests.cli.agent_runs import cli
from tests.support import cli_env

EXPECTED = {"task_meta.yaml", "task_eval.yaml", "generate_gt.py", "prompt_b1.md", "prompt_b2.md", "prompt_b3.md",
            "prompt_b4.md", "reference_specs.md", "task_submission.yaml", "solution/solve.py"}


def create(tmp_path: Path, domain: str, name: str):  # noqa: ANN201
    return cli(["task", "create", "--domain", domain, "--name", name, "--tasks-dir", str(tmp_path / "tasks")],
               cli_env(tmp_path / "home"))


def test_it_scaffolds_a_statically_valid_task(tmp_path: Path) -> None:
    done = create(tmp_path, "physics", "toy_oscillator")
    assert done.returncode == 0, done.stderr
    target = tmp_path / "tasks" / "physics" / "toy_oscillator"
    assert {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()} == EXPECTED
    assert static_validate(target) == ([], [])
    task = load_task(target)
    assert task["id"] == "physics.toy_oscillator" and task["domain"] == "physics"
    evidence = yaml.safe_load((target / "task_submission.yaml").read_text())
    assert evidence["schema_version"] == 1 and evidence["feasibility_checklist"]["version"] == 2
    [entry] = evidence["local_test_results"]
    assert entry["sandbox"] == "os" and entry["agent"] == "codex_cli"
    assert [r["prompt_level"] for r in entry["results"]] == ["b1", "b2", "b3", "b4"]
    generator = (target / "generate_gt.py").read_text()
    for name in ("INPUT_SPEC", "OUTPUT_SPEC", "DEFAULT_PARAMS", "def generate(", "--output-dir", "--params"):
        assert name in generator


def test_it_refuses_an_existing_directory_and_changes_nothing(tmp_path: Path) -> None:
    existing = tmp_path / "tasks" / "math" / "taken"
    existing.mkdir(parents=True)
    (existing / "notes.md").write_text("mine")
    done = create(tmp_path, "math", "taken")
    assert done.returncode == 1
    assert "already exists" in done.stderr
    assert [p.name for p in existing.iterdir()] == ["notes.md"]


def test_it_refuses_bad_domain_or_name(tmp_path: Path) -> None:
    for domain, name in (("Math", "ok_name"), ("math", "bad-name"), ("math", "1st"), ("math.x", "y")):
        done = create(tmp_path, domain, name)
        assert done.returncode == 1, (domain, name)
        assert "must be lowercase letters, digits and underscores" in done.stderr
    assert not (tmp_path / "tasks").exists()
