"""score-batch across several instances of one task, and the runtime modules it imports once before
forking its jobs (scoring/engine/preload.py): only what the task's scorer names, never task code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.engine.preload import task_runtime_imports
from tests.scoring.engine.test_cli_batch import PROJECT_ROOT, result_lines, run_engine

# Appended to the task's scorer: reports, from inside the job's child, what was imported before it ran.
REPORT_PRELOADED = """
import sys as _sys
_PRELOADED = "scipy.optimize" in _sys.modules
_orig_score = {cls}.score
def _reporting_score(self, pred_dir, ref_dir, config):
    detail = _orig_score(self, pred_dir, ref_dir, config)
    detail.message = f"preloaded={{_PRELOADED}}"
    return detail
{cls}.score = _reporting_score
import scipy.optimize  # noqa: E402
"""


def scorer_class(task_dir: Path) -> str:
    source = (task_dir / "custom_scorer.py").read_text(encoding="utf-8")
    return source.split("class ", 1)[1].split("(", 1)[0].strip()


def test_it_names_the_runtime_modules_the_scorer_and_its_helpers_import_and_nothing_else(tmp_path: Path) -> None:
    task = tmp_path / "task"
    task.mkdir()
    (task / "custom_scorer.py").write_text(
        "import os, antigravity\nimport numpy as np\nfrom scipy import stats\nimport helper\n"
        "def f():\n    import sympy.core\n", encoding="utf-8")
    (task / "helper.py").write_text("from scipy.optimize import linear_sum_assignment\nimport pandas\n",
                                    encoding="utf-8")
    (task / "pandas.py").write_text("", encoding="utf-8")  # the task's own module shadows the runtime's
    (task / "generate_gt.py").write_text("import networkx\n", encoding="utf-8")  # scoring never runs it
    names = task_runtime_imports(task)
    assert {"numpy", "scipy", "scipy.stats", "scipy.optimize", "scipy.optimize.linear_sum_assignment",
            "sympy.core"} == set(names)


@pytest.mark.parametrize("source", [b"def broken(:\n", b"x = " + b"(" * 10000 + b")" * 10000 + b"\n", b"\xff\xfe\x00"])
def test_a_scorer_it_cannot_parse_preloads_nothing_and_raises_nothing(tmp_path: Path, source: bytes) -> None:
    (tmp_path / "custom_scorer.py").write_bytes(source)
    assert task_runtime_imports(tmp_path) == []


def test_the_batch_imports_the_scorers_modules_once_before_forking_its_jobs(transit_instance: dict,
                                                                            tmp_path: Path) -> None:
    t = transit_instance
    scorer = t["task_dir"] / "custom_scorer.py"
    scorer.write_text(scorer.read_text(encoding="utf-8") + REPORT_PRELOADED.format(cls=scorer_class(t["task_dir"])),
                      encoding="utf-8")
    common = ["--task-dir", str(t["task_dir"]), "--ref-dir", str(t["ref"]), "--params", json.dumps(t["params"])]
    (tmp_path / "jobs.json").write_text(json.dumps([{"job": "a", "pred_dir": str(t["pred"]), "prompt_level": "b3"}]))
    batch = result_lines(run_engine(["score-batch", *common, "--jobs", f"@{tmp_path / 'jobs.json'}"],
                                    t["pred"]).stdout)["a"]
    alone = run_engine(["score", *common, "--pred-dir", str(t["pred"]), "--prompt-level", "b3"], t["pred"])
    single = json.loads(alone.stdout.strip().splitlines()[-1])
    messages = {d["message"] for d in batch["score_results"] if d["message"].startswith("preloaded=")}
    assert messages == {"preloaded=True"}
    assert {d["message"] for d in single["score_results"] if d["message"].startswith("preloaded=")} == \
        {"preloaded=False"}
    assert batch["final_score"] == pytest.approx(single["final_score"])


def test_each_job_is_scored_against_its_own_instance_reference_and_parameters(transit_instance: dict,
                                                                              tmp_path: Path) -> None:
    t = transit_instance
    other_ref = tmp_path / "other" / "ref"
    shutil.copytree(t["ref"], other_ref)
    (other_ref / "params_ref.csv").write_text("curve,t0,depth\nc0,9,0.5\nc1,9,0.5\nc2,9,0.5\nc3,9,0.5\n",
                                              encoding="utf-8")
    other_params = {**t["params"], "seed": 2}
    jobs = [{"job": "mine", "pred_dir": str(t["pred"]), "prompt_level": "b3"},
            {"job": "other", "pred_dir": str(t["pred"]), "prompt_level": "b3", "ref_dir": str(other_ref),
             "params": other_params}]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    proc = run_engine(["score-batch", "--task-dir", str(t["task_dir"]), "--ref-dir", str(t["ref"]), "--params",
                       json.dumps(t["params"]), "--jobs", f"@{tmp_path / 'jobs.json'}"], t["pred"])
    lines = result_lines(proc.stdout)
    assert lines["mine"]["final_score"] == pytest.approx(75.41666, abs=1e-4)
    assert lines["mine"]["parameters"] == t["params"] and lines["other"]["parameters"] == other_params
    assert lines["other"]["final_score"] < lines["mine"]["final_score"]
    alone = run_engine(["score", "--task-dir", str(t["task_dir"]), "--ref-dir", str(other_ref), "--params",
                        json.dumps(other_params), "--pred-dir", str(t["pred"]), "--prompt-level", "b3"], t["pred"])
    single = json.loads(alone.stdout.strip().splitlines()[-1])
    assert lines["other"]["final_score"] == pytest.approx(single["final_score"])


# Runs score-batch with the engine's YAML reader logging every file it parses, and in which process.
COUNTING_ENGINE = """
import os, sys
import scoring.engine.taskdef as taskdef
_read = taskdef.read_yaml_mapping
def _counting(path):
    with open(sys.argv[1], "a") as log:
        log.write(f"{os.getpid()} {path.name}\\n")
    return _read(path)
