"""The bwrap sandbox run by an ordinary user (the embedded `make run` of someone who is not root): its
whole-run limits hold, no process of a run survives it, and where it cannot hold them it says why.

Each test starts tests/scoring/sandbox/unprivileged_runner.py as UNPRIVILEGED_UID through setpriv
(this test process is root), so the backend sees exactly what a worker of that uid sees.
"""

import json
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from scoring.sandbox.modes import BWRAP_UNPRIVILEGED
from tests.support import REPO, UNPRIVILEGED_UID, as_unprivileged, host_pids_with, unprivileged_dir

PY = sys.executable
RUNNER = Path(__file__).with_name("unprivileged_runner.py")

pytestmark = pytest.mark.slow


@pytest.fixture
def workdir() -> Iterator[Path]:
    home = unprivileged_dir("unpriv-sandbox")
    work = home / "work"
    work.mkdir()
    shutil.chown(work, UNPRIVILEGED_UID, UNPRIVILEGED_UID)
    yield work
    shutil.rmtree(home.parent)


def run_unprivileged(spec: dict, timeout: float = 120) -> dict:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": "/nonexistent", "LANG": "C.UTF-8"}
    done = subprocess.run(as_unprivileged([PY, str(RUNNER), json.dumps(spec)]), env=env, cwd="/",
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def sandboxed(code: str, workdir: Path, **limits: object) -> dict:
    """`python -c code` in the sandbox, run by the unprivileged uid with these limits."""
    base = {"wall_clock_seconds": 30, "cpu_seconds": 20, "memory_bytes": 1 << 30, "max_processes": 32,
            "max_file_bytes": 64 << 20}
    spec = {"argv": [PY, "-c", code], "workdir": str(workdir), "limits": {**base, **limits}}
    out = run_unprivileged(spec)
    assert out["uid"] == UNPRIVILEGED_UID
    assert out["mode"] == BWRAP_UNPRIVILEGED and out["problem"] is None, out
    assert "error" not in out, out
    return out


def test_an_ordinary_user_gets_the_unprivileged_mode_and_its_runs_see_uid_65534(workdir):
    out = sandboxed("import os; print(os.getuid(), os.getgid(), os.getpid())", workdir)
    assert out["ok"], out
    assert out["stdout"].split() == ["65534", "65534", "2"]  # pid 1 is the namespace's init
    assert out["warnings"] == []


MANY_CHILDREN = """
import subprocess, sys, time
child = "b = bytearray(120 << 20)\\nfor i in range(0, len(b), 4096): b[i] = 1\\nimport time; time.sleep(8)"
procs = [subprocess.Popen([sys.executable, "-c", child]) for _ in range(6)]
for p in procs: p.wait()
print("all children finished")
"""


def test_memory_holds_for_the_whole_run_across_processes(workdir):
    # Each child stays far below the per-process limit; together they pass the run's 400 MiB.
    out = sandboxed(MANY_CHILDREN, workdir, memory_bytes=400 << 20)
    assert "all children finished" not in out["stdout"]
    assert out["limit"] == "memory", out
    assert "for the whole run" in out["reason"]


def test_tmpfs_counts_towards_the_whole_run_memory(workdir):
    code = ("import time\n"
            "for name in ('/tmp/a', '/dev/shm/b'):\n"
            "    with open(name, 'wb') as f:\n"
            "        for _ in range(200): f.write(b'x' * (1 << 20))\n"
            "time.sleep(5)\nprint('kept 400 MiB in tmpfs')")
    out = sandboxed(code, workdir, memory_bytes=300 << 20, max_file_bytes=1 << 30)
    assert "kept 400 MiB" not in out["stdout"]
    assert out["limit"] == "memory", out


SPAWN = ("import subprocess, sys\n"
         "procs, sleeper = [], [sys.executable, '-c', 'import time; time.sleep(3)']\n"
         "try:\n"
         "    for _ in range(12): procs.append(subprocess.Popen(sleeper))\n"
         "except OSError as exc: print('refused after', len(procs), exc.errno)\n")


def test_the_process_count_is_the_runs_own_whatever_else_the_user_runs(workdir):
    # 20 other processes of the same uid run meanwhile: the cap still counts the run's processes
    # alone, exactly (the run's python plus 5 children = max_processes).
    spec = {"argv": [PY, "-c", SPAWN], "workdir": str(workdir), "other_processes": 20,
            "limits": {"wall_clock_seconds": 30, "cpu_seconds": 20, "max_processes": 6}}
    out = run_unprivileged(spec)
    assert out["mode"] == BWRAP_UNPRIVILEGED and out["problem"] is None, out
    assert out["stdout"].split()[:3] == ["refused", "after", "5"], out


def test_a_fork_bomb_stays_within_the_cap_and_leaves_nothing_behind(workdir):
    marker = f"bomb{uuid.uuid4().hex[:8]}"
    code = ("import os, time, sys\n"
            "while True:\n"
            "    try: os.fork()\n"
            "    except OSError: time.sleep(0.05)\n")
    spec = {"argv": [PY, "-c", code, marker], "workdir": str(workdir), "marker": marker,
            "limits": {"wall_clock_seconds": 3, "cpu_seconds": 20, "max_processes": 16}}
    out = run_unprivileged(spec)
    assert out["timed_out"] and out["limit"] == "wall_clock", out
    assert out["survivors"] == []
    assert host_pids_with(marker) == []


def test_filling_the_scratch_dir_past_its_cap_stops_the_run(workdir):
    code = ("import time\n"
            "for i in range(40):\n"
            "    open(f'fill{i}.bin', 'wb').write(b'z' * (4 << 20))\n"
            "    time.sleep(0.05)\n"
            "time.sleep(3)\nprint('wrote 160 MiB')")
    out = sandboxed(code, workdir, max_scratch_bytes=48 << 20, max_file_bytes=8 << 20)
    assert "wrote 160 MiB" not in out["stdout"]
    assert out["limit"] == "scratch_disk", out
    assert sum(p.stat().st_size for p in workdir.iterdir()) < 100 << 20


def test_cpu_time_is_capped_per_process(workdir):
    out = sandboxed("while True: pass", workdir, cpu_seconds=1)
    assert out["limit"] == "cpu", out


ESCAPE = "setsid sh -c 'sleep {m}1 & sleep {m}2' & (sh -c 'sleep {m}3 &' &) ; {tail}"


@pytest.mark.parametrize("tail, ended_by", [("sleep 600", "wall_clock"), ("exit 0", None)])
def test_no_process_survives_the_run_not_even_a_double_forked_setsid_one(workdir, tail, ended_by):
    marker = str(uuid.uuid4().int % 10**8 + 10**8)
    command = ESCAPE.format(m=marker, tail=tail)
    spec = {"argv": ["/bin/sh", "-c", command], "workdir": str(workdir), "marker": f"sleep {marker}",
            "limits": {"wall_clock_seconds": 3, "cpu_seconds": 20}}
    out = run_unprivileged(spec)
    assert out["limit"] == ended_by, out
    assert out["survivors"] == [], "processes of the run outlived it"
    assert host_pids_with(f"sleep {marker}") == []


def test_without_prlimit_the_mode_says_it_cannot_cap_processes_and_a_local_run_goes_on_with_a_warning(workdir):
    spec = {"argv": ["/bin/sh", "-c", "echo ran"], "workdir": str(workdir), "no_prlimit": True,
            "limits": {"wall_clock_seconds": 20}}
    out = run_unprivileged(spec)
    assert out["mode"] == BWRAP_UNPRIVILEGED
    assert "needs util-linux's prlimit" in out["problem"]
    assert out["ok"] and out["stdout"].strip() == "ran"
    assert any("prlimit" in w and "running anyway: a local run" in w for w in out["warnings"]), out


def test_without_user_namespaces_the_mode_says_why_it_cannot_score(workdir):
    spec = {"argv": ["/bin/sh", "-c", "echo ran"], "workdir": str(workdir), "deny_userns": True,
            "limits": {"wall_clock_seconds": 20}}
    out = run_unprivileged(spec)
    assert out["mode"] == BWRAP_UNPRIVILEGED
    assert out["problem"].startswith(f"bubblewrap cannot start a sandbox here as uid {UNPRIVILEGED_UID}"), out
    assert "Unprivileged user namespaces may be disabled" in out["problem"]
    assert out["error"].startswith("SandboxError: bwrap could not set up the sandbox"), out


def test_catalog_load_without_a_usable_sandbox_says_so_in_one_line_and_writes_nothing(workdir):
    """`make bootstrap` where user namespaces are off (a container's seccomp profile, here): one line, no traceback."""
    var = workdir / "var"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(workdir), "LANG": "C.UTF-8",
           "ASIBENCH_VAR_DIR": str(var), "DJANGO_SETTINGS_MODULE": "config.settings"}
    manage = [PY, str(REPO / "manage.py")]
    migrated = subprocess.run(as_unprivileged([*manage, "migrate", "--noinput"]), env=env, cwd=REPO,
                              capture_output=True, text=True, timeout=300)
    assert migrated.returncode == 0, migrated.stderr[-2000:]
    spec = {"deny_userns": True, "exec": [*manage, "catalog_load", "--tasks", "chemistry.counterpoise_cbs_energies"]}
    done = subprocess.run(as_unprivileged([PY, str(RUNNER), json.dumps(spec)]), env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("CommandError: cannot load the catalog: no usable sandbox on this host: bubblewrap "
                               f"cannot start a sandbox here as uid {UNPRIVILEGED_UID}: bwrap could not set up the "
                               "sandbox: bwrap: No permissions to create new namespace"), lines[0]
    with sqlite3.connect(var / "db.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM scoring_task").fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM scoring_dataset").fetchone()[0] == 0
