"""Host-side helpers both sandbox backends share: run one process with a deadline, bounded output
capture and a group kill; measure a scratch tree; lend a workdir to the sandbox uid."""

from __future__ import annotations

import fnmatch
import logging
import os
import resource
import select
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from .base import CappedBuffer

logger = logging.getLogger(__name__)

# After the leader exits, readers get this long to drain pipes a stray process may still
# hold; then we stop waiting rather than hang the worker.
_DRAIN_SECONDS = 2.0


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: CappedBuffer
    stderr: CappedBuffer
    timed_out: bool
    duration_seconds: float
    stopped: tuple[str, str] | None = None
    """(limit, reason) when `watch` stopped the command."""


Watch = Callable[[], "tuple[str, str] | None"]
"""Polled while the command runs; returns (limit, reason) to stop it, else None."""


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def drive(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    output_cap: int,
    pass_fds: Collection[int] = (),
    preexec_fn: Callable[[], None] | None = None,
    user: int | None = None,
    group: int | None = None,
    on_started: Callable[[int], None] | None = None,
    watch: Watch | None = None,
    watch_interval: float = 0.2,
) -> Completed:
    """Start `argv` as the leader of a new session, wait at most `timeout` seconds (or until
    `watch` reports a breached limit), then SIGKILL its whole process group — also after a
    normal exit, so nothing it left running in the background outlives the call."""
    started = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        pass_fds=tuple(pass_fds),
        preexec_fn=preexec_fn,
        start_new_session=True,
        user=user,
        group=group,
        extra_groups=[] if user is not None else None,
    )
    out, err = CappedBuffer(output_cap), CappedBuffer(output_cap)
    assert proc.stdout is not None and proc.stderr is not None
    sinks = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    for fd in sinks:
        os.set_blocking(fd, False)
    if on_started is not None:
        on_started(proc.pid)

    timed_out = exited = False
    stopped: tuple[str, str] | None = None
    next_watch = started + watch_interval
    pidfd = os.pidfd_open(proc.pid)
    try:
        # One select loop instead of reader threads: a blocked read cannot be interrupted
        # portably, and a stray process may keep a pipe open forever.
        while not exited:
            now = time.monotonic()
            remaining = timeout - (now - started)
            if remaining <= 0:
                timed_out = True
                break
            if watch is not None and now >= next_watch:
                stopped = watch()
                if stopped is not None:
                    break
                next_watch = time.monotonic() + watch_interval
            wait = remaining if watch is None else max(0.0, min(remaining, next_watch - time.monotonic()))
            ready = select.select([pidfd, *sinks], [], [], wait)[0]
            _read_ready(ready, sinks)
            exited = pidfd in ready
        if watch is not None and stopped is None and not timed_out:
            stopped = watch()  # a limit breached after the last poll (e.g. a quick big write)
        # A pidfd becomes readable when the process exits but before it is reaped, so the
        # group id cannot be recycled between this kill and wait4.
        _kill_group(proc.pid)
        _, status, _ = os.wait4(proc.pid, 0)
    finally:
        os.close(pidfd)
    proc.returncode = os.waitstatus_to_exitcode(status)
    duration = time.monotonic() - started

    deadline = time.monotonic() + _DRAIN_SECONDS
    while sinks and (remaining := deadline - time.monotonic()) > 0:
        _read_ready(select.select(list(sinks), [], [], remaining)[0], sinks)
    proc.stdout.close()
    proc.stderr.close()
    return Completed(proc.returncode, out, err, timed_out, duration, stopped)


def _read_ready(ready: list[int], sinks: dict[int, CappedBuffer]) -> None:
    """Read what is available from each ready pipe; forget pipes that reached EOF."""
    for fd in ready:
        if fd not in sinks:
            continue
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            continue
        if chunk:
            sinks[fd].write(chunk)
        else:
            del sinks[fd]


