"""The Hugging Face Hub's view of our datasets: repo ids, revisions, the file tree, single files.

What an instance serves (and that seed42 references never are) is decided by the catalog
selectors; this module only lays the served files out as the official client expects them
(`tasks/<instance_id>/…`, client contract §6) and names revisions.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from catalog import selectors as catalog
from portal.errors import NotFound
from scoring.instance_files import InstanceFile
from scoring.models import Dataset, Instance

OFFICIAL_ORG = "Apexintelligence-AI"
# The official client's repo names (ai4sci_bench/branding.py) for the two fixed-seed datasets.
OFFICIAL_REPOS = {f"{OFFICIAL_ORG}/ASI-Bench-seed42": "seed42", f"{OFFICIAL_ORG}/ASI-Bench-seed31415": "seed31415"}
# Every dataset is also reachable by its own name, bare or under this namespace.
OWN_NAMESPACE = "asibench"
DEFAULT_REVISION = "main"
TASKS_DIR = "tasks"
COMMIT_RE = re.compile(r"[0-9a-f]{40}")


class HubError(Exception):
    """A refusal in the Hub's own vocabulary: `error_code` is what huggingface_hub reads from X-Error-Code."""

    status_code = 404
    error_code = "RepoNotFound"

    def __init__(self, message: str, *, commit: str | None = None):
        super().__init__(message)
        self.message = message
        self.commit = commit


class RepoNotFound(HubError):
    pass


class RevisionNotFound(HubError):
    error_code = "RevisionNotFound"


class EntryNotFound(HubError):
    error_code = "EntryNotFound"


class BadRequest(HubError):
    status_code = 400
    error_code = "BadRequest"


def repo_name(dataset: Dataset) -> str:
    """The Hub repo name a dataset is published under: the official one for seed42/seed31415."""
    official = [repo for repo, name in OFFICIAL_REPOS.items() if name == dataset.name]
    return official[0] if official else f"{OWN_NAMESPACE}/{dataset.name}"


def dataset_for_repo(repo_id: str) -> Dataset:
    namespace, _, name = repo_id.rpartition("/")
    if repo_id in OFFICIAL_REPOS:
        name = OFFICIAL_REPOS[repo_id]
    elif namespace not in ("", OWN_NAMESPACE):
        name = ""
    dataset = Dataset.objects.filter(name=name).first() if name else None
    if dataset is None:
        known = sorted([*OFFICIAL_REPOS, *Dataset.objects.values_list("name", flat=True)])
        raise RepoNotFound(f"Dataset repository {repo_id!r} not found on this Portal. Known: {', '.join(known)}.")
    return dataset


@dataclass(frozen=True)
class Revision:
    dataset: Dataset
    sha: str
    instances: list[Instance]


def _content_sha(pairs: list[tuple[str, str]]) -> str:
    """The dataset's content digest (its instances and their archive digests), cut to a git-sized id."""
    return hashlib.sha256(json.dumps(sorted(pairs)).encode()).hexdigest()[:40]


def _record_name(dataset: Dataset, sha: str) -> str:
    return f"hub/revisions/{dataset.name}/{sha}.json"


def revision_current(dataset: Dataset) -> Revision:
    instances = list(catalog.instance_list(dataset))
    pairs = [(i.instance_id, i.input_sha256) for i in instances]
    sha = _content_sha(pairs)
    name = _record_name(dataset, sha)
    # Remembered so that this revision can still be pulled by its sha after the dataset moves on.
    if not default_storage.exists(name):
        default_storage.save(name, ContentFile(json.dumps(dict(pairs), sort_keys=True).encode()))
    return Revision(dataset, sha, instances)


