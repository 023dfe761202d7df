"""Publishing an accepted revision: write it as a catalog task, load it.

The task directory goes to `PUBLISHED_TASKS_DIR/<domain>/<name>/` (private storage the web
tier never serves) without `task_submission.yaml`, with `status` set in `task_meta.yaml` (the
maintainers' choice of catalog status). The author's `version` is published as they wrote it,
never rewritten: publishing changed files again under the same version is told apart by the
catalog's own revision counter (`Task.revision`, bumped whenever a task's files change).
`catalog_install` generates its instances in the sandbox from a staging directory and only then
swaps the catalog (rows, archives, the directory link) in one step, so a failure or a crash
mid-publish leaves the catalog as it was.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
from functools import partial
from pathlib import Path

import yaml
from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string

from contracts.task_files import SUBMISSION_FILE
from portal.errors import Conflict, ValidationFailed
from proposals.files import blob_read, load_yaml
from proposals.models import Revision
from scoring.engine.static_checks import VERSION_RE
from scoring.generation import TaskProblem
from scoring.models import Task
from scoring.task_loading import catalog_install

logger = logging.getLogger(__name__)
PUBLISHABLE_STATUSES = ("final", "sample")
# Never exported with a task (client contract §4.2; scoring contract §1.14).
EXCLUDED_FILES = {SUBMISSION_FILE}


def set_status(text: str, status: str) -> str:
    """Set top-level `status`, keeping the author's comments, layout and every other value."""
    pattern = re.compile(r"(?m)^status:[^\n]*$")
    if pattern.search(text):
        out = pattern.sub(f"status: {status}", text, count=1)
    else:
        out = text.rstrip("\n") + f"\nstatus: {status}\n"
    if load_yaml(out.encode("utf-8")).get("status") != status:  # a layout the line edit cannot handle
        meta = load_yaml(text.encode("utf-8"))
        meta["status"] = status
        out = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    return out


def publish_revision(revision: Revision, *, dataset_names: list[str], status: str = "final") -> str:
    """Write the revision into the published catalog and load it; returns the version it was published
    as: the one its task_meta.yaml declares."""
    if status not in PUBLISHABLE_STATUSES:
        raise ValidationFailed(f"Publish as one of {', '.join(PUBLISHABLE_STATUSES)}.", code="bad_status")
    task_id = revision.fields["task_id"]
    domain, name = task_id.split(".", 1)
    if (Path(settings.TASKS_DIR) / domain / name).exists():
        raise Conflict(f"{task_id} is a task of the repository catalog; proposals cannot replace it.",
                       code="catalog_task")
    root = Path(settings.PUBLISHED_TASKS_DIR)
    target = root / domain / name
    existing = Task.objects.filter(id=task_id).first()
    if existing is not None and not Path(existing.source_dir).resolve().is_relative_to(root.resolve()):
        raise Conflict(f"{task_id} already exists in the catalog from another source.", code="catalog_task")
    files = {f.path: f.blob for f in revision.files.all() if f.path not in EXCLUDED_FILES}
    meta_text = blob_read(files["task_meta.yaml"]).decode("utf-8")
    version = str(load_yaml(meta_text.encode()).get("version") or "")
    longest = Task._meta.get_field("version").max_length
    if not VERSION_RE.match(version) or len(version) > (longest or 0):
        raise ValidationFailed(f"task_meta.yaml's version {version[:40]!r} must look like 1, 1.0 or 1.2.3, in at most "
                               f"{longest} characters; publishing keeps the author's version as it is.",
                               code="publish_failed")

    target.parent.mkdir(parents=True, exist_ok=True)
    # A hidden sibling (the catalog skips dot-dirs) that becomes the task by one rename.
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.v{version}-", dir=target.parent))  # version: digits and dots
    try:
        for path, blob in files.items():
            dest = staging / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(blob_read(blob))
        (staging / "task_meta.yaml").write_text(set_status(meta_text, status), encoding="utf-8")
        staging.chmod(0o755)
        task = catalog_install(directory=staging, link=target, dataset_names=dataset_names)
    except TaskProblem as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ValidationFailed(f"Publishing failed, the catalog is unchanged: {exc}", code="publish_failed") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if existing is not None and task.revision != existing.revision:
        # A republication with changed files: its errata are resolved and the board re-graded (settings).
        transaction.on_commit(partial(_revision_published_hooks, task.id))
    return version


def _revision_published_hooks(task_id: str) -> None:
    for path in settings.TASK_REVISION_PUBLISHED_HOOKS:
        try:
            import_string(path)(task_id)
        except Exception:  # the publication stands; a maintainer can start the re-grade again
            logger.exception("task revision hook %s failed for %s", path, task_id)
