"""The public moderation log: publish, unpublish, rejection after publication and score-changing rescores,
each with a public reason, on the board entry's page, on /leaderboard/moderation and in its JSON."""

import pytest
from django.test import Client

from leaderboard import services
from leaderboard.models import ModerationEvent
from portal.submissions.models import Submission
from scoring.models import ScoringRun
from tests.leaderboard.factories import RunSpec, scored_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(catalog, submitter) -> Submission:
    return scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))


def events() -> list[tuple[str, str, str]]:
    return [(e.kind, e.display_name, e.reason) for e in ModerationEvent.objects.order_by("created_at", "id")]


def halved_scoring(run: Submission) -> ScoringRun:
    old = run.scoring_runs.get(number=1)
    tasks = {task: {"mean": row["mean"] / 2,
                    "levels": {lv: (v / 2 if v is not None else None) for lv, v in row["levels"].items()}}
             for task, row in old.aggregate["tasks"].items()}
    return ScoringRun.objects.create(submission=run, number=2, status="complete",
                                     aggregate={**old.aggregate, "tasks": tasks})


def test_every_board_change_gets_a_public_reason(run, maintainer):
    entry = services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="Agent X",
                                    public_reason="Checked the trajectories")
    # no change: no row
    services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="Agent X")
    halved_scoring(run)
    rescored = services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="Agent X",
                                       public_reason="Scorer bug in B3 fixed")
    services.run_review_unpublish(submission_id=run.id, actor=maintainer.user, reason="Outputs copied from run 12")
    services.run_review_reject(submission_id=run.id, actor=maintainer.user, reason="Copied outputs")
    assert events() == [("publish", "Agent X", "Checked the trajectories"),
                        ("rescore", "Agent X", "Scorer bug in B3 fixed"),
                        ("unpublish", "Agent X", "Outputs copied from run 12"),
                        ("reject", "Agent X", "Copied outputs")]
    change = ModerationEvent.objects.get(kind="rescore")
    assert change.mean_before == pytest.approx(entry.mean) and change.mean_after == pytest.approx(rescored.mean)
    assert rescored.mean == pytest.approx(entry.mean / 2, abs=0.2)


def test_a_publish_without_a_reason_gets_the_default_and_a_same_score_republish_is_a_publish(run, maintainer):
    services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="A")
    services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="B")
    assert events() == [("publish", "A", services.DEFAULT_PUBLISH_REASON),
                        ("publish", "B", services.DEFAULT_PUBLISH_REASON)]


def test_rejecting_a_run_never_published_is_not_public(run, maintainer, client):
    services.run_review_reject(submission_id=run.id, actor=maintainer.user, reason="Private: incomplete")
    assert events() == []
    assert "Private: incomplete" not in client.get("/leaderboard/moderation").content.decode()


def test_the_log_is_public_on_its_page_on_the_entry_page_and_in_json(run, maintainer, catalog, submitter):
    entry = services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="<b>Bold</b> run",
                                    public_reason="<script>x()</script> reviewed")
    anonymous = Client()
    page = anonymous.get("/leaderboard/moderation").content.decode()
    assert "&lt;script&gt;x()&lt;/script&gt; reviewed" in page and "<script>x()" not in page
    assert f'href="/leaderboard/entries/{entry.id}/"' in page and "&lt;b&gt;Bold&lt;/b&gt; run" in page
    assert "maya@" not in page and "alice@" not in page  # neither the maintainer nor the owner is named
    detail = anonymous.get(f"/leaderboard/entries/{entry.id}/").content.decode()
    assert 'data-testid="moderation-publish"' in detail and "&lt;script&gt;x()" in detail
    body = anonymous.get("/api/v1/leaderboard/moderation").json()
    assert body["count"] == 1 and body["events"][0]["kind"] == "publish"
    assert body["events"][0]["reason"] == "<script>x()</script> reviewed" and body["events"][0]["entry_id"] == entry.id
    assert "maya" not in str(body) and "alice" not in str(body)


def test_the_log_is_newest_first_and_paginated(catalog, submitter, maintainer):
    runs = [scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], model=f"m{i}")) for i in range(3)]
    for i, run in enumerate(runs):
        services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name=f"Run {i}")
    client = Client()
    body = client.get("/api/v1/leaderboard/moderation?limit=2").json()
    assert body["count"] == 3 and [e["run"] for e in body["events"]] == ["Run 2", "Run 1"]
    assert [e["run"] for e in client.get("/api/v1/leaderboard/moderation?limit=2&offset=2").json()["events"]] == [
        "Run 0"]
    from leaderboard import views
    views.MODERATION_PAGE_SIZE = 2
    try:
        first, second = (client.get(f"/leaderboard/moderation?page={n}").content.decode() for n in (1, 2))
    finally:
        views.MODERATION_PAGE_SIZE = 50
    assert "Run 2" in first and "Run 1" in first and "Run 0" not in first and "Older →" in first
    assert "Run 0" in second and "Run 2" not in second


def test_the_boards_json_export_carries_the_moderation_log(catalog, submitter, maintainer,
                                                          django_capture_on_commit_callbacks):
    kept, removed = (scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], model=m)) for m in "ab")
    entry = services.run_review_publish(submission_id=kept.id, actor=maintainer.user, display_name="Kept",
                                    public_reason="<i>Checked</i> the trajectories")
    services.run_review_publish(submission_id=removed.id, actor=maintainer.user, display_name="Removed")
    services.run_review_unpublish(submission_id=removed.id, actor=maintainer.user, reason="Copied outputs")
    client = Client()
    body = client.get("/api/v1/leaderboard").json()
    log = body["moderation"]
    assert log["log_url"] == "/api/v1/leaderboard/moderation" and log["page_url"] == "/leaderboard/moderation"
    assert log["count"] == 3
    assert [(e["kind"], e["run"], e["reason"]) for e in log["recent"]] == [
        ("unpublish", "Removed", "Copied outputs"), ("publish", "Removed", services.DEFAULT_PUBLISH_REASON),
        ("publish", "Kept", "<i>Checked</i> the trajectories")]
    assert log["recent"][2]["entry_id"] == entry.id and log["recent"][0]["entry_id"] is None
    assert log["recent"] == client.get("/api/v1/leaderboard/moderation").json()["events"]  # one shape
    [row] = body["rows"]
    assert row["moderation_url"] == f"/leaderboard/entries/{entry.id}/#moderation"
    assert 'id="moderation"' in client.get(row["moderation_url"].split("#")[0]).content.decode()
    assert "maya" not in str(body) and "alice" not in str(body)  # neither the maintainer nor the owner

    # A rejection after publication changes no row, yet the cached export shows it at once.
    with django_capture_on_commit_callbacks(execute=True):
        services.run_review_reject(submission_id=removed.id, actor=maintainer.user, reason="Copied outputs, confirmed")
    log = client.get("/api/v1/leaderboard").json()["moderation"]
    assert log["count"] == 4 and log["recent"][0]["kind"] == "reject"
    # Another dataset's board has its own log.
    other = client.get("/api/v1/leaderboard?dataset=seed31415").json()["moderation"]
    assert other["count"] == 0 and other["recent"] == []
