"""Bundle intake, drafts, Confirm, withdraw and expiry."""

import logging
import os
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from contracts import PROMPT_LEVELS
from contracts.agent_label import agent_label
from contracts.client_identity import recorded_client
from contracts.sandbox_policy import policy_name
from portal.accounts.models import MAINTAINERS_GROUP, User
from portal.accounts.selectors import user_is_maintainer
from portal.accounts.services import user_require_verified_email
from portal.errors import (
    Conflict,
    NotFound,
    PayloadTooLarge,
    PortalError,
    QuotaExceeded,
    ServiceUnavailable,
    ValidationFailed,
)
from portal.status.selectors import scoring_workers
from portal.submissions.bundle_verify import (
    BundleRejected,
    ByteSource,
    VerifiedBundle,
    VerifiedEntry,
    verify_bundle_stream,
)
from portal.submissions.conformance import conformance_flags
from portal.submissions.evidence import clean_text
from portal.submissions.models import ScanFinding, ScoredAttempt, Submission, SubmissionEntry
from portal.submissions.scan_tasks import scan_enqueue_on_commit
from portal.submissions.scoring_tasks import scoring_run_start_task
from portal.submissions.selectors import bundle_limits, expected_outputs_lookup, official_task_ids, run_state
from portal.submissions.usage import run_usage
from scoring.models import Dataset, Instance
from scoring.selectors import instance_input_digest, task_unscorable_reasons
from scoring.storage_errors import STORAGE_ERRORS

logger = logging.getLogger(__name__)
OFFICIAL_DATASET = "seed42"
MB = 1024 * 1024


class BundleRefused(PortalError):
    """A bundle that failed verification; `code` is the verifier's reason code."""

    status_code = 422


class _TempArchive(File):
    """A finished temp file that FileSystemStorage can move into place instead of copying."""

    def temporary_file_path(self) -> str:
        assert self.file is not None
        return self.file.name


def _describe_agent(bundle: VerifiedBundle) -> dict[str, str]:
    """Agent, model, effort and sandbox of the run, from the first result's provenance."""
    if not bundle.entries:
        return {"agent": "", "model": "", "effort": "", "sandbox": ""}
    provenance = bundle.entries[0].provenance or {}
    agent = provenance.get("agent") or {}
    config = agent.get("config") or {}
    name = (agent_label(agent_name=agent.get("agent_name"), cmd_template=agent.get("cmd_template"), config=config)
            or agent.get("adapter_class") or bundle.entries[0].agent_name or "")
    sandbox = provenance.get("sandbox") or {}
    return {
        "agent": str(name)[:200],
        "model": str(config.get("model") or agent.get("model") or "")[:200],
        "effort": str(config.get("effort") or config.get("reasoning_effort") or agent.get("effort") or "")[:60],
        "sandbox": str(sandbox.get("effective_mode") or "")[:40],
    }


def describe_client(bundle: VerifiedBundle) -> dict[str, str]:
    """The client that made most of the run's results (contracts.client_identity); blank name and
    version when they record none, as the official client's do. A mix is a conformance flag."""
    made_by = Counter(recorded_client(e.provenance) or ("", "") for e in bundle.entries)
    name, version = made_by.most_common(1)[0][0] if made_by else ("", "")
    return {"client_name": name[:60], "client_version": version[:40]}


def _completeness(bundle: VerifiedBundle, dataset: Dataset) -> tuple[list[str], dict[str, Any]]:
    """Incomplete (instance, level) keys and the report the draft page shows."""
    incomplete = list(bundle.incomplete_instances)
    levels_by_instance: dict[str, set[str]] = defaultdict(set)
    per_level: Counter[str] = Counter()
    per_task: dict[str, Counter[str]] = defaultdict(Counter)
    for entry in bundle.entries:
        levels_by_instance[entry.instance_id].add(entry.prompt_level)
        per_level[entry.prompt_level] += 1
        per_task[entry.task_id][entry.prompt_level] += 1
    for instance_id, levels in sorted(levels_by_instance.items()):
        incomplete += [f"{instance_id}__{level}" for level in PROMPT_LEVELS if level not in levels]
    total_tasks = len(official_task_ids(dataset.name))
    report = {
        "per_level": {level: per_level.get(level, 0) for level in PROMPT_LEVELS},
        "per_task": {task: {level: counts.get(level, 0) for level in PROMPT_LEVELS}
                     for task, counts in sorted(per_task.items())},
        "tasks_covered": len(per_task),
        "tasks_in_dataset": total_tasks,
        "missing_outputs": {e.base_name: e.missing_outputs for e in bundle.entries if e.missing_outputs},
        "timed_out_with_outputs": [e.base_name for e in bundle.entries if e.timed_out_with_outputs],
        "uncompressed_bytes": bundle.uncompressed_bytes,
        "member_count": bundle.member_count,
        "sandbox_policy": sandbox_policy(dataset),
    }
    return sorted(set(incomplete)), report


