"""A scorer (task authors' code) that leaves a directory chain deeper than PATH_MAX in its scratch dir:
the result still scores, the host takes the tree back and removes it, and no message is the host's."""

from pathlib import Path

import numpy as np
import pytest

from scoring.pipeline import results_score_in_sandbox
from scoring.sandbox import get_backend
from scoring.sandbox.process import scratch_tree
from tests.scoring.engine.transit_task import TRANSIT_CUSTOM_SCORER, TRANSIT_EVAL, TRANSIT_META, write_yaml

pytestmark = pytest.mark.slow

DEEP_DIGGER = TRANSIT_CUSTOM_SCORER.replace(
    "        w = float(config.get(\"weight\", 1.0))\n",
    "        import os\n"
    "        here = os.getcwd()\n"
    "        os.chdir(pred_dir)\n"
    "        for i in range(30):  # 30 x 251 bytes: a path far past PATH_MAX (4096)\n"
    "            os.mkdir('d' * 250); os.chdir('d' * 250)\n"
    "        for i in range(1500):\n"
    "            os.mkdir('a'); os.chdir('a')\n"
    "        os.chdir(here)\n"
    "        w = float(config.get(\"weight\", 1.0))\n",
)


def transit_scoring_setup(root: Path) -> tuple[Path, Path, Path]:
    task_dir = root / "tasks" / "astronomy" / "toy_transit_fit"
    task_dir.mkdir(parents=True)
    write_yaml(task_dir / "task_meta.yaml", TRANSIT_META)
    write_yaml(task_dir / "task_eval.yaml", TRANSIT_EVAL)
    (task_dir / "custom_scorer.py").write_text(DEEP_DIGGER, encoding="utf-8")
    reference = root / "private" / "reference"
    reference.mkdir(parents=True)
    np.save(reference / "model_flux_ref.npy", np.ones((4, 8)))
    rows = "curve,t0,depth\n" + "".join(f"c{i},{i + 0.5},0.01\n" for i in range(4))
    (reference / "params_ref.csv").write_text(rows, encoding="utf-8")
    pred = root / "work" / "pred-1"
    pred.mkdir(parents=True)
    np.save(pred / "model_flux.npy", np.ones((4, 8)))
    (pred / "data").mkdir()
    np.save(pred / "data" / "flux.npy", np.ones((4, 8)))
    (pred / "fit.py").write_text("import numpy as np\nimport batman\n", encoding="utf-8")
    (pred / "params.csv").write_text(rows, encoding="utf-8")
    return task_dir, reference, pred


def test_a_scorer_leaving_a_chain_deeper_than_path_max_scores_and_is_cleaned_up(tmp_path: Path) -> None:
    assert DEEP_DIGGER != TRANSIT_CUSTOM_SCORER
    with scratch_tree("score-", tmp_path) as scratch:  # as instance_results_score holds its scratch
        task_dir, reference, pred = transit_scoring_setup(scratch)

        outcomes = results_score_in_sandbox(get_backend("bwrap"), task_dir, reference,
                                            {"n_lc": 4, "n_t": 8, "seed": 1}, scratch / "work", {1: ("b1", pred)})

        assert outcomes[1]["outcome"] == "scored", outcomes[1]
        assert outcomes[1]["final_score"] > 0, outcomes[1]
        assert str(tmp_path) not in str(outcomes[1])

    assert list(tmp_path.iterdir()) == []
