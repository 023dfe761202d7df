"""Write the labelled set (tests/scanners/corpus_specs.py) to tests/scanners/corpus/, in both formats.

Run it with the official 0.2.0 client's Python, which makes the official renditions with the client's own
code (the interop tests install it in .venv-official-asibench):

    .venv-official-asibench/bin/python tests/scanners/corpus_build.py [output directory]

Per case: `_trajectory.jsonl` (the events), `trajectory.json` (the official extractor's step list of them),
`result.json` (what the official client's claude_code_cli adapter and runner would record for them: the
summary log, sanitised as the runner sanitises it for a Docker run, the trajectory summary and the file
history), `outputs/` and `case.json` (context and labels). It checks every labelled step index against the
official step list, so the labels cite the steps the official client numbers.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from ai4sci_bench.adapters.claude_code_cli import ClaudeCodeCLIAdapter  # noqa: E402
from ai4sci_bench.runner.orchestrator import BenchmarkOrchestrator  # noqa: E402
from ai4sci_bench.trajectory.claude_extractor import extract_from_jsonl  # noqa: E402
from ai4sci_bench.trajectory.file_history import extract_file_versions  # noqa: E402

from tests.scanners.corpus_specs import Case, cases  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "corpus"
HOME = Path("/home/alice")
HOST_WORKSPACE = Path("/tmp/ai4sci_ws_k3j2x9/workspace")


def official_log(jsonl: str) -> str:
    """The summary log the claude_code_cli adapter records, sanitised as the runner does for saved results."""
    adapter = object.__new__(ClaudeCodeCLIAdapter)
    runner = object.__new__(BenchmarkOrchestrator)
    runner.output_dir = HOME / "asibench-results"
    runner.repo_root = HOME / "ASI-Bench"
    with mock.patch("pathlib.Path.home", return_value=HOME):
        return runner._sanitize_persisted_text(adapter._parse_claude_log(jsonl), workspace=HOST_WORKSPACE)


def check_labels(case: Case, steps: list[dict]) -> None:
    assert len(steps) == case._steps, (case.name, len(steps), case._steps)
    for label in case.labels:
        if "step" in label:
            assert 0 <= label["step"] < len(steps), (case.name, label)


def write_case(case: Case, out: Path) -> None:
    jsonl = case.jsonl()
    trajectory = extract_from_jsonl(jsonl, case.context["instance_id"])
    steps = [step.to_dict() for step in trajectory.steps]
    check_labels(case, steps)
    directory = out / case.name
    directory.mkdir(parents=True)
    (directory / "_trajectory.jsonl").write_text(jsonl)
    (directory / "trajectory.json").write_text(json.dumps(steps, indent=2, ensure_ascii=False) + "\n")
    for name, content in case.outputs.items():
        path = directory / "outputs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    agent_output = {
        "code_files": [n for n in case.outputs if n.endswith(".py")],
        "data_files": [n for n in case.outputs if not n.endswith(".py")],
        "log": official_log(jsonl),
        "error_message": case.error_message,
        "status": case.status,
        "process_exit_code": 0 if case.status == "completed" else 1,
        "termination_signal": None,
        "timeout_phase": None,
        "raw_stdout_format": "jsonl",
        "trajectory_summary": trajectory.summary.to_dict(),
        "trajectory_file": f"{case.context['instance_id']}__{case.level}.trajectory.json",
    }
    versions = extract_file_versions(jsonl)
    if versions:
        agent_output["file_versions"] = versions
    result = {"result_schema_version": 1, "instance_id": case.context["instance_id"],
              "task_id": case.context["task_id"], "attempt": 1, "prompt_level": case.level,
              "agent_name": "ClaudeCodeCLIAdapter", "status": case.status, "agent_output": agent_output}
    (directory / "result.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    (directory / "case.json").write_text(json.dumps(
        {"name": case.name, "style": case.style, "clean": case.clean, "status": case.status,
         "context": case.context, "labels": case.labels}, indent=2, ensure_ascii=False) + "\n")


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS
    all_cases = cases()
    names = [c.name for c in all_cases]
    assert len(names) == len(set(names)), "case names must be unique"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for case in all_cases:
        write_case(case, out)
    clean = sum(c.clean for c in all_cases)
    print(f"wrote {len(all_cases)} cases ({clean} clean, {len(all_cases) - clean} with planted findings) to {out}")


if __name__ == "__main__":
    main()