def inputs_report(entries: list[VerifiedEntry], instances: dict[str, Instance]) -> dict[str, dict[str, str]]:
    """Per instance: were its results made from the inputs this Portal generated?

    `match` when every recorded input digest equals ours, `mismatch` when one differs (e.g. outputs
    made from another dataset's inputs for the same task id), `not_recorded` when the client recorded
    none (the official client does not).
    """
    recorded: dict[str, set[str]] = defaultdict(set)
    for entry in entries:
        inputs = (entry.provenance or {}).get("inputs")
        if isinstance(inputs, dict):
            recorded[entry.instance_id].add(str(inputs.get("digest") or "unreadable"))
        else:
            recorded.setdefault(entry.instance_id, set())
    report = {}
    for instance_id, digests in sorted(recorded.items()):
        if not digests:
            report[instance_id] = {"state": "not_recorded", "detail": "the client recorded no input digest"}
            continue
        try:
            ours = instance_input_digest(instances[instance_id])
        except OSError:
            # The instance's archive is gone from storage: say so rather than refuse the upload.
            logger.warning("inputs report: archive of %s unreadable", instance_id)
            report[instance_id] = {"state": "unavailable", "detail": "this Portal cannot read the instance's inputs"}
            continue
        if digests == {ours}:
            report[instance_id] = {"state": "match", "detail": f"inputs {ours[:12]} as generated by this Portal"}
        else:
            other = sorted(digests - {ours})[0]
            report[instance_id] = {"state": "mismatch", "detail": f"made from inputs {other[:12]}, not the ones this "
                                   f"Portal generated ({ours[:12]}); scores would compare them with other references"}
    return report


def sandbox_policy(dataset: Dataset) -> dict[str, Any]:
    """The sandbox rule a bundle was checked against: `official` when the dataset takes only
    Docker (`os`) runs, as the official service does for seed42; `local` otherwise."""
    accepted = sorted(dataset.accepted_sandbox_modes or [])
    return {"name": policy_name(accepted), "accepted_modes": accepted}


@dataclass(frozen=True)
class IntakeResult:
    submission: Submission
    created: bool


def submission_intake(
    *, user: User, stream: ByteSource, content_length: int | None, filename: str | None = ""
) -> IntakeResult:
    """Verify a bundle while it streams in and park it as a private draft.

    A refused bundle leaves nothing behind: no stored archive, no rows. The same results from the
    same user (the same bytes, or the same result files packed again: contracts.bundle.results_digest)
    return the existing run, whatever its state, instead of a duplicate; only a withdrawn or expired
    draft lets them in again.
    """
    user_require_verified_email(user=user)
    limits = bundle_limits()
    if content_length is not None and content_length > limits.max_compressed_bytes:
        raise PayloadTooLarge(
            f"The bundle is {content_length} bytes; the limit is {limits.max_compressed_bytes} bytes.",
            code="too_large",
        )
    dataset = Dataset.objects.filter(name=OFFICIAL_DATASET).first()
    if dataset is None or not dataset.instances.exists():
        raise ValidationFailed("The official dataset has not been generated on this Portal yet.", code="no_dataset")
    instance_ids = set(Instance.objects.filter(dataset=dataset).values_list("instance_id", flat=True))
    tmp_dir = Path(settings.VAR_DIR) / "tmp"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(dir=tmp_dir, prefix="bundle-", suffix=".tar.gz", delete=False)
    try:
        try:
            with handle:
                bundle = verify_bundle_stream(
                    source=stream,
                    sink=handle,
                    limits=limits,
                    known_instance_ids=instance_ids,
                    accepted_sandbox_modes=set(dataset.accepted_sandbox_modes),
                    expected_outputs=expected_outputs_lookup(),
                )
        except BundleRejected as exc:
            raise BundleRefused(f"Bundle refused ({exc.code}): {exc.message}", code=exc.code) from None
        _scorable_check(bundle)
        existing = _live_upload(user, bundle).first()
        if existing is not None:
            return IntakeResult(existing, created=False)
        return IntakeResult(_draft_create(user, dataset, bundle, Path(handle.name), filename or ""), created=True)
    finally:
        if os.path.exists(handle.name):
            os.unlink(handle.name)


