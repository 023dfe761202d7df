"""An instance's public archive as single files, for file-by-file downloads (the Hub endpoint).

Archives are content-addressed (`input_sha256`), so each is unpacked once into a local cache
directory named by that digest and never changes afterwards; a regenerated instance gets a new
directory. What may be served from it is decided in `selectors`, not here.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage

from contracts.archives import extract_tree
from contracts.digests import sha256_file
from scoring.models import Instance

INDEX = "index.json"
FILES = "files"


@dataclass(frozen=True)
class InstanceFile:
    path: str  # relative to the instance folder, POSIX
    size: int
    sha256: str
    git_oid: str  # git blob id, what the Hub lists as a file's oid


def cache_root() -> Path:
    root = Path(settings.VAR_DIR) / "instance-files"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _git_oid(path: Path, size: int) -> str:
    digest = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class ArchiveUnreadable(OSError):
    """The stored archive of an instance is missing or is not the one its row records."""


def _unpack(instance: Instance, target: Path) -> None:
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent))
    try:
        archive = staging / "archive.tar.gz"
        with default_storage.open(instance.input_archive, "rb") as source, archive.open("wb") as sink:
            shutil.copyfileobj(source, sink, 1 << 20)
        if sha256_file(archive) != instance.input_sha256:
            raise ArchiveUnreadable(f"stored archive of {instance.instance_id} does not match its recorded sha256")
        with tarfile.open(archive, "r:gz") as tar:
            extract_tree(tar, staging / "tree")
        archive.unlink()
        top = staging / "tree" / instance.instance_id
        files = {}
        for path in sorted(top.rglob("*")):
            if path.is_file() and not path.is_symlink():
                size = path.stat().st_size
                rel = path.relative_to(top).as_posix()
                files[rel] = {"size": size, "sha256": sha256_file(path), "git_oid": _git_oid(path, size)}
        top.rename(staging / FILES)
        (staging / INDEX).write_text(json.dumps({"instance_id": instance.instance_id, "files": files}))
        try:
            os.rename(staging, target)
        except OSError:
            if not (target / INDEX).is_file():  # not a concurrent unpack that won the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@lru_cache(maxsize=4096)
def _index(directory: str) -> dict[str, InstanceFile]:
    data = json.loads((Path(directory) / INDEX).read_text())
    return {path: InstanceFile(path=path, **meta) for path, meta in data["files"].items()}


def unpacked(instance: Instance) -> Path:
    """The cache directory of this instance's archive, unpacked on first use."""
    target = cache_root() / instance.input_sha256
    if not (target / INDEX).is_file():
        _unpack(instance, target)
    return target


def archive_files(instance: Instance) -> dict[str, InstanceFile]:
    """Every file of the instance's public archive, by path relative to the instance folder."""
    return _index(str(unpacked(instance)))


def archive_file_path(instance: Instance, relative_path: str) -> Path:
    """Local path of one file listed by `archive_files` (the caller checked it is listed)."""
    return unpacked(instance) / FILES / relative_path