def rlimit_preexec(wanted: dict[int, tuple[int, int]]) -> Callable[[], None]:
    """A preexec hook that sets rlimits. The values are clamped here, in the parent:
    without CAP_SYS_RESOURCE a hard limit can only be lowered, and the hook itself should
    do nothing but system calls (it runs between fork and exec)."""
    final = []
    for res, (soft, hard) in wanted.items():
        cur_hard = resource.getrlimit(res)[1]
        if cur_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, cur_hard), min(hard, cur_hard)
        final.append((res, (soft, hard)))

    def apply() -> None:
        for res, pair in final:
            resource.setrlimit(res, pair)

    return apply


_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class TreeRemovalError(Exception):
    """A tree a sandbox wrote could not be removed; the message names no host path."""


def _tree_walk(
    root: Path,
    visit: Callable[[int, str, os.stat_result], None],
    *,
    leave: Callable[[int, str], None] | None = None,
    strict: bool,
) -> None:
    """Every entry below `root`: visit(parent fd, name, lstat) parents first, then, with
    `leave`, leave(parent fd, name) for each directory once its entries are done.

    The tree is the sandbox's and may change under us: every step is an openat relative
    to the parent's descriptor with O_NOFOLLOW|O_DIRECTORY, so a directory swapped for a
    symlink is never followed and no path string ever grows past PATH_MAX; the walk stays
    on root's filesystem. Iterative (one descriptor per level), so any depth is walked.
    `strict` False skips what cannot be read (a live measurement); True raises OSError.
    """
    root_fd = os.open(root, _DIR_OPEN)
    device = os.fstat(root_fd).st_dev
    stack: list[tuple[int, Iterator[str], str]] = []
    try:
        stack.append((root_fd, iter(os.listdir(root_fd)), ""))
        while stack:
            fd, names, dir_name = stack[-1]
            name = next(names, None)
            if name is None:
                stack.pop()
                os.close(fd)
                if leave is not None and stack:
                    leave(stack[-1][0], dir_name)
                continue
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                visit(fd, name, st)
                if not stat.S_ISDIR(st.st_mode) or st.st_dev != device:
                    continue
                child = os.open(name, _DIR_OPEN, dir_fd=fd)
            except FileNotFoundError:
                continue
            except OSError:
                if strict:
                    raise
                continue
            try:
                stack.append((child, iter(os.listdir(child)), name))
            except OSError:
                os.close(child)
                if strict:
                    raise
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def disk_usage(root: Path) -> int:
    """Bytes below root, without following links (the tree is the sandbox's; a link counts
    as itself). Every entry counts as at least one 4 KiB block, so a flood of empty files
    hits the cap too; a sparse file counts at its apparent size, which is what a reader copies."""
    total = 0

    def visit(_fd: int, _name: str, st: os.stat_result) -> None:
        nonlocal total
        size = st.st_size if stat.S_ISREG(st.st_mode) else 0
        total += max(size, st.st_blocks * 512, 4096)

    with suppress(OSError):
        _tree_walk(root, visit, strict=False)
    return total


def newest_mtime(root: Path) -> float:
    """The latest mtime of `root` and anything below it (links as themselves), however deep."""
    newest = os.lstat(root).st_mtime

    def visit(_fd: int, _name: str, st: os.stat_result) -> None:
        nonlocal newest
        newest = max(newest, st.st_mtime)

    with suppress(OSError):
        _tree_walk(root, visit, strict=False)
    return newest