def revision_resolve(dataset: Dataset, revision: str | None) -> Revision:
    """`main` (or none) is the current content; a 40-hex sha is an earlier one while all its instances
    are still served unchanged."""
    current = revision_current(dataset)
    if not revision or revision in (DEFAULT_REVISION, current.sha):
        return current
    if not COMMIT_RE.fullmatch(revision):
        raise RevisionNotFound(f"Revision {revision!r} not found: this Portal serves 'main' and the 40-hex revision "
                               f"ids it has published (current: {current.sha}).")
    name = _record_name(dataset, revision)
    if not default_storage.exists(name):
        raise RevisionNotFound(f"Revision {revision} of dataset {dataset.name} not found (current: {current.sha}).")
    with default_storage.open(name, "rb") as handle:
        wanted: dict[str, str] = json.load(handle)
    served = {i.instance_id: i for i in current.instances}
    gone = sorted(iid for iid, sha in wanted.items() if iid not in served or served[iid].input_sha256 != sha)
    if gone:
        raise RevisionNotFound(
            f"Revision {revision} of dataset {dataset.name} is no longer served: {len(gone)} of its instances were "
            f"regenerated or withdrawn (e.g. {', '.join(gone[:3])}). Pull 'main' (revision {current.sha}).")
    return Revision(dataset, revision, [served[iid] for iid in sorted(wanted)])


def _files(revision: Revision) -> list[tuple[str, Instance, InstanceFile]]:
    return [(f"{TASKS_DIR}/{instance.instance_id}/{rel}", instance, served)
            for instance in revision.instances
            for rel, served in sorted(catalog.instance_served_files(instance).items())]


def revision_info(revision: Revision, repo_id: str) -> dict[str, Any]:
    """What `HfApi.dataset_info` reads: the sha and the file list (`siblings`)."""
    return {
        "_id": revision.sha, "id": repo_id, "author": repo_id.rpartition("/")[0] or OWN_NAMESPACE,
        "sha": revision.sha, "private": False, "gated": False, "disabled": False,
        "description": revision.dataset.description, "tags": [],
        "siblings": [{"rfilename": path} for path, _, _ in _files(revision)],
    }


def tree_entries(revision: Revision, path_in_repo: str, recursive: bool) -> list[dict[str, Any]]:
    """`GET /api/datasets/<repo>/tree/<rev>[/<path>]` entries: folders and files below `path_in_repo`."""
    prefix = path_in_repo.strip("/")
    files = [(path, served) for path, _, served in _files(revision)]
    entries: dict[str, dict[str, Any]] = {}
    for path, served in files:
        if prefix and not path.startswith(prefix + "/"):
            continue
        below = path[len(prefix) + 1:] if prefix else path
        parts = below.split("/")
        if not recursive and len(parts) > 1:
            folder = f"{prefix}/{parts[0]}" if prefix else parts[0]
            entries.setdefault(folder, _folder(folder))
            continue
        for depth in range(1, len(parts)):
            folder = "/".join(([prefix] if prefix else []) + parts[:depth])
            entries.setdefault(folder, _folder(folder))
        entries[path] = {"type": "file", "path": path, "size": served.size, "oid": served.git_oid}
    if prefix and not entries:
        raise EntryNotFound(f"No folder {prefix!r} in revision {revision.sha} of dataset {revision.dataset.name}.",
                            commit=revision.sha)
    return [entries[key] for key in sorted(entries)]


def _folder(path: str) -> dict[str, Any]:
    return {"type": "directory", "path": path, "oid": hashlib.sha1(path.encode(), usedforsecurity=False).hexdigest()}


def resolve_file(revision: Revision, filename: str) -> tuple[InstanceFile, Path]:
    """One served file of the revision by its repo path `tasks/<instance_id>/<relative path>`.

    The path is only ever a key into the served-files index, never joined onto a directory, so
    `..`, absolute paths or encoded separators find nothing.
    """
    missing = EntryNotFound(f"Entry {filename[:300]!r} not found in revision {revision.sha} of dataset "
                            f"{revision.dataset.name}.", commit=revision.sha)
    head, _, rest = filename.partition("/")
    instance_id, _, relative = rest.partition("/")
    if head != TASKS_DIR or not relative:
        raise missing
    instance = next((i for i in revision.instances if i.instance_id == instance_id), None)
    if instance is None:
        raise missing
    try:
        return catalog.instance_served_file(instance, relative)
    except NotFound:
        raise missing from None


def export_revision(revision: Revision, dest: Path) -> int:
    """Write the revision's tree (what a Hub repo of it holds) below `dest`; returns the file count."""
    written = 0
    for path, instance, served in _files(revision):
        _, local = catalog.instance_served_file(instance, served.path)
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, target)
        written += 1
    return written
