"""`none`: a plain subprocess with a deadline and a group kill. Development only.

It isolates nothing — no namespaces, no uid change, the host filesystem and network are
all reachable — so it can only be had by asking for it by name.
"""

from __future__ import annotations

import logging
import resource
from pathlib import Path

from .base import (
    BASE_ENV,
    BackendUnavailable,
    Limits,
    Mount,
    MountError,
    SandboxBackend,
    SandboxResult,
    checked_run_args,
    classify,
    normalize_mounts,
)
from .modes import NONE, SandboxMode
from .process import drive, rlimit_preexec

log = logging.getLogger(__name__)


class NoneBackend(SandboxBackend):
    name = "none"

    def __init__(self, *, explicit: bool = False) -> None:
        if not explicit:
            raise BackendUnavailable(
                "the 'none' backend runs commands unsandboxed; request it by name "
                "(get_backend('none')) if that is really what you want"
            )
        log.warning("sandbox backend 'none' selected: commands run WITHOUT isolation")

    def mode(self) -> SandboxMode:
        return SandboxMode(NONE)

    def run(
        self,
        argv: list[str],
        workdir: Path,
        read_only_mounts: list[Mount],
        limits: Limits,
    ) -> SandboxResult:
        workdir = checked_run_args(argv, workdir)
        # Mounts cannot be enforced here; still reject the ones that would fail elsewhere.
        for src, dest in normalize_mounts(read_only_mounts):
            if str(src) != dest:
                raise MountError(f"the 'none' backend cannot remap {src} to {dest}")
        done = drive(
            argv,
            cwd=workdir,
            env={**BASE_ENV, **limits.env},
            timeout=limits.wall_clock_seconds,
            output_cap=limits.max_output_bytes,
            preexec_fn=rlimit_preexec(_soft_limits(limits)),
        )
        stderr = done.stderr.getvalue()
        return SandboxResult.captured(backend=self.name, returncode=done.returncode, stdout=done.stdout,
                                      stderr=done.stderr, timed_out=done.timed_out,
                                      duration_seconds=done.duration_seconds,
                                      stopped=classify(done.returncode, stderr, done.timed_out, limits))


def _soft_limits(limits: Limits) -> dict[int, tuple[int, int]]:
    # CPU, memory and file size still apply per process, so development runs fail the way
    # sandboxed ones do; NPROC is left alone because it would count the developer's uid.
    return {
        resource.RLIMIT_CPU: (limits.cpu_seconds, limits.cpu_seconds + 1),
        resource.RLIMIT_AS: (limits.memory_bytes, limits.memory_bytes),
        resource.RLIMIT_FSIZE: (limits.max_file_bytes, limits.max_file_bytes),
    }
