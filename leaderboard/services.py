"""Maintainers' decisions on scored runs: publish, unpublish, reject, rescore, findings, bulk review, trust labels.
Integrity flags are `leaderboard/integrity_flags.py`'s, the owner's e-mails `leaderboard/owner_mail.py`'s.

Every decision locks the run's row (select_for_update), checks the state it expects, writes
the decision and its audit-log row in one transaction, and only after commit invalidates the
board cache and e-mails the owner.
"""

from collections import Counter, defaultdict
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from contracts.agent_label import shown_label
from leaderboard.costs import public_usage
from leaderboard.figures import COLUMNS, figures
from leaderboard.models import (
    TRUST_MEANINGS,
    LeaderboardEntry,
    ModerationEvent,
    ReviewAction,
    RunReview,
    TrustLabel,
)
from leaderboard.owner_mail import owner_notify
from leaderboard.selectors import board_cache_invalidate
from leaderboard.spot_validation import spot_validation_passed
from portal.accounts.models import User
from portal.accounts.selectors import user_is_maintainer
from portal.errors import Conflict, NotFound, PermissionDenied, PortalError, ValidationFailed
from portal.submissions.models import ScanFinding, Submission, SubmissionEntry
from portal.submissions.outcomes import coverage_line
from portal.submissions.reaper import submission_requeue
from portal.submissions.scan_model import DETECTOR as MODEL_DETECTOR
from portal.submissions.scan_tasks import scan_enqueue_on_commit
from portal.submissions.scanners import CATEGORIES
from portal.submissions.selectors import configuration_of, inputs_mismatched, scoring_coverage
from portal.submissions.services import submission_rescore
from portal.submissions.tools import declared_tools as tools_declared
from scoring.models import Dataset, InstanceScore, ScoringRun
from scoring.selectors import scoring_run_latest

MAX_NAME = 120
_SEP = " · "


def suggested_display_name(submission: Submission) -> str:
    """"agent · model · effort", always publishable as it stands: when too long, the agent label
    gives way first (model and effort tell runs of one agent apart), then the whole name."""
    agent = shown_label(submission.agent or "")
    rest = [x for x in (submission.model, submission.effort) if x]
    name = _SEP.join(x for x in (agent, *rest) if x)
    if len(name) <= MAX_NAME:
        return name
    room = MAX_NAME - len(_SEP.join(["", *rest])) if agent else 0
    if agent and room >= 12:
        return _SEP.join([agent[: room - 1].rstrip() + "…", *rest])
    return name[: MAX_NAME - 1].rstrip() + "…"


def _require_maintainer(actor: User) -> None:
    if not user_is_maintainer(actor):
        raise PermissionDenied("Only maintainers can review runs.")


def _locked(submission_id: Any) -> Submission:
    submission = Submission.objects.select_for_update().filter(id=submission_id).first()
    if submission is None:
        raise NotFound("No such run.")
    return submission


def _log(submission: Submission, actor: User, kind: str, *, reason: str = "", display_name: str = "",
         scoring: ScoringRun | None = None) -> ReviewAction:
    return ReviewAction.objects.create(submission=submission, actor=actor, kind=kind, reason=reason,
                                       display_name=display_name, scoring_number=scoring.number if scoring else None)


def _decide(submission: Submission, actor: User, state: str, **fields: Any) -> RunReview:
    review, _ = RunReview.objects.update_or_create(
        submission=submission, defaults={"state": state, "decided_by": actor, "decided_at": timezone.now(), **fields}
    )
    return review


def _moderation(submission: Submission, kind: str, reason: str, display_name: str, *,
                before: float | None = None, after: float | None = None) -> None:
    """One public moderation-log row (the maintainer is not named there)."""
    ModerationEvent.objects.create(submission=submission, dataset_id=submission.dataset_id, kind=kind,
                                   reason=reason, display_name=display_name, mean_before=before, mean_after=after)
    # The board's JSON export carries the log: a rejection after publication changes no row, but shows there.
    transaction.on_commit(board_cache_invalidate)


