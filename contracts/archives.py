"""Packing and unpacking the archives the Portal builds (instance inputs, references, task files, the public
task definitions), the same way on every Python the project supports.

`tarfile`'s extraction filters (PEP 706, `filter="data"`) exist only from Python 3.11.4, so Debian 12's
3.11.2 refuses the call, and the filters' own bypasses (CVE-2025-4517 and its siblings) were fixed only in
later patch releases. Our archives (`scoring.generation.build_archive`) hold nothing but directories and
regular files under one top directory, so this accepts exactly that and refuses every other member kind
(links, devices, FIFOs), any absolute or `..` path, and any path met twice; with no link ever created, no
write can be steered outside `dest`.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import tarfile
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath


class UnsafeArchive(ValueError):
    """An archive holds a member this module will not unpack; the message names the member."""


_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def extract_tree(tar: tarfile.TarFile, dest: Path, *, select: Callable[[str], bool] | None = None) -> None:
    """Unpack the directories and regular files of `tar` (those whose name `select` accepts) under
    `dest`, which must be a directory this process just made. Modes are 0755 for directories and
    executables, 0644 for other files; owners and times are not restored."""
    seen: set[str] = set()
    for member in tar:
        name = _checked_name(member.name)
        if select is not None and not select(member.name):
            continue
        if name in seen:
            raise UnsafeArchive(f"{member.name}: the archive holds this path twice")
        seen.add(name)
        target = dest.joinpath(*PurePosixPath(name).parts)
        if member.isdir():
            target.mkdir(mode=0o755, parents=True, exist_ok=True)
        elif member.isreg():
            target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None  # a regular member always has a file object
            mode = 0o755 if member.mode & 0o111 else 0o644
            with source, os.fdopen(os.open(target, _WRITE_FLAGS, mode), "wb") as sink:
                shutil.copyfileobj(source, sink, 1 << 20)
        else:
            raise UnsafeArchive(f"{member.name}: not a directory or a regular file")


def _checked_name(raw: str) -> str:
    path = PurePosixPath(raw)
    if not raw or path.is_absolute() or ".." in path.parts or "\x00" in raw:
        raise UnsafeArchive(f"{raw!r}: not a relative path inside the archive")
    return path.as_posix()


def pack_files(files: Mapping[str, bytes]) -> bytes:
    """A tar.gz holding `files` ({relative path: content}) and their parent directories, in the shape
    `extract_tree` accepts. Sorted names, zero times, owners and gzip header, fixed modes: equal
    content gives equal bytes, so the archive's hash names its content."""
    checked = {_checked_name(name): content for name, content in files.items()}
    if len(checked) != len(files):
        raise UnsafeArchive("two names of the file set are one path")
    dirs = sorted({parent.as_posix() for name in checked for parent in PurePosixPath(name).parents
                   if parent.as_posix() != "."})
    if clash := set(dirs) & set(checked):
        raise UnsafeArchive(f"{sorted(clash)[0]!r}: both a file and a directory")
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", fileobj=buffer, mode="wb", mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in dirs:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for name, content in sorted(checked.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(content), 0o644, 0
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()