def _scorable_check(bundle: VerifiedBundle) -> None:
    """Refuse results this Portal could never score, before anything is kept: their task's custom
    scorer needs what the scoring environment lacks (the task page says so too)."""
    unscorable = task_unscorable_reasons(entry.task_id for entry in bundle.entries)
    if unscorable:
        named = "; ".join(f"{task_id} ({reason})" for task_id, reason in sorted(unscorable.items()))
        raise ValidationFailed(
            f"This Portal cannot score results for {len(unscorable)} task{'s' if len(unscorable) != 1 else ''} "
            f"in this bundle: {named}. Leave {'them' if len(unscorable) != 1 else 'it'} out of the run "
            "(asibench run --tasks …) and upload again; nothing was kept.",
            code="task_unscorable",
        )


def _draft_create(
    user: User, dataset: Dataset, bundle: VerifiedBundle, archive_path: Path, filename: str
) -> Submission:
    incomplete, report = _completeness(bundle, dataset)
    instances = {
        i.instance_id: i
        for i in Instance.objects.filter(dataset=dataset, instance_id__in={e.instance_id for e in bundle.entries})
    }
    report["inputs"] = inputs_report(bundle.entries, instances)
    described = _describe_agent(bundle)
    submission = Submission(
        owner=user,
        dataset=dataset,
        archive_sha256=bundle.archive_sha256,
        archive_bytes=bundle.archive_bytes,
        filename=filename[:255],
        note=(bundle.note or "")[:5000],
        framework_version=(bundle.framework_version or "")[:40],
        **describe_client(bundle),
        results_digest=bundle.results_digest,
        bundle_created_at=(bundle.created_at or "")[:40],
        integrity_ok=bundle.integrity_ok,
        incomplete_instances=incomplete,
        report=report,
        usage=run_usage([e.usage for e in bundle.entries]),
        expires_at=timezone.now() + timedelta(hours=settings.DRAFT_TTL_HOURS),
        conformance=conformance_flags(bundle, dataset, {"owner": user, "dataset": dataset, **described}),
        **described,
    )
    try:
        with archive_path.open("rb") as raw:
            try:
                submission.archive = default_storage.save(f"submissions/{submission.id}.tar.gz", _TempArchive(raw))
            except STORAGE_ERRORS as exc:
                logger.warning("storing bundle %s failed: %s", submission.id, exc)
                _storage_leftover_delete(f"submissions/{submission.id}.tar.gz")
                raise ServiceUnavailable("The bundle was verified but could not be stored: the storage service "
                                         "did not answer. Nothing was kept; upload it again in a few minutes.",
                                         code="storage_unavailable") from None
        with transaction.atomic():
            _draft_allowance_check(user, submission.archive_bytes)
            submission.save()
            SubmissionEntry.objects.bulk_create(_entry(submission, e, instances[e.instance_id]) for e in bundle.entries)
            scan_enqueue_on_commit(submission_id=submission.id)
    except IntegrityError:
        # The same results arrived twice at once; the other request's draft is the answer.
        default_storage.delete(submission.archive)
        return _live_upload(user, bundle).get()
    except BaseException:
        if submission.archive:
            default_storage.delete(submission.archive)
        raise
    return submission


def _draft_allowance_check(user: User, new_bytes: int) -> None:
    """Live drafts hold storage until they expire: cap how many, and how many bytes, one user parks.

    Runs inside the draft's transaction with the user's row locked, so two uploads at once cannot
    both take the last place.
    """
    User.objects.select_for_update().filter(id=user.id).first()
    live = Submission.objects.filter(owner=user, status=Submission.Status.DRAFT, expires_at__gt=timezone.now())
    held = live.aggregate(count=Count("id"), bytes=Sum("archive_bytes"))
    count, used = held["count"], held["bytes"] or 0
    if count >= settings.DRAFTS_PER_USER:
        raise QuotaExceeded(
            f"You have {count} unconfirmed draft{'s' if count != 1 else ''}; the limit is "
            f"{settings.DRAFTS_PER_USER}. Confirm or withdraw one on your dashboard (or wait for it to "
            "expire), then upload again.",
            code="draft_quota",
        )
    if used + new_bytes > settings.DRAFT_BYTES_PER_USER:
        raise QuotaExceeded(
            f"Your unconfirmed drafts hold {_mb(used)}; this bundle would pass your limit of "
            f"{_mb(settings.DRAFT_BYTES_PER_USER)} for drafts. Confirm or withdraw a draft on your dashboard "
            "(or wait for one to expire), then upload again.",
            code="draft_bytes_quota",
        )


