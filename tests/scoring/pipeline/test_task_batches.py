"""One sandbox per (submission, task): every result of several instances of one task in one bwrap
sandbox, each scored against its own instance's reference and parameters, the sandbox seeing this
task's files and these references only, and the scoring limits applied to the sandbox as a whole."""

import json
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from scoring.pipeline import StagedResult, staged_score_in_sandbox
from scoring.sandbox import Limits, SandboxBackend, SandboxResult, get_backend
from scoring.sandbox.limits import scoring_limits
from tests.scoring.engine.transit_task import TRANSIT_CUSTOM_SCORER, TRANSIT_EVAL, TRANSIT_META, write_yaml

pytestmark = pytest.mark.slow
ROWS = "curve,t0,depth\n" + "".join(f"c{i},{i + 0.5},0.01\n" for i in range(4))

# Appended to the task's scorer: each result's message says which of the given paths its sandbox shows.
REPORT_VIEW = """
import os as _os, json as _json
_PROBES = {probes!r}
_orig_score = TransitTiming.score
def _viewing_score(self, pred_dir, ref_dir, config):
    detail = _orig_score(self, pred_dir, ref_dir, config)
    detail.message = "view=" + _json.dumps({{k: _os.path.exists(p) for k, p in _PROBES.items()}}, sort_keys=True)
    return detail
TransitTiming.score = _viewing_score
"""


class RecordingBwrap(SandboxBackend):
    """The real bwrap backend, recording each run's command and limits; `old_engine` makes score-batch
    ignore each job's own reference and parameters, as an engine older than the pipeline would."""

    name = "bwrap"

    def __init__(self, old_engine: bool = False) -> None:
        self.inner = get_backend("bwrap")
        self.old_engine = old_engine
        self.runs: list[tuple[list[str], Limits]] = []

    def run(self, argv: list[str], workdir: Path, read_only_mounts: list, limits: Limits) -> SandboxResult:
        self.runs.append((argv, limits))
        if self.old_engine and "score-batch" in argv:
            jobs_file = Path(argv[argv.index("--jobs") + 1][1:])
            jobs = json.loads(jobs_file.read_text())
            jobs_file.write_text(json.dumps([{k: v for k, v in job.items() if k not in ("ref_dir", "params")}
                                             for job in jobs]))
        return self.inner.run(argv, workdir, read_only_mounts, limits)

    def python_command(self) -> list[str]:
        return self.inner.python_command()

    def runtime_mounts(self) -> list:
        return self.inner.runtime_mounts()

    def count(self, command: str) -> int:
        return sum(1 for argv, _ in self.runs if command in argv)


def task(tmp_path: Path, name: str = "toy_transit_fit", extra: str = "") -> Path:
    task_dir = tmp_path / "tasks" / "astronomy" / name
    task_dir.mkdir(parents=True)
    write_yaml(task_dir / "task_meta.yaml", TRANSIT_META)
    write_yaml(task_dir / "task_eval.yaml", TRANSIT_EVAL)
    (task_dir / "custom_scorer.py").write_text(TRANSIT_CUSTOM_SCORER + extra, encoding="utf-8")
    return task_dir


def reference(tmp_path: Path, instance: str, flux: float) -> Path:
    ref = tmp_path / "private" / instance / "reference"
    ref.mkdir(parents=True)
    np.save(ref / "model_flux_ref.npy", np.full((4, 8), flux))
    (ref / "params_ref.csv").write_text(ROWS, encoding="utf-8")
    return ref


def prediction(workdir: Path, name: str) -> Path:
    pred = workdir / f"pred-{name}"
    (pred / "data").mkdir(parents=True)
    np.save(pred / "model_flux.npy", np.ones((4, 8)))
    np.save(pred / "data" / "flux.npy", np.ones((4, 8)))
    (pred / "fit.py").write_text("import numpy as np\n", encoding="utf-8")
    (pred / "params.csv").write_text(ROWS, encoding="utf-8")
    return pred


