"""The modes a sandboxed run can take, named once, with what each holds for a whole run.

A backend reports the mode it would run in on this host (`SandboxBackend.mode()`); the Celery
worker prints it at start and records it with its heartbeat, Confirm reads it from there, and
docs/sandboxes.md explains each in full. `problem` set means the Portal must not run this
backend here: its limits would not hold, or it cannot start at all.
"""

from __future__ import annotations

from dataclasses import dataclass

BWRAP_ROOT = "bwrap (root: per-run uid)"
BWRAP_UNPRIVILEGED = "bwrap (unprivileged: user namespace + watchdog)"
DOCKER = "docker (container engine: cgroup limits)"
NONE = "none (no isolation)"

ENFORCES: dict[str, str] = {
    BWRAP_ROOT: (
        "namespaces, seccomp, a throwaway host uid per run; per process: CPU time, address space, file size; "
        "per run: process count (RLIMIT_NPROC on the run's uid), memory (resident memory of the process "
        "tree + tmpfs, polled every 0.2 s), scratch disk (polled), wall clock; every process of the uid "
        "killed at the end"
    ),
    BWRAP_UNPRIVILEGED: (
        "namespaces, seccomp, the worker's own uid mapped to 65534; per process: CPU time, address space, "
        "file size; per run: process count (RLIMIT_NPROC counted in the run's own user namespace), memory "
        "(resident memory of the process tree + tmpfs, polled every 0.2 s), scratch disk (polled), wall "
        "clock; the PID namespace killed at the end"
    ),
    DOCKER: (
        "a throwaway container per run as uid 65534, no capabilities; per run: memory and process count "
        "(the engine's cgroup), CPU time and file size (rlimits), scratch disk (polled), wall clock"
    ),
    NONE: "nothing but a wall clock, per-process rlimits and a process-group kill: development only",
}


@dataclass(frozen=True)
class SandboxMode:
    label: str
    """One of the names above (or "<backend> (unavailable)" when it cannot even be built)."""
    problem: str | None = None
    """Why the Portal cannot score with it on this host, and what to do about it; None: it can."""

    @property
    def can_score(self) -> bool:
        return self.problem is None

    @property
    def enforces(self) -> str:
        return ENFORCES.get(self.label, "")

    def summary(self) -> str:
        """The one line a worker prints at start."""
        if self.problem is not None:
            return f"sandbox {self.label}: CANNOT SCORE: {self.problem}"
        return f"sandbox {self.label}: enforces {self.enforces}"
