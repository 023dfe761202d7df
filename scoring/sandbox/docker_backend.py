"""`docker`: the production backend, one throwaway container per command.

`container_config` is pure and holds every isolation decision; `run` is a thin layer over
the Docker SDK. Paths are host paths as the Docker daemon sees them; `workdir` is bound at
the same path inside (so a worker that itself runs in a container must see its scratch
directory at the same path as the engine: see docker-compose.yml). The image is trusted and
carries `scoring/` and `cli_client/` on its own sys.path; nothing from the caller's process
environment is passed in, and a caller's PYTHONPATH (host paths) is dropped.

Tested against podman 4.3 serving the Docker API (scripts/ensure-container-engine.sh); three
of its habits are handled here: `wait` answers 0.1-0.5 s after the container has exited (so the
end of a run is the end of its attached output stream, then one inspect), a `wait` that outlives
its timeout surfaces as requests' ConnectionError rather than ReadTimeout, and on cgroup v1
`State.OOMKilled` is never set, so exit 137 that we did not cause is read as the memory limit.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
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
    checked_run_args,
    classify,
    normalize_mounts,
)
from .modes import DOCKER, SandboxMode
from .process import disk_usage, workdir_owned_by

# Host-side variables that mean nothing inside the image (its code is on its own sys.path).
_DROPPED_ENV = frozenset({"PYTHONPATH", "PYTHONHOME"})

# Our own build, never pulled: tagged with the engine version it carries (scoring.engine.version), never a
# moving tag such as :latest (tests/scoring/sandbox/test_docker_config.py holds the two together).
DEFAULT_IMAGE = "asibench-scoring:1.0.0"
IMAGE_ENV_VAR = "ASIBENCH_SANDBOX_IMAGE"
ENGINE_ENV_VAR = "DOCKER_HOST"  # the engine's API address; docker.from_env() reads it
CONTAINER_UID = 65534
CONTAINER_USER = f"{CONTAINER_UID}:{CONTAINER_UID}"
# PID 1 of every container: our own init, which no process of the container can reach through
# /proc (an engine-provided init is dumpable and holds the result channel as its stdout).
CONTAINER_INIT = ["python", "-I", "/opt/asibench/scoring/sandbox/container_init.py"]
_NANO = 1_000_000_000
# One client per process and engine: docker.from_env() asks the engine for its API version, which podman
# answers in about 0.2 s (it runs its runtimes to report theirs), and a worker took a new backend, so a
# new client, for every task it scored. Keyed by pid too: a forked worker never shares its parent's
# connections.
_ENGINE_ENV = (ENGINE_ENV_VAR, "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH")
_CLIENTS: dict[tuple[int | str | None, ...], Any] = {}
NOFILE_LIMIT = 4096
NPROC_LIMIT = 16384


class DockerBackend(SandboxBackend):
    name = "docker"

    def __init__(self, *, image: str | None = None, cpus: float = 1.0, client: Any = None) -> None:
        self.image = image or os.environ.get(IMAGE_ENV_VAR) or DEFAULT_IMAGE
        self.cpus = cpus
        self._client = client

    def python_command(self) -> list[str]:
        return ["python"]

    def mode(self) -> SandboxMode:
        """Asks the engine: it must answer and hold the image. Not root, the workdirs cannot be lent
        to the container's uid (see `run`), so the Portal's runs could not write their results."""
        if os.geteuid() != 0:
            return SandboxMode(DOCKER, f"the docker backend lends each working directory to the container's uid "
                                       f"{CONTAINER_UID}, which needs root, and this worker runs as uid "
                                       f"{os.geteuid()}. Run the worker as root, or use the default bwrap sandbox.")
        try:
            self.image_id()
        except BackendUnavailable as exc:
            return SandboxMode(DOCKER, str(exc))
        return SandboxMode(DOCKER)

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
            "command": [*CONTAINER_INIT, *argv],
            "user": CONTAINER_USER,
            "working_dir": str(workdir),
            "environment": {**BASE_ENV, **{k: v for k, v in limits.env.items() if k not in _DROPPED_ENV}},
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
                # Explicit, so the engine does not try to raise them to its own defaults
                # (podman as root asks for nofile=1048576, refused where the host caps it).
                # nproc is per uid across the host; pids_limit is the per-container cap.
                {"name": "nofile", "soft": NOFILE_LIMIT, "hard": NOFILE_LIMIT},
                {"name": "nproc", "soft": NPROC_LIMIT, "hard": NPROC_LIMIT},
            ],
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "ipc_mode": "private",
            # No engine init: CONTAINER_INIT reaps orphans, so the pids limit is not eaten by zombies.
            "init": False,
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
        workdir = checked_run_args(argv, workdir)
        config = self.container_config(argv, workdir, read_only_mounts, limits)
        config.pop("detach")
        client = self._connect()
        if os.geteuid() != 0 and os.stat(workdir).st_uid != CONTAINER_UID:
            raise MountError(f"the container runs as uid {CONTAINER_UID} and cannot write {workdir}; "
                             "the docker backend hands the workdir over, which needs root")
        # As root, lend the workdir to the container's uid for the run, as bwrap does.
        with workdir_owned_by(workdir, CONTAINER_UID if os.geteuid() == 0 else None) as handback:
            result = self._run_container(client, config, limits, workdir)
        if handback:
            return dataclasses.replace(result, limit="workdir", reason=handback[0])
        return result

    def _run_container(self, client: Any, config: dict[str, Any], limits: Limits, workdir: Path) -> SandboxResult:
        started = time.monotonic()
        deadline = started + limits.wall_clock_seconds
        try:
            container = client.containers.create(**config)
        except Exception as exc:  # image missing, engine refused the configuration
            raise SandboxError(f"the container engine refused the sandbox: {exc}") from exc
        out, err = CappedBuffer(limits.max_output_bytes), CappedBuffer(limits.max_output_bytes)
        try:
            # Attached before the start, so nothing the command writes is missed. The stream ends
            # the moment the container's PID 1 does; podman's `wait` answers 0.1-0.5 s after that
            # (its cleanup process runs first), which on a short scoring run was most of its cost.
            try:
                stream = container.attach(stdout=True, stderr=True, stream=True, demux=True, logs=False)
            except Exception as exc:
                raise SandboxError(f"the container engine would not attach to the sandbox: {exc}") from exc
            output = _OutputReader(stream, out, err)
            try:
                container.start()
            except Exception as exc:  # the runtime could not apply the configuration
                raise SandboxError(f"the container engine could not start the sandbox: {exc}") from exc
            scratch = _ScratchWatch(container, workdir, limits.max_scratch_bytes)
            try:
                timed_out = not output.ended(timeout=deadline - time.monotonic())
                if timed_out:
                    container.kill(signal="SIGKILL")
                    output.ended(timeout=30)
                ended = _final_state(container, deadline)
                if output.error is not None or ended.stream_cut:
                    # The engine dropped the stream before the end: what it kept is the whole output.
                    out = _capped_logs(container, limits.max_output_bytes, stdout=True)
                    err = _capped_logs(container, limits.max_output_bytes, stdout=False)
            finally:
                scratch.stop()
            timed_out = timed_out or ended.timed_out
            returncode = ended.exit_code
            duration = time.monotonic() - started
            oom = ended.oom_killed
        finally:
            try:
                container.remove(force=True)
            except Exception:  # never mask the run's own error; the label finds leftovers
                pass
        if returncode > 128:
            returncode = -(returncode - 128)  # shell convention for a signal death
        # podman on cgroup v1 never sets OOMKilled: a SIGKILL we did not send is the
        # memory cgroup's (the CPU rlimit sends SIGXCPU first, classified as cpu).
        oom = oom or (returncode == -signal.SIGKILL and not timed_out and scratch.breach is None)
        stderr = err.getvalue()
        stopped = scratch.breach or classify(returncode, stderr, timed_out, limits, oom_killed=oom)
        return SandboxResult.captured(backend=self.name, returncode=returncode, stdout=out, stderr=err,
                                      timed_out=timed_out, duration_seconds=duration, stopped=stopped)

    def image_id(self) -> str:
        """The content id ("sha256:…") of this backend's image; BackendUnavailable without it."""
        client = self._connect()
        try:
            return str(client.images.get(self.image).id)
        except Exception as exc:
            raise BackendUnavailable(f"image {self.image!r} is not available to the engine: {exc}") from exc

    def _connect(self) -> Any:
        if self._client is None:
            key = (os.getpid(), *(os.environ.get(name) for name in _ENGINE_ENV))
            try:
                client = _CLIENTS.get(key)
                if client is None:
                    import docker

                    client = docker.from_env()
                client.ping()
            except Exception as exc:
                _CLIENTS.pop(key, None)
                where = os.environ.get(ENGINE_ENV_VAR) or "the default socket"
                raise BackendUnavailable(f"Docker daemon unreachable at {where} (set {ENGINE_ENV_VAR}): {exc}") from exc
            self._client = _CLIENTS[key] = client
        return self._client


