"""The sandbox interface: limits in, a result out, typed errors for broken infrastructure.

A command that misbehaves (crashes, hits a limit, runs too long) is a *result*; only a
sandbox that cannot be set up at all raises. Pure Python, no Django.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol, TypeAlias

from .modes import SandboxMode

Mount: TypeAlias = Path | tuple[Path, str]
"""A read-only mount: a host path (seen at the same path inside) or (host path, inside path)."""

# What every backend sets inside before `Limits.env`. One thread per numeric library keeps
# numpy/scipy within the process limit (threads count as processes) and the address-space
# limit (each BLAS thread reserves its own stack and buffers).
BASE_ENV: dict[str, str] = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


class SandboxError(Exception):
    """The sandbox could not run the command at all (not: the command failed)."""


class UnknownBackend(SandboxError):
    pass


class BackendUnavailable(SandboxError):
    """The backend's machinery (bwrap, the Docker daemon, privileges) is missing here."""


class MountError(SandboxError):
    """A workdir or read-only mount is missing, unreadable by the sandbox user, or invalid."""


@dataclass(frozen=True)
class Limits:
    wall_clock_seconds: float = 60.0
    cpu_seconds: int = 60
    memory_bytes: int = 1 << 30
    max_processes: int = 64
    max_file_bytes: int = 64 << 20
    network: bool = False
    env: dict[str, str] = field(default_factory=dict)
    max_output_bytes: int = 1 << 20
    """Per stream; beyond it the middle is dropped and the head and tail are kept."""
    max_scratch_bytes: int | None = None
    """Disk the command may fill in its workdir (all files together); None: only max_file_bytes."""

    def __post_init__(self) -> None:
        for name in ("wall_clock_seconds", "cpu_seconds", "memory_bytes", "max_processes",
                     "max_file_bytes", "max_output_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"Limits.{name} must be positive")
        if self.max_scratch_bytes is not None and self.max_scratch_bytes <= 0:
            raise ValueError("Limits.max_scratch_bytes must be positive")

    def replace(self, **changes: object) -> Limits:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


class CapturedOutput(Protocol):
    """A run's stdout or stderr as captured: its bytes (up to the cap) and whether the cap cut it."""

    @property
    def truncated(self) -> bool: ...

    def getvalue(self) -> bytes: ...


@dataclass(frozen=True)
class SandboxResult:
    returncode: int
    """Exit status; negative -N when the command was killed by signal N."""
    stdout: bytes
    stderr: bytes
    timed_out: bool
    duration_seconds: float
    backend: str
    reason: str | None = None
    """Readable explanation when a limit stopped the command, else None."""
    limit: str | None = None
    """Which limit: wall_clock, cpu, memory, processes, file_size, scratch_disk; else None.
    "workdir": the command left its workdir in a state the host could not take back."""
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @classmethod
    def captured(cls, *, backend: str, returncode: int, stdout: CapturedOutput, stderr: CapturedOutput,
                 timed_out: bool, duration_seconds: float, stopped: tuple[str | None, str | None]) -> SandboxResult:
        """The result of a run whose output was captured under a cap (every backend's way): `stopped` is (which
        limit, why) from the backend's classification, (None, None) when none stopped it."""
        limit, reason = stopped
        return cls(returncode=returncode, stdout=stdout.getvalue(), stderr=stderr.getvalue(), timed_out=timed_out,
                   duration_seconds=duration_seconds, backend=backend, reason=reason, limit=limit,
                   stdout_truncated=stdout.truncated, stderr_truncated=stderr.truncated)

    @property
    def ok(self) -> bool:
        """Finished by itself with status 0 and within every limit."""
        return self.returncode == 0 and not self.timed_out and self.limit is None

    @property
    def stdout_text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", errors="replace")


class SandboxBackend:
    """Runs one command with only `workdir` writable; the working directory is `workdir`,
    seen at the same absolute path inside as on the host."""

    name: ClassVar[str] = ""

    def run(
        self,
        argv: list[str],
        workdir: Path,
        read_only_mounts: list[Mount],
        limits: Limits,
    ) -> SandboxResult:
        raise NotImplementedError

    def mode(self) -> SandboxMode:
        """The mode this backend runs in on this host (`scoring.sandbox.modes`). Its `problem`:
        why it cannot enforce `Limits` for a whole run here, or cannot run at all (what to do
        about it included); the Portal refuses to run such a backend."""
        raise NotImplementedError

    def python_command(self) -> list[str]:
        """argv prefix that starts Python inside this backend's sandbox (default: this interpreter)."""
        return [sys.executable]

    def runtime_mounts(self) -> list[Mount]:
        """Read-only mounts that `python_command()` needs (none when the image has them)."""
        from .runtime import python_runtime_mounts

        return list(python_runtime_mounts())


def checked_run_args(argv: list[str], workdir: Path) -> Path:
    """The resolved workdir of a run, after refusing an empty command or a missing workdir."""
    if not argv:
        raise SandboxError("empty argv")
    resolved = Path(workdir).resolve()
    if not resolved.is_dir():
        raise MountError(f"workdir is not a directory: {resolved}")
    return resolved


def normalize_mounts(mounts: list[Mount]) -> list[tuple[Path, str]]:
    out: list[tuple[Path, str]] = []
    for m in mounts:
        src, dest = (m, str(m)) if isinstance(m, Path) else (Path(m[0]), m[1])
        if not Path(dest).is_absolute():
            raise MountError(f"mount destination must be absolute: {dest!r}")
        if not src.exists():
            raise MountError(f"mount source does not exist: {src}")
        out.append((src.resolve(), dest))
    return out


class CappedBuffer:
    """Keeps the first `cap - tail` bytes and the last `tail` bytes of a stream, so a
    flood of output costs bounded memory and the final traceback survives."""

    def __init__(self, cap: int) -> None:
        self.tail_cap = min(cap // 4, 64 << 10)
        self.head_cap = cap - self.tail_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def write(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_cap:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - self.tail_cap)]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def getvalue(self) -> bytes:
        if not self.truncated:
            return bytes(self.head + self.tail)
        dropped = self.total - len(self.head) - len(self.tail)
        return bytes(self.head) + f"\n[... {dropped} bytes omitted ...]\n".encode() + bytes(self.tail)


_MEMORY_MARKERS = (b"MemoryError", b"Cannot allocate memory", b"std::bad_alloc",
                   b"out of memory", b"failed to map segment")
_FORK_MARKERS = (b"Resource temporarily unavailable", b"can't start new thread",
                 b"fork: retry", b"Cannot fork", b"pthread_create failed")


def classify(
    returncode: int, stderr: bytes, timed_out: bool, limits: Limits, *, oom_killed: bool = False
) -> tuple[str | None, str | None]:
    """(limit, reason) for a finished command. Signals are exact; the rest reads the tail of
    stderr, because an rlimit makes a call fail rather than killing the process."""
    if timed_out:
        return "wall_clock", f"killed: wall-clock limit of {limits.wall_clock_seconds:g} s exceeded"
    if oom_killed:
        return "memory", f"killed: memory limit of {limits.memory_bytes} bytes exceeded (OOM)"
    if returncode == -signal.SIGXCPU:
        return "cpu", f"killed: CPU-time limit of {limits.cpu_seconds} s exceeded"
    if returncode == -signal.SIGXFSZ:
        return "file_size", f"killed: file-size limit of {limits.max_file_bytes} bytes exceeded"
    if returncode == 0:
        return None, None
    tail = stderr[-4096:]
    if b"File too large" in tail:
        return "file_size", f"failed: file-size limit of {limits.max_file_bytes} bytes exceeded"
    if any(m in tail for m in _MEMORY_MARKERS):
        return "memory", f"failed: memory limit of {limits.memory_bytes} bytes exceeded"
    if any(m in tail for m in _FORK_MARKERS):
        return "processes", f"failed: process limit of {limits.max_processes} reached"
    if returncode == -signal.SIGKILL:
        # Nothing but the hard CPU limit (after an ignored SIGXCPU) or the kernel's OOM
        # killer sends SIGKILL into a sandbox we did not time out.
        return "cpu", (f"killed by SIGKILL: CPU-time limit of {limits.cpu_seconds} s "
                       "(or the kernel OOM killer)")
    return None, None
