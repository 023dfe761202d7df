"""Freezing a proposal's working copy into a revision: which fields are frozen, the content hash
that tells an unchanged draft, and why a draft cannot be frozen yet."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db.models import Max
from django.utils import timezone

from contracts.task_files import SUBMISSION_FILE, os_evidence_error
from portal.accounts.models import User
from proposals import selectors
from proposals.files import PARSED_FILES, blob_read, json_safe, load_yaml, yaml_refusal
from proposals.models import Proposal, ReviewEvent, Revision, RevisionFile

FIELD_NAMES = (
    "task_id", "name", "domain", "subdomain", "objective", "core_method", "source_paper", "source_repo",
    "inputs", "outputs", "scoring_notes", "local_testing_done", "test_provider", "test_model", "test_agent",
    "test_sandbox", "score_b1", "score_b2", "score_b3", "score_b4",
)


def frozen_fields(proposal: Proposal) -> dict[str, Any]:
    return {name: json_safe(getattr(proposal, name)) for name in FIELD_NAMES}


def content_hash(fields: dict[str, Any], files: dict[str, str]) -> str:
    canonical = json.dumps({"fields": fields, "files": files}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def freeze_problems(proposal: Proposal) -> list[str]:
    """Why this draft cannot be frozen yet (empty when it can), without running any code."""
    problems = []
    state = selectors.completeness(proposal)
    for step in state["steps"]:
        if step["key"] != "testing" and not step["done"]:
            problems.append(f"{step['title']}: missing {', '.join(step['needs'])}")
    problems += [f"Local testing: {p}" for p in selectors.testing_problems(proposal)]
    taken = selectors.task_id_taken_problem(task_id=proposal.task_id, owner_id=proposal.owner_id)
    if taken:
        problems.append(taken)
    files = {f.path: f for f in proposal.files.all()}
    problems += [problem for path in PARSED_FILES if path in files
                 if (problem := yaml_refusal(path, blob_read(files[path].blob)))]
    meta = files.get("task_meta.yaml")
    if meta is not None:
        meta_id = load_yaml(blob_read(meta.blob)).get("id")
        if meta_id != proposal.task_id:
            short = isinstance(meta_id, str) and len(meta_id) <= 130
            shown = repr(meta_id) if short else "(none, or not a short string)"
            problems.append(f"task_meta.yaml declares id {shown}, not {proposal.task_id!r}")
    evidence = files.get(SUBMISSION_FILE)
    if evidence is not None:
        error = os_evidence_error(load_yaml(blob_read(evidence.blob)))
        if error:
            problems.append(error)
    return problems


def revision_freeze(proposal: Proposal, user: User | None, report: dict[str, Any]) -> Revision:
    """Freeze the locked, validated working copy into the next revision."""
    rows = list(proposal.files.all())
    fields = frozen_fields(proposal)
    number = (proposal.revisions.aggregate(n=Max("number"))["n"] or 0) + 1
    revision = Revision.objects.create(
        proposal=proposal, number=number, fields=fields, validation=report,
        content_hash=content_hash(fields, {f.path: f.sha256 for f in rows}),
    )
    RevisionFile.objects.bulk_create(
        RevisionFile(revision=revision, path=f.path, blob=f.blob, sha256=f.sha256, size=f.size) for f in rows
    )
    now = timezone.now()
    Proposal.objects.filter(pk=proposal.pk).update(status=Proposal.Status.SUBMITTED, submitted_at=now,
                                                    updated_at=now)
    ReviewEvent.objects.create(proposal=proposal, revision=revision, actor=user, kind=ReviewEvent.Kind.SUBMITTED,
                               text=f"Revision {number} submitted for review.")
    return revision