DEFAULT_PUBLISH_REASON = "Published after review."
DEFAULT_RESCORE_REASON = "Rescored; the board shows the new scoring."


# --- publish / unpublish -----------------------------------------------------------------------

def entry_snapshot(submission: Submission, scoring: ScoringRun) -> dict[str, Any]:
    """The public figures and provenance summary of one scoring; nothing private goes in."""
    aggregate = scoring.aggregate or {}
    tasks = aggregate.get("tasks") or {}
    figs = figures(tasks)
    return {
        **{column: figs[column] for column in COLUMNS},
        "intervals": figs["intervals"],
        "instances_scored": int(aggregate.get("results_counted") or figs["instances_scored"]),
        "task_count": figs["task_count"],
        "tasks": tasks,
        "domains": aggregate.get("domains") or {},
        "provenance": provenance_summary(submission, scoring),
        "usage": public_usage(submission.usage or {}, SubmissionEntry.objects.filter(submission=submission)
                              .values_list("task_id", "usage")),
        "coverage": (cov := scoring_coverage(scoring)), "complete": bool(cov.get("complete")),
        "scored_at": scoring.finished_at or submission.scored_at,
    }


def provenance_summary(submission: Submission, scoring: ScoringRun) -> dict[str, Any]:
    modes: Counter[str] = Counter()
    enforcement: set[str] = set()
    verification: set[str] = set()
    images: set[str] = set()
    for provenance in SubmissionEntry.objects.filter(submission=submission).values_list("provenance", flat=True):
        sandbox = (provenance or {}).get("sandbox") or {}
        modes[str(sandbox.get("effective_mode") or "unknown")] += 1
        for bucket, key in ((enforcement, "enforcement_status"), (verification, "verification_status"),
                            (images, "image_identity")):
            if sandbox.get(key):
                bucket.add(str(sandbox[key]))
    scored = (InstanceScore.objects.filter(scoring_run=scoring)
              .values_list("engine_version", "sandbox_backend", "entry__task_id", "task_revision").distinct())
    engines, backends, revisions = set(), set(), {}
    for engine, backend, task_id, revision in scored:
        engines.add(engine)
        backends.add(backend)
        revisions[task_id] = revision
    return {
        "agent": submission.agent, "model": submission.model, "effort": submission.effort,
        "sandbox": submission.sandbox, "client": submission.framework_version,
        "bundle_created_at": submission.bundle_created_at, "dataset": submission.dataset_id,
        "sandbox_modes": dict(sorted(modes.items())), "enforcement": sorted(enforcement),
        "verification": sorted(verification), "images": sorted(images)[:10],
        "scoring_number": scoring.number, "engine_versions": sorted(engines),
        "scoring_sandboxes": sorted(backends), "task_revisions": dict(sorted(revisions.items())),
        "incomplete_results": len(submission.incomplete_instances or []),
        "tools": tools_declared(SubmissionEntry.objects.filter(submission=submission)
                                .values_list("provenance", flat=True)),
        "bundle_integrity_ok": submission.integrity_ok,
        **judged_summary(scoring),
        "scan": scan_summary_public(submission),
    }


def scan_summary_public(submission: Submission) -> dict[str, Any]:
    """What the public sees of a run's misconduct scan: per category, how many findings stand (the
    maintainers did not dismiss them), with the scanners' version. Never an excerpt, never an answer. A model's
    findings (scan_model) count only once a maintainer upheld them: a model's word alone is not published."""
    record = submission.scan or {}
    if record.get("state") != "done":
        return {"state": "not_scanned", "version": ""}
    findings = ScanFinding.objects.filter(submission=submission).exclude(
        Q(detector=MODEL_DETECTOR) & ~Q(decision=ScanFinding.Decision.UPHELD))
    standing = dict(findings.exclude(decision=ScanFinding.Decision.DISMISSED).order_by().values_list("category")
                    .annotate(n=Count("id")))
    return {"state": "done", "version": str(record.get("version") or ""), "results": int(record.get("results") or 0),
            "categories": {category: standing[category] for category in CATEGORIES if standing.get(category)},
            "total": sum(standing.values()),
            "dismissed": findings.filter(decision=ScanFinding.Decision.DISMISSED).count()}


