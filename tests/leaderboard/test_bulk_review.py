"""Bulk review: several runs selected in the queue, published, rejected (one reason) or rescored at once,
each still decided and audited on its own."""

import re

import pytest
from django.test import Client

from leaderboard.models import IntegrityFlag, LeaderboardEntry, ModerationEvent, ReviewAction, RunReview
from portal.submissions.models import Submission
from tests.leaderboard.factories import RunSpec, scored_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(catalog, submitter, other_user) -> list[Submission]:
    return [scored_run(RunSpec(owner=owner, instances=catalog["seed42"], model=model))
            for owner, model in ((submitter.user, "m1"), (submitter.user, "m2"), (other_user.user, "m3"))]


def bulk(client: Client, runs: list[Submission], action: str, reason: str = "") -> str:
    response = client.post("/leaderboard/review/bulk", {"runs": [str(r.id) for r in runs], "action": action,
                                                        "reason": reason, "tab": "pending"}, follow=True)
    assert response.status_code == 200
    return response.content.decode()


def test_the_queue_offers_a_checkbox_per_run(runs, maintainer, client):
    client.force_login(maintainer.user)
    page = client.get("/leaderboard/review/").content.decode()
    assert all(f'data-testid="select-{r.id}"' in page for r in runs) and 'data-testid="bulk-submit"' in page
    assert 'data-testid="queue-conformance"' not in page
    Submission.objects.filter(id=runs[0].id).update(conformance=[{"kind": "timeout", "detail": "600 s"}])
    page = client.get("/leaderboard/review/").content.decode()
    assert page.count('data-testid="queue-conformance" title="600 s">timeout other than the benchmark&#x27;s<') == 1


def test_queue_flags_are_words_with_a_legend(runs, maintainer, client):
    IntegrityFlag.objects.bulk_create(IntegrityFlag(submission=runs[0], kind=kind, base_name=f"r{k}")
                                      for k, kind in enumerate(("duplicate_outputs", "stale_task_revision")))
    client.force_login(maintainer.user)
    page = client.get("/leaderboard/review/").content.decode()
    badges = re.findall(r'data-testid="queue-integrity">([^<]*)<', page)
    assert sorted(badges) == ["2 integrity flags", "no integrity flags", "no integrity flags"]
    legend = page[page.index('data-testid="flag-legend"'):]
    for kind in (*IntegrityFlag.Kind.labels, "sandbox outside the dataset&#x27;s policy", "more than one attempt"):
        assert kind.replace("'", "&#x27;") in legend, kind


def test_bulk_publish_publishes_each_under_its_suggested_name_with_its_own_audit_row(runs, maintainer, client):
    client.force_login(maintainer.user)
    page = bulk(client, runs[:2], "publish", "Batch reviewed")
    assert "publish: 2 run(s) done" in page
    assert set(LeaderboardEntry.objects.values_list("display_name", flat=True)) == {
        "claude-code · m1 · high", "claude-code · m2 · high"}
    assert ReviewAction.objects.filter(kind="publish", actor=maintainer.user).count() == 2
    assert list(ModerationEvent.objects.values_list("reason", flat=True)) == ["Batch reviewed"] * 2
    assert not LeaderboardEntry.objects.filter(submission=runs[2]).exists()


def test_bulk_reject_needs_one_reason_and_tells_every_owner(runs, maintainer, client, mailoutbox,
                                                           django_capture_on_commit_callbacks):
    client.force_login(maintainer.user)
    assert "A rejection needs a reason" in bulk(client, runs, "reject")
    assert not RunReview.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        bulk(client, runs, "reject", "Outputs do not match the task")
    assert list(RunReview.objects.values_list("state", "reason").distinct()) == [
        ("rejected", "Outputs do not match the task")]
    assert ReviewAction.objects.filter(kind="reject").count() == 3
    assert sorted(m.to[0] for m in mailoutbox) == ["alice@uni.example", "alice@uni.example", "bob@lab.example"]


def test_one_refused_run_does_not_stop_the_others(runs, maintainer, client):
    client.force_login(maintainer.user)
    bulk(client, runs[:1], "publish")
    page = bulk(client, runs, "reject", "Not reproducible")
    assert "This run is published; unpublish it before rejecting it." in page
    assert RunReview.objects.filter(state="rejected").count() == 2
    assert RunReview.objects.get(submission=runs[0]).state == "published"


def test_bulk_rescore_queues_each_run(runs, maintainer, client, django_capture_on_commit_callbacks):
    client.force_login(maintainer.user)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        bulk(client, runs, "rescore", "engine 1.1")
    assert set(Submission.objects.values_list("status", flat=True)) == {"queued"}
    assert ReviewAction.objects.filter(kind="rescore", reason="engine 1.1").count() == 3
    assert len(callbacks) >= 3  # one scoring message per run, after commit


@pytest.mark.parametrize("persona", ["submitter", "other_user"])
def test_only_maintainers_can_act_in_bulk(runs, persona, request, client):
    client.force_login(request.getfixturevalue(persona).user)
    response = client.post("/leaderboard/review/bulk", {"runs": [str(runs[0].id)], "action": "publish"})
    assert response.status_code == 404
    assert not LeaderboardEntry.objects.exists()
