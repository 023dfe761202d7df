"""Task roots for the health-check tests: the sound fixture task (health_task/) and broken variants."""

import shutil
from pathlib import Path

FIXTURE = Path(__file__).parent / "health_task"
TASK = "demo.health_sum"
# The deliberate scorer bug: the scoring contract compares the sum with the reference's count.
SCORER_BUG = ("ref_file: total_ref.npy", "ref_file: count_ref.npy")


def task_root(tmp_path: Path, name: str = "tasks", scorer_bug: bool = False) -> Path:
    root = tmp_path / name
    target = root / "demo" / "health_sum"
    shutil.copytree(FIXTURE, target, ignore=shutil.ignore_patterns("__pycache__"))
    if scorer_bug:
        path = target / "task_eval.yaml"
        path.write_text(path.read_text().replace(*SCORER_BUG))
    return root