class _ScratchWatch:
    """The workdir is a host bind mount, outside the container's memory cgroup: poll its bytes
    and kill the container past `cap`, as bwrap's whole-run watch does (same 0.2 s overshoot)."""

    INTERVAL = 0.2

    def __init__(self, container: Any, workdir: Path, cap: int | None) -> None:
        self.container, self.workdir, self.cap = container, workdir, cap
        self.breach: tuple[str, str] | None = None
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True) if cap is not None else None
        if self._thread is not None:
            self._thread.start()

    def _over(self) -> bool:
        assert self.cap is not None
        used = disk_usage(self.workdir)
        if used > self.cap and self.breach is None:
            self.breach = ("scratch_disk", f"killed: scratch disk limit of {self.cap} bytes exceeded "
                                           f"({used} bytes written)")
        return self.breach is not None

    def _poll(self) -> None:
        while not self._halt.wait(self.INTERVAL):
            if self._over():
                try:
                    self.container.kill(signal="SIGKILL")
                except Exception:  # already gone: the breach still stands
                    pass
                return

    def stop(self) -> None:
        if self._thread is None:
            return
        self._halt.set()
        self._thread.join()
        self._over()  # a quick big write after the last poll


def _capped_logs(container: Any, cap: int, *, stdout: bool) -> CappedBuffer:
    buf = CappedBuffer(cap)
    # follow=False: the container has exited; following makes podman hold the stream ~250 ms.
    for chunk in container.logs(stdout=stdout, stderr=not stdout, stream=True, follow=False):
        buf.write(chunk)
    return buf


