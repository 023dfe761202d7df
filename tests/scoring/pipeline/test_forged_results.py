"""A task's scorer (task authors' code, hostile) cannot forge the engine's result: lines it writes to
fd 1 are not the result channel, and whatever the engine reports is checked before it is stored.
Through the real bwrap sandbox the pipeline uses."""

from pathlib import Path

import numpy as np
import pytest

from scoring.pipeline import results_score_in_sandbox
from scoring.sandbox import get_backend
from tests.scoring.engine.transit_task import TRANSIT_CUSTOM_SCORER, TRANSIT_EVAL, TRANSIT_META, write_yaml
from tests.scoring.pipeline.forgers import (
    ATEXIT_FORGER,
    FORGED,
    FULL_MARKS_WITH_NUL,
    NAN,
    NOT_A_NUMBER,
    OWN_PIPE_FORGER,
    PROC_FORGER,
    SUNK,
)

pytestmark = pytest.mark.slow
PARAMS = {"n_lc": 4, "n_t": 8, "seed": 1}

def hostile_task(tmp_path: Path, extra: str) -> Path:
    task_dir = tmp_path / "tasks" / "astronomy" / "toy_transit_fit"
    task_dir.mkdir(parents=True)
    write_yaml(task_dir / "task_meta.yaml", TRANSIT_META)
    write_yaml(task_dir / "task_eval.yaml", TRANSIT_EVAL)
    (task_dir / "custom_scorer.py").write_text(TRANSIT_CUSTOM_SCORER + extra, encoding="utf-8")
    return task_dir


def staged(tmp_path: Path, count: int, *, wrong: bool) -> tuple[Path, Path, dict[int, tuple[str, Path]]]:
    """A reference and `count` staged predictions: right, or all wrong (scoring well under half)."""
    reference = tmp_path / "private" / "reference"
    reference.mkdir(parents=True)
    np.save(reference / "model_flux_ref.npy", np.ones((4, 8)))
    rows = "curve,t0,depth\n" + "".join(f"c{i},{i + 0.5},0.01\n" for i in range(4))
    (reference / "params_ref.csv").write_text(rows, encoding="utf-8")
    workdir = tmp_path / "work"
    preds: dict[int, tuple[str, Path]] = {}
    for n in range(1, count + 1):
        pred = workdir / f"pred-{n}"
        (pred / "data").mkdir(parents=True)
        np.save(pred / "model_flux.npy", np.full((4, 8), 9.0) if wrong else np.ones((4, 8)))
        np.save(pred / "data" / "flux.npy", np.ones((4, 8)))
        (pred / "fit.py").write_text("import numpy as np\n", encoding="utf-8")
        (pred / "params.csv").write_text("curve,t0,depth\n" if wrong else rows, encoding="utf-8")
        preds[n] = ("b1", pred)
    return reference, workdir, preds


def test_a_forged_line_after_the_engine_result_does_not_score_a_wrong_answer(tmp_path: Path) -> None:
    task_dir = hostile_task(tmp_path, ATEXIT_FORGER.replace("LINE", repr(FORGED)))
    reference, workdir, preds = staged(tmp_path, 1, wrong=True)

    outcomes = results_score_in_sandbox(get_backend("bwrap"), task_dir, reference, PARAMS, workdir, preds)

    assert outcomes[1]["outcome"] == "scored", outcomes[1]
    assert outcomes[1]["percent"] < 50 and outcomes[1]["final_score"] < 50, outcomes[1]
    assert outcomes[1]["max_score"] == 100.0


def test_a_forged_line_cannot_sink_a_right_answer(tmp_path: Path) -> None:
    task_dir = hostile_task(tmp_path, ATEXIT_FORGER.replace("LINE", repr(SUNK)))
    reference, workdir, preds = staged(tmp_path, 1, wrong=False)

    outcomes = results_score_in_sandbox(get_backend("bwrap"), task_dir, reference, PARAMS, workdir, preds)

    assert outcomes[1]["outcome"] == "scored" and outcomes[1]["percent"] > 70, outcomes[1]


def test_forged_lines_for_every_batch_job_score_nothing(tmp_path: Path) -> None:
    task_dir = hostile_task(tmp_path, ATEXIT_FORGER.replace("LINE", repr(FORGED)))
    reference, workdir, preds = staged(tmp_path, 3, wrong=True)

    outcomes = results_score_in_sandbox(get_backend("bwrap"), task_dir, reference, PARAMS, workdir, preds)

    assert set(outcomes) == {1, 2, 3}
    for outcome in outcomes.values():
        assert outcome["outcome"] == "scored" and 0 <= outcome["percent"] < 50, outcome


