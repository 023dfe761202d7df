"""Task files and instance archives in storage, and the scratch space sandboxed runs use: what workers on any
host read (a task's files, an instance's private reference) and where they unpack it."""

import hashlib
import logging
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage

from contracts.archives import extract_tree
from scoring.generation import (
    build_archive,
)
from scoring.models import Instance, Task
from scoring.sandbox.process import scratch_tree

logger = logging.getLogger(__name__)


def scratch_root() -> Path:
    """Where sandboxed runs get their private temporary directories (same disk as VAR_DIR)."""
    root = Path(settings.VAR_DIR) / "scratch"
    root.mkdir(parents=True, exist_ok=True)
    return root


def storage_put(local: Path, name: str, sha256: str) -> str:
    """Save under a content-addressed `name`; an intact file already there is reused."""
    if default_storage.exists(name):
        with default_storage.open(name, "rb") as stored:
            if hashlib.file_digest(stored, "sha256").hexdigest() == sha256:
                return name
        default_storage.delete(name)
    with local.open("rb") as handle:
        return default_storage.save(name, File(handle, name=local.name))


def task_source_store(directory: Path, *, task_id: str, source_hash: str) -> str:
    """The task's files as one archive in storage, named by their source hash: workers on any host
    score from it, never from the disk of the host that loaded or published the task."""
    name = f"private/tasks/{task_id}-{source_hash[:16]}.tar.gz"
    members = sorted(p.name for p in directory.iterdir() if p.name != "__pycache__")
    with scratch_tree("asibench-task-", scratch_root()) as tmp:
        sha256, _ = build_archive(directory, members, task_id, tmp / "task.tar.gz")
        return storage_put(tmp / "task.tar.gz", name, sha256)


def task_source_dir(task: Task) -> Path:
    """A local copy of the task's files, unpacked once per host from storage (keyed by the source
    hash, so a changed task never reuses an old copy). Tasks stored without an archive (loaded
    before archives existed) are read from `source_dir` until the next catalog load."""
    if not task.source_archive:
        return Path(task.source_dir)
    cache = Path(settings.VAR_DIR) / "task-sources"
    target = cache / task.source_hash / task.id
    if target.is_dir():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=cache))
    try:
        with default_storage.open(task.source_archive, "rb") as handle, tarfile.open(
            fileobj=handle, mode="r:gz"
        ) as tar:
            extract_tree(tar, staging)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(staging / task.id, target)
        except OSError:
            if not target.is_dir():  # not another worker process that got there first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def reference_extract(instance: Instance, dest: Path) -> Path:
    """Unpack an instance's private reference/ into dest (scoring side only)."""
    with default_storage.open(instance.reference_archive, "rb") as handle, tarfile.open(
        fileobj=handle, mode="r:gz"
    ) as tar:
        extract_tree(tar, dest)
    return dest / instance.instance_id / "reference"

