"""score-batch across several instances of one task, and the runtime modules it imports once before
forking its jobs (scoring/engine/preload.py): only what the task's scorer names, never task code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scoring.engine.preload import task_runtime_imports
from tests.scoring.engine.test_cli_batch import result_lines, run_engine

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
