"""Reading what sandboxed code left behind, without following anything it planted.

Everything below a sandbox's workdir was written by untrusted code. Host-side code reads
it only through this module: every entry is `lstat`ed through directory descriptors and
opened with O_NOFOLLOW; symbolic links, hard links (st_nlink > 1), FIFOs, sockets and
devices are refused with an error that names the file. `collect_outputs` copies the
regular files into a fresh host-made directory, so everything after it (hashing,
host-authored files such as task_info.json, archiving) works on a tree no sandbox touched.
Pure Python, no Django.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO swapped in after the lstat must not hang the worker.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_CHUNK = 1 << 20
# Each level holds one descriptor and one Python frame; legitimate outputs are shallow.
MAX_DEPTH = 64
MAX_ENTRIES = 100_000


class UnsafeOutput(Exception):
    """Sandboxed code left something the host must not follow or open; names the file."""


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file or directory"


def _check_regular(st: os.stat_result, rel: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeOutput(f"{rel} is {_kind(st.st_mode)}; sandbox outputs must be regular files")
    if st.st_nlink > 1:
        raise UnsafeOutput(f"{rel} is a hard link ({st.st_nlink} names); sandbox outputs must be plain files")


def _walk(dir_fd: int, prefix: str, depth: int = 0) -> Iterator[tuple[str, int | None]]:
    """(relative path, open fd of a regular file | None for a directory), depth first, sorted."""
    if depth > MAX_DEPTH:
        raise UnsafeOutput(f"{prefix.rstrip('/')} is nested deeper than {MAX_DEPTH} directories")
    for name in sorted(os.listdir(dir_fd)):
        rel = f"{prefix}{name}"
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                raise UnsafeOutput(f"{rel} changed while it was read: {exc.strerror}") from None
            try:
                yield rel, None
                yield from _walk(child, rel + "/", depth + 1)
            finally:
                os.close(child)
            continue
        _check_regular(st, rel)
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            raise UnsafeOutput(f"{rel} changed while it was read: {exc.strerror}") from None
        try:
            opened = os.fstat(fd)
            # The name could have been swapped between lstat and open: insist on the same inode.
            if (opened.st_ino, opened.st_dev) != (st.st_ino, st.st_dev):
                raise UnsafeOutput(f"{rel} changed while it was read")
            _check_regular(opened, rel)
            os.set_blocking(fd, True)
            yield rel, fd
        finally:
            os.close(fd)


def _open_root(root: Path) -> int:
    try:
        return os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise UnsafeOutput(f"{root.name} is not a plain directory: {exc.strerror}") from None


def collect_outputs(root: Path, dest: Path, *, max_bytes: int | None = None) -> dict[str, int]:
    """Copy every file below `root` into `dest` (created here, must not exist).

    Returns {relative path: size}; directories appear with a trailing "/" and size 0.

    Raises UnsafeOutput, naming the file, for anything that is not a directory or a regular
    file with one name, and when the copied bytes exceed `max_bytes`.
    """
    dest.mkdir(mode=0o755)
    copied: dict[str, int] = {}
    total = 0
    root_fd = _open_root(root)
    try:
        for rel, fd in _walk(root_fd, ""):
            if len(copied) >= MAX_ENTRIES:
                raise UnsafeOutput(f"more than {MAX_ENTRIES} files and directories (at {rel})")
            target = dest / rel
            if fd is None:
                target.mkdir(mode=0o755)
                copied[rel + "/"] = 0
                continue
            out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            size = 0
            try:
                while chunk := os.read(fd, _CHUNK):
                    size += len(chunk)
                    total += len(chunk)
                    if max_bytes is not None and total > max_bytes:
                        raise UnsafeOutput(f"outputs exceed {max_bytes} bytes (at {rel})")
                    os.write(out, chunk)
            finally:
                os.close(out)
            copied[rel] = size
    finally:
        os.close(root_fd)
    return copied


def read_output_file(root: Path, rel: str, *, max_bytes: int) -> bytes:
    """The bytes of one regular file `rel` below `root`, reached without following any link."""
    parts = [p for p in rel.split("/") if p]
    if not parts or any(p in {".", ".."} for p in parts):
        raise UnsafeOutput(f"{rel!r} is not a plain relative path")
    fd = _open_root(root)
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise UnsafeOutput(f"{'/'.join(parts[:i + 1])} is not a plain directory: {exc.strerror}") from None
            os.close(fd)
            fd = child
        try:
            file_fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError as exc:
            raise UnsafeOutput(f"{rel} cannot be opened as a plain file: {exc.strerror}") from None
        try:
            _check_regular(os.fstat(file_fd), rel)
            os.set_blocking(file_fd, True)
            data = bytearray()
            while chunk := os.read(file_fd, min(_CHUNK, max_bytes + 1 - len(data))):
                data += chunk
                if len(data) > max_bytes:
                    raise UnsafeOutput(f"{rel} is larger than {max_bytes} bytes")
            return bytes(data)
        finally:
            os.close(file_fd)
    finally:
        os.close(fd)
