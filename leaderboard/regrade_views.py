"""A maintainer acknowledges an entry's re-grade (leaderboard.regrade): the board stops showing the change."""

from typing import cast

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from leaderboard.regrade import regrade_acknowledge
from portal.accounts.models import User
from portal.errors import PortalError
from portal.pages import maintainer_only


@require_POST
@maintainer_only
def regrade_acknowledge_view(request: HttpRequest, entry_id: int) -> HttpResponse:
    try:
        regrade_acknowledge(entry_id=entry_id, actor=cast(User, request.user))
    except PortalError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, "Re-grade acknowledged; the board no longer marks it.")
    back = str(request.POST.get("next") or "")
    return redirect(back if back.startswith("/tasks/") else "leaderboard")  # never off-site
