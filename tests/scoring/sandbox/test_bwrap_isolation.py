"""The bwrap backend against real bubblewrap: what runs, and what an escape attempt gets."""

import os
import signal
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from scoring.sandbox import MountError, SandboxError
from scoring.sandbox.bwrap import DEFAULT_UID_BASE, DEFAULT_UID_SLOTS
from tests.support import host_pids_with

PY = sys.executable

pytestmark = pytest.mark.slow


def py(code: str) -> list[str]:
    return [PY, "-c", code]


def test_it_runs_python_with_numpy_in_the_workdir(bwrap, workdir, runtime, limits):
    code = ("import os, numpy; print(os.getcwd(), numpy.arange(4).sum());"
            "open('out.txt', 'w').write('written inside')")
    result = bwrap.run(py(code), workdir, runtime, limits)

    assert result.ok, result.stderr_text
    assert result.stdout_text.split() == [str(workdir), "6"]
    assert result.backend == "bwrap" and result.limit is None and result.reason is None
    assert (workdir / "out.txt").read_text() == "written inside"
    # Handed back to its owner after the run.
    assert (workdir / "out.txt").stat().st_uid == os.getuid()
    assert workdir.stat().st_uid == os.getuid()


def test_the_uid_is_unprivileged_inside_and_on_the_host(bwrap, workdir, runtime, limits):
    marker = f"1.{uuid.uuid4().int % 10**6:06d}"
    seen: dict[str, int] = {}

    def watch() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not seen:
            for pid in host_pids_with(f"sleep {marker}"):
                status = Path(f"/proc/{pid}/status").read_text()
                uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
                seen["host_uid"] = int(uid_line.split()[1])
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    result = bwrap.run(["sh", "-c", f"id -u; id -g; sleep {marker}"], workdir, runtime,
                       limits)
    watcher.join()

    assert result.stdout_text.split() == ["65534", "65534"]
    assert DEFAULT_UID_BASE <= seen["host_uid"] < DEFAULT_UID_BASE + DEFAULT_UID_SLOTS


def test_it_has_no_network(bwrap, workdir, runtime, limits):
    with socket.create_connection(("127.0.0.1", 6379), timeout=2):
        pass  # Redis really listens on the host
    code = """
import socket
for host, port in [("127.0.0.1", 6379), ("1.1.1.1", 443), ("1.1.1.1", 53)]:
    try:
        socket.create_connection((host, port), timeout=2).close()
        print("CONNECTED", host)
    except OSError as exc:
        print("refused", host, type(exc).__name__)
"""
    result = bwrap.run(py(code), workdir, runtime, limits)

    assert result.ok, result.stderr_text
    assert "CONNECTED" not in result.stdout_text
    assert result.stdout_text.count("refused") == 3


def test_it_keeps_the_network_when_asked_for_an_agent(bwrap, workdir, runtime, limits):
    code = "import socket; socket.create_connection(('127.0.0.1', 6379), timeout=2); print('ok')"
    result = bwrap.run(py(code), workdir, runtime, limits.replace(network=True))

    assert result.stdout_text.strip() == "ok", result.stderr_text


def test_writes_outside_the_workdir_fail_and_leave_nothing_on_the_host(
    bwrap, workdir, runtime, limits
):
    name = f"asibench-escape-{uuid.uuid4().hex}"
    project = Path(__file__).resolve().parents[3]
    targets = [Path("/tmp") / name, project / name, project / "scoring" / name,
               Path("/etc") / name, workdir.parent / name, Path("/usr") / name]
    code = f"""
import sys
for t in {[str(t) for t in targets]!r}:
    try:
        open(t, "w").write("x")
        print("wrote", t)
    except OSError as exc:
        print("denied", t, exc.strerror)
"""
    result = bwrap.run(py(code), workdir, runtime, limits)

    assert result.ok, result.stderr_text
    outcome = dict(line.split(" ", 2)[1::-1] for line in result.stdout_text.splitlines())
    # Inside, /tmp is a private tmpfs: writes under it land there and vanish with the sandbox,
    # except inside read-only mounts (the checkout itself may live under /tmp, as in CI).
    mounted = [Path(m[0] if isinstance(m, tuple) else m) for m in runtime]
    assert {t for t, verdict in outcome.items() if verdict == "wrote"} == {
        str(t) for t in targets
        if t.is_relative_to("/tmp") and not any(t.is_relative_to(m) for m in mounted)}
    for target in targets:
        assert not target.exists(), target


