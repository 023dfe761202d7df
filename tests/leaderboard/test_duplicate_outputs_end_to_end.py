"""A copied run is flagged through the real path: the official-format bundle, intake, Confirm, a real
Celery worker scoring in bubblewrap, and the completion hooks, even when it ships an extra file."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from leaderboard.models import IntegrityFlag
from tests.support import confirmed_run, wait_for, wait_until_scored

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def with_an_extra_unscored_file(results: Path, dest: Path) -> int:
    """Copy a results dir, adding notes.txt (declared by no task, so never scored) to every result."""
    shutil.copytree(results, dest)
    changed = 0
    for result_file in dest.glob("*/*__seed42__b*.json"):
        note = result_file.with_suffix(".outputs") / "notes.txt"
        note.write_text(f"written independently: {result_file.stem}\n")
        data = json.loads(result_file.read_text())
        data["agent_output"]["persisted_outputs"]["files"].append(
            {"path": "notes.txt", "sha256": hashlib.sha256(note.read_bytes()).hexdigest(),
             "bytes": note.stat().st_size})
        result_file.write_text(json.dumps(data, indent=2))
        changed += 1
    return changed


def test_a_copy_with_an_extra_unscored_file_is_flagged_as_a_duplicate(
        submit_catalog, submitter, other_user, run_results, tmp_path, celery_worker_process):
    assert with_an_extra_unscored_file(run_results["reference"], tmp_path / "padded") == 8
    original = wait_until_scored(confirmed_run(submitter, run_results["reference"], tmp_path / "a"))
    copy = wait_until_scored(confirmed_run(other_user, tmp_path / "padded", tmp_path / "b"))
    assert original.status == copy.status == "scored"
    assert any(o["path"] == "notes.txt" for e in copy.entries.all() for o in e.outputs)

    def flag() -> IntegrityFlag | None:
        return IntegrityFlag.objects.filter(submission=copy, other_submission=original,
                                            kind="duplicate_outputs").first()

    # Completion hooks run in the worker after the scoring commits, so they may trail the status.
    wait_for(lambda: flag() is not None, 30, "the copy flagged as a duplicate of the original")
    assert flag().detail.startswith("8 result(s) with identical declared outputs")
    assert IntegrityFlag.objects.filter(submission=original, other_submission=copy).exists()