def two_instances(tmp_path: Path) -> tuple[Path, dict[int, StagedResult]]:
    """Two instances of one task, two results each; the same prediction is right for `a` only."""
    workdir = tmp_path / "work"
    ref_a, ref_b = reference(tmp_path, "a", 1.0), reference(tmp_path, "b", 3.0)
    params_a, params_b = {"n_lc": 4, "n_t": 8, "seed": 1}, {"n_lc": 4, "n_t": 8, "seed": 2}
    staged = {1: StagedResult("b1", prediction(workdir, "1"), ref_a, params_a),
              2: StagedResult("b2", prediction(workdir, "2"), ref_a, params_a),
              3: StagedResult("b1", prediction(workdir, "3"), ref_b, params_b),
              4: StagedResult("b2", prediction(workdir, "4"), ref_b, params_b)}
    return workdir, staged


def test_one_sandbox_scores_a_tasks_instances_each_against_its_own_reference(tmp_path: Path) -> None:
    workdir, staged = two_instances(tmp_path)
    backend = RecordingBwrap()
    outcomes = staged_score_in_sandbox(backend, task(tmp_path), workdir, staged)
    assert len(backend.runs) == 1 and backend.count("score-batch") == 1
    assert all(outcomes[key]["outcome"] == "scored" for key in staged)
    assert outcomes[1]["percent"] > 90 and outcomes[2]["percent"] > 90
    assert outcomes[3]["percent"] < outcomes[1]["percent"] and outcomes[4]["percent"] < outcomes[2]["percent"]
    # The limits apply to the sandbox as a whole: time and output for all four, memory and processes as one.
    single, (_, limits) = scoring_limits(settings), backend.runs[0]
    assert limits.wall_clock_seconds == single.wall_clock_seconds * 4 and limits.cpu_seconds == single.cpu_seconds * 4
    assert limits.max_output_bytes == single.max_output_bytes * 4
    assert (limits.memory_bytes, limits.max_processes, limits.max_file_bytes, limits.network) == \
        (single.memory_bytes, single.max_processes, single.max_file_bytes, False)
    assert limits.max_scratch_bytes is not None
    assert limits.max_scratch_bytes < settings.SCORING_SCRATCH_BYTES + (8 << 20)


def test_the_sandbox_sees_this_tasks_files_and_these_references_and_nothing_of_another(tmp_path: Path) -> None:
    workdir, staged = two_instances(tmp_path)
    other_task = task(tmp_path, "other_task")
    other_submission = prediction(tmp_path / "other-submission" / "work", "9")
    probes = {"other_task": str(other_task / "custom_scorer.py"), "other_submission": str(other_submission),
              "project_var": str(Path(settings.VAR_DIR)), "ref_a": str(staged[1].reference / "params_ref.csv"),
              "ref_b": str(staged[3].reference / "params_ref.csv"), "sibling_pred": str(staged[4].pred_dir)}
    task_dir = task(tmp_path, extra=REPORT_VIEW.format(probes=probes))
    outcomes = staged_score_in_sandbox(RecordingBwrap(), task_dir, workdir, staged)
    seen = [json.loads(d["message"][len("view="):]) for d in outcomes[1]["result"]["score_results"]
            if d["message"].startswith("view=")]
    assert seen and seen[0] == {"other_task": False, "other_submission": False, "project_var": False,
                                "ref_a": True, "ref_b": True, "sibling_pred": True}


def test_a_line_scored_with_another_instances_parameters_is_scored_again_alone(tmp_path: Path) -> None:
    workdir, staged = two_instances(tmp_path)
    backend = RecordingBwrap(old_engine=True)
    outcomes = staged_score_in_sandbox(backend, task(tmp_path), workdir, staged)
    # The batch scored every job with instance a's reference: b's two lines are not taken, b is scored alone.
    assert backend.count("score-batch") == 1 and backend.count("score") == 2
    assert outcomes[1]["percent"] > 90 and outcomes[3]["percent"] < outcomes[1]["percent"]
    right = staged_score_in_sandbox(RecordingBwrap(), task(tmp_path, "fresh"), workdir, staged)
    assert [outcomes[key]["percent"] for key in staged] == pytest.approx([right[key]["percent"] for key in staged])
