"""Maintainers' actions: publish, reject, rescore, unpublish; the audit log; owners' e-mails; who may act."""

import pytest
from django.core import mail

from leaderboard import services
from leaderboard.models import LeaderboardEntry, ReviewAction, RunReview
from portal.errors import Conflict, PermissionDenied, ValidationFailed
from portal.submissions.models import Submission
from portal.submissions.scoring_runs import scoring_run_completed_hooks
from scoring.models import ScoringRun
from tests.leaderboard.factories import RunSpec, scored_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(catalog, submitter) -> Submission:
    return scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))


def test_publishing_puts_the_run_on_the_board_and_logs_who_did_it(run, maintainer, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        entry = services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="  Claude  Code ")
    assert entry.display_name == "Claude Code" and entry.is_current
    assert entry.scoring_run.number == 1 and entry.instances_scored == 20 and entry.task_count == 5
    assert entry.b1 == pytest.approx(run.scoring_runs.get().aggregate["levels"]["b1"], abs=1e-3)
    assert entry.intervals["b1"][0] <= entry.b1 <= entry.intervals["b1"][1]
    assert entry.provenance["sandbox_modes"] == {"os": 20} and entry.provenance["engine_versions"] == ["1.0.0"]
    assert "alice" not in str(entry.provenance)  # the owner is not public
    action = ReviewAction.objects.get(submission=run)
    assert (action.kind, action.actor_id, action.display_name, action.scoring_number) == (
        "publish", maintainer.user.id, "Claude Code", 1)
    assert RunReview.objects.get(submission=run).state == "published"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["alice@uni.example"]
    assert "on the leaderboard" in mail.outbox[0].subject and "Claude Code" in mail.outbox[0].body


def test_publishing_twice_changes_nothing_more(run, maintainer):
    first = services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="A")
    again = services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="A")
    assert first.id == again.id and LeaderboardEntry.objects.count() == 1
    assert ReviewAction.objects.filter(submission=run).count() == 1


def test_publishing_needs_a_display_name_and_a_scored_run(run, maintainer):
    with pytest.raises(ValidationFailed, match="display name is required"):
        services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="  ")
    Submission.objects.filter(id=run.id).update(status="queued")
    with pytest.raises(Conflict, match="Only scored runs can be published; this run is queued"):
        services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="A")
    assert not LeaderboardEntry.objects.exists() and not ReviewAction.objects.exists()


@pytest.mark.parametrize("persona", ["submitter", "other_user"])
def test_non_maintainers_cannot_act(run, persona, request):
    actor = request.getfixturevalue(persona).user
    for action, kwargs in ((services.run_review_publish, {"display_name": "A"}),
                           (services.run_review_reject, {"reason": "x"}),
                           (services.run_review_rescore, {}), (services.run_review_unpublish, {"reason": "x"})):
        with pytest.raises(PermissionDenied, match="Only maintainers"):
            action(submission_id=run.id, actor=actor, **kwargs)
    assert not ReviewAction.objects.exists() and not LeaderboardEntry.objects.exists()


def test_rejecting_records_the_reason_and_tells_the_owner(run, maintainer, django_capture_on_commit_callbacks):
    with pytest.raises(ValidationFailed, match="needs a reason"):
        services.run_review_reject(submission_id=run.id, actor=maintainer.user, reason="")
    with django_capture_on_commit_callbacks(execute=True):
        review = services.run_review_reject(submission_id=run.id, actor=maintainer.user,
                                        reason="Outputs copied from run X.")
    assert review.state == "rejected" and review.reason == "Outputs copied from run X."
    action = ReviewAction.objects.get(submission=run)
    assert (action.kind, action.reason) == ("reject", "Outputs copied from run X.")
    assert len(mail.outbox) == 1 and "Reason: Outputs copied from run X." in mail.outbox[0].body
    assert not LeaderboardEntry.objects.exists()


