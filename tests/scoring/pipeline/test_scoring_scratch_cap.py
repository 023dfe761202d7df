"""A scorer (task authors' code) that fills its scratch dir is stopped at the cap and scores 0 with
the reason, through the real bwrap sandbox the pipeline uses."""

from pathlib import Path

import numpy as np
import pytest

from scoring.pipeline import results_score_in_sandbox
from scoring.sandbox import get_backend
from tests.scoring.engine.transit_task import TRANSIT_CUSTOM_SCORER, TRANSIT_EVAL, TRANSIT_META, write_yaml

pytestmark = pytest.mark.slow

DISK_FILLER = TRANSIT_CUSTOM_SCORER.replace(
    "        w = float(config.get(\"weight\", 1.0))\n",
    "        import time\n"
    "        for i in range(64):  # 64 x 4 MiB: each file under the size limit, together over the cap\n"
    "            (pred_dir / f'fill{i}.bin').write_bytes(b'z' * (4 << 20)); time.sleep(0.02)\n"
    "        time.sleep(2)\n"
    "        w = float(config.get(\"weight\", 1.0))\n",
)


def test_a_scorer_that_fills_the_scratch_dir_scores_zero_with_the_reason(tmp_path: Path, settings) -> None:
    assert DISK_FILLER != TRANSIT_CUSTOM_SCORER
    settings.SCORING_SCRATCH_BYTES = 32 << 20
    task_dir = tmp_path / "tasks" / "astronomy" / "toy_transit_fit"
    task_dir.mkdir(parents=True)
    write_yaml(task_dir / "task_meta.yaml", TRANSIT_META)
    write_yaml(task_dir / "task_eval.yaml", TRANSIT_EVAL)
    (task_dir / "custom_scorer.py").write_text(DISK_FILLER, encoding="utf-8")
    reference = tmp_path / "private" / "reference"
    reference.mkdir(parents=True)
    np.save(reference / "model_flux_ref.npy", np.ones((4, 8)))
    workdir = tmp_path / "work"
    pred = workdir / "pred-1"
    pred.mkdir(parents=True)
    np.save(pred / "model_flux.npy", np.ones((4, 8)))
    (pred / "data").mkdir()
    np.save(pred / "data" / "flux.npy", np.ones((4, 8)))
    (pred / "fit.py").write_text("import numpy as np\nimport batman\n", encoding="utf-8")
    rows = "curve,t0,depth\n" + "".join(f"c{i},{i + 0.5},0.01\n" for i in range(4))
    (pred / "params.csv").write_text(rows, encoding="utf-8")
    (reference / "params_ref.csv").write_text(rows, encoding="utf-8")

    outcomes = results_score_in_sandbox(get_backend("bwrap"), task_dir, reference, {"n_lc": 4, "n_t": 8, "seed": 1},
                                        workdir, {1: ("b1", pred)})

    assert outcomes[1]["final_score"] == 0.0
    assert "scratch disk limit" in outcomes[1]["reason"], outcomes[1]
    written = sum(p.stat().st_size for p in pred.glob("fill*.bin"))
    assert written < 128 << 20  # stopped near the cap, not after all 256 MiB
