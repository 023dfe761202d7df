import os
import sys
from pathlib import Path

import pytest

from scoring.sandbox import Limits, get_backend, python_runtime_env, python_runtime_mounts
from scoring.sandbox.bwrap import BwrapBackend

PY = sys.executable


@pytest.fixture
def bwrap() -> BwrapBackend:
    backend = get_backend("bwrap")
    assert isinstance(backend, BwrapBackend)
    return backend


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    # Under pytest's mode-700 tmp root on purpose: the sandbox must not need to traverse it.
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def runtime() -> list[Path]:
    return python_runtime_mounts()


@pytest.fixture
def limits() -> Limits:
    return Limits(wall_clock_seconds=20, cpu_seconds=10, memory_bytes=1 << 30,
                  max_processes=32, max_file_bytes=8 << 20, env=python_runtime_env())


def host_pids_with(marker: str) -> list[int]:
    """Host processes whose command line contains `marker` (zombies excluded)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes()
            state = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found