@contextmanager
def workdir_owned_by(workdir: Path, uid: int | None) -> Iterator[list[str]]:
    """Hand the workdir tree to the sandbox uid for the run, then back to its owner (uid
    None: the caller cannot, and the tree stays as it is).

    Yields a list that holds, after the block, why the tree could not be taken back, if it
    could not: that is the run's own failure (its code left the tree that way), not the host's."""
    st = os.stat(workdir)
    problems: list[str] = []
    if uid is None or st.st_uid == uid:
        yield problems
        return
    _chown_tree(workdir, uid, uid)
    try:
        yield problems
    finally:
        try:
            _chown_tree(workdir, st.st_uid, st.st_gid)
        except OSError as exc:
            problems.append(f"the run left its working directory in a state the host could not take back "
                            f"({exc.strerror or type(exc).__name__})")


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    # lchown through directory descriptors: the sandbox may have planted links to host
    # files, and directory chains longer than PATH_MAX.
    os.chown(root, uid, gid, follow_symlinks=False)

    def visit(fd: int, name: str, _st: os.stat_result) -> None:
        with suppress(FileNotFoundError):
            os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)

    _tree_walk(root, visit, strict=True)


def tree_remove(root: Path) -> None:
    """Remove a tree a sandbox wrote, through directory descriptors, however deep
    (shutil.rmtree recurses once per level and fails on a chain deeper than ~1000).
    Raises TreeRemovalError, naming no host path, when something cannot be removed."""
    # Root needs no permission bits; anyone else must open up folders the sandbox closed (chmod
    # follows links, but it cannot touch what this caller does not own).
    opening = os.geteuid() != 0

    def visit(fd: int, name: str, st: os.stat_result) -> None:
        if stat.S_ISDIR(st.st_mode):
            if opening and st.st_mode & 0o700 != 0o700:
                os.chmod(name, 0o700, dir_fd=fd)
        else:
            with suppress(FileNotFoundError):
                os.unlink(name, dir_fd=fd)

    def leave(fd: int, name: str) -> None:
        with suppress(FileNotFoundError):
            os.rmdir(name, dir_fd=fd)

    try:
        if not os.path.lexists(root):
            return
        if os.path.islink(root) or not os.path.isdir(root):
            os.unlink(root)
            return
        if opening:
            os.chmod(root, 0o700)
        _tree_walk(root, visit, leave=leave, strict=True)
        os.rmdir(root)
    except OSError as exc:
        raise TreeRemovalError(f"could not remove a sandbox's working directory "
                            f"({exc.strerror or type(exc).__name__})") from None


def tree_prune(root: Path, dir_names: Collection[str], file_patterns: Collection[str]) -> None:
    """Remove below `root` every directory named in `dir_names`, with all it holds, and every other
    entry whose name matches one of `file_patterns` (fnmatch), through directory descriptors like
    `tree_remove`: the tree is hostile code's (an agent's workspace) and may be of any depth. A link
    counts as itself and is never followed. Best effort: what cannot be read or removed stays."""
    doomed: set[tuple[int, int]] = set()  # (st_dev, st_ino) of directories going with all they hold

    def visit(fd: int, name: str, st: os.stat_result) -> None:
        parent = os.fstat(fd)
        inside = (parent.st_dev, parent.st_ino) in doomed
        if stat.S_ISDIR(st.st_mode):
            if inside or name in dir_names:
                doomed.add((st.st_dev, st.st_ino))
        elif inside or any(fnmatch.fnmatchcase(name, pattern) for pattern in file_patterns):
            with suppress(FileNotFoundError):
                os.unlink(name, dir_fd=fd)

    def leave(fd: int, name: str) -> None:
        with suppress(OSError):
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if (st.st_dev, st.st_ino) in doomed:
                os.rmdir(name, dir_fd=fd)

    with suppress(OSError):
        _tree_walk(root, visit, leave=leave, strict=False)


@contextmanager
def scratch_tree(prefix: str, parent: Path) -> Iterator[Path]:
    """A fresh private directory below `parent` for sandboxed runs, removed with
    `tree_remove` afterwards (a drop-in for tempfile.TemporaryDirectory on sandbox trees)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield path
    finally:
        try:
            tree_remove(path)
        except TreeRemovalError as exc:
            # The runs' outcomes stand; what is left is for the operator (this log names the path).
            logger.warning("%s: %s", path, exc)
