"""Publishing an accepted revision: write it as a catalog task at a new version, load it.

The task directory goes to `PUBLISHED_TASKS_DIR/<domain>/<name>/` (private storage the web
tier never serves) without `task_submission.yaml`, with `version` bumped and `status` set in
`task_meta.yaml`; `catalog_load` then reads it and generates its instances in the sandbox.
Public pages are built by the catalog from public fields only. A failed load restores the
previous directory, so the catalog never holds a half-published task.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import yaml
from django.conf import settings

from cli_client.formats.task_files import SUBMISSION_FILE
from portal.errors import Conflict, ValidationFailed
from proposals.files import blob_read, load_yaml
from proposals.models import Revision
from scoring.catalog import catalog_load
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
    previous = str(load_yaml((target / "task_meta.yaml").read_bytes()).get("version") or "") \
        if (target / "task_meta.yaml").is_file() else None
    version = next_version(str(load_yaml(meta_text.encode()).get("version") or "0"), previous)

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.new-", dir=target.parent))
    backup = target.parent / f".{name}.old"
    try:
        for path, blob in files.items():
            dest = staging / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(blob_read(blob))
        (staging / "task_meta.yaml").write_text(rewrite_meta(meta_text, version, status), encoding="utf-8")
        staging.chmod(0o755)
        shutil.rmtree(backup, ignore_errors=True)
        if target.exists():
            target.rename(backup)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    report = catalog_load(only_tasks={task_id}, dataset_names=dataset_names)
    label = f"{domain}/{name}"
    failures = [line for line in report.failures if line.task in {task_id, label}]
    loaded = Task.objects.filter(id=task_id, version=version).exists()
    if failures or not loaded:
        shutil.rmtree(target, ignore_errors=True)
        if backup.exists():
            backup.rename(target)
            catalog_load(only_tasks={task_id}, dataset_names=dataset_names)
        reasons = "; ".join(f"{line.dataset or 'load'}: {line.detail}" for line in failures) or "not loaded"
        raise ValidationFailed(f"Publishing failed, the catalog is unchanged: {reasons}", code="publish_failed")
    shutil.rmtree(backup, ignore_errors=True)
    return version