def _mb(size: int) -> str:
    return f"{size / MB:.1f} MB"


def _storage_leftover_delete(name: str) -> None:
    """A half-finished upload may have left the object behind (a multipart upload that failed at
    its end); remove it if storage answers again, else there is nothing more we can do now."""
    try:
        if default_storage.exists(name):
            default_storage.delete(name)
    except STORAGE_ERRORS:
        logger.warning("could not check for a leftover %s; storage still not answering", name)


def _entry(submission: Submission, entry: VerifiedEntry, instance: Instance) -> SubmissionEntry:
    return SubmissionEntry(
        submission=submission,
        base_name=entry.base_name,
        instance=instance,
        task_id=entry.task_id,
        prompt_level=entry.prompt_level,
        attempt=entry.attempt,
        result_status=entry.status[:20],
        outputs=[{"path": o.path, "member": o.member, "sha256": o.sha256, "bytes": o.bytes} for o in entry.outputs],
        missing_outputs=entry.missing_outputs,
        timed_out_with_outputs=entry.timed_out_with_outputs,
        provenance=entry.provenance,
        evidence=entry.evidence,
        usage=entry.usage,
    )


def _live_upload(user: User, bundle: VerifiedBundle) -> QuerySet[Submission]:
    """The owner's run holding these results: the same archive bytes, or the same result files."""
    same = Q(archive_sha256=bundle.archive_sha256)
    if bundle.results_digest:
        same |= Q(results_digest=bundle.results_digest)
    return Submission.objects.filter(same, owner=user).exclude(
        status__in=Submission.ENDED_DRAFT_STATUSES
    ).order_by("-created_at")


def intake_message(submission: Submission, created: bool, run_url: str) -> str:
    """What an upload's answer says. A re-upload names the run's real state and its page, since the
    official client prints this message verbatim (and its DRAFT banner only with a confirm_url)."""
    counts = submission.report.get("per_level", {})
    results = sum(counts.values())
    tasks = submission.report.get("tasks_covered", 0)
    incomplete = len(submission.incomplete_instances)
    tail = f"; {incomplete} result{'s are' if incomplete != 1 else ' is'} incomplete" if incomplete else ""
    parsed = f"{results} results for {tasks} task{'s' if tasks != 1 else ''}{tail}"
    if created:
        return f"Parsed {parsed}. Confirm the draft in your browser to enter the scoring queue."
    state = run_state(submission)
    already = f"These results were already uploaded ({parsed}), nothing new was created: run {submission.id}"
    if state == Submission.Status.DRAFT:
        return f"{already} is a draft waiting for you to confirm it in your browser: {run_url}"
    review_reason = getattr(getattr(submission, "review", None), "reason", "") or submission.status_reason
    said = {
        Submission.Status.QUEUED: "is queued for scoring",
        Submission.Status.SCORING: "is being scored",
        Submission.Status.SCORED: "is scored",
        Submission.Status.FAILED: f"could not be scored ({submission.status_reason or 'no reason recorded'}); "
                                  "a maintainer can rescore it",
        "published": "is scored and published on the leaderboard",
        "rejected": f"was rejected by a maintainer ({review_reason or 'no reason given'})",
    }.get(state, f"is {state}")
    return f"{already} {said}: {run_url}"


def submission_get_for(*, user: User, submission_id: str) -> Submission:
    """The submission if `user` owns it or is a maintainer; otherwise NotFound (never 403: no probing)."""
    submission = Submission.objects.select_related("dataset", "owner").filter(id=submission_id).first()
    if submission is None or (submission.owner_id != user.id and not user_is_maintainer(user)):
        raise NotFound("No such submission.")
    return submission


def _owned(user: User, submission_id: str) -> Submission:
    """Only the owner acts on a draft; maintainers may read it but get NotFound here too."""
    submission = submission_get_for(user=user, submission_id=submission_id)
    if submission.owner_id != user.id:
        raise NotFound("No such submission.")
    return submission


