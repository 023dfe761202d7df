"""Host-side helpers both sandbox backends share: run one process with a deadline, bounded output
capture and a group kill; measure a scratch tree; lend a workdir to the sandbox uid."""

from __future__ import annotations

import os
import resource
import select
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from .base import CappedBuffer

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


def disk_usage(root: Path) -> int:
    """Bytes below root, without following links (the tree is the sandbox's). Every entry
    counts as at least one 4 KiB block, so a flood of empty files hits the cap too (and the
    walk stays bounded); a sparse file counts at its apparent size, which is what a reader copies."""
    total, stack = 0, [str(root)]
    while stack:
        with suppress(OSError), os.scandir(stack.pop()) as entries:
            for entry in entries:
                with suppress(OSError):
                    st = entry.stat(follow_symlinks=False)
                    size = st.st_size if stat.S_ISREG(st.st_mode) else 0
                    total += max(size, st.st_blocks * 512, 4096)
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
    return total


@contextmanager
def workdir_owned_by(workdir: Path, uid: int) -> Iterator[None]:
    """Hand the workdir tree to the sandbox uid for the run, then back to its owner."""
    st = os.stat(workdir)
    if st.st_uid == uid:
        yield
        return
    _chown_tree(workdir, uid, uid)
    try:
        yield
    finally:
        _chown_tree(workdir, st.st_uid, st.st_gid)


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    # lchown and no symlink following: the sandbox may have planted links to host files.
    os.chown(root, uid, gid, follow_symlinks=False)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            with suppress(FileNotFoundError):
                os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)