def test_it_does_not_see_the_callers_environment(bwrap, workdir, runtime, limits, monkeypatch):
    monkeypatch.setenv("ASIBENCH_TEST_SECRET", "s3cr3t-token")
    code = "import os; print(sorted(os.environ)); print(os.environ.get('GIVEN'))"
    result = bwrap.run(py(code), workdir, runtime,
                       limits.replace(env={**limits.env, "GIVEN": "yes"}))

    assert result.ok, result.stderr_text
    assert "ASIBENCH_TEST_SECRET" not in result.stdout_text
    assert "s3cr3t-token" not in result.stdout_text
    assert result.stdout_text.splitlines()[1] == "yes"


def test_it_cannot_read_a_directory_that_was_not_mounted(bwrap, tmp_path, workdir, runtime,
                                                         limits):
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "answer.json").write_text('{"secret": 42}')
    os.chmod(tmp_path, 0o755)
    code = f"""
import os
for probe in (lambda: open({str(reference / 'answer.json')!r}).read(),
              lambda: os.listdir({str(reference)!r}),
              lambda: os.listdir({str(tmp_path)!r})):
    try:
        print("READ", probe())
    except OSError as exc:
        print("denied", type(exc).__name__)
"""
    result = bwrap.run(py(code), workdir, runtime, limits)

    assert "42" not in result.stdout_text
    assert "answer.json" not in result.stdout_text
    assert result.stdout_text.splitlines()[:2] == ["denied FileNotFoundError"] * 2


def test_a_read_only_mount_is_readable_but_not_writable(bwrap, tmp_path, workdir, runtime,
                                                       limits):
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "answer.json").write_text("42")
    code = ("import sys; print(open('/ref/answer.json').read());"
            "open('/ref/answer.json', 'w')")
    result = bwrap.run(py(code), workdir, [*runtime, (reference, "/ref")], limits)

    assert result.stdout_text.strip() == "42"
    assert "Read-only file system" in result.stderr_text
    assert (reference / "answer.json").read_text() == "42"


def test_it_refuses_a_mount_the_sandbox_user_could_not_read(bwrap, tmp_path, workdir, limits):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(MountError, match="not readable by the sandbox user"):
        bwrap.run(["true"], workdir, [private], limits)


def test_a_planted_symlink_does_not_redirect_the_ownership_handback(bwrap, workdir, limits):
    shadow_owner = Path("/etc/shadow").stat().st_uid
    result = bwrap.run(["sh", "-c", "ln -s /etc/shadow link && mkdir d && ln -s / d/root"],
                       workdir, [], limits)

    assert result.ok, result.stderr_text
    assert Path("/etc/shadow").stat().st_uid == shadow_owner
    assert os.lstat(workdir / "link").st_uid == os.getuid()


def test_a_fork_bomb_is_contained(bwrap, workdir, runtime, limits):
    counting = """
import os, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
finally:
    print(n, flush=True)
"""
    result = bwrap.run(py(counting), workdir, runtime, limits.replace(max_processes=20))

    # The command itself plus its children make up the limit.
    assert int(result.stdout_text) == 19
    assert result.limit == "processes", result.stderr_text
    assert "process limit of 20" in result.reason

    bomb = bwrap.run(["sh", "-c", "f() { f | f & }; f; sleep 1"], workdir, [],
                     limits.replace(max_processes=50, wall_clock_seconds=4))
    assert "Cannot fork" in bomb.stderr_text
    assert bomb.duration_seconds < 5
    assert not _sandbox_uid_processes()