def test_a_nan_line_written_by_the_scorer_is_not_the_result(tmp_path: Path) -> None:
    task_dir = hostile_task(tmp_path, ATEXIT_FORGER.replace("LINE", repr(NAN)))
    reference, workdir, preds = staged(tmp_path, 2, wrong=False)

    outcomes = results_score_in_sandbox(get_backend("bwrap"), task_dir, reference, PARAMS, workdir, preds)

    for outcome in outcomes.values():
        assert outcome["outcome"] == "scored" and 70 < outcome["percent"] <= 100, outcome


OVERSCORING = TRANSIT_CUSTOM_SCORER.replace(
    'return ScoreDetail("transit_timing_score", w * frac, w,',
    'return ScoreDetail("transit_timing_score", 1e8 if frac else -1e8, w,',
)


@pytest.mark.parametrize("wrong", [False, True], ids=["right", "wrong"])
def test_out_of_range_scorer_scores_are_clamped_to_the_task_maximum(tmp_path: Path, wrong: bool) -> None:
    assert OVERSCORING != TRANSIT_CUSTOM_SCORER
    task_dir = hostile_task(tmp_path, "")
    (task_dir / "custom_scorer.py").write_text(OVERSCORING, encoding="utf-8")
    reference, workdir, preds = staged(tmp_path, 1, wrong=wrong)

    outcome = results_score_in_sandbox(get_backend("bwrap"), task_dir, reference, PARAMS, workdir, preds)[1]

    assert outcome["outcome"] == "scored", outcome
    assert 0 <= outcome["final_score"] <= outcome["max_score"] == 100.0
    assert 0 <= outcome["percent"] <= 100
    assert outcome["percent"] == (100 if not wrong else 0)
    timing = next(d for d in outcome["result"]["score_results"] if d["scorer_name"] == "transit_timing_score")
    assert 0 <= timing["score"] <= timing["max_score"] == 40


def test_a_result_the_scorer_forges_on_its_own_channel_that_fails_the_check_is_an_error(tmp_path: Path) -> None:
    task_dir = hostile_task(tmp_path, OWN_PIPE_FORGER.replace("LINE", repr(NOT_A_NUMBER)))
    reference, workdir, preds = staged(tmp_path, 2, wrong=True)

    outcomes = results_score_in_sandbox(get_backend("bwrap"), task_dir, reference, PARAMS, workdir, preds)

    for outcome in outcomes.values():
        assert outcome["outcome"] == "error" and outcome["final_score"] == 0 and outcome["percent"] == 0, outcome
        assert outcome["reason"] == "the scorer reported a final score that is not a number: 'NaN'"


def test_a_result_the_scorer_forges_on_its_own_channel_gets_at_most_full_marks(tmp_path: Path) -> None:
    task_dir = hostile_task(tmp_path, OWN_PIPE_FORGER.replace("LINE", repr(FULL_MARKS_WITH_NUL)))
    reference, workdir, preds = staged(tmp_path, 1, wrong=True)

    outcome = results_score_in_sandbox(get_backend("bwrap"), task_dir, reference, PARAMS, workdir, preds)[1]

    assert outcome["outcome"] == "scored" and outcome["percent"] == 100 and outcome["final_score"] == 100, outcome
    assert outcome["result"]["score_results"] == [{"scorer_name": "x", "score": 100.0, "max_score": 100.0,
                                                   "passed": False, "message": "bad"}]
    assert outcome["reason"] == "bad"


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_no_process_of_the_sandbox_lends_its_stdout_through_proc(tmp_path: Path, backend: str) -> None:
    # In a container the init (PID 1) holds the container's stdout, which is the engine's result
    # channel; if task code can open /proc/1/fd/1 it writes a score for every job first.
    task_dir = hostile_task(tmp_path, PROC_FORGER.replace("LINE", repr(FORGED)))
    reference, workdir, preds = staged(tmp_path, 2, wrong=True)

    outcomes = results_score_in_sandbox(get_backend(backend), task_dir, reference, PARAMS, workdir, preds)

    assert set(outcomes) == {1, 2}
    for outcome in outcomes.values():
        assert outcome["outcome"] == "scored" and 0 <= outcome["percent"] < 50, outcome
