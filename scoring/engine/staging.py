"""Building the prediction directory a scorer sees: instance ``data/`` + declared outputs (§6)."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from .errors import StagingError


def _walk_regular_files(root: Path, label: str) -> list[Path]:
    """Relative paths of every file under ``root``; refuse symlinks and special files."""
    if root.is_symlink():
        raise StagingError(f"{label}: {root.name} is a symlink")
    found: list[Path] = []
    for current, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(current) / name
            mode = path.lstat().st_mode
            relative = path.relative_to(root)
            if stat.S_ISLNK(mode):
                raise StagingError(f"{label}: {relative} is a symlink; symlinks are refused")
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise StagingError(f"{label}: {relative} is not a regular file")
            if stat.S_ISREG(mode):
                found.append(relative)
    return sorted(found)


def _safe_relative(name: str) -> Path:
    posix = PurePosixPath(str(name).replace("\\", "/"))
    if posix.is_absolute() or not posix.parts or ".." in posix.parts:
        raise StagingError(f"output name {name!r} is not a safe relative path")
    return Path(*posix.parts)


def stage_prediction_dir(
    data_dir: Path | None,
    outputs_dir: Path | None,
    dest: Path,
    declared: Iterable[str] | None = None,
) -> Path:
    """Copy ``data_dir`` to ``dest/data`` and the outputs to the root of ``dest``.

    ``declared`` limits the outputs to those names (files, or directories copied whole);
    without it everything under ``outputs_dir`` is taken (a persisted ``.outputs`` dir
    holds declared outputs only). Raises ``StagingError`` – classified
    ``missing_evaluator_input`` – for symlinks, special files, unsafe names, or an output
    that would land on a path the instance data already occupies. Missing outputs are
    simply absent: the scorers turn them into zeros.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    data_files: set[Path] = set()
    if data_dir is not None and Path(data_dir).exists():
        data_dir = Path(data_dir)
        data_files = {Path("data") / rel for rel in _walk_regular_files(data_dir, "data")}
        shutil.copytree(data_dir, dest / "data", symlinks=True, dirs_exist_ok=True)

    if outputs_dir is None or not Path(outputs_dir).exists():
        return dest
    outputs_dir = Path(outputs_dir)
    available = _walk_regular_files(outputs_dir, "outputs")
    if declared is None:
        chosen = available
    else:
        chosen = []
        for name in declared:
            rel = _safe_relative(name)
            chosen.extend(p for p in available if p == rel or rel in p.parents)
    data_dirs = {parent for f in data_files for parent in f.parents}
    for rel in chosen:
        if rel in data_files or rel in data_dirs or any(parent in data_files for parent in rel.parents):
            raise StagingError(f"output {rel.as_posix()} would overwrite instance input {rel.as_posix()} under data/")
    for rel in chosen:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(outputs_dir / rel, target)
    return dest