def test_a_memory_hog_fails_with_a_memory_reason(bwrap, workdir, runtime, limits):
    result = bwrap.run(py("x = bytearray(2 << 30); print('allocated')"), workdir, runtime,
                       limits.replace(memory_bytes=512 << 20))

    assert "allocated" not in result.stdout_text
    assert result.returncode != 0
    assert result.limit == "memory"
    assert "memory limit of 536870912 bytes" in result.reason


def test_the_cpu_time_limit_kills_a_busy_loop(bwrap, workdir, runtime, limits):
    result = bwrap.run(py("while True: pass"), workdir, runtime, limits.replace(cpu_seconds=1))

    assert result.returncode == -signal.SIGXCPU
    assert not result.timed_out
    assert result.limit == "cpu"
    assert result.duration_seconds < 5


def test_the_file_size_limit_holds(bwrap, workdir, runtime, limits):
    small = limits.replace(max_file_bytes=1 << 20)
    from_python = bwrap.run(py("open('big', 'wb').write(b'0' * (2 << 20))"), workdir, runtime,
                            small)
    from_shell = bwrap.run(["sh", "-c", "head -c 3000000 /dev/zero > big2"], workdir, [], small)

    assert from_python.limit == "file_size" and "File too large" in from_python.stderr_text
    assert from_shell.returncode == -signal.SIGXFSZ and from_shell.limit == "file_size"
    assert (workdir / "big").stat().st_size <= 1 << 20
    assert (workdir / "big2").stat().st_size <= 1 << 20


def test_the_wall_clock_kills_background_children_too(bwrap, workdir, limits):
    marker = f"300.{uuid.uuid4().int % 10**6:06d}"
    started = time.monotonic()
    result = bwrap.run(["sh", "-c", f"sleep {marker} & sleep {marker}"], workdir, [],
                       limits.replace(wall_clock_seconds=1))

    assert result.timed_out
    assert result.limit == "wall_clock"
    assert "wall-clock limit of 1 s" in result.reason
    assert time.monotonic() - started < 5
    assert host_pids_with(f"sleep {marker}") == []


def test_a_background_child_does_not_outlive_a_normal_exit(bwrap, workdir, limits):
    marker = f"301.{uuid.uuid4().int % 10**6:06d}"
    result = bwrap.run(["sh", "-c", f"sleep {marker} > /dev/null 2>&1 & echo started"],
                       workdir, [], limits)

    assert result.stdout_text.strip() == "started"
    assert not result.timed_out
    assert host_pids_with(f"sleep {marker}") == []


def test_output_is_capped(bwrap, workdir, runtime, limits):
    code = "import sys; sys.stdout.write('x' * 5_000_000); sys.stderr.write('the end')"
    result = bwrap.run(py(code), workdir, runtime, limits.replace(max_output_bytes=64 << 10))

    assert result.ok
    assert result.stdout_truncated and len(result.stdout) < 70 << 10
    assert b"bytes omitted" in result.stdout
    assert result.stderr_text == "the end"


def test_a_broken_setup_raises_instead_of_reporting_a_result(bwrap, workdir, limits):
    missing_command = bwrap.run(["/nonexistent/binary"], workdir, [], limits)
    assert missing_command.returncode != 0  # the command failing is a result, not an error

    with pytest.raises(SandboxError, match="could not set up the sandbox"):
        bwrap.run(["true"], workdir, [(Path("/usr/share"), "/dev/null/inside")], limits)


def _sandbox_uid_processes() -> list[int]:
    live = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = dict(line.split(":", 1) for line in
                          Path(f"/proc/{entry.name}/status").read_text().splitlines()
                          if ":" in line)
        except OSError:
            continue
        uid = int(fields["Uid"].split()[0])
        if (DEFAULT_UID_BASE <= uid < DEFAULT_UID_BASE + DEFAULT_UID_SLOTS
                and not fields["State"].strip().startswith("Z")):
            live.append(int(entry.name))
    return live
