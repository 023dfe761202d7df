"""Errata: a task a health check found broken (scoring.health), from the failing check to the fix.

A failing check opens an erratum for its task, private (maintainers only) until a maintainer confirms
it; confirmed, it is public on the task page and in the moderation log. A newer revision of the task
published through the proposals' review path resolves it (`errata_resolve_for_task`, called by the
re-grade that publication starts: leaderboard.regrade). One active erratum per task at most (a
constraint), so checks of both datasets, or a second weekly failure, add to nothing twice.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from leaderboard.models import ModerationEvent
from leaderboard.selectors import board_cache_invalidate
from portal.accounts.models import User
from portal.errors import Conflict, NotFound
from scoring.models import Erratum, Task, TaskHealthCheck


def erratum_open_for_check(check_id: int) -> Erratum | None:
    """The task's active erratum, opened by this failing check if there was none. Idempotent."""
    check = TaskHealthCheck.objects.select_related("task").filter(id=check_id).first()
    if check is None or check.outcome != TaskHealthCheck.Outcome.FAILING:
        return None
    active = Erratum.objects.filter(task=check.task, status__in=Erratum.ACTIVE).first()
    if active is not None:
        return active
    summary = f"Revision {check.task_revision}, {check.dataset_id or 'every dataset'}: {check.reason}"
    try:
        with transaction.atomic():
            return Erratum.objects.create(task=check.task, task_revision=check.task_revision, opened_by=check,
                                          summary=summary)
    except IntegrityError:  # the other dataset's check opened it first
        return Erratum.objects.get(task=check.task, status__in=Erratum.ACTIVE)


def _task_event(task: Task, kind: str, reason: str) -> None:
    ModerationEvent.objects.create(submission=None, dataset=None, task_id=task.id, kind=kind, reason=reason,
                                   display_name=task.id)
    transaction.on_commit(board_cache_invalidate)


def erratum_confirm(*, erratum_id: int, actor: User) -> Erratum:
    """Make an open erratum public (task page, moderation log). Confirming twice is confirming once."""
    with transaction.atomic():
        erratum = Erratum.objects.select_for_update().select_related("task").filter(id=erratum_id).first()
        if erratum is None:
            raise NotFound("No such erratum.")
        if erratum.status == Erratum.Status.CONFIRMED:
            return erratum
        if erratum.status != Erratum.Status.OPEN:
            raise Conflict(f"This erratum is {erratum.status}; only an open one can be confirmed.",
                           code="erratum_closed")
        erratum.status, erratum.confirmed_by, erratum.confirmed_at = Erratum.Status.CONFIRMED, actor, timezone.now()
        erratum.save(update_fields=["status", "confirmed_by", "confirmed_at"])
        _task_event(erratum.task, ModerationEvent.Kind.ERRATUM, erratum.summary)
    return erratum


def erratum_dismiss(*, erratum_id: int, actor: User) -> Erratum:
    """Close an open erratum as a false alarm (a check that failed for a reason that is not the task's).
    It never was public, and stays private."""
    with transaction.atomic():
        erratum = Erratum.objects.select_for_update().filter(id=erratum_id).first()
        if erratum is None:
            raise NotFound("No such erratum.")
        if erratum.status == Erratum.Status.DISMISSED:
            return erratum
        if erratum.status != Erratum.Status.OPEN:
            raise Conflict("A confirmed erratum is closed by publishing a fixed revision of the task.",
                           code="erratum_confirmed")
        erratum.status = Erratum.Status.DISMISSED
        erratum.save(update_fields=["status"])
    return erratum


def errata_resolve_for_task(*, task: Task) -> list[Erratum]:
    """Resolve the task's active errata of revisions older than its current one, with one public
    moderation-log event of the new revision (quoting only confirmed errata: an unconfirmed one stays private)."""
    resolved = []
    with transaction.atomic():
        for erratum in Erratum.objects.select_for_update().filter(task=task, status__in=Erratum.ACTIVE,
                                                                  task_revision__lt=task.revision):
            erratum.status, erratum.resolved_revision = Erratum.Status.RESOLVED, task.revision
            erratum.resolved_at = timezone.now()
            erratum.save(update_fields=["status", "resolved_revision", "resolved_at"])
            resolved.append(erratum)
        if resolved:
            confirmed = [e for e in resolved if e.confirmed_at is not None]
            _task_event(task, ModerationEvent.Kind.TASK_REVISION,
                        f"Revision {task.revision} fixes revision {', '.join(str(e.task_revision) for e in resolved)}"
                        + (f": {confirmed[0].summary}" if confirmed else "."))
    return resolved


def errata_public(task: Task) -> QuerySet[Erratum]:
    """What everyone sees of a task's errata: the confirmed ones, resolved or not."""
    return Erratum.objects.filter(task=task, confirmed_at__isnull=False,
                                  status__in=[Erratum.Status.CONFIRMED, Erratum.Status.RESOLVED])


def errata_all(task: Task) -> QuerySet[Erratum]:
    """Every erratum of the task, open and dismissed ones included (maintainers only)."""
    return Erratum.objects.filter(task=task).select_related("opened_by")
