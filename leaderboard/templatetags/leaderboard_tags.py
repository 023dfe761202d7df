from typing import Any

from django import template
from django.contrib.auth.models import AnonymousUser

from leaderboard import selectors
from leaderboard.models import LeaderboardEntry, RunReview
from portal.accounts.selectors import user_is_maintainer

register = template.Library()


@register.inclusion_tag("leaderboard/_run_review.html", takes_context=True)
def run_review_panel(context: dict[str, Any], run: Any) -> dict[str, Any]:
    """Review state, rejection reason and audit log on the run page; flags for maintainers only.

    The owner sees who acted by role ("maintainer"), never a maintainer's name or e-mail address.
    """
    request = context.get("request")
    maintainer = user_is_maintainer(getattr(request, "user", None) or AnonymousUser())
    return {
        "run": run,
        "review": RunReview.objects.filter(submission=run).first(),
        "entry": LeaderboardEntry.objects.filter(submission=run).only("id", "display_name").first(),
        "actions": selectors.audit_log(run),
        "flags": selectors.flag_summary(run) if maintainer else [],
        "is_maintainer": maintainer,
    }


@register.filter
def pick(values: list[Any] | dict[str, Any] | None, key: Any) -> Any:
    if values is None:
        return None
    try:
        return values[key]
    except (KeyError, IndexError, TypeError):
        return None
