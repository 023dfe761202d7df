from pathlib import Path

import pytest

from scoring.sandbox import Limits, get_backend, python_runtime_env, python_runtime_mounts
from scoring.sandbox.bwrap import BwrapBackend


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
