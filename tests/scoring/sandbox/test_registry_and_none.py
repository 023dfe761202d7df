"""Choosing a backend, and the unsandboxed `none` backend that must be asked for by name."""

import logging
import sys
import uuid

import pytest

from scoring.sandbox import (
    BACKENDS,
    DEFAULT_BACKEND,
    BackendUnavailable,
    Limits,
    UnknownBackend,
    get_backend,
    python_runtime_mounts,
)
from scoring.sandbox.runtime import PROJECT_DIR
from scoring.sandbox.unsandboxed import NoneBackend
from tests.support import host_pids_with


def test_the_default_is_bwrap():
    assert DEFAULT_BACKEND == "bwrap"
    assert get_backend().name == "bwrap"
    assert set(BACKENDS) == {"bwrap", "docker", "none"}


def test_an_unknown_name_is_refused():
    with pytest.raises(UnknownBackend, match="choose one of bwrap, docker, none"):
        get_backend("chroot")


def test_none_cannot_be_constructed_without_being_named():
    with pytest.raises(BackendUnavailable, match="request it by name"):
        NoneBackend()


def test_none_runs_when_named_and_warns(caplog, tmp_path):
    with caplog.at_level(logging.WARNING):
        backend = get_backend("none")
    assert "WITHOUT isolation" in caplog.text

    result = backend.run([sys.executable, "-c", "import os; print(os.getcwd())"], tmp_path,
                         [], Limits(wall_clock_seconds=10))
    assert result.ok and result.backend == "none"
    assert result.stdout_text.strip() == str(tmp_path)


def test_none_still_kills_the_process_group_on_timeout(tmp_path):
    marker = f"302.{uuid.uuid4().int % 10**6:06d}"
    result = get_backend("none").run(["sh", "-c", f"sleep {marker} & sleep {marker}"],
                                     tmp_path, [], Limits(wall_clock_seconds=0.5))
    assert result.timed_out and result.limit == "wall_clock"
    assert host_pids_with(f"sleep {marker}") == []


def test_runtime_mounts_cover_the_interpreter_but_not_the_whole_project():
    mounts = python_runtime_mounts()
    assert PROJECT_DIR not in mounts
    assert PROJECT_DIR / "scoring" in mounts
    assert any(sys.base_prefix.startswith(str(m)) for m in mounts)
    assert any(sys.prefix.startswith(str(m)) for m in mounts)


def test_the_engine_in_a_sandbox_does_not_load_the_backends_but_every_name_still_imports() -> None:
    """The engine reads outputs through scoring.sandbox.outputs inside every sandbox; the package's
    names load on first use, so that costs no backend imports (17 ms of each sandbox's start)."""
    import subprocess

    code = ("import sys, scoring.engine.cli; "
            "print(sorted(m for m in sys.modules if m.startswith('scoring.sandbox')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.split() == ["['scoring.sandbox',", "'scoring.sandbox.outputs']"]

    import scoring.sandbox as package

    assert sorted(package.__all__) == sorted(package._HOMES)
    for name in package.__all__:
        assert getattr(package, name) is getattr(__import__(f"scoring.sandbox.{package._HOMES[name]}",
                                                            fromlist=[name]), name)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        package.nothing_here  # noqa: B018