taskdef.read_yaml_mapping = _counting
from scoring.engine.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_the_batch_reads_the_task_definition_once_for_all_its_jobs(transit_instance: dict, tmp_path: Path) -> None:
    t = transit_instance
    jobs = [{"job": level, "pred_dir": str(t["pred"]), "prompt_level": level} for level in ("b1", "b2", "b3", "b4")]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    log = tmp_path / "parsed.log"
    argv = ["score-batch", "--task-dir", str(t["task_dir"]), "--ref-dir", str(t["ref"]), "--params",
            json.dumps(t["params"]), "--jobs", f"@{tmp_path / 'jobs.json'}"]
    proc = subprocess.run([sys.executable, "-c", COUNTING_ENGINE, str(log), *argv], capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(PROJECT_ROOT)}, cwd=t["pred"],
                          timeout=120, check=False)
    lines = result_lines(proc.stdout)
    parsed = log.read_text().split("\n")[:-1]
    yaml_files = sorted(p.name for p in t["task_dir"].glob("task*.yaml"))
    assert sorted(entry.split()[1] for entry in parsed) == yaml_files  # each file once, not once per job
    assert len({entry.split()[0] for entry in parsed}) == 1  # by one process: the batch's, before it forks
    for level in ("b1", "b2", "b3", "b4"):
        alone = run_engine(["score", *argv[1:7], "--pred-dir", str(t["pred"]), "--prompt-level", level], t["pred"])
        assert lines[level]["final_score"] == pytest.approx(json.loads(alone.stdout.strip().splitlines()[-1])
                                                            ["final_score"]), level


def test_a_task_definition_that_does_not_load_fails_each_job_as_it_did_alone(transit_instance: dict,
                                                                              tmp_path: Path) -> None:
    t = transit_instance
    task = tmp_path / "task"
    shutil.copytree(t["task_dir"], task)
    for definition in task.glob("task*.yaml"):
        definition.write_text("evaluation: [unclosed\n", encoding="utf-8")
    jobs = [{"job": level, "pred_dir": str(t["pred"]), "prompt_level": level} for level in ("b1", "b3")]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    common = ["--task-dir", str(task), "--ref-dir", str(t["ref"]), "--params", json.dumps(t["params"])]
    lines = result_lines(run_engine(["score-batch", *common, "--jobs", f"@{tmp_path / 'jobs.json'}"], t["pred"]).stdout)
    alone = run_engine(["score", *common, "--pred-dir", str(t["pred"]), "--prompt-level", "b1"], t["pred"])
    single = json.loads(alone.stdout.strip().splitlines()[-1])
    assert single["evaluation_status"] == "evaluation_invalid" and "cannot parse YAML" in single["error"]
    for level in ("b1", "b3"):
        assert {k: lines[level][k] for k in ("evaluation_status", "failure_kind", "error")} == \
            {k: single[k] for k in ("evaluation_status", "failure_kind", "error")}