def judged_summary(scoring: ScoringRun) -> dict[str, Any]:
    """How many results of the scoring rest on model judges, and which models: the board marks them."""
    judged = InstanceScore.objects.filter(scoring_run=scoring, result__judged=True)
    models = sorted({str(c.get("resolved_model") or c.get("model"))
                     for calls in judged.values_list("result__judge_calls", flat=True) for c in calls or []
                     if isinstance(c, dict)})
    return {"judge_scored_results": judged.count(), "judge_models": models[:10]}


def _refresh_current(configuration: dict[str, Any]) -> None:
    """Exactly one row per configuration (`configuration_of`, the owner included) is current: its newest
    published run. Another owner's run with the same labels is another configuration."""
    same = LeaderboardEntry.objects.filter(**configuration)
    newest = same.order_by("-published_at", "-id").values_list("id", flat=True).first()
    if newest is None:
        return  # no published run of this configuration is left
    same.exclude(id=newest).filter(is_current=True).update(is_current=False)
    same.filter(id=newest, is_current=False).update(is_current=True)


def run_review_publish(*, submission_id: Any, actor: User, display_name: str, public_reason: str = "",
                   override_inputs_mismatch: bool = False, override_incomplete: bool = False) -> LeaderboardEntry:
    """Publish the run's latest complete scoring under `display_name`. Repeating it changes nothing.

    A run whose results were made from other inputs than ours is published only with
    `override_inputs_mismatch`, and the override is written to the audit log. An incomplete run (not every
    task and level of the official set scored validly) is published only with `override_incomplete` and a
    `public_reason`: it is listed apart from the ranked rows, and the moderation log says why it is there.
    The moderation log gets a public row: a rescore when a published run's score changes, else a publish;
    `public_reason` (or a default) says why. A new entry is `repo-verified` when a maintainer made the run,
    else `community`; a republished one keeps its label."""
    _require_maintainer(actor)
    name = " ".join((display_name or "").split())
    if not name:
        raise ValidationFailed("A display name is required to publish.", code="display_name_required")
    if len(name) > MAX_NAME:
        raise ValidationFailed(f"The display name is longer than {MAX_NAME} characters.", code="display_name_long")
    with transaction.atomic():
        # Serialise publishes per dataset so "one current row per configuration" cannot race.
        submission = _locked(submission_id)
        Dataset.objects.select_for_update().filter(name=submission.dataset_id).first()
        scoring = scoring_run_latest(submission.id)
        if submission.status != Submission.Status.SCORED or scoring is None or \
                scoring.status != ScoringRun.Status.COMPLETE:
            raise Conflict(f"Only scored runs can be published; this run is {submission.status}.",
                           code="not_scored")
        mismatched = inputs_mismatched(submission.report or {})
        if mismatched and not override_inputs_mismatch:
            raise Conflict(f"{len(mismatched)} instance(s) of this run were made from inputs other than the ones "
                           f"this Portal generated (e.g. {', '.join(mismatched[:3])}); publishing it needs the "
                           "explicit inputs-mismatch override.", code="inputs_mismatch")
        why = " ".join((public_reason or "").split())
        cov = scoring_coverage(scoring)
        if not cov.get("complete"):
            if not override_incomplete:
                raise Conflict(f"This run is incomplete: {coverage_line(cov)}. Publishing it needs the explicit "
                               "incomplete-run override and a public reason; it would be listed apart, unranked.",
                               code="incomplete")
            if not why:
                raise ValidationFailed("Publishing an incomplete run needs a public reason; the moderation log "
                                       "shows it.", code="reason_required")
        existing = LeaderboardEntry.objects.filter(submission=submission).first()
        if existing and existing.scoring_run_id == scoring.id and existing.display_name == name:
            return existing  # pressed twice: same result as once, one audit row
        before = existing.mean if existing else None
        scores_before = [getattr(existing, column) for column in COLUMNS] if existing else None
        trust = existing.trust if existing else (
            TrustLabel.REPO_VERIFIED if user_is_maintainer(submission.owner) else TrustLabel.COMMUNITY)
        row = {"scoring_run": scoring, "dataset_id": submission.dataset_id, "display_name": name, "trust": trust,
               "owner_id": submission.owner_id, "agent": submission.agent, "model": submission.model,
               "effort": submission.effort, "sandbox": submission.sandbox, "published_at": timezone.now(),
               **entry_snapshot(submission, scoring)}
        # A new row is not current until _refresh_current retires its configuration's previous one:
        # one current row per configuration is a database constraint.
        entry, _ = LeaderboardEntry.objects.update_or_create(
            submission=submission, defaults=row, create_defaults={**row, "is_current": False})
        _refresh_current(configuration_of(submission))
        _decide(submission, actor, RunReview.State.PUBLISHED, display_name=name, reason="")
        overrides = ([f"published despite mismatched inputs ({', '.join(mismatched[:5])})"] if mismatched else []) + (
            [f"published incomplete ({coverage_line(cov)})"] if not cov.get("complete") else [])
        _log(submission, actor, ReviewAction.Kind.PUBLISH, display_name=name, scoring=scoring,
             reason="; ".join(overrides))
        if not cov.get("complete"):
            why = f"Published incomplete, unranked ({coverage_line(cov)}): {why}"
        if scores_before is not None and scores_before != [getattr(entry, column) for column in COLUMNS]:
            _moderation(submission, ModerationEvent.Kind.RESCORE, why or DEFAULT_RESCORE_REASON, name,
                        before=before, after=entry.mean)
        else:
            _moderation(submission, ModerationEvent.Kind.PUBLISH, why or DEFAULT_PUBLISH_REASON, name,
                        before=before, after=entry.mean)
        transaction.on_commit(board_cache_invalidate)
        transaction.on_commit(lambda: owner_notify(submission_id=submission.id, kind="published"))
    entry.refresh_from_db()
    return entry


