"""Writes for proposals: drafts, file sync, Submit, review decisions, Publish.

Submit and Publish queue jobs (`proposals.tasks`); the worker side that runs them, freezing a
revision or publishing it, is `proposals.jobs`.

Every change of a proposal's working copy holds the proposal's row lock (`select_for_update`)
for the whole write, blobs included, so two syncs of one draft are serialised and a failed
one leaves neither rows nor new blobs behind. Status moves are conditional UPDATEs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from contracts.task_files import (
    PORTAL_TASK_ID_RE,
    SUBMISSION_FILE,
    TaskFileError,
    check_file_set,
    check_incoming_name,
    snapshot_token,
)
from portal.accounts.models import User
from portal.accounts.selectors import user_is_maintainer
from portal.errors import Conflict, PayloadTooLarge, PortalError, QuotaExceeded, ValidationFailed
from proposals import selectors
from proposals.files import (
    META_FILES,
    IncomingFile,
    blob_read,
    blob_store,
    blobs_delete,
    imported_fields,
    yaml_refused,
)
from proposals.models import Proposal, ProposalFile, ProposalJob, ReviewEvent, Revision, RevisionFile
from proposals.notify import author_notify
from proposals.publishing import PUBLISHABLE_STATUSES
from proposals.revisions import FIELD_NAMES, content_hash, freeze_problems, frozen_fields
from proposals.tasks import proposal_publish_run_task, proposal_validation_run_task
from scoring.engine.safe_yaml import YAMLTooDeep, YAMLTooLarge
from scoring.engine.static_checks import PORTAL_CHECK

logger = logging.getLogger(__name__)
EMPTY_SNAPSHOT = snapshot_token({})
TEXT_LIMITS = {"task_id": 120, "name": 200, "domain": 50, "subdomain": 200, "source_paper": 500,
               "source_repo": 500, "test_provider": 120, "test_model": 120, "test_agent": 60, "test_sandbox": 20}


def _file_error(exc: TaskFileError) -> PortalError:
    kind = PayloadTooLarge if exc.code in {"file_too_large", "set_too_large"} else ValidationFailed
    return kind(str(exc), code=exc.code)


def check_task_id(task_id: str) -> str:
    task_id = (task_id or "").strip()
    if not PORTAL_TASK_ID_RE.match(task_id):
        raise ValidationFailed(
            f"Invalid task id {task_id[:130]!r}: use domain.task_name in lowercase letters, digits and "
            "underscores, each part starting with a letter (e.g. astronomy.toy_transit_fit) "
            f"({PORTAL_CHECK}: the catalog id rule).",
            code="bad_task_id",
        )
    return task_id


def _locked(proposal_id: object, user: User) -> Proposal:
    proposal = selectors.proposal_get_for_owner(user=user, proposal_id=proposal_id)
    return Proposal.objects.select_for_update().get(pk=proposal.pk)


def closed_reason(proposal: Proposal) -> str | None:
    """Why this proposal's content can no longer change (None while it can)."""
    if proposal.is_editable:
        return None
    return (f"This proposal is {proposal.get_status_display().lower()} and can no longer change; "
            "`asibench task submit` (or New proposal) opens a new draft for the task.")


def _require_editable(proposal: Proposal) -> None:
    reason = closed_reason(proposal)
    if reason:
        raise Conflict(reason, code="proposal_closed")


def _require_not_from_files(proposal: Proposal, values: dict[str, Any]) -> None:
    """Refuse typing over a field a task file sets (proposals.files.FILE_FIELDS: the file wins)."""
    clashes = {key: proposal.imported_from[key] for key, value in values.items()
               if key in proposal.imported_from and value != getattr(proposal, key)}
    if clashes:
        sources = sorted(set(clashes.values()))
        raise ValidationFailed(
            f"{', '.join(sorted(clashes))} {'is' if len(clashes) == 1 else 'are'} set by {' and '.join(sources)}, "
            "and the task files win over the form: edit the file and upload it again to change "
            f"{'it' if len(clashes) == 1 else 'them'}.", code="field_from_file")


