"""Building task roots for the catalog-load tests: a tiny task and variants of it."""

import shutil
from pathlib import Path

FIXTURE = Path(__file__).parent / "tiny_task"


def make_root(tmp_path: Path, **variants: Path) -> Path:
    root = tmp_path / "tasks"
    shutil.copytree(FIXTURE, root / "demo" / "tiny_sum", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def add_variant(root: Path, name: str, edit) -> Path:
    target = root / "demo" / name
    shutil.copytree(FIXTURE, target, ignore=shutil.ignore_patterns("__pycache__"))
    for file in ("task_meta.yaml", "task_eval.yaml"):
        path = target / file
        path.write_text(path.read_text().replace("demo.tiny_sum", f"demo.{name}"))
    edit(target)
    return target


def patch_generator(target: Path, code: str) -> None:
    path = target / "generate_gt.py"
    path.write_text(path.read_text().replace("    p = {**DEFAULT_PARAMS, **params}\n",
                                             "    p = {**DEFAULT_PARAMS, **params}\n" + code))
