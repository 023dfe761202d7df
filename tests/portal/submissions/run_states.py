"""A run in each state its owner's page shows, built in the ORM from the leaderboard's factories (no
scorer, no sandbox), then moved through the real review services where a state is a decision."""

from typing import Any

from django.utils import timezone

from leaderboard import services as review
from portal.submissions.models import Submission
from scoring.models import InstanceScore, ScoringRun
from tests.leaderboard.factories import RunSpec, scored_run

# B1..B4 of every result: each task's mean is 26.44, shown 26.4 to maintainers and 26 to the owner.
LEVEL_SCORES = {"b1": 57.4321, "b2": 33.5, "b3": 14.3456, "b4": 0.49}
TASK_MEAN_EXACT = "26.4"
TASK_MEAN_OWNER = "26"


def run_in_state(owner: Any, instances: list[Any], state: str, maintainer: Any = None, **spec: Any) -> Submission:
    """`state`: draft, queued, scoring (one task of results scored), scored (waiting for review),
    published, rejected (with a reason) or unpublished."""
    run = scored_run(RunSpec(owner=owner, instances=instances, score=lambda task, level: LEVEL_SCORES[level], **spec))
    scoring = ScoringRun.objects.get(submission=run)
    now = timezone.now()
    if state == "draft":
        scoring.delete()
        Submission.objects.filter(id=run.id).update(status="draft", confirmed_at=None, scored_at=None,
                                                    overall_score=None, expires_at=now + timezone.timedelta(days=7))
    elif state == "queued":
        scoring.delete()
        Submission.objects.filter(id=run.id).update(status="queued", confirmed_at=now, scored_at=None,
                                                    overall_score=None)
    elif state == "scoring":
        first_task = run.entries.order_by("task_id").values_list("task_id", flat=True).first()
        InstanceScore.objects.filter(scoring_run=scoring).exclude(entry__task_id=first_task).delete()
        ScoringRun.objects.filter(id=scoring.id).update(status="running", finished_at=None, aggregate={})
        Submission.objects.filter(id=run.id).update(status="scoring", scoring_started_at=now, scored_at=None,
                                                    overall_score=None)
    elif state in ("published", "rejected", "unpublished"):
        review.run_review_publish(submission_id=run.id, actor=maintainer, display_name="Claude Code · Opus")
        if state != "published":
            review.run_review_unpublish(submission_id=run.id, actor=maintainer, reason="Taken down for review.")
        if state == "rejected":
            review.run_review_reject(submission_id=run.id, actor=maintainer,
                                     reason="Outputs byte-identical to another user's run.")
    elif state != "scored":
        raise ValueError(f"unknown state {state!r}")
    return Submission.objects.get(id=run.id)