def run_review_unpublish(*, submission_id: Any, actor: User, reason: str) -> RunReview:
    _require_maintainer(actor)
    why = (reason or "").strip()
    if not why:
        raise ValidationFailed("Say why the run is unpublished; the reason goes into the audit log.",
                               code="reason_required")
    with transaction.atomic():
        submission = _locked(submission_id)
        Dataset.objects.select_for_update().filter(name=submission.dataset_id).first()
        entry = LeaderboardEntry.objects.filter(submission=submission).first()
        if entry is None:
            raise Conflict("This run is not published.", code="not_published")
        configuration = configuration_of(entry)
        number = entry.scoring_run.number
        _moderation(submission, ModerationEvent.Kind.UNPUBLISH, why, entry.display_name, before=entry.mean)
        entry.delete()
        _refresh_current(configuration)
        review = _decide(submission, actor, RunReview.State.UNPUBLISHED, reason=why)
        ReviewAction.objects.create(submission=submission, actor=actor, kind=ReviewAction.Kind.UNPUBLISH,
                                    reason=why, scoring_number=number)
        transaction.on_commit(board_cache_invalidate)
    return review


# --- reject / rescore --------------------------------------------------------------------------

def run_review_reject(*, submission_id: Any, actor: User, reason: str) -> RunReview:
    """Reject with a reason the owner reads on the run page and in an e-mail."""
    _require_maintainer(actor)
    why = (reason or "").strip()
    if not why:
        raise ValidationFailed("A rejection needs a reason; the owner will read it.", code="reason_required")
    with transaction.atomic():
        submission = _locked(submission_id)
        if LeaderboardEntry.objects.filter(submission=submission).exists():
            raise Conflict("This run is published; unpublish it before rejecting it.", code="published")
        if submission.status not in (Submission.Status.SCORED, Submission.Status.FAILED):
            raise Conflict(f"Only scored or failed runs can be rejected; this run is {submission.status}.",
                           code="not_scored")
        current = RunReview.objects.filter(submission=submission).first()
        if current and current.state == RunReview.State.REJECTED and current.reason == why:
            return current
        review = _decide(submission, actor, RunReview.State.REJECTED, reason=why)
        _log(submission, actor, ReviewAction.Kind.REJECT, reason=why, scoring=scoring_run_latest(submission.id))
        published = (ModerationEvent.objects.filter(submission=submission).exclude(display_name="")
                     .order_by("-created_at", "-id").first())
        if published is not None:  # once on the board: the public learns why it will not return
            _moderation(submission, ModerationEvent.Kind.REJECT, why, published.display_name)
        transaction.on_commit(lambda: owner_notify(submission_id=submission.id, kind="rejected"))
    return review


