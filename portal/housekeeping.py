"""Sweeping what crashed or killed work leaves behind on the local disk.

A worker killed mid-intake leaves its `bundle-*.tar.gz` (and Django its `*.upload` files) in
FILE_UPLOAD_TEMP_DIR; a killed sandbox run leaves its directory under the scratch root. Live work
never gets that old (intake and scoring run for minutes), so anything untouched for longer than
LEFTOVER_MAX_AGE_HOURS is removed. Nothing is followed through a link: entries are judged by lstat,
links are removed as links, and trees are walked and removed through descriptors, however deep.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from scoring.sandbox.process import TreeRemovalError, newest_mtime, tree_remove
from scoring.task_storage import scratch_root

logger = logging.getLogger(__name__)


@dataclass
class SweepReport:
    removed: list[str] = field(default_factory=list)
    kept: int = 0
    errors: list[str] = field(default_factory=list)


def leftover_roots() -> list[Path]:
    """The directories whose entries are temporary by definition."""
    return [Path(settings.FILE_UPLOAD_TEMP_DIR), scratch_root()]


def _newest_mtime(path: Path, info: os.stat_result) -> float:
    """The latest change anywhere in an entry: a long run that still writes into its dir is not old."""
    return newest_mtime(path) if stat.S_ISDIR(info.st_mode) else info.st_mtime


def leftovers_sweep(*, now: float | None = None, max_age_seconds: float | None = None) -> SweepReport:
    """Remove entries of the leftover roots untouched for longer than the age limit."""
    now = time.time() if now is None else now
    max_age = settings.LEFTOVER_MAX_AGE_HOURS * 3600 if max_age_seconds is None else max_age_seconds
    report = SweepReport()
    for root in leftover_roots():
        if not root.is_dir():
            continue
        for entry in os.scandir(root):
            path = Path(entry.path)
            try:
                info = entry.stat(follow_symlinks=False)
                if now - _newest_mtime(path, info) <= max_age:
                    report.kept += 1
                    continue
                if stat.S_ISDIR(info.st_mode):
                    tree_remove(path)
                else:
                    path.unlink()
            except FileNotFoundError:
                continue  # finished and cleaned up by its owner meanwhile
            except (OSError, TreeRemovalError) as exc:
                report.errors.append(f"{path}: {exc}")
                logger.warning("could not sweep %s: %s", path, exc)
                continue
            report.removed.append(str(path))
    if report.removed:
        logger.info("swept %d leftover temp entries", len(report.removed))
    return report
