"""The e-mails a run's owner gets about it: scored, published, rejected, unpublished (a completion hook and the
review decisions send them, after commit)."""

from typing import Any

from django.urls import reverse

from contracts import PROMPT_LEVELS
from leaderboard.models import (
    LeaderboardEntry,
    RunReview,
)
from portal.mail import mail_send
from portal.public_urls import public_url
from portal.submissions.models import Submission
from portal.submissions.selectors import score_shown
from scoring.models import ScoringRun
from scoring.selectors import scoring_run_latest


def _levels_line(aggregate: dict[str, Any]) -> str:
    """The owner's scores in the mail, as coarse as on their pages (`score_shown`): mail is the owner's view."""
    levels = aggregate.get("levels") or {}
    parts = [f"{lv.upper()} {score_shown(levels[lv], exact=False)}" if levels.get(lv) is not None
             else f"{lv.upper()} —" for lv in PROMPT_LEVELS]
    overall = aggregate.get("overall")
    return " · ".join(parts) + (f" · overall {score_shown(overall, exact=False)}" if overall is not None else "")


def owner_notify(*, submission_id: Any, kind: str) -> bool:
    """E-mail the run's owner that it was scored, published or rejected. Never raises."""
    submission = Submission.objects.select_related("owner").filter(id=submission_id).first()
    if submission is None:
        return False
    short = str(submission.id)[:8]
    config = " / ".join(x for x in (submission.agent, submission.model, submission.effort) if x) or "your run"
    if kind == "scored":
        scoring = scoring_run_latest(submission.id)
        subject = f"Run {short} is scored"
        levels = _levels_line(scoring.aggregate if scoring else {})
        body = (f"Your run {submission.id} ({config}) on {submission.dataset_id} has been scored"
                f" (scoring #{scoring.number if scoring else '?'}).\n\n{levels}"
                "\n\nA maintainer will review it before it can appear on the public leaderboard.")
    elif kind == "published":
        entry = LeaderboardEntry.objects.filter(submission=submission).first()
        if entry is None:
            return False
        subject = f"Run {short} is on the leaderboard"
        public_page = public_url(reverse("leaderboard-entry", args=[entry.id]))
        body = (f"Your run {submission.id} ({config}) is published on the {entry.dataset_id} leaderboard as "
                f"\"{entry.display_name}\".\n\nPublic page: {public_page}")
    elif kind == "rejected":
        review = RunReview.objects.filter(submission=submission).first()
        subject = f"Run {short} was not published"
        body = (f"A maintainer reviewed your run {submission.id} ({config}) and did not publish it.\n\n"
                f"Reason: {review.reason if review else ''}")
    else:
        raise ValueError(f"unknown notification {kind!r}")
    body += f"\n\nYour run: {public_url(reverse('submission-detail', args=[submission.id]))}\n"
    return mail_send(to=submission.owner.email, subject=subject, body=body)


def owner_notify_scored(scoring_run_id: int) -> None:
    """Completion hook: tell the owner the scoring finished."""
    submission_id = ScoringRun.objects.filter(id=scoring_run_id).values_list("submission_id", flat=True).first()
    if submission_id is not None:
        owner_notify(submission_id=submission_id, kind="scored")

