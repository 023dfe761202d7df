"""Running one agent command in a workspace: unsandboxed (`none`), in bubblewrap (`linux_ns`)
or in a container (`os`).

Both modes kill the whole process tree when the command ends or its time is up:
- `none`: the command leads a new session whose group is SIGKILLed (scoring.sandbox.process.drive);
  this process is also a child subreaper, so anything that escaped the group with setsid()
  is re-parented to us and killed by the sweep after the run.
- `linux_ns`: bwrap runs with --die-with-parent and its own PID namespace; the run ends by
  killing the namespace's init, and with it every process inside, and waits until it is gone
  (as root, every process of the sandbox's throwaway uid is killed too). Not root, the agent
  gets the same whole-run limits in a user namespace of its own (docs/sandboxes.md).

What a `linux_ns` agent can reach (client contract §5.10 describes upstream's weaker mode):
read-only /usr, /bin, /lib*, a few /etc files (plus resolver and CA files, since the
network is shared), the Python installation running this CLI, and the `--ro-mount` paths;
a private /tmp and /dev/shm; the workspace is the only writable host path. The host's
home, other users' files, the instances dir (with reference/), the results dir and the
Portal credential store are not mounted. Network: shared with the host (agents talk to
their model provider). Environment: cleared, then PATH, HOME=<workspace>, LANG, TMPDIR,
AI4SCI_SANDBOX=1 and the passed-through variables (model-provider keys, proxies); never
the Portal submit token.

What an `os` agent can reach: the container image chosen with `--image` (its root read-only,
a private /tmp), the workspace bound read-write at its own host path, and the `--ro-mount`
paths read-only; it runs as uid 65534 with every capability dropped, no new privileges, and
the process/memory limits below. Network is what `--network` says: `none` (loopback only) or
`bridge` (the engine's NAT, to reach a model provider). Environment as for `linux_ns`, minus
the host's PATH. The engine is the Docker API at DOCKER_HOST (Docker or podman).
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from scoring.sandbox import SandboxBackend, SandboxError, get_backend, python_runtime_mounts
from scoring.sandbox.limits import AGENT_OUTPUT_CAP, agent_limits
from scoring.sandbox.process import drive

NEVER_PASSED = frozenset({"ASIBENCH_SUBMIT_TOKEN", "AI4SCI_SUBMIT_TOKEN"})
_PASS_THROUGH = re.compile(
    r"(?i)^(?:[A-Z0-9_]*_(?:API_KEY|API_BASE|BASE_URL|AUTH_TOKEN|ACCESS_TOKEN)|(?:HTTPS?|NO|ALL)_PROXY)$"
)
_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class AgentRun:
    returncode: int | None
    """Exit status; -N for death by signal N; None when the command never ran or timed out."""
    stdout: bytes
    stderr: bytes
    timed_out: bool
    seconds: float
    error: str | None = None
    """Why the command could not be started (sandbox setup), else None."""


def sandbox_env(host_env: Mapping[str, str], workspace: Path, pass_env: list[str]) -> dict[str, str]:
    env = {name: value for name, value in host_env.items()
           if (name in pass_env or _PASS_THROUGH.match(name)) and name not in NEVER_PASSED}
    venv_bin = Path(sys.prefix) / "bin"
    env.update({
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(workspace),
        "LANG": host_env.get("LANG") or "C.UTF-8",
        "TMPDIR": "/tmp",
        "AI4SCI_SANDBOX": "1",
    })
    return env


def linux_ns_mounts(extra: list[Path]) -> list[Path]:
    mounts: list[Path] = []
    for path in [*python_runtime_mounts(packages=()), *(p.resolve() for p in extra)]:
        if not any(path == m or m in path.parents for m in mounts):
            mounts = [m for m in mounts if path not in m.parents] + [path]
    return mounts


def run_linux_ns(command: str, workspace: Path, *, host_env: Mapping[str, str], timeout: float,
                 mounts: list[Path], pass_env: list[str]) -> AgentRun:
    return _run_sandboxed(get_backend("bwrap"), "linux_ns", command, workspace, mounts, timeout, network=True,
                          env=sandbox_env(host_env, workspace, pass_env))


def _run_sandboxed(backend: SandboxBackend, label: str, command: str, workspace: Path, mounts: list[Path],
                   timeout: float, *, network: bool, env: dict[str, str]) -> AgentRun:
    """The agent's command in `backend` with the agent limits; a sandbox failure is the run's error."""
    started = time.monotonic()
    limits = agent_limits(timeout, network=network, env=env)
    try:
        result = backend.run(["/bin/sh", "-c", command], workspace, list(mounts), limits)
    except SandboxError as exc:
        return AgentRun(None, b"", b"", False, time.monotonic() - started, error=f"{label} sandbox: {exc}")
    return AgentRun(None if result.timed_out else result.returncode, result.stdout, result.stderr,
                    result.timed_out, result.duration_seconds)


OS_NETWORKS = ("none", "bridge")


def os_image_identity(image: str) -> str:
    """The image's content id ("sha256:…"), what the official client records as image_identity.

    Fails closed: no engine or no such image is an error before any agent runs."""
    from scoring.sandbox.docker_backend import DockerBackend

    try:
        return str(DockerBackend(image=image).image_id())
    except SandboxError as exc:
        raise SandboxError(f"--sandbox os: {exc}") from exc


def run_os(command: str, workspace: Path, *, host_env: Mapping[str, str], timeout: float, image: str,
           network: str, mounts: list[Path], pass_env: list[str]) -> AgentRun:
    from scoring.sandbox.docker_backend import DockerBackend

    env = sandbox_env(host_env, workspace, pass_env)
    env.pop("PATH")  # the host's venv means nothing inside; the image's PATH applies
    return _run_sandboxed(DockerBackend(image=image), "os", command, workspace, mounts, timeout,
                          network=network == "bridge", env=env)


def run_unsandboxed(command: str, cwd: Path, *, host_env: Mapping[str, str], timeout: float) -> AgentRun:
    env = {k: v for k, v in host_env.items() if k not in NEVER_PASSED}
    _become_subreaper()
    # Only processes that appear during the run are ours to kill (the caller may have others).
    existing = set(descendants())
    try:
        done = drive(["/bin/sh", "-c", command], cwd=cwd, env=env, timeout=timeout, output_cap=AGENT_OUTPUT_CAP)
    except OSError as exc:
        return AgentRun(None, b"", b"", False, 0.0, error=f"cannot start the agent command: {exc}")
    finally:
        kill_descendants(existing)
    returncode = None if done.timed_out else done.returncode
    return AgentRun(returncode, done.stdout.getvalue(), done.stderr.getvalue(), done.timed_out,
                    done.duration_seconds)


def _become_subreaper() -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def descendants(root: int | None = None) -> list[int]:
    """Live (non-zombie) descendants of `root` (default: this process), from /proc."""
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may contain spaces and parentheses; fields resume after the last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and fields[0] != b"Z":
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    found, stack = [], list(tree.get(os.getpid() if root is None else root, []))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(tree.get(pid, []))
    return found


def kill_descendants(spare: set[int], rounds: int = 50) -> None:
    """SIGKILL every live descendant of this process not in `spare`; reap those re-parented to us."""
    killed: set[int] = set()
    for _ in range(rounds):
        targets = [pid for pid in descendants() if pid not in spare]
        if not targets:
            break
        for pid in targets:
            killed.add(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)
        _reap(killed)
    _reap(killed)


def _reap(pids: set[int]) -> None:
    for pid in list(pids):
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                pids.discard(pid)
        except ChildProcessError:  # not our child (its own parent reaps it) or already reaped
            pids.discard(pid)