def submission_confirm(*, user: User, submission_id: str) -> Submission:
    """Move a draft to the scoring queue. Idempotent: confirming twice changes nothing more."""
    submission = _owned(user, submission_id)
    user_require_verified_email(user=user)
    if submission.status != Submission.Status.DRAFT:
        if submission.status in Submission.ENDED_DRAFT_STATUSES:
            raise ValidationFailed(f"This draft was {submission.status}; upload the bundle again.")
        return submission
    _confirm_scorable_check()
    with transaction.atomic():
        _confirm_quota_check(user, submission)
        claimed = Submission.objects.filter(id=submission.id, status=Submission.Status.DRAFT).update(
            status=Submission.Status.QUEUED, confirmed_at=timezone.now(), expires_at=None
        )
        if claimed:
            attempt_record(submission)
            scoring_enqueue_on_commit(submission_id=str(submission.id))
    submission.refresh_from_db()
    return submission


def attempt_record(submission: Submission) -> None:
    """The attempt ledger's row for a confirmed scoring, on a dataset whose references are private. Kept
    whatever becomes of the run; once per run."""
    if Dataset.objects.filter(name=submission.dataset_id, references_public=True).exists():
        return
    tasks = sorted(set(submission.entries.values_list("task_id", flat=True)))
    ScoredAttempt.objects.get_or_create(submission=submission, defaults={
        "owner_id": submission.owner_id, "dataset_id": submission.dataset_id, "tasks": tasks,
        "confirmed_at": timezone.now()})


def _confirm_scorable_check() -> None:
    """Refuse a Confirm that could never lead to a score: workers are running, and every one of them
    reported at its last heartbeat that it has no usable sandbox. With no live worker at all the run
    is accepted and waits in the queue for one (`confirm_message` says so); so it is when the workers
    predate the sandbox report."""
    workers = scoring_workers()
    if workers.none_can_score:
        raise ServiceUnavailable(
            f"No scoring worker of this Portal can score runs right now: {workers.problem[:600].rstrip('.')}. "
            "Your draft stays; confirm it once the Portal's operator has started a worker with a usable sandbox.",
            code="no_scoring_worker",
        )


def confirm_message(submission: Submission) -> str | None:
    """What the owner reads after Confirm beyond the run page's live status (which says "in the scoring
    queue" for as long as it is): that no worker is alive to take the run, when none is."""
    if submission.status == Submission.Status.QUEUED and scoring_workers().alive == 0:
        return ("Confirmed: your run is in the scoring queue. No scoring worker is running right now; "
                "it will be scored as soon as one starts.")
    return None


def _confirm_quota_check(user: User, submission: Submission) -> None:
    """Each confirm asks the scoring oracle about private references: cap how often and how much.

    Runs inside the confirm's transaction with the user's row locked, so two confirms at once
    cannot both take the last place of the day.
    """
    results = submission.entries.count()
    if results > settings.RESULTS_PER_BUNDLE_LIMIT:
        raise QuotaExceeded(
            f"This bundle has {results} results; the Portal scores at most {settings.RESULTS_PER_BUNDLE_LIMIT} "
            "per bundle. Withdraw it and upload a run with fewer attempts.",
            code="too_many_results",
        )
    User.objects.select_for_update().filter(id=user.id).first()
    window = timedelta(hours=settings.QUOTA_WINDOW_HOURS)
    recent = [at for at in Submission.objects.filter(owner=user, confirmed_at__gte=timezone.now() - window)
              .order_by("confirmed_at").values_list("confirmed_at", flat=True) if at is not None]
    if len(recent) >= settings.CONFIRMS_PER_DAY_LIMIT:
        frees_at = recent[len(recent) - settings.CONFIRMS_PER_DAY_LIMIT] + window
        raise QuotaExceeded(
            f"You have confirmed {len(recent)} runs in the last {settings.QUOTA_WINDOW_HOURS} hours; the limit is "
            f"{settings.CONFIRMS_PER_DAY_LIMIT} a day. This draft stays; confirm it after "
            f"{frees_at:%Y-%m-%d %H:%M} UTC.",
            code="confirm_quota",
        )
    if not user_is_maintainer(user):
        _site_confirm_budget_check(submission)


