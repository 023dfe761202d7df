"""`docker`: the production backend, one throwaway container per command.

`container_config` is pure and holds every isolation decision; `run` is a thin layer over
the Docker SDK. Paths are host paths as the Docker daemon sees them; `workdir` is bound at
the same path inside. The image's own ENV (PATH, PYTHONPATH to the copied `scoring/`) is
part of the trusted image; nothing from the caller's environment is passed in.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .base import (
    BASE_ENV,
    BackendUnavailable,
    CappedBuffer,
    Limits,
    Mount,
    MountError,
    SandboxBackend,
    SandboxError,
    SandboxResult,
    classify,
    normalize_mounts,
)

DEFAULT_IMAGE = "asibench-scoring:latest"
IMAGE_ENV_VAR = "ASIBENCH_SANDBOX_IMAGE"
CONTAINER_USER = "65534:65534"
_NANO = 1_000_000_000


class DockerBackend(SandboxBackend):
    name = "docker"

    def __init__(self, *, image: str | None = None, cpus: float = 1.0, client: Any = None) -> None:
        self.image = image or os.environ.get(IMAGE_ENV_VAR) or DEFAULT_IMAGE
        self.cpus = cpus
        self._client = client

    def python_command(self) -> list[str]:
        return ["python"]

    def runtime_mounts(self) -> list[Mount]:
        return []  # the image carries Python, numpy/scipy and `scoring/`

    def container_config(
        self,
        argv: list[str],
        workdir: Path,
        read_only_mounts: list[Mount],
        limits: Limits,
    ) -> dict[str, Any]:
        """Keyword arguments for `client.containers.create`."""
        if not argv:
            raise SandboxError("empty argv")
        workdir = Path(workdir).resolve()
        mounts = [{"Type": "bind", "Source": str(workdir), "Target": str(workdir),
                   "ReadOnly": False}]
        mounts += [{"Type": "bind", "Source": str(src), "Target": dest, "ReadOnly": True}
                   for src, dest in normalize_mounts(read_only_mounts)]
        tmpfs_size = f"size={limits.memory_bytes}"
        return {
            "image": self.image,
            "command": list(argv),
            "user": CONTAINER_USER,
            "working_dir": str(workdir),
            "environment": {**BASE_ENV, **limits.env},
            "network_mode": "bridge" if limits.network else "none",
            "read_only": True,
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,{tmpfs_size}",
                      "/dev/shm": f"rw,nosuid,nodev,noexec,{tmpfs_size}"},
            "mounts": mounts,
            "mem_limit": limits.memory_bytes,
            "memswap_limit": limits.memory_bytes,  # equal to mem_limit: no swap
            "nano_cpus": int(self.cpus * _NANO),
            "pids_limit": limits.max_processes,
            "ulimits": [
                {"name": "cpu", "soft": limits.cpu_seconds, "hard": limits.cpu_seconds + 1},
                {"name": "fsize", "soft": limits.max_file_bytes, "hard": limits.max_file_bytes},
                {"name": "core", "soft": 0, "hard": 0},
            ],
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "ipc_mode": "private",
            "init": True,  # reaps orphans so the pids limit is not eaten by zombies
            "stdin_open": False,
            "tty": False,
            "detach": True,
            # The daemon keeps logs on disk; bound them like the in-memory capture.
            "log_config": {"type": "json-file",
                           "config": {"max-size": str(2 * limits.max_output_bytes),
                                      "max-file": "1"}},
            "labels": {"org.asibench.sandbox": "1"},
        }

    def run(
        self,
        argv: list[str],
        workdir: Path,
        read_only_mounts: list[Mount],
        limits: Limits,
    ) -> SandboxResult:
        import time

        if not Path(workdir).is_dir():
            raise MountError(f"workdir is not a directory: {workdir}")
        config = self.container_config(argv, workdir, read_only_mounts, limits)
        config.pop("detach")
        client = self._connect()
        started = time.monotonic()
        container = client.containers.create(**config)
        timed_out = False
        try:
            container.start()
            try:
                status = container.wait(timeout=limits.wall_clock_seconds)
                returncode = int(status.get("StatusCode", -1))
            except Exception:  # requests' ReadTimeout/ConnectionError: the deadline passed
                timed_out = True
                container.kill()
                returncode = int(container.wait(timeout=30).get("StatusCode", -1))
            duration = time.monotonic() - started
            out = _capped_logs(container, limits.max_output_bytes, stdout=True)
            err = _capped_logs(container, limits.max_output_bytes, stdout=False)
            container.reload()
            oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
        finally:
            container.remove(force=True)
        if returncode > 128:
            returncode = -(returncode - 128)  # shell convention for a signal death
        stderr = err.getvalue()
        limit, reason = classify(returncode, stderr, timed_out, limits, oom_killed=oom)
        return SandboxResult(
            returncode=returncode, stdout=out.getvalue(), stderr=stderr,
            timed_out=timed_out, duration_seconds=duration, backend=self.name,
            reason=reason, limit=limit,
            stdout_truncated=out.truncated, stderr_truncated=err.truncated,
        )

    def _connect(self) -> Any:
        if self._client is None:
            try:
                import docker

                self._client = docker.from_env()
                self._client.ping()
            except Exception as exc:
                self._client = None
                raise BackendUnavailable(f"Docker daemon unreachable: {exc}") from exc
        return self._client


def _capped_logs(container: Any, cap: int, *, stdout: bool) -> CappedBuffer:
    buf = CappedBuffer(cap)
    for chunk in container.logs(stdout=stdout, stderr=not stdout, stream=True):
        buf.write(chunk)
    return buf
