"""Publishing an accepted revision: write it as a catalog task at a new version, load it.

The task directory goes to `PUBLISHED_TASKS_DIR/<domain>/<name>/` (private storage the web
tier never serves) without `task_submission.yaml`, with `version` bumped and `status` set in
`task_meta.yaml`; `catalog_install` generates its instances in the sandbox from a staging
directory and only then swaps the catalog (rows, archives, the directory link) in one step, so
a failure or a crash mid-publish leaves the catalog as it was.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import yaml
from django.conf import settings

from contracts.task_files import SUBMISSION_FILE
from portal.errors import Conflict, ValidationFailed
from proposals.files import blob_read, load_yaml
from proposals.models import Revision
from scoring.catalog import catalog_install
from scoring.generation import TaskProblem
from scoring.models import Task

PUBLISHABLE_STATUSES = ("final", "sample")
# Never exported with a task (client contract §4.2; scoring contract §1.14).
EXCLUDED_FILES = {SUBMISSION_FILE}


def bump_version(version: str) -> str:
    parts = [int(p) for p in re.findall(r"\d+", version)] or [0]
    parts[-1] += 1
    return ".".join(str(p) for p in parts)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version or "")) or (0,)


def next_version(author_version: str, published_version: str | None) -> str:
    base = max([author_version or "0", published_version or "0"], key=_version_key)
    return bump_version(base)


def rewrite_meta(text: str, version: str, status: str) -> str:
    """Set top-level `version` and `status`, keeping the author's comments and layout."""
    out = text
    for key, value in (("version", f'"{version}"'), ("status", status)):
        pattern = re.compile(rf"(?m)^{key}:[^\n]*$")
        if pattern.search(out):
            out = pattern.sub(f"{key}: {value}", out, count=1)
        else:
            out = out.rstrip("\n") + f"\n{key}: {value}\n"
    parsed = load_yaml(out.encode("utf-8"))
    if str(parsed.get("version")) != version or parsed.get("status") != status:
        meta = load_yaml(text.encode("utf-8"))
        meta.update(version=version, status=status)
        out = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    return out


def publish_revision(revision: Revision, *, dataset_names: list[str], status: str = "final") -> str:
    """Write the revision into the published catalog and load it; returns the new version."""
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
    # From the database, not this host's disk: the last publication may have run on another worker host.
    previous = existing.version if existing is not None else None
    version = next_version(str(load_yaml(meta_text.encode()).get("version") or "0"), previous)

    target.parent.mkdir(parents=True, exist_ok=True)
    # A hidden sibling (the catalog skips dot-dirs) that becomes the task by one rename.
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.v{version}-", dir=target.parent))
    try:
        for path, blob in files.items():
            dest = staging / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(blob_read(blob))
        (staging / "task_meta.yaml").write_text(rewrite_meta(meta_text, version, status), encoding="utf-8")
        staging.chmod(0o755)
        catalog_install(directory=staging, link=target, dataset_names=dataset_names)
    except TaskProblem as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ValidationFailed(f"Publishing failed, the catalog is unchanged: {exc}", code="publish_failed") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return version
