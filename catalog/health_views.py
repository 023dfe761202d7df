"""A task's health on its page: the last check for everyone; for maintainers every check's details, the
errata, "Check now", and confirming or dismissing an erratum (scoring.health, leaderboard.errata)."""

from __future__ import annotations

from typing import Any, cast

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from leaderboard import errata
from leaderboard.regrade import regrade_entries
from portal.accounts.models import User
from portal.accounts.selectors import user_is_maintainer
from portal.errors import PortalError
from portal.pages import action_confirmed, confirm_first_page, maintainer_only
from scoring.health import PROBE_NAMES
from scoring.health_requests import task_health_check_request
from scoring.health_selectors import task_health_history, task_health_public, task_health_state
from scoring.models import Erratum, Task


def task_health_context(request: HttpRequest, task: Task) -> dict[str, Any]:
    """What the task page shows of its health; the private part only to maintainers."""
    context: dict[str, Any] = {"health": task_health_public(task), "health_state": task_health_state(task),
                               "errata_public": list(errata.errata_public(task)), "is_maintainer": False}
    if user_is_maintainer(request.user):
        context.update(is_maintainer=True, health_history=list(task_health_history(task)[:50]),
                       errata_all=list(errata.errata_all(task)), probe_names=PROBE_NAMES,
                       regrades=regrade_entries(task))
    return context


@require_POST
@maintainer_only
def task_health_check_now(request: HttpRequest, task_id: str) -> HttpResponse:
    problem = task_health_check_request(task_id=task_id, requested_by_id=request.user.pk)
    if problem:
        messages.error(request, problem)
    else:
        messages.success(request, "Health check queued; it runs the task's solutions in the sandbox on both "
                                  "datasets and takes a while.")
    return redirect(reverse("task-detail", args=[task_id]) + "#health")


@maintainer_only
def erratum_confirm(request: HttpRequest, task_id: str, erratum_id: int) -> HttpResponse:
    back = reverse("task-detail", args=[task_id]) + "#errata"
    if not action_confirmed(request):
        return confirm_first_page(
            request, title="Confirm the erratum", question=f"Confirm this erratum of {task_id}?",
            consequence="It becomes public on the task page and in the moderation log; this cannot be undone.",
            action_label="Confirm the erratum", cancel_url=back)
    return _act(request, back, lambda: errata.erratum_confirm(erratum_id=_of(task_id, erratum_id),
                                                             actor=_user(request)), "Erratum confirmed: it is public.")


@require_POST
@maintainer_only
def erratum_dismiss(request: HttpRequest, task_id: str, erratum_id: int) -> HttpResponse:
    back = reverse("task-detail", args=[task_id]) + "#errata"
    return _act(request, back, lambda: errata.erratum_dismiss(erratum_id=_of(task_id, erratum_id),
                                                             actor=_user(request)), "Erratum dismissed.")


def _user(request: HttpRequest) -> User:
    return cast(User, request.user)  # maintainer_only let only a signed-in maintainer through


def _of(task_id: str, erratum_id: int) -> int:
    """The erratum's id if it belongs to this task (else an id that matches none: NotFound)."""
    return erratum_id if Erratum.objects.filter(id=erratum_id, task_id=task_id).exists() else -1


def _act(request: HttpRequest, back: str, action: Any, done: str) -> HttpResponse:
    try:
        action()
    except PortalError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, done)
    return redirect(back)
