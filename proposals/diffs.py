"""What changed between two revisions, for the review page: computed once per revision pair and kept
(RevisionDiff), so that the page only reads it.

Both revisions are the author's, up to 100 MiB each. A changed file larger than
PROPOSAL_DIFF_MAX_FILE_BYTES is never read for a diff (the page offers both versions to download),
the diff itself runs in bounded time (proposals.diffing), and a diff longer than
PROPOSAL_DIFF_MAX_SHOWN_BYTES is kept as a note instead. A request computes a diff only when the
files it would read total at most PROPOSAL_DIFF_INLINE_BYTES; otherwise it queues the work for a
worker and the page says the diff is on its way. Freezing a revision queues its diff at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.lexers import DiffLexer

from proposals.diffing import unified_diff
from proposals.files import blob_read
from proposals.models import Revision, RevisionDiff, RevisionFile
from proposals.rendering import FORMATTER

logger = logging.getLogger(__name__)

# A pending diff whose worker has not answered in this long (its message lost, the worker gone) is
# queued again by the next page view.
REQUEUE_AFTER = timedelta(minutes=10)
DIFF_TASK = "proposals.revision_diff"  # proposals.tasks.revision_diff_task
NOTES = {
    "binary": "Binary file (or not UTF-8 text): not diffed.",
    "too_large": "Too large to diff: download both versions and compare them locally.",
    "too_long": "The diff is too long to show here: download both versions and compare them locally.",
}


def _changed_files(old: Revision, new: Revision) -> list[tuple[str, RevisionFile | None, RevisionFile | None]]:
    before = {f.path: f for f in old.files.all()}
    after = {f.path: f for f in new.files.all()}
    return [(path, before.get(path), after.get(path)) for path in sorted(before.keys() | after.keys())
            if before.get(path) is None or after.get(path) is None
            or before[path].sha256 != after[path].sha256]


def _too_large(*rows: RevisionFile | None) -> bool:
    return any(row is not None and row.size > settings.PROPOSAL_DIFF_MAX_FILE_BYTES for row in rows)


def _lines(row: RevisionFile | None) -> list[str] | None:
    """The file's lines (keeping their ends); [] when absent; None when binary or not UTF-8."""
    if row is None:
        return []
    data = blob_read(row.blob)
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def revision_diff_compute(old: Revision, new: Revision) -> list[dict[str, str]]:
    """Each changed path of `new` against `old`, with its unified diff or the note saying why there is none."""
    budget = settings.PROPOSAL_DIFF_MAX_SHOWN_BYTES
    out = []
    for path, before, after in _changed_files(old, new):
        change = "added" if before is None else "removed" if after is None else "changed"
        entry = {"path": path, "change": change}
        if _too_large(before, after):
            out.append({**entry, "note": "too_large"})
            continue
        old_lines, new_lines = _lines(before), _lines(after)
        if old_lines is None or new_lines is None:
            out.append({**entry, "note": "binary"})
            continue
        text = "".join(unified_diff(old_lines, new_lines, f"a/{path}", f"b/{path}"))
        size = len(text.encode("utf-8"))
        if size > budget:
            out.append({**entry, "note": "too_long"})
            continue
        budget -= size
        out.append({**entry, "diff": text})
    return out


def revision_diff_store(*, old_id: int, new_id: int) -> RevisionDiff:
    """Compute and keep the diff of a revision pair (once: a kept diff is returned as it is)."""
    row, _ = RevisionDiff.objects.get_or_create(old_id=old_id, new_id=new_id)
    if row.status == RevisionDiff.Status.READY:
        return row
    try:
        files = revision_diff_compute(Revision.objects.get(id=old_id), Revision.objects.get(id=new_id))
    except Exception as exc:  # the page says why, never a diff stuck "on its way"
        logger.exception("diff of revisions %s -> %s could not be computed", old_id, new_id)
        RevisionDiff.objects.filter(pk=row.pk).update(status=RevisionDiff.Status.FAILED, problem=str(exc)[:500],
                                                      finished_at=timezone.now())
    else:
        RevisionDiff.objects.filter(pk=row.pk).update(status=RevisionDiff.Status.READY, files=files,
                                                      finished_at=timezone.now())
    row.refresh_from_db()
    return row


def revision_diff_queue(old: Revision, new: Revision) -> None:
    """Have a worker compute the pair's diff (a pending row says it is on its way). Sent by task name:
    proposals.tasks imports this module."""
    row, created = RevisionDiff.objects.get_or_create(old=old, new=new)
    stale = row.status == RevisionDiff.Status.PENDING and row.created_at < timezone.now() - REQUEUE_AFTER
    if created or stale:
        if stale:
            RevisionDiff.objects.filter(pk=row.pk).update(created_at=timezone.now())
        transaction.on_commit(lambda: current_app.send_task(DIFF_TASK, args=(old.id, new.id)))


def revision_diff_queue_for(revision: Revision) -> None:
    """After a freeze: queue the diff against the revision before it, if there is one."""
    previous = (Revision.objects.filter(proposal_id=revision.proposal_id, number__lt=revision.number)
                .order_by("-number").first())
    if previous is not None:
        revision_diff_queue(previous, revision)


def _inline_bytes(old: Revision, new: Revision) -> int:
    """What computing the diff now would read: the changed files small enough to be diffed (sizes from
    the database; nothing is read to find out)."""
    return sum(row.size for _, before, after in _changed_files(old, new) if not _too_large(before, after)
               for row in (before, after) if row is not None)


@dataclass
class FileChange:
    path: str
    change: str  # added | removed | changed
    html: SafeString | str  # the highlighted diff, or "" with a note
    note: str = ""


@dataclass
class ReviewDiff:
    state: str  # ready | pending | failed
    files: list[FileChange]
    problem: str = ""


def revision_diff_for_review(old: Revision, new: Revision) -> ReviewDiff:
    """The kept diff of the pair; computed here only when small, else queued for a worker."""
    row = RevisionDiff.objects.filter(old=old, new=new).first()
    if (row is None or row.status == RevisionDiff.Status.PENDING) and \
            _inline_bytes(old, new) <= settings.PROPOSAL_DIFF_INLINE_BYTES:
        row = revision_diff_store(old_id=old.id, new_id=new.id)
    if row is None or row.status == RevisionDiff.Status.PENDING:
        revision_diff_queue(old, new)
        return ReviewDiff("pending", [])
    if row.status == RevisionDiff.Status.FAILED:
        return ReviewDiff("failed", [], row.problem)
    files = []
    for entry in row.files:
        if "diff" in entry:
            html = mark_safe(highlight(entry["diff"], DiffLexer(stripnl=False), FORMATTER))  # noqa: S308
            files.append(FileChange(entry["path"], entry["change"], html))
        else:
            files.append(FileChange(entry["path"], entry["change"], "", NOTES.get(entry.get("note", ""), "")))
    return ReviewDiff("ready", files)
