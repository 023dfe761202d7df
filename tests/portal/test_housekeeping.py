"""Stored files are written 0600; leftover temp bundles and scratch dirs are swept on a schedule."""

import os
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from portal.housekeeping import leftovers_sweep
from scoring.sandbox.process import tree_remove
from scoring.task_storage import scratch_root

TWO_DAYS = 2 * 24 * 3600


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


class _OnDisk(File):
    """A finished temp file that the storage moves into place, as bundle intake does."""

    def temporary_file_path(self) -> str:
        return self.file.name


def test_stored_files_and_their_folders_are_private(db):
    folder = f"housekeeping-probe/{uuid.uuid4()}"
    written = Path(default_storage.path(default_storage.save(f"{folder}/ref.npy", ContentFile(b"secret"))))
    assert mode(written) == 0o600
    assert mode(written.parent) == 0o700
    with tempfile.NamedTemporaryFile(dir=settings.FILE_UPLOAD_TEMP_DIR, delete=False) as handle:
        handle.write(b"bundle bytes")
    os.chmod(handle.name, 0o644)  # whatever mode the temp file had, the stored one is private
    with open(handle.name, "rb") as raw:
        moved = Path(default_storage.path(default_storage.save(f"{folder}/bundle.tar.gz", _OnDisk(raw))))
    assert mode(moved) == 0o600 and moved.read_bytes() == b"bundle bytes"
    import shutil

    shutil.rmtree(written.parent)


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    for root, dirs, files in os.walk(path) if path.is_dir() else [(str(path.parent), [], [path.name])]:
        for name in dirs + files:
            os.utime(os.path.join(root, name), (then, then), follow_symlinks=False)
    os.utime(path, (then, then), follow_symlinks=False)


@pytest.fixture
def leftovers(tmp_path):
    """Old and fresh entries in both leftover roots, plus a file outside them that a link points to."""
    tag = uuid.uuid4().hex[:8]
    tmp_dir, scratch = Path(settings.FILE_UPLOAD_TEMP_DIR), scratch_root()
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    made = {
        "old_bundle": tmp_dir / f"bundle-{tag}.tar.gz",
        "fresh_bundle": tmp_dir / f"bundle-{tag}-fresh.tar.gz",
        "old_upload": tmp_dir / f"tmp{tag}.upload.gz",
        "old_scratch": scratch / f"score-{tag}",
        "busy_scratch": scratch / f"asibench-gen-{tag}",
        "old_link": scratch / f"link-{tag}",
    }
    for key in ("old_bundle", "fresh_bundle", "old_upload"):
        made[key].write_bytes(b"x" * 100)
    locked = made["old_scratch"] / "out" / "locked"
    locked.mkdir(parents=True)
    (locked / "result.npy").write_bytes(b"1")
    locked.chmod(0o500)  # sandboxed code left a folder the sweep cannot write into
    (made["busy_scratch"] / "data").mkdir(parents=True)
    made["old_link"].symlink_to(outside)
    for key in ("old_bundle", "old_upload", "old_scratch", "busy_scratch", "old_link"):
        _age(made[key], TWO_DAYS)
    (made["busy_scratch"] / "data" / "still-writing.npy").write_bytes(b"2")  # a run still at work inside
    yield made, outside
    for path in made.values():
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.exists():
            import shutil

            shutil.rmtree(path, ignore_errors=True)


def test_the_sweep_removes_old_leftovers_and_keeps_live_ones(leftovers):
    made, outside = leftovers
    report = leftovers_sweep()
    for key in ("old_bundle", "old_upload", "old_scratch", "old_link"):
        assert not os.path.lexists(made[key]), key
        assert str(made[key]) in report.removed
    assert made["fresh_bundle"].exists() and made["busy_scratch"].exists()
    assert outside.read_text() == "keep me"
    assert report.errors == []


def test_the_age_limit_is_a_setting(leftovers, settings):
    made, _ = leftovers
    settings.LEFTOVER_MAX_AGE_HOURS = 72
    leftovers_sweep()
    assert made["old_bundle"].exists() and made["old_scratch"].exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_beat_runs_the_sweep_on_a_real_worker(leftovers, celery_worker_process):
    from config.celery import app
    from portal.tasks import leftovers_sweep_task

    entry = app.conf.beat_schedule["sweep-leftover-temp-files"]
    assert entry["task"] == leftovers_sweep_task.name and entry["schedule"] == 3600.0
    made, _ = leftovers
    removed = leftovers_sweep_task.delay().get(timeout=120)
    assert removed >= 4
    assert not made["old_bundle"].exists() and not made["old_scratch"].exists()
    assert made["fresh_bundle"].exists()


def test_an_old_scratch_dir_deeper_than_rmtree_can_go_is_swept(db):
    old = scratch_root() / f"score-deep-{uuid.uuid4().hex[:8]}"
    old.mkdir()
    then = time.time() - TWO_DAYS
    fd = os.open(old, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(3000):  # shutil.rmtree and os.walk recurse once per level
            os.mkdir("a", dir_fd=fd)
            child = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(fd)
        fd = os.open(old, os.O_RDONLY | os.O_DIRECTORY)
        for _ in range(3000):  # age every level (utime of a child leaves its parent's mtime alone)
            os.utime("a", (then, then), dir_fd=fd, follow_symlinks=False)
            child = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    os.utime(old, (then, then))

    try:
        report = leftovers_sweep()

        assert str(old) in report.removed, report.errors
        assert not old.exists()
    finally:
        tree_remove(old)  # never leave such a tree for pytest's own (recursive) cleanup