def _site_confirm_budget_check(submission: Submission) -> None:
    """Accounts are free, so the per-user quota alone does not bound the oracle: all users' confirms
    in any 24 hours share one budget. Maintainers' confirms are exempt and do not count; they can
    read the references anyway.

    Every run is of the official dataset, so locking its row serialises all counted confirms.
    """
    Dataset.objects.select_for_update().filter(name=submission.dataset_id).first()
    window = timedelta(hours=settings.QUOTA_WINDOW_HOURS)
    counted = (Submission.objects.filter(confirmed_at__gte=timezone.now() - window)
               .exclude(owner__groups__name=MAINTAINERS_GROUP).exclude(owner__is_superuser=True))
    recent = sorted(at for at in counted.values_list("confirmed_at", flat=True) if at is not None)
    budget = settings.CONFIRMS_PER_DAY_SITE
    if len(recent) >= budget:
        frees_at = recent[len(recent) - budget] + window
        raise QuotaExceeded(
            f"The Portal has taken its {budget} confirms for the last {settings.QUOTA_WINDOW_HOURS} hours (all users "
            f"together). This draft stays; confirm it after {frees_at:%Y-%m-%d %H:%M} UTC.",
            code="site_confirm_budget",
        )
def submission_rescore(*, submission_id: str, requested_by: User, rejudge: bool = False) -> Submission:
    """Queue a new scoring run of a scored or failed run; earlier runs stay for comparison. Its judges
    replay the replies recorded earlier unless `rejudge`."""
    with transaction.atomic():
        updated = Submission.objects.filter(
            id=submission_id, status__in=[Submission.Status.SCORED, Submission.Status.FAILED]
        ).update(status=Submission.Status.QUEUED, status_reason="Rescore requested.")
        if updated:
            scoring_enqueue_on_commit(submission_id=str(submission_id), requested_by_id=str(requested_by.id),
                                      rejudge=rejudge)
    return Submission.objects.get(id=submission_id)


def scoring_enqueue_on_commit(*, submission_id: str, requested_by_id: str | None = None,
                              rejudge: bool = False) -> None:
    """The one way a run enters the scoring queue (confirm, rescore, the reaper): ids only, after
    commit. Records when, so the reaper can tell a message that should have been picked up by now."""
    Submission.objects.filter(id=submission_id).update(enqueued_at=timezone.now())
    transaction.on_commit(lambda: scoring_run_start_task.delay(submission_id, requested_by_id, rejudge))


def submission_withdraw(*, user: User, submission_id: str) -> Submission:
    submission = _owned(user, submission_id)
    if submission.status != Submission.Status.DRAFT:
        raise ValidationFailed("Only drafts can be withdrawn; this run is already in the scoring queue.")
    if Submission.objects.filter(id=submission.id, status=Submission.Status.DRAFT).update(
        status=Submission.Status.WITHDRAWN, status_reason="Withdrawn by the submitter."
    ):
        default_storage.delete(submission.archive)
    submission.refresh_from_db()
    return submission


def submission_get_owned(*, user: User, submission_id: str) -> Submission:
    """The submission if `user` owns it, for pages that lead to an owner's action (the withdraw step)."""
    return _owned(user, submission_id)


def drafts_expire(*, now: Any = None) -> int:
    """Expire unconfirmed drafts past their time; their archives are deleted."""
    now = now or timezone.now()
    expired = 0
    for submission in Submission.objects.filter(status=Submission.Status.DRAFT, expires_at__lte=now):
        if Submission.objects.filter(id=submission.id, status=Submission.Status.DRAFT).update(
            status=Submission.Status.EXPIRED, status_reason="The draft was not confirmed in time."
        ):
            default_storage.delete(submission.archive)
            expired += 1
    return expired


ANSWER_MAX_CHARS = 4000


def finding_answer(*, user: User, submission_id: Any, finding_id: Any, answer: str) -> ScanFinding:
    """The owner's answer to a scanner finding on their run (an appeal), until a maintainer decides on it.
    Answering again replaces the answer."""
    submission = _owned(user, submission_id)
    if submission.status in (Submission.Status.DRAFT, *Submission.ENDED_DRAFT_STATUSES):
        raise Conflict("Confirm the run first: findings are answered on confirmed runs.", code="finding_draft")
    text = clean_text((answer or "").strip(), ANSWER_MAX_CHARS + 1)
    if not text:
        raise ValidationFailed("Write your answer to the finding.", code="answer_required")
    if len(text) > ANSWER_MAX_CHARS:
        raise ValidationFailed(f"An answer holds at most {ANSWER_MAX_CHARS} characters.", code="answer_long")
    with transaction.atomic():
        finding = ScanFinding.objects.select_for_update().filter(id=finding_id, submission=submission).first()
        if finding is None:
            raise NotFound("No such finding.")
        if finding.decision:
            raise Conflict("A maintainer has decided on this finding; it can no longer be answered.",
                           code="finding_decided")
        finding.answer, finding.answered_at = text, timezone.now()
        finding.save(update_fields=["answer", "answered_at"])
    return finding
