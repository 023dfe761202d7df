"""Limits that hold for the whole sandboxed run, not per process, on the path this machine takes.

This machine's /sys/fs/cgroup is cgroup v1 (hybrid, `stat -fc %T` says tmpfs), so the bwrap
backend bounds a run with RLIMIT_AS per process, RLIMIT_NPROC on the run's own uid, size-capped
tmpfs, and a poll of the run's total memory and scratch-dir bytes; these tests go through it.
"""

import os
import sys

import pytest

PY = sys.executable


pytestmark = pytest.mark.slow

# Each child touches 120 MiB: well under the per-process limit, together far over the total.
MANY_CHILDREN = """
import subprocess, sys, time
child = "b = bytearray(120 << 20)\\nfor i in range(0, len(b), 4096): b[i] = 1\\nimport time; time.sleep(8)"
procs = [subprocess.Popen([sys.executable, "-c", child]) for _ in range(6)]
for p in procs: p.wait()
print("all children finished")
"""


def test_memory_holds_for_the_whole_run_not_per_process(bwrap, workdir, runtime, limits):
    whole = limits.replace(memory_bytes=400 << 20, wall_clock_seconds=30)
    result = bwrap.run([PY, "-c", MANY_CHILDREN], workdir, runtime, whole)
    assert "all children finished" not in result.stdout_text
    assert result.limit == "memory", (result.returncode, result.reason, result.stderr_text[-500:])
    assert "for the whole run" in result.reason


def test_tmpfs_counts_towards_the_whole_run_memory(bwrap, workdir, runtime, limits):
    whole = limits.replace(memory_bytes=300 << 20, max_file_bytes=1 << 30, wall_clock_seconds=30)
    code = ("import time\n"
            "for name in ('/tmp/a', '/dev/shm/b'):\n"
            "    with open(name, 'wb') as f:\n"
            "        for _ in range(200): f.write(b'x' * (1 << 20))\n"
            "time.sleep(5)\nprint('kept 400 MiB in tmpfs')")
    result = bwrap.run([PY, "-c", code], workdir, runtime, whole)
    assert "kept 400 MiB" not in result.stdout_text
    assert result.limit == "memory", (result.reason, result.stderr_text[-500:])


def test_an_honest_run_within_the_total_is_not_stopped(bwrap, workdir, runtime, limits):
    whole = limits.replace(memory_bytes=1 << 30, max_scratch_bytes=64 << 20)
    code = MANY_CHILDREN.replace("range(6)", "range(2)").replace("120 << 20", "60 << 20").replace("sleep(8)",
                                                                                                  "sleep(1)")
    result = bwrap.run([PY, "-c", code + "open('out.bin', 'wb').write(b'y' * (8 << 20))\n"], workdir, runtime, whole)
    assert result.ok, (result.reason, result.stderr_text[-500:])
    assert "all children finished" in result.stdout_text
    assert (workdir / "out.bin").stat().st_size == 8 << 20


def test_filling_the_scratch_dir_past_its_cap_stops_the_run(bwrap, workdir, runtime, limits):
    # Every file is under the per-file limit (8 MiB); together they pass the 48 MiB scratch cap.
    capped = limits.replace(max_scratch_bytes=48 << 20, wall_clock_seconds=30)
    code = ("import time\n"
            "for i in range(40):\n"
            "    open(f'fill{i}.bin', 'wb').write(b'z' * (4 << 20))\n"
            "    time.sleep(0.05)\n"
            "time.sleep(3)\nprint('wrote 160 MiB')")
    result = bwrap.run([PY, "-c", code], workdir, runtime, capped)
    assert "wrote 160 MiB" not in result.stdout_text
    assert result.limit == "scratch_disk", (result.reason, result.stderr_text[-500:])
    assert "scratch disk limit of 50331648 bytes" in result.reason
    written = sum(os.path.getsize(workdir / name) for name in os.listdir(workdir))
    assert written < 100 << 20


def test_the_process_count_holds_for_the_whole_run(bwrap, workdir, runtime, limits):
    capped = limits.replace(max_processes=6)
    code = ("import subprocess, sys\n"
            "procs, sleeper = [], [sys.executable, '-c', 'import time; time.sleep(3)']\n"
            "try:\n"
            "    for _ in range(12): procs.append(subprocess.Popen(sleeper))\n"
            "except OSError as exc: print('refused after', len(procs), exc.errno)\n")
    result = bwrap.run([PY, "-c", code], workdir, runtime, capped)
    assert "refused after" in result.stdout_text, (result.stdout_text, result.stderr_text[-500:])
    assert int(result.stdout_text.split()[2]) < 6


def test_a_flood_of_empty_files_counts_against_the_scratch_cap(bwrap, workdir, runtime, limits):
    capped = limits.replace(max_scratch_bytes=16 << 20, wall_clock_seconds=30)
    code = ("import os, time\n"
            "for i in range(50000):\n"
            "    open(f'e{i}', 'w').close()\n"
            "    if i % 1000 == 0: time.sleep(0.05)\n"
            "print('made 50000 files')")
    result = bwrap.run([PY, "-c", code], workdir, runtime, capped)
    assert "made 50000 files" not in result.stdout_text
    assert result.limit == "scratch_disk", (result.reason, result.stderr_text[-500:])
    assert len(os.listdir(workdir)) < 20000


def test_a_quick_write_past_the_cap_between_two_polls_is_caught(bwrap, workdir, runtime, limits):
    capped = limits.replace(max_scratch_bytes=16 << 20, max_file_bytes=64 << 20)
    result = bwrap.run([PY, "-c", "open('big.bin', 'wb').write(bytes(40 << 20))"], workdir, runtime, capped)
    assert result.limit == "scratch_disk", (result.returncode, result.reason)
    assert not result.ok  # killed mid-write or finished over the cap: either way not ok
