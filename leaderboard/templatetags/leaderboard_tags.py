from typing import Any

from django import template
from django.conf import settings
from django.contrib.auth.models import AnonymousUser

from leaderboard import selectors
from leaderboard.models import TRUST_MEANINGS, RunReview
from leaderboard.spot_validation import spot_validations_of
from portal.accounts.selectors import user_is_maintainer

register = template.Library()


@register.inclusion_tag("leaderboard/_run_review.html", takes_context=True)
def run_review_panel(context: dict[str, Any], run: Any) -> dict[str, Any]:
    """Audit log on the run page, flags for maintainers only (the state itself: `run_review_state`).

    The owner sees who acted by role ("maintainer"), never a maintainer's name or e-mail address.
    """
    request = context.get("request")
    maintainer = user_is_maintainer(getattr(request, "user", None) or AnonymousUser())
    return {
        "run": run,
        "review": RunReview.objects.filter(submission=run).first(),
        "actions": selectors.audit_log(run),
        "flags": selectors.flag_summary(run) if maintainer else [],
        "is_maintainer": maintainer,
        "spot_validations": spot_validations_of(run), "spot_tolerance": settings.SPOT_VALIDATION_TOLERANCE,
    }


@register.inclusion_tag("leaderboard/_review_state.html")
def run_review_state(run: Any) -> dict[str, Any]:
    """The run's review state line (waiting for review, published, rejected with the reason) on the run page."""
    return {"review": selectors.owner_review_states([run]).get(run.id)}


@register.simple_tag
def owner_review_states(rows: list[Any]) -> dict[Any, selectors.OwnerReviewState]:
    """Review states by run id for the dashboard's rows, each a tuple that starts with its run."""
    return selectors.owner_review_states(row[0] for row in rows)


@register.filter
def pick(values: list[Any] | dict[str, Any] | None, key: Any) -> Any:
    if values is None:
        return None
    try:
        return values[key]
    except (KeyError, IndexError, TypeError):
        return None



@register.filter
def trust_meaning(label: str) -> str:
    """What a trust label means, in the legend's words (leaderboard.models.TRUST_MEANINGS)."""
    return TRUST_MEANINGS.get(label, "")