def test_a_published_run_must_be_unpublished_before_it_is_rejected(run, maintainer):
    services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="A")
    with pytest.raises(Conflict, match="unpublish it before rejecting"):
        services.run_review_reject(submission_id=run.id, actor=maintainer.user, reason="no")


def test_unpublishing_removes_the_row_and_logs_why(run, maintainer):
    with pytest.raises(Conflict, match="not published"):
        services.run_review_unpublish(submission_id=run.id, actor=maintainer.user, reason="x")
    services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="A")
    services.run_review_unpublish(submission_id=run.id, actor=maintainer.user, reason="Owner asked")
    assert not LeaderboardEntry.objects.exists()
    assert list(ReviewAction.objects.filter(submission=run).order_by("id").values_list("kind", "reason")) == [
        ("publish", ""), ("unpublish", "Owner asked")]
    assert RunReview.objects.get(submission=run).state == "unpublished"


def test_rescoring_keeps_the_earlier_scoring_and_the_published_row(run, maintainer, django_capture_on_commit_callbacks):
    entry = services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="A")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.run_review_rescore(submission_id=run.id, actor=maintainer.user, reason="engine fix")
    assert callbacks, "the scoring task is enqueued after commit"
    run.refresh_from_db()
    assert run.status == "queued" and run.scoring_runs.count() == 1  # the new run opens when the worker claims it
    assert LeaderboardEntry.objects.get().scoring_run_id == entry.scoring_run_id
    action = ReviewAction.objects.filter(kind="rescore").get()
    assert (action.actor_id, action.reason, action.scoring_number) == (maintainer.user.id, "engine fix", 1)
    with pytest.raises(Conflict, match="this run is queued"):
        services.run_review_rescore(submission_id=run.id, actor=maintainer.user)


def test_republishing_after_a_rescore_shows_the_new_scoring(run, maintainer):
    services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="A")
    old = run.scoring_runs.get()
    new = ScoringRun.objects.create(submission=run, number=2, status="complete",
                                    aggregate={**old.aggregate, "levels": {**old.aggregate["levels"], "b1": 1.0}})
    entry = services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="A")
    assert entry.scoring_run_id == new.id and ScoringRun.objects.filter(submission=run).count() == 2
    assert ReviewAction.objects.filter(kind="publish").count() == 2


def test_one_row_per_owner_and_configuration_the_newest_published(catalog, submitter, other_user, maintainer):
    first = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))
    second = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))
    rival = scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"]))  # the same labels

    def current() -> list[str]:
        return sorted(LeaderboardEntry.objects.filter(is_current=True).values_list("display_name", flat=True))

    services.run_review_publish(submission_id=first.id, actor=maintainer.user, display_name="first")
    services.run_review_publish(submission_id=rival.id, actor=maintainer.user, display_name="rival")
    services.run_review_publish(submission_id=second.id, actor=maintainer.user, display_name="second")
    assert current() == ["rival", "second"]
    services.run_review_unpublish(submission_id=second.id, actor=maintainer.user, reason="x")
    assert current() == ["first", "rival"]
    services.run_review_publish(submission_id=first.id, actor=maintainer.user, display_name="first again")
    assert current() == ["first again", "rival"]


def test_the_owner_is_told_when_the_run_is_scored(run):
    scoring_run_completed_hooks(run.scoring_runs.get().id)
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["alice@uni.example"] and "is scored" in message.subject
    assert "B1 " in message.body and f"/submit/submissions/{run.id}" in message.body


def test_the_scored_mail_gives_the_owner_whole_percents_like_their_pages(run):
    scoring = run.scoring_runs.get()
    scoring.aggregate = {**scoring.aggregate, "levels": {"b1": 71.4286, "b2": 12.5, "b3": None, "b4": 0.04},
                         "overall": 27.9762}
    scoring.save(update_fields=["aggregate"])
    scoring_run_completed_hooks(scoring.id)
    body = mail.outbox[0].body
    assert "B1 71 · B2 13 · B3 — · B4 0 · overall 28" in body
    assert "71.4" not in body and "27.9" not in body