def _clean_fields(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key not in FIELD_NAMES:
            continue
        if key in TEXT_LIMITS or key in {"objective", "core_method", "inputs", "outputs", "scoring_notes"}:
            value = "" if value is None else str(value).strip()
            limit = TEXT_LIMITS.get(key)
            if limit and len(value) > limit:
                raise ValidationFailed(f"{key} is longer than {limit} characters.", code="too_long")
        out[key] = value
    if "task_id" in out and out["task_id"]:
        check_task_id(out["task_id"])
    return out


# ------------------------------------------------------------------ drafts
def proposal_create(*, owner: User, fields: dict[str, Any] | None = None) -> Proposal:
    values = _clean_fields(fields or {})
    try:
        with transaction.atomic():
            return Proposal.objects.create(owner=owner, snapshot=EMPTY_SNAPSHOT, **values)
    except IntegrityError:
        raise Conflict(f"You already have an open draft for {values.get('task_id')}.", code="draft_exists") from None


@dataclass(frozen=True)
class OpenedDraft:
    proposal: Proposal
    reused: bool


def proposal_cli_open(*, owner: User, task_id: str, name: str, domain: str, subdomain: Any) -> OpenedDraft:
    """T1: the author's open (editable) proposal for this task id, or a new draft."""
    task_id = check_task_id(task_id)
    for _ in range(2):
        existing = Proposal.objects.filter(owner=owner, task_id=task_id, status__in=Proposal.EDITABLE).first()
        if existing is not None:
            return OpenedDraft(existing, reused=True)
        fields = {"task_id": task_id, "name": (name or "")[:200], "domain": (domain or "")[:50],
                  "subdomain": "" if subdomain is None else str(subdomain)[:200]}
        try:
            with transaction.atomic():
                proposal = Proposal.objects.create(owner=owner, snapshot=EMPTY_SNAPSHOT, **fields)
        except IntegrityError:  # a concurrent T1 created it: take that one
            continue
        return OpenedDraft(proposal, reused=False)
    raise Conflict("Could not open a draft; try again.", code="draft_race")


def proposal_update_fields(*, user: User, proposal_id: object, fields: dict[str, Any]) -> Proposal:
    values = _clean_fields(fields)
    try:
        with transaction.atomic():
            proposal = _locked(proposal_id, user)
            _require_editable(proposal)
            _require_not_from_files(proposal, values)
            for key, value in values.items():
                setattr(proposal, key, value)
            proposal.updated_at = timezone.now()
            proposal.save()
    except IntegrityError:
        raise Conflict(f"You already have another open draft for {values.get('task_id')}.",
                       code="draft_exists") from None
    return proposal


# ------------------------------------------------------------------ files
def _replace_files(proposal: Proposal, incoming: list[IncomingFile], keep: dict[str, ProposalFile]) -> None:
    """Make the draft's file set exactly `keep` (existing rows) plus `incoming`; caller holds the lock."""
    written: list[str] = []
    try:
        rows = []
        for item in incoming:
            blob, new = blob_store(proposal.pk, item)
            if new:
                written.append(blob)
            rows.append(ProposalFile(proposal=proposal, path=item.name, blob=blob, sha256=item.sha256, size=item.size))
        old_blobs = set(proposal.files.values_list("blob", flat=True))
        proposal.files.exclude(pk__in=[f.pk for f in keep.values()]).delete()
        ProposalFile.objects.bulk_create(rows)
        current = {f.path: f.sha256 for f in [*keep.values(), *rows]}
        proposal.snapshot = snapshot_token(current)
        proposal.updated_at = timezone.now()
        proposal.save(update_fields=["snapshot", "updated_at"])
    except BaseException:
        blobs_delete(written)
        raise
    dropped = old_blobs - {r.blob for r in rows} - {f.blob for f in keep.values()}
    referenced = set(RevisionFile.objects.filter(blob__in=dropped).values_list("blob", flat=True))
    garbage = dropped - referenced
    if garbage:
        transaction.on_commit(lambda: blobs_delete(garbage))


def _import_fields(proposal: Proposal) -> None:
    wanted = {*META_FILES, SUBMISSION_FILE}
    contents = {f.path: blob_read(f.blob) for f in proposal.files.filter(path__in=wanted)}
    values, origin = imported_fields(contents)
    for key, value in values.items():
        setattr(proposal, key, value)
    proposal.imported_from = origin
    proposal.save()


def _checked_incoming(files: Iterable[IncomingFile]) -> list[IncomingFile]:
    out: dict[str, IncomingFile] = {}
    try:
        for item in files:
            name = check_incoming_name(item.name)
            if name in out:
                raise TaskFileError(f"Task paths collide after normalization: {name}", "collision")
            out[name] = IncomingFile(name, item.handle, item.size, item.sha256)
        check_file_set({name: item.size for name, item in out.items()})
    except TaskFileError as exc:
        raise _file_error(exc) from None
    for item in out.values():
        item.handle.seek(0)
        refused = yaml_refused(item.name, item.handle.read())
        item.handle.seek(0)
        if isinstance(refused, YAMLTooDeep):
            raise ValidationFailed(f"{item.name}: {refused}", code="yaml_too_deep")
        if isinstance(refused, YAMLTooLarge):
            raise ValidationFailed(f"{item.name}: {refused}", code="yaml_too_large")
        if refused is not None:
            raise ValidationFailed(f"{item.name}: {refused}", code="yaml_alias")
    return list(out.values())


def proposal_files_sync(
    *, user: User, proposal_id: object, files: list[IncomingFile], base_snapshot: str, force: bool
) -> Proposal:
    """T3: the draft's file set becomes exactly `files`; then fields are imported from them.

    Without `force`, refused with 409 when `base_snapshot` is stale or when the files were
    changed in the browser since the last CLI sync.
    """
    proposal = selectors.proposal_get_for_owner(user=user, proposal_id=proposal_id)
    _require_editable(proposal)
    if len(base_snapshot or "") != 64:
        raise ValidationFailed("base_snapshot must be the 64-character token from GET …/file-snapshot.",
                               code="bad_snapshot")
    incoming = _checked_incoming(files)
    with transaction.atomic():
        proposal = _locked(proposal_id, user)
        _require_editable(proposal)
        if not force:
            if base_snapshot != proposal.snapshot:
                raise Conflict("The Draft's files changed since your snapshot was taken (another sync or a browser "
                               "edit). Review the Draft, then re-run with --force-file-sync to replace them.",
                               code="stale_snapshot")
            if proposal.snapshot not in (EMPTY_SNAPSHOT, proposal.cli_snapshot):
                raise Conflict("The Draft has files edited in the browser since the last CLI sync. Review the Draft, "
                               "then re-run with --force-file-sync to replace them with your local files.",
                               code="browser_edits")
        _replace_files(proposal, incoming, keep={})
        proposal.cli_snapshot = proposal.snapshot
        proposal.save(update_fields=["cli_snapshot"])
        _import_fields(proposal)
    return proposal


def proposal_file_write(*, user: User, proposal_id: object, files: list[IncomingFile]) -> Proposal:
    """Browser edits: add or replace some files of the draft (the others stay)."""
    incoming = _checked_incoming(files)
    with transaction.atomic():
        proposal = _locked(proposal_id, user)
        _require_editable(proposal)
        existing = {f.path: f for f in proposal.files.all()}
        keep = {path: f for path, f in existing.items() if path not in {i.name for i in incoming}}
        sizes = {**{p: f.size for p, f in keep.items()}, **{i.name: i.size for i in incoming}}
        try:
            check_file_set(sizes)
        except TaskFileError as exc:
            raise _file_error(exc) from None
        _replace_files(proposal, incoming, keep=keep)
        if {i.name for i in incoming} & {*META_FILES, SUBMISSION_FILE}:
            _import_fields(proposal)
    return proposal


def proposal_file_delete(*, user: User, proposal_id: object, path: str) -> Proposal:
    with transaction.atomic():
        proposal = _locked(proposal_id, user)
        _require_editable(proposal)
        existing = {f.path: f for f in proposal.files.all()}
        if path not in existing:
            raise ValidationFailed(f"The draft has no file {path!r}.", code="no_such_file")
        _replace_files(proposal, [], keep={p: f for p, f in existing.items() if p != path})
        if path in {*META_FILES, SUBMISSION_FILE}:  # the fields it set keep their values and become editable
            _import_fields(proposal)
    return proposal


def _validation_quota_check(user: User) -> None:
    """Refuse a validation beyond the author's daily quota; caller holds the user's row lock."""
    window = timedelta(hours=settings.QUOTA_WINDOW_HOURS)
    recent = ProposalJob.objects.filter(kind=ProposalJob.Kind.VALIDATE, requested_by=user,
                                        created_at__gte=timezone.now() - window)
    limit = settings.PROPOSAL_VALIDATIONS_PER_DAY
    if recent.count() >= limit:
        oldest = recent.order_by("created_at").values_list("created_at", flat=True).first()
        again = (oldest + window).strftime("%Y-%m-%d %H:%M UTC") if oldest else "tomorrow"
        raise QuotaExceeded(f"You have started {limit} pre-submit validations in the last "
                            f"{settings.QUOTA_WINDOW_HOURS} hours, the daily limit; the next one can start at {again}.",
                            code="validation_quota")


def proposal_submit(*, user: User, proposal_id: object) -> ProposalJob:
    """Queue the sandboxed pre-submit validation; when it passes, a worker freezes a revision.

    Idempotent: while a validation of the draft is queued or running, or once one passed for
    the unchanged draft now under review, that validation is returned and nothing is queued.
    """
    proposal = selectors.proposal_get_for_owner(user=user, proposal_id=proposal_id)
    _require_editable(proposal)
    last = proposal.jobs.filter(kind=ProposalJob.Kind.VALIDATE).first()
    if last is not None and last.is_active:
        return last
    latest = selectors.latest_revision(proposal)
    files = {f.path: f.sha256 for f in proposal.files.all()}
    if (last is not None and last.status == ProposalJob.Status.PASSED and latest is not None
            and proposal.status == Proposal.Status.SUBMITTED
            and latest.content_hash == content_hash(frozen_fields(proposal), files)):
        return last
    problems = freeze_problems(proposal)
    if problems:
        raise ValidationFailed("Not ready to submit: " + "; ".join(problems), code="incomplete",
                               extra={"problems": problems})
    with transaction.atomic():
        User.objects.select_for_update().filter(pk=user.pk).first()  # serialises this author's quota checks
        _validation_quota_check(user)
        proposal = _locked(proposal_id, user)
        _require_editable(proposal)
        try:
            with transaction.atomic():
                job = ProposalJob.objects.create(proposal=proposal, kind=ProposalJob.Kind.VALIDATE,
                                                 requested_by=user, snapshot=proposal.snapshot)
        except IntegrityError:  # a concurrent Submit queued one first
            return proposal.jobs.get(kind=ProposalJob.Kind.VALIDATE, status__in=ProposalJob.ACTIVE)
        transaction.on_commit(lambda: proposal_validation_run_task.delay(job.pk))
    return job


# ------------------------------------------------------------------ review
def proposal_comment(*, user: User, proposal_id: object, text: str) -> ReviewEvent:
    text = (text or "").strip()
    if not text:
        raise ValidationFailed("Write a comment first.", code="empty_comment")
    if user_is_maintainer(user):
        proposal = selectors.proposal_get_for_review(user=user, proposal_id=proposal_id)
    else:
        proposal = selectors.proposal_get_for_owner(user=user, proposal_id=proposal_id)
    with transaction.atomic():
        event = ReviewEvent.objects.create(proposal=proposal, revision=selectors.latest_revision(proposal),
                                           actor=user, kind=ReviewEvent.Kind.COMMENT, text=text[:10000])
        if user.pk != proposal.owner_id:
            author_notify(proposal, f"New comment on {proposal.task_id}", text)
    return event


DECISIONS = {
    "request_changes": (Proposal.Status.CHANGES_REQUESTED, ReviewEvent.Kind.CHANGES_REQUESTED, "Changes requested"),
    "accept": (Proposal.Status.ACCEPTED, ReviewEvent.Kind.ACCEPTED, "Accepted"),
    "reject": (Proposal.Status.REJECTED, ReviewEvent.Kind.REJECTED, "Rejected"),
}


def check_difficulty_gate(revision: Revision) -> None:
    """Scoring contract §4.5: a revision whose recorded B3 or B4 score is not below 40 is not accepted.

    Checked on the frozen revision, so revisions frozen before the rule existed are caught too.
    """
    problems = selectors.revision_difficulty_problems(revision)
    if problems:
        raise ValidationFailed(f"Revision {revision.number} cannot be accepted: " + "; ".join(problems) + ".",
                               code="difficulty_gate", extra={"problems": problems})


def check_task_id_free(revision: Revision) -> None:
    """Refuse to accept or publish a revision whose task id another author published first."""
    problem = selectors.task_id_taken_problem(task_id=revision.fields["task_id"], owner_id=revision.proposal.owner_id)
    if problem:
        raise Conflict(problem, code="task_id_taken")


def proposal_decide(*, maintainer: User, proposal_id: object, revision_number: int, decision: str,
                    reason: str) -> ReviewEvent:
    """A maintainer's decision on the revision under review, claimed with a conditional UPDATE."""
    proposal = selectors.proposal_get_for_review(user=maintainer, proposal_id=proposal_id)
    if decision not in DECISIONS:
        raise ValidationFailed(f"Unknown decision {decision!r}.", code="bad_decision")
    reason = (reason or "").strip()
    if not reason:
        raise ValidationFailed("Give a reason: the author reads it.", code="reason_required")
    status, kind, label = DECISIONS[decision]
    with transaction.atomic():
        revision = proposal.revisions.filter(number=revision_number).first()
        latest = selectors.latest_revision(proposal)
        if revision is None or latest is None or revision.pk != latest.pk:
            raise Conflict(f"Revision {revision_number} is not the latest revision; reload the review page.",
                           code="stale_revision")
        if decision == "accept":
            check_difficulty_gate(revision)
            check_task_id_free(revision)
        claimed = Proposal.objects.filter(pk=proposal.pk, status=Proposal.Status.SUBMITTED).update(
            status=status, updated_at=timezone.now())
        if not claimed:
            raise Conflict(f"This proposal is {proposal.status.replace('_', ' ')}, not waiting for a decision.",
                           code="not_submitted")
        event = ReviewEvent.objects.create(proposal=proposal, revision=revision, actor=maintainer, kind=kind,
                                           text=reason[:10000])
        author_notify(proposal, f"{label}: {proposal.task_id} (revision {revision.number})",
                       f"{label} by the ASI-Bench maintainers.\n\nReason:\n{reason}")
    return event


def proposal_publish(*, maintainer: User, proposal_id: object, dataset_names: list[str],
                     status: str = "final") -> ProposalJob:
    """Queue publishing the accepted revision into the catalog (a worker runs proposals.publishing)."""
    proposal = selectors.proposal_get_for_review(user=maintainer, proposal_id=proposal_id)
    revision = selectors.accepted_revision(proposal)
    if proposal.status != Proposal.Status.ACCEPTED or revision is None:
        raise Conflict(f"Only an accepted proposal can be published; this one is {proposal.status}.",
                       code="not_accepted")
    check_task_id_free(revision)
    if not dataset_names:
        raise ValidationFailed("Choose at least one dataset to generate instances for.", code="datasets_required")
    if status not in PUBLISHABLE_STATUSES:
        raise ValidationFailed(f"Publish as one of {', '.join(PUBLISHABLE_STATUSES)}.", code="bad_status")
    try:
        with transaction.atomic():
            job = ProposalJob.objects.create(proposal=proposal, kind=ProposalJob.Kind.PUBLISH,
                                             requested_by=maintainer,
                                             options={"datasets": list(dataset_names), "status": status})
            transaction.on_commit(lambda: proposal_publish_run_task.delay(job.pk))
    except IntegrityError:
        raise Conflict("This proposal is being published already.", code="publishing") from None
    return job
