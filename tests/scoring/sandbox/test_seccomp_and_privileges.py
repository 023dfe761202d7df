"""The seccomp filter inside the real bwrap sandbox (scoring, generation and the CLI's linux_ns
agents all run through it), the mode the Portal takes with and without root, and its refusal to run bwrap
where it cannot hold the limits."""

import errno
import json
import logging
import os
import sys
import tempfile
from pathlib import Path

import pytest

from cli_client.running.agent_exec import linux_ns_mounts, run_linux_ns
from proposals.presubmit_sandbox import validate_in_sandbox
from scoring.sandbox import Limits, get_backend, server_backend, server_mode
from scoring.sandbox.modes import BWRAP_ROOT, BWRAP_UNPRIVILEGED, SandboxMode
from scoring.sandbox.seccomp import DENIED_X86_64, SeccompUnsupported, filter_program
from tests.support import deny_user_namespaces

PY = sys.executable

pytestmark = pytest.mark.slow

# Each denied syscall with zero arguments, plus getpid through the x32 ABI; numpy must still work.
CALLS = f"""
import ctypes, json, numpy
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = {{}}
for name, nr in {{**{DENIED_X86_64!r}, "x32_getpid": 0x40000000 | 39}}.items():
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(0)] * 6)
    out[name] = [rc, ctypes.get_errno()]
out["getpid"] = [libc.syscall(ctypes.c_long(39)), 0]
out["numpy"] = int(numpy.arange(5).sum())
print(json.dumps(out))
"""


def denied_everywhere(stdout: str) -> dict:
    seen = json.loads(stdout.strip().splitlines()[-1])
    assert seen.pop("numpy") == 10
    assert seen.pop("getpid")[0] > 0
    return {name: rc_errno for name, rc_errno in seen.items() if rc_errno != [-1, errno.EPERM]}


def test_each_denied_syscall_fails_with_eperm_inside_while_python_and_numpy_run(bwrap, workdir, runtime, limits):
    result = bwrap.run([PY, "-c", CALLS], workdir, runtime, limits)

    assert result.ok, result.stderr_text[-2000:]
    assert denied_everywhere(result.stdout_text) == {}


def test_a_linux_ns_agent_gets_the_same_filter(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "calls.py").write_text(CALLS)

    run = run_linux_ns(f"{PY} calls.py", workspace, host_env={}, timeout=60, mounts=linux_ns_mounts([]), pass_env=[])

    assert run.returncode == 0, (run.error, run.stderr[-2000:])
    assert denied_everywhere(run.stdout.decode()) == {}


def test_the_filter_fails_closed_on_a_machine_it_has_no_table_for():
    with pytest.raises(SeccompUnsupported, match="no seccomp syscall table for aarch64"):
        filter_program("aarch64")


def as_nobody(action) -> str:
    """What `action()` returns or raises, run in a forked child that dropped root for uid 65534."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            try:
                message = f"returned {action()!r}"
            except Exception as exc:
                message = f"{type(exc).__name__}: {exc}"
            os.write(write, message.encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        message = f.read().decode()
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    return message


def test_not_root_the_portal_takes_bwrap_in_its_unprivileged_mode(settings):
    settings.SCORING_SANDBOX = "bwrap"

    message = as_nobody(lambda: (server_backend(settings.SCORING_SANDBOX).name, server_mode(settings.SCORING_SANDBOX)))

    assert message == f"returned ('bwrap', {SandboxMode(BWRAP_UNPRIVILEGED)!r})", message


def test_as_root_the_portal_gets_bwrap_with_per_run_uids(settings):
    settings.SCORING_SANDBOX = "bwrap"

    assert server_backend(settings.SCORING_SANDBOX).name == "bwrap"
    assert server_mode(settings.SCORING_SANDBOX) == SandboxMode(BWRAP_ROOT)


def test_a_local_cli_run_without_root_runs_with_the_whole_run_limits():
    with tempfile.TemporaryDirectory() as tmp:  # under /tmp: pytest's tmp root is root's alone
        work = Path(tmp) / "open"
        work.mkdir()
        os.chmod(tmp, 0o755)
        os.chown(work, 65534, 65534)

        def run_echo() -> tuple:
            warned: list[str] = []
            handler = logging.Handler()
            handler.emit = lambda record: warned.append(record.getMessage())
            logging.getLogger("scoring.sandbox.bwrap").addHandler(handler)
            result = get_backend("bwrap").run(["/bin/sh", "-c", "echo ran"], work, [], Limits(wall_clock_seconds=20))
            return result.returncode, result.stdout_text.strip(), warned

        message = as_nobody(run_echo)

        assert message == "returned (0, 'ran', [])", message


def refused_without_user_namespaces(action) -> str:
    def denied():
        deny_user_namespaces()
        return action()

    return as_nobody(denied)


def test_without_user_namespaces_the_portal_refuses_bwrap_with_the_reason(settings):
    settings.SCORING_SANDBOX = "bwrap"

    message = refused_without_user_namespaces(lambda: server_backend(settings.SCORING_SANDBOX))

    assert message.startswith("BackendUnavailable: bubblewrap cannot start a sandbox here as uid 65534: bwrap could "
                              "not set up the sandbox: bwrap: No permissions to create new namespace"), message
    assert "Unprivileged user namespaces may be disabled" in message


def test_the_refusal_reaches_a_proposal_check(settings):
    settings.SCORING_SANDBOX = "bwrap"

    message = refused_without_user_namespaces(lambda: validate_in_sandbox("demo.x", []))

    assert "bubblewrap cannot start a sandbox" in message and message.startswith("BackendUnavailable"), message