class _OutputReader:
    """Reads the attached stream (stdout and stderr frames) into capped buffers on a thread of its
    own, so the caller can keep the wall clock; past the cap it keeps reading and drops bytes, so a
    flooding command is never blocked on a full pipe instead of being measured."""

    def __init__(self, stream: Any, out: CappedBuffer, err: CappedBuffer) -> None:
        self.stream, self.out, self.err = stream, out, err
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for stdout, stderr in self.stream:
                if stdout:
                    self.out.write(stdout)
                if stderr:
                    self.err.write(stderr)
        except Exception as exc:  # the engine went away: `_final_state` tells it from a normal end
            self.error = exc

    def ended(self, timeout: float) -> bool:
        """Whether the stream ended (the container's PID 1 exited, or the engine dropped it) in time."""
        self._thread.join(max(0.0, timeout))
        return not self._thread.is_alive()


@dataclasses.dataclass(frozen=True)
class _Ended:
    """How a container ended, once its output stream has: the engine's exit code and OOM flag, whether it
    was killed past its wall clock, and whether the stream was cut before the end (read the logs then)."""

    exit_code: int
    oom_killed: bool
    timed_out: bool = False
    stream_cut: bool = False


def _final_state(container: Any, deadline: float) -> _Ended:
    """How the container ended, once its stream has: at once when it has exited; when the engine
    dropped the stream early, after waiting out the wall clock (killed if it ran past it)."""
    import requests

    try:
        container.reload()
        state = container.attrs.get("State", {})
        if state.get("Status") not in ("running", "created", "configured", "initialized", "paused"):
            return _Ended(int(state.get("ExitCode", -1)), bool(state.get("OOMKilled")))
        timed_out = False
        try:
            status = container.wait(timeout=max(1.0, deadline - time.monotonic()))
        except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
            # podman reports a wait timeout as a dropped connection; tell it apart from
            # an engine that went away by the clock.
            if time.monotonic() < deadline:
                raise SandboxError(f"lost the container engine while waiting: {exc}") from exc
            container.kill(signal="SIGKILL")
            status = container.wait(timeout=30)
            timed_out = True
        container.reload()
        return _Ended(int(status.get("StatusCode", -1)), bool(container.attrs.get("State", {}).get("OOMKilled")),
                      timed_out=timed_out, stream_cut=True)
    except SandboxError:
        raise
    except Exception as exc:
        raise SandboxError(f"lost the container engine while the sandbox ran: {exc}") from exc
