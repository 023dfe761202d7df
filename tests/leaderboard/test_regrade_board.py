"""The board during and after a re-grade (leaderboard.regrade): entries still scored on an older task revision
are marked and ranked apart from the others; re-graded ones show old and new mean and their former rank
until a maintainer acknowledges them."""

import pytest
from django.core.cache import cache
from django.test import Client

from leaderboard import services
from leaderboard.models import LeaderboardEntry
from leaderboard.regrade import affected_entries, regrade_acknowledge, regrade_start
from leaderboard.selectors import BoardQuery, board_rows
from portal.errors import Conflict
from scoring.models import Task
from tests.leaderboard.factories import RunSpec, scored_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def entries(catalog, submitter, other_user, maintainer):
    """Three published seed42 runs with means of about 70, 50 and 30."""
    out = {}
    for name, owner, agent, level_score in (("high", submitter, "a", 70.0), ("mid", other_user, "b", 50.0),
                                            ("low", submitter, "c", 30.0)):
        run = scored_run(RunSpec(owner=owner.user, instances=catalog["seed42"], agent=agent,
                                 score=lambda task, level, s=level_score: s))
        out[name] = services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name=name)
    cache.clear()
    return out


def rows() -> dict[str, dict]:
    cache.clear()
    return {row["display_name"]: row for row in board_rows(BoardQuery(dataset="seed42"))}


def test_starting_a_regrade_marks_every_affected_entry_and_ranks_them_apart(
        entries, catalog, django_capture_on_commit_callbacks):
    task = Task.objects.get(id=catalog["seed42"][0].task_id)
    assert affected_entries(task) == []  # every entry was scored on the current revision
    Task.objects.filter(id=task.id).update(revision=task.revision + 1)
    task.refresh_from_db()
    assert {e.display_name for e in affected_entries(task)} == {"high", "mid", "low"}
    with django_capture_on_commit_callbacks() as queued:
        marked = regrade_start(task=task)
    assert len(marked) == 3 and len(queued) == 2  # one chunk of runs for the instance, and the board's cache
    high = LeaderboardEntry.objects.get(id=entries["high"].id)
    assert high.regrade["state"] == "pending" and high.regrade["rank_before"] == 1
    assert high.regrade["from_revision"] == task.revision - 1 and high.regrade["to_revision"] == task.revision
    # One entry re-graded (its scores would come from the new scoring): it is ranked on its own,
    # the pending ones apart from it, each marked.
    LeaderboardEntry.objects.filter(id=entries["low"].id).update(
        regrade={**high.regrade, "state": "regraded", "mean_before": 30.0, "mean_after": 80.0, "rank_before": 3},
        mean=80.0)
    board = rows()
    assert board["low"]["rank"] == 1 and not board["low"]["older_revision"]
    assert (board["high"]["rank"], board["mid"]["rank"]) == (1, 2)
    assert board["high"]["older_revision"] and board["mid"]["older_revision"]
    page = Client().get("/leaderboard/?dataset=seed42").content.decode()
    assert page.count('data-testid="older-revision"') == 2
    assert "re-graded: mean 30.0 → 80.0" in page and 'data-testid="rank-change">was 3<' in page
    # Started again (a lost message): queued again, the pending ones keeping their former figures.
    LeaderboardEntry.objects.filter(id=entries["low"].id).update(regrade={})
    with django_capture_on_commit_callbacks() as queued:
        again = regrade_start(task=task)
    assert len(again) == 3 and len(queued) == 2
    assert LeaderboardEntry.objects.get(id=entries["high"].id).regrade["rank_before"] == 1
    assert LeaderboardEntry.objects.get(id=entries["low"].id).regrade["mean_before"] == 80.0


def test_a_pending_regrade_cannot_be_acknowledged_a_finished_one_can(entries, catalog, maintainer):
    task = Task.objects.get(id=catalog["seed42"][0].task_id)
    Task.objects.filter(id=task.id).update(revision=task.revision + 1)
    task.refresh_from_db()
    regrade_start(task=task)
    with pytest.raises(Conflict, match="still being re-graded"):
        regrade_acknowledge(entry_id=entries["high"].id, actor=maintainer.user)
    entry = LeaderboardEntry.objects.get(id=entries["high"].id)
    LeaderboardEntry.objects.filter(id=entry.id).update(regrade={**entry.regrade, "state": "regraded"})
    staff = Client()
    staff.force_login(maintainer.user)
    assert Client().post(f"/leaderboard/entries/{entry.id}/regrade/acknowledge").status_code == 404
    staff.post(f"/leaderboard/entries/{entry.id}/regrade/acknowledge")
    assert LeaderboardEntry.objects.get(id=entry.id).regrade == {}
    assert not rows()["high"]["older_revision"] and rows()["high"]["regrade"] is None


def test_the_regrade_command_queues_the_entries_again(entries, catalog, django_capture_on_commit_callbacks):
    from io import StringIO

    from django.core.management import call_command

    task = Task.objects.get(id=catalog["seed42"][0].task_id)
    Task.objects.filter(id=task.id).update(revision=task.revision + 1)
    out = StringIO()
    with django_capture_on_commit_callbacks() as queued:
        call_command("task_regrade", task.id, stdout=out)
    assert out.getvalue() == f"3 board entries of {task.id} queued for re-grading against revision " \
                             f"{task.revision + 1}\n" and len(queued) == 2