def run_review_rescore(*, submission_id: Any, actor: User, reason: str = "", rejudge: bool = False) -> Submission:
    """Queue a new scoring; earlier scorings stay. A published run keeps its board row until republished.
    Judge scorers replay the replies recorded earlier unless `rejudge` asks the models again.

    A run stuck in scoring is re-queued: its open scoring is closed as failed with the reason. (A queued
    run's lost message is sent again by the reaper.)
    """
    _require_maintainer(actor)
    with transaction.atomic():
        submission = _locked(submission_id)
        if submission.status == Submission.Status.SCORING:
            # A run that does not move: close its open scoring with the reason and queue it again.
            why = (reason or "").strip() or "no progress"
            submission = submission_requeue(submission_id=submission.id, requested_by=actor,
                                            reason=f"re-queued by a maintainer ({why})")
        elif submission.status not in (Submission.Status.SCORED, Submission.Status.FAILED):
            raise Conflict(f"Only scored, failed or scoring runs can be rescored; this run is {submission.status}.",
                           code="not_scored")
        else:
            submission = submission_rescore(submission_id=str(submission.id), requested_by=actor, rejudge=rejudge)
        if not LeaderboardEntry.objects.filter(submission=submission).exists():
            _decide(submission, actor, RunReview.State.RESCORING, reason="")
        _log(submission, actor, ReviewAction.Kind.RESCORE, reason=(reason or "").strip(),
             scoring=scoring_run_latest(submission.id))
    return submission


# --- scanner findings ---------------------------------------------------------------------------

def finding_decide(*, submission_id: Any, finding_id: Any, actor: User, decision: str, reason: str) -> ScanFinding:
    """A maintainer upholds or dismisses a scanner finding (usually one its owner answered). The reason is public:
    the decision is a moderation-log event naming the finding's category, never its excerpt or the answer. A
    published run's public counts follow at once."""
    _require_maintainer(actor)
    if decision not in ScanFinding.Decision.values:
        raise ValidationFailed("Uphold or dismiss the finding.", code="bad_decision")
    why = " ".join((reason or "").split())
    if not why:
        raise ValidationFailed("Say why; the reason is public in the moderation log.", code="reason_required")
    with transaction.atomic():
        submission = _locked(submission_id)
        finding = (ScanFinding.objects.select_for_update().select_related("entry")
                   .filter(id=finding_id, submission=submission).first())
        if finding is None:
            raise NotFound("No such finding.")
        if finding.decision == decision and finding.decision_reason == why:
            return finding  # pressed twice
        finding.decision, finding.decision_reason = decision, why
        finding.decided_by, finding.decided_at = actor, timezone.now()
        finding.save(update_fields=["decision", "decision_reason", "decided_by", "decided_at"])
        ReviewAction.objects.create(
            submission=submission, actor=actor, kind=ReviewAction.Kind.FINDING,
            reason=f"{finding.detector} finding on {finding.entry.base_name}: {decision}. {why}")
        entry = LeaderboardEntry.objects.filter(submission=submission).first()
        published = entry.display_name if entry else (
            ModerationEvent.objects.filter(submission=submission).exclude(display_name="")
            .order_by("-created_at", "-id").values_list("display_name", flat=True).first() or "")
        after = " after the owner's answer" if finding.answer else ""
        _moderation(submission, ModerationEvent.Kind.FINDING,
                    f"A finding of {CATEGORIES.get(finding.category, finding.category)} was {decision}{after}: {why}",
                    published)
        if entry is not None:
            entry.provenance = {**(entry.provenance or {}), "scan": scan_summary_public(submission)}
            entry.save(update_fields=["provenance"])
    return finding


