"""scripts/run-portal.sh, `make run`'s servers, stops as a whole: a signal to its process group (Ctrl-C,
a supervisor's SIGTERM) or to the script stops the web server, the worker and beat within seconds; when
one of them dies, or the port is taken, none is left running and the script exits non-zero.

The real script on `make run`'s embedded configuration (SQLite, the filesystem broker) under a temporary
ASIBENCH_VAR_DIR, migrated and bootstrapped as `make run` does (without the catalog: nothing here scores).
"""

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import (
    OUTPUT_DIR,
    REPO,
    VENV_BIN,
    embedded_env,
    free_port,
    kill_session,
    session_pids,
    start_run_portal,
    wait_for,
    wait_http,
)

pytestmark = pytest.mark.slow
# The script asks each server to stop, and stops hard what is left after its grace (10 s by default).
STOPPED_WITHIN = 25


@pytest.fixture(scope="module")
def portal_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = embedded_env(tmp_path_factory.mktemp("run-portal") / "var")
    for command in (["migrate", "--noinput"], ["bootstrap_portal"]):
        done = subprocess.run([str(VENV_BIN / "python"), "manage.py", *command], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    return env


class Started:
    def __init__(self, proc: subprocess.Popen, log: Path, port: int):
        self.proc, self.log, self.port = proc, log, port

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def children(self) -> dict[str, int]:
        """The script's three servers by role, from their command lines."""
        roles = {}
        for pid in session_pids(self.proc.pid):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):
                continue
            if ppid != self.proc.pid:
                continue
            words = [w.decode() for w in argv]
            if any(w.endswith("gunicorn") for w in words):
                roles["web"] = pid
            elif "worker" in words:
                roles["worker"] = pid
            elif "beat" in words:
                roles["beat"] = pid
        return roles


@pytest.fixture
def portal(portal_env: dict[str, str], request: pytest.FixtureRequest) -> Iterator[Started]:
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = OUTPUT_DIR / f"run-portal-{request.node.name}.log".replace("[", "-").replace("]", "")
    proc = start_run_portal(portal_env, port, log)
    started = Started(proc, log, port)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=120)
        wait_for(lambda: "ready." in started.output() and "beat: Starting" in started.output(), 120,
                 "the worker and beat to start")
        assert set(started.children()) == {"web", "worker", "beat"}, started.output()
        yield started
    finally:
        kill_session(proc.pid)
        proc.wait(timeout=10)


def all_stopped(started: Started) -> None:
    """The script has exited and nothing it started is left (pool processes and web workers included)."""
    started.proc.wait(timeout=STOPPED_WITHIN)
    wait_for(lambda: not session_pids(started.proc.pid), 5, "every process of make run to be gone")


@pytest.mark.parametrize("sig, to_group", [(signal.SIGTERM, True), (signal.SIGINT, True), (signal.SIGTERM, False)],
                         ids=["TERM-to-group", "INT-to-group", "TERM-to-script"])
def test_a_signal_stops_everything_within_seconds(portal: Started, sig: signal.Signals, to_group: bool) -> None:
    # Before, a SIGTERM to the group reached the worker's pool processes and embedded beat themselves,
    # and the worker hung until SIGKILL.
    started = time.monotonic()
    if to_group:
        os.killpg(portal.proc.pid, sig)
    else:
        os.kill(portal.proc.pid, sig)
    all_stopped(portal)
    assert time.monotonic() - started < STOPPED_WITHIN
    assert portal.proc.returncode == 0, portal.output()
    assert f"run-portal: stopped ({sig.name})." in portal.output()


@pytest.mark.parametrize("role, name", [("web", "the web server (gunicorn)"), ("worker", "the Celery worker")])
def test_when_one_server_dies_the_others_are_stopped(portal: Started, role: str, name: str) -> None:
    os.kill(portal.children()[role], signal.SIGKILL)
    all_stopped(portal)
    assert portal.proc.returncode == 1
    assert f"run-portal: {name} exited (status 137); stopping the others." in portal.output()


def test_a_taken_port_is_said_and_nothing_is_left_running(portal_env: dict[str, str], tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = start_run_portal(portal_env, port, tmp_path / "run-portal.log")
        try:
            assert proc.wait(timeout=60) == 1
            assert not session_pids(proc.pid)
        finally:
            kill_session(proc.pid)
    output = (tmp_path / "run-portal.log").read_text()
    assert output.strip() == (f"run-portal: port {port} on 127.0.0.1 is already in use (another make run?). "
                              "Stop that, or choose another port: make run PORT=8001")