def scan_published_refresh(submission_id: Any) -> None:
    """Scan completion hook: a published run's public counts follow a new scan of it."""
    entry = LeaderboardEntry.objects.filter(submission_id=submission_id).select_related("submission").first()
    if entry is not None:
        entry.provenance = {**(entry.provenance or {}), "scan": scan_summary_public(entry.submission)}
        entry.save(update_fields=["provenance"])
        transaction.on_commit(board_cache_invalidate)


def run_review_rescan(*, submission_id: Any, actor: User) -> Submission:
    """Scan the run again (after the scanners changed); findings answered or decided stay."""
    _require_maintainer(actor)
    submission = Submission.objects.filter(id=submission_id).first()
    if submission is None:
        raise NotFound("No such run.")
    if submission.status in Submission.ENDED_DRAFT_STATUSES:
        raise Conflict(f"This draft was {submission.status}; its bundle is gone.", code="bundle_gone")
    with transaction.atomic():
        scan_enqueue_on_commit(submission_id=submission.id)
    return submission


def runs_with_findings(submission_ids: list[Any]) -> dict[str, list[tuple[str, int]]]:
    """Of these runs, those with findings that stand, and how many of each severity."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for submission_id, severity, n in (ScanFinding.objects.filter(submission_id__in=submission_ids)
                                       .exclude(decision=ScanFinding.Decision.DISMISSED).order_by()
                                       .values_list("submission_id", "severity").annotate(n=Count("id"))):
        counts[str(submission_id)][severity] += n
    return {run: [(severity, c[severity]) for severity in ("high", "medium", "low", "info") if c.get(severity)]
            for run, c in counts.items()}


# --- bulk review ------------------------------------------------------------------------------

BULK_ACTIONS = ("publish", "reject", "rescore")
MAX_BULK = 100


def runs_incomplete(submission_ids: list[Any]) -> dict[str, str]:
    """Of these runs, those whose latest complete scoring is incomplete: {id: coverage line}."""
    latest: dict[Any, ScoringRun] = {}
    for scoring in (ScoringRun.objects.filter(submission_id__in=submission_ids, status=ScoringRun.Status.COMPLETE)
                    .select_related("submission").order_by("number")):
        latest[scoring.submission_id] = scoring
    found = {}
    for submission_id, scoring in latest.items():
        cov = scoring_coverage(scoring)
        if not cov.get("complete"):
            found[str(submission_id)] = coverage_line(cov)
    return found


def run_review_bulk(*, submission_ids: list[Any], actor: User, action: str, reason: str = "",
                    override_incomplete: bool = False) -> dict[str, Any]:
    """Apply one action to several runs, each through its own service call (its own transaction, audit
    row and e-mail), so one refused run does not stop the others. Publish uses each run's suggested name
    (or the name it was published under before); reject needs the one reason, given to every owner;
    `reason` is the public reason of a publish and the note of a rescore.

    A publish that selects incomplete runs publishes nothing unless `override_incomplete` (with `reason`, the
    public reason they are listed apart): the answer names them first.

    Returns {"done": [ids], "refused": [(id, message, reason code)], "findings": {id: [(severity, n)]} of the
    selected runs that carry scanner findings, "incomplete": {id: coverage line} of the selected runs that are
    incomplete}."""
    _require_maintainer(actor)
    if action not in BULK_ACTIONS:
        raise ValidationFailed(f"Unknown bulk action {action!r}; use {', '.join(BULK_ACTIONS)}.", code="bad_action")
    ids = list(dict.fromkeys(str(i) for i in submission_ids))
    if not ids:
        raise ValidationFailed("Select at least one run.", code="nothing_selected")
    if len(ids) > MAX_BULK:
        raise ValidationFailed(f"Select at most {MAX_BULK} runs at once.", code="too_many")
    if action == "reject" and not (reason or "").strip():
        raise ValidationFailed("A rejection needs a reason; every owner will read it.", code="reason_required")
    incomplete = runs_incomplete(ids)
    if action == "publish" and incomplete:
        if not override_incomplete:
            raise Conflict(f"{len(incomplete)} of the {len(ids)} selected runs are incomplete, so nothing was "
                           "published: " + "; ".join(f"{run[:8]} ({line})" for run, line in sorted(incomplete.items()))
                           + ". Publish the complete ones alone, or tick the incomplete-run override and give a "
                           "public reason.", code="incomplete")
        if not (reason or "").strip():
            raise ValidationFailed("Publishing incomplete runs needs a public reason; the moderation log shows it.",
                                   code="reason_required")
    done: list[str] = []
    refused: list[tuple[str, str, str | None]] = []
    for submission_id in ids:
        try:
            if action == "publish":
                run = Submission.objects.filter(id=submission_id).select_related("review").first()
                if run is None:
                    raise NotFound("No such run.")
                earlier = getattr(run, "review", None)
                name = (earlier.display_name if earlier and earlier.display_name else suggested_display_name(run))
                run_review_publish(submission_id=submission_id, actor=actor, display_name=name, public_reason=reason,
                                   override_incomplete=override_incomplete)
            elif action == "reject":
                run_review_reject(submission_id=submission_id, actor=actor, reason=reason)
            else:
                run_review_rescore(submission_id=submission_id, actor=actor, reason=reason)
        except (PortalError, DjangoValidationError) as exc:
            refused.append((submission_id, getattr(exc, "detail", None) or str(exc), getattr(exc, "code", None)))
        else:
            done.append(submission_id)
    return {"done": done, "refused": refused, "findings": runs_with_findings(ids), "incomplete": incomplete}


# --- trust labels -----------------------------------------------------------------------------

def entry_trust_set(*, submission_id: Any, actor: User, label: str, reason: str) -> LeaderboardEntry:
    """Set a published run's trust label (leaderboard.models.TrustLabel); a public moderation-log event with the
    reason. `official` needs a passed spot validation of the run (leaderboard.spot_validation). Setting the label
    it has changes nothing."""
    _require_maintainer(actor)
    if label not in TrustLabel.values:
        raise ValidationFailed(f"Unknown trust label {label[:30]!r}; use {', '.join(TrustLabel.values)}.",
                               code="unknown_trust")
    why = " ".join((reason or "").split())
    if not why:
        raise ValidationFailed("Say why the label changes; the reason is public in the moderation log.",
                               code="reason_required")
    with transaction.atomic():
        submission = _locked(submission_id)
        entry = LeaderboardEntry.objects.select_for_update().filter(submission=submission).first()
        if entry is None:
            raise Conflict("This run is not published; only published runs carry a trust label.", code="not_published")
        if entry.trust == label:
            return entry
        if label == TrustLabel.OFFICIAL and not spot_validation_passed(submission):
            raise Conflict("`official` needs a passed spot validation of this run; draw one from the review page.",
                           code="no_spot_validation")
        before = entry.trust
        entry.trust = label
        entry.save(update_fields=["trust"])
        ReviewAction.objects.create(submission=submission, actor=actor, kind=ReviewAction.Kind.TRUST,
                                    display_name=entry.display_name, reason=f"{before} → {label}: {why}")
        _moderation(submission, ModerationEvent.Kind.TRUST, f"Trust label {before} → {label} "
                    f"({TRUST_MEANINGS[TrustLabel(label)]}): {why}", entry.display_name)
    return entry


