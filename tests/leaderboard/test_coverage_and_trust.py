"""Issue 32: every result ends in one outcome; a run's coverage; the board ranks complete runs only and lists
incomplete ones apart (HTML, CSV, JSON); publishing an incomplete run needs an override with a public reason;
the queue and bulk action name incomplete runs first; trust labels; the attempt ledger."""

import csv
import io
import re

import pytest
from django.test import Client
from django.utils import timezone

from leaderboard.models import LeaderboardEntry, ModerationEvent, ReviewAction
from portal.submissions.models import ScoredAttempt, Submission
from portal.submissions.outcomes import ResultEnd, coverage, result_outcome
from portal.submissions.scoring_runs import scoring_run_finalize
from scoring.models import InstanceScore, ScoringRun
from tests.leaderboard.factories import RunSpec, scored_run

pytestmark = pytest.mark.django_db

FULL = 5  # tasks in the test catalog (tests.leaderboard.factories.DEFAULT_DOMAINS)


@pytest.fixture
def runs(catalog, submitter, other_user) -> dict[str, Submission]:
    """A run of all five tasks, scoring 100 everywhere, and one of two tasks, also 100: as the issue found them."""
    return {"complete": scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], model="full",
                                           score=lambda t, lv: 100.0)),
            "partial": scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"][:2], model="partial",
                                          score=lambda t, lv: 100.0))}


@pytest.fixture
def reviewer(maintainer) -> Client:
    client = Client()
    client.force_login(maintainer.user)
    return client


def publish(client: Client, run: Submission, **fields: str) -> str:
    response = client.post(f"/leaderboard/review/{run.id}/publish", {"display_name": run.model, **fields},
                           follow=True)
    assert response.status_code == 200
    return response.content.decode()


# --- outcomes ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("end", "outcome"), [
    (ResultEnd("completed", True, False, "scored"), "scored"),
    (ResultEnd("failed", True, False, "scored"), "agent_error"),
    (ResultEnd("timeout", False, True, "scored"), "agent_timeout"),
    (ResultEnd("completed", False, True, "scored"), "missing_outputs"),
    (ResultEnd("completed", True, False, "error", "outputs could not be staged: symlink"), "missing_outputs"),
    (ResultEnd("completed", True, False, "error", "the scorer crashed (exit 1): boom"), "evaluation_error"),
    (ResultEnd("completed", True, False, "error", "scoring could not complete (scorer_crashed)"), "evaluation_error"),
    (ResultEnd("completed", True, False, "error", "evaluator unavailable: the rubric judge (m) gave no"),
     "judge_error"),
    (ResultEnd("completed", True, False, "error", "x", "evaluator_unavailable"), "judge_error"),
    (ResultEnd("completed", True, False, None), "infrastructure_error"),
])
def test_every_result_ends_in_exactly_one_outcome(end, outcome):
    assert result_outcome(end) == outcome


def test_coverage_counts_valid_task_levels_of_the_official_set_and_any_invalid_result_makes_it_incomplete():
    cells = [(t, lv, "scored") for t in ("a", "b") for lv in ("b1", "b2", "b3", "b4")]
    assert coverage(cells, ["a", "b"])["complete"] is True
    partial = coverage(cells[:4], ["a", "b"])
    assert (partial["valid"], partial["expected"], partial["percent"], partial["complete"]) == (4, 8, 50.0, False)
    invalid = coverage([*cells[:7], ("b", "b4", "evaluation_error")], ["a", "b"])
    assert (invalid["valid"], invalid["invalid"], invalid["complete"]) == (7, 1, False)
    agent_zeros = coverage([(t, lv, "agent_timeout") for t, lv, _ in cells], ["a", "b"])
    assert agent_zeros["complete"] is True and agent_zeros["outcomes"] == {"agent_timeout": 8}


def _rescore_with(run: Submission, reason: str) -> ScoringRun:
    """A second scoring of `run` in which one result met `reason` (a zero the pipeline made), finalised by the
    real service."""
    first = run.scoring_runs.get()
    second = ScoringRun.objects.create(submission=run, number=2)
    scores = []
    for k, score in enumerate(InstanceScore.objects.filter(scoring_run=first).order_by("entry__base_name")):
        score.pk, score.scoring_run = None, second
        if k == 0:
            score.outcome, score.percent, score.final_score, score.reason = "error", 0.0, 0.0, reason
        scores.append(score)
    InstanceScore.objects.bulk_create(scores)
    assert scoring_run_finalize(scoring_run_id=second.id)
    second.refresh_from_db()
    return second


@pytest.mark.parametrize(("reason", "outcome"), [("the scorer crashed (exit 1): Traceback", "evaluation_error"),
                                                  ("evaluator unavailable: the rubric judge gave no answer",
                                                   "judge_error")])
def test_an_evaluation_or_judge_error_is_never_counted_as_0(runs, reason, outcome):
    second = _rescore_with(runs["complete"], reason)
    assert second.aggregate["overall"] == 100.0  # left out, not averaged in as a zero
    assert second.aggregate["results_counted"] == FULL * 4 - 1
    assert second.aggregate["coverage"]["outcomes"] == {"scored": FULL * 4 - 1, outcome: 1}
    assert second.aggregate["coverage"]["complete"] is False and second.aggregate["coverage"]["invalid"] == 1


def test_an_infrastructure_error_leaves_the_run_failed_and_unpublishable(runs, reviewer):
    run = runs["complete"]
    ScoringRun.objects.filter(submission=run).update(status="failed", reason="storage unavailable after 5 tries")
    Submission.objects.filter(id=run.id).update(status="failed")
    page = publish(reviewer, run)
    assert "Only scored runs can be published" in page and not LeaderboardEntry.objects.exists()


def test_the_review_page_shows_each_results_outcome_and_invalid_ones_as_invalid(runs, reviewer):
    _rescore_with(runs["complete"], "the scorer crashed (exit 1): Traceback")
    page = reviewer.get(f"/leaderboard/review/{runs['complete'].id}/").content.decode()
    assert page.count('data-testid="invalid-score">invalid<') == 1
    assert page.count('data-testid="result-outcome">evaluation error (scorer)<') == 1
    assert 'data-testid="review-incomplete"' in page and "19 of 20 task-levels (95.0%)" in page


# --- the board ---------------------------------------------------------------------------------

def test_the_partial_run_needs_an_override_with_a_public_reason_and_then_is_listed_apart(runs, reviewer):
    assert "complete" in publish(reviewer, runs["complete"])
    review = reviewer.get(f"/leaderboard/review/{runs['partial'].id}/").content.decode()
    assert 'data-testid="publish-incomplete"' in review and "8 of 20 task-levels (40.0%)" in review

    page = publish(reviewer, runs["partial"])
    assert "This run is incomplete: 8 of 20 task-levels (40.0 %), 2 of 5 tasks" in page
    assert not LeaderboardEntry.objects.filter(submission=runs["partial"]).exists()
    page = publish(reviewer, runs["partial"], override_incomplete="1")
    assert "needs a public reason" in page and not LeaderboardEntry.objects.filter(submission=runs["partial"]).exists()
    publish(reviewer, runs["partial"], override_incomplete="1", public_reason="A two-task pilot, shown for reference.")
    entry = LeaderboardEntry.objects.get(submission=runs["partial"])
    assert entry.complete is False and entry.coverage["percent"] == 40.0
    event = ModerationEvent.objects.get(submission=runs["partial"])
    assert event.reason == ("Published incomplete, unranked (8 of 20 task-levels (40.0 %), 2 of 5 tasks): "
                            "A two-task pilot, shown for reference.")
    assert "published incomplete" in ReviewAction.objects.get(submission=runs["partial"], kind="publish").reason

    visitor = Client()
    board = visitor.get("/leaderboard/").content.decode()
    assert board.count('data-testid="board-row"') == 1 and ">full<" in board and ">partial<" not in board
    assert 'data-testid="incomplete-note">1 incomplete run' in board
    apart = visitor.get("/leaderboard/?show=incomplete").content.decode()
    assert apart.count('data-testid="board-row"') == 1 and ">partial<" in apart
    row = apart[apart.index('data-testid="board-row"'):]
    assert re.search(r'<td class="num">—</td>', row)  # unranked
    assert re.search(r'data-testid="coverage"[^>]*>40%<br><small>2/5 tasks', row)

    ranked = visitor.get("/api/v1/leaderboard").json()
    assert [(r["display_name"], r["rank"], r["complete"]) for r in ranked["rows"]] == [("full", 1, True)]
    assert ranked["incomplete_count"] == 1 and ranked["rows"][0]["coverage"]["percent"] == 100.0
    both = visitor.get("/api/v1/leaderboard?show=all").json()["rows"]
    assert {r["display_name"]: (r["rank"], r["coverage"]["valid"], r["coverage"]["expected"]) for r in both} == {
        "full": (1, 20, 20), "partial": (None, 8, 20)}
    rows = list(csv.DictReader(io.StringIO(visitor.get("/leaderboard/export.csv?show=all").content.decode())))
    assert {r["display_name"]: (r["rank"], r["coverage_percent"], r["complete"]) for r in rows} == {
        "full": ("1", "100.0", "yes"), "partial": ("", "40.0", "no")}
    default_csv = list(csv.DictReader(io.StringIO(visitor.get("/leaderboard/export.csv").content.decode())))
    assert [r["display_name"] for r in default_csv] == ["full"]


def test_a_board_view_parameter_outside_its_allowlist_is_refused(runs):
    assert Client().get("/leaderboard/?show=everything").status_code == 400
    assert Client().get("/api/v1/leaderboard?trust=gold").status_code == 400


def test_the_bulk_action_names_the_incomplete_runs_and_publishes_nothing_without_the_override(runs, reviewer):
    queue = reviewer.get("/leaderboard/review/").content.decode()
    assert queue.count('data-testid="queue-incomplete"') == 1
    # Each run's tasks counted against the dataset's whole task set, not only the tasks the run uploaded.
    cells = re.findall(r'data-testid="queue-coverage">(.*?)</td>', queue, flags=re.S)
    assert sorted(re.search(r"(\d+/\d+) tasks", cell).group(1) for cell in cells) == ["2/5", "5/5"], cells
    selected = {"runs": [str(runs["complete"].id), str(runs["partial"].id)], "action": "publish", "tab": "pending"}
    page = reviewer.post("/leaderboard/review/bulk", {**selected, "reason": ""}, follow=True).content.decode()
    assert f"1 of the 2 selected runs are incomplete, so nothing was published: {str(runs['partial'].id)[:8]}" in page
    assert not LeaderboardEntry.objects.exists()
    page = reviewer.post("/leaderboard/review/bulk", {**selected, "override_incomplete": "1", "reason": ""},
                         follow=True).content.decode()
    assert "needs a public reason" in page and not LeaderboardEntry.objects.exists()
    page = reviewer.post("/leaderboard/review/bulk", {**selected, "override_incomplete": "1",
                                                      "reason": "Batch of pilots"}, follow=True).content.decode()
    assert "publish: 2 run(s) done" in page and "Incomplete among the selected runs (1)" in page
    assert dict(LeaderboardEntry.objects.values_list("display_name", "complete")) == {
        "claude-code · full · high": True, "claude-code · partial · high": False}


# --- trust labels ------------------------------------------------------------------------------

def test_trust_labels_start_as_community_or_repo_verified_and_each_change_is_a_public_event(
        catalog, runs, maintainer, reviewer):
    publish(reviewer, runs["complete"])
    own = scored_run(RunSpec(owner=maintainer.user, instances=catalog["seed42"], model="ours"))
    publish(reviewer, own)
    assert dict(LeaderboardEntry.objects.values_list("display_name", "trust")) == {
        "full": "community", "ours": "repo-verified"}

    page = reviewer.post(f"/leaderboard/review/{runs['complete'].id}/trust", {"trust": "official", "reason": "x"},
                         follow=True).content.decode()
    assert "needs a passed spot validation" in page
    page = reviewer.post(f"/leaderboard/review/{runs['complete'].id}/trust", {"trust": "repo-verified", "reason": ""},
                         follow=True).content.decode()
    assert "Say why the label changes" in page
    reviewer.post(f"/leaderboard/review/{runs['complete'].id}/trust",
                  {"trust": "repo-verified", "reason": "Re-run by the maintainers on our hardware."})
    assert LeaderboardEntry.objects.get(submission=runs["complete"]).trust == "repo-verified"
    event = ModerationEvent.objects.get(kind="trust")
    assert event.reason.startswith("Trust label community → repo-verified (run by the maintainers themselves")
    assert ReviewAction.objects.filter(kind="trust", submission=runs["complete"]).count() == 1
    log = Client().get("/api/v1/leaderboard/moderation").json()["events"]
    assert log[0]["kind"] == "trust" and "Re-run by the maintainers" in log[0]["reason"]

    visitor = Client()
    board = visitor.get("/leaderboard/").content.decode()
    assert board.count('data-testid="trust-badge"') == 2 and 'data-testid="trust-legend"' in board
    assert "fully reviewed, and its reproducibility verified by a passed spot validation" in board
    only = visitor.get("/api/v1/leaderboard?trust=repo-verified").json()["rows"]
    assert sorted(r["display_name"] for r in only) == ["full", "ours"]
    assert visitor.get("/api/v1/leaderboard?trust=community").json()["rows"] == []
    rows = list(csv.DictReader(io.StringIO(visitor.get("/leaderboard/export.csv").content.decode())))
    assert {r["trust"] for r in rows} == {"repo-verified"}
    entry = LeaderboardEntry.objects.get(submission=runs["complete"])
    detail = visitor.get(f"/leaderboard/entries/{entry.id}/").content.decode()
    assert 'data-testid="trust-badge"' in detail and 'data-testid="trust-legend"' in detail
    assert visitor.get(f"/api/v1/leaderboard/entries/{entry.id}").json()["trust"] == "repo-verified"


@pytest.mark.parametrize("persona", [None, "submitter", "other_user"])
def test_only_maintainers_set_labels_or_see_the_review_side(runs, reviewer, persona, request):
    publish(reviewer, runs["complete"])
    client = Client()
    if persona:
        client.force_login(request.getfixturevalue(persona).user)
    response = client.post(f"/leaderboard/review/{runs['complete'].id}/trust", {"trust": "official", "reason": "x"})
    assert response.status_code in (302, 404)
    assert LeaderboardEntry.objects.get().trust == "community" and not ModerationEvent.objects.filter(kind="trust")
    assert client.get(f"/leaderboard/review/{runs['complete'].id}/").status_code in (302, 404)
    # Everyone reads the same public board: coverage, label, scored attempts; never the owner.
    board = client.get("/api/v1/leaderboard").json()["rows"][0]
    assert board["trust"] == "community" and board["coverage"]["complete"] is True
    assert "alice" not in str(board) and "owner" not in board


# --- the attempt ledger -------------------------------------------------------------------------

def test_scored_attempts_count_the_owners_confirms_whatever_the_labels_in_the_rows_window(
        catalog, submitter, reviewer, settings):
    early = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], agent="renamed-1", model="m"))
    ScoredAttempt.objects.filter(submission=early).update(confirmed_at=timezone.now() - timezone.timedelta(days=40))
    for name in ("renamed-2", "renamed-3"):
        scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], agent=name, model="m"))
    shown = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], agent="final", model="m"))
    publish(reviewer, shown)
    row = Client().get("/api/v1/leaderboard").json()["rows"][0]
    assert (row["confirmed_attempts"], row["scored_attempts"]) == (1, 3)  # 40 days back is outside the window
    settings.ATTEMPT_WINDOW_DAYS = 60
    from leaderboard.selectors import board_cache_invalidate

    board_cache_invalidate()
    assert Client().get("/api/v1/leaderboard").json()["rows"][0]["scored_attempts"] == 4
    # A label change on the board (trust) or a relabelled run changes no count; a deleted run stays counted.
    reviewer.post(f"/leaderboard/review/{shown.id}/trust", {"trust": "repo-verified", "reason": "re-run by us"})
    early.delete()
    board_cache_invalidate()
    assert Client().get("/api/v1/leaderboard").json()["rows"][0]["scored_attempts"] == 4
    entry = LeaderboardEntry.objects.get()
    assert 'data-testid="entry-scored-attempts">4 scorings' in Client().get(
        f"/leaderboard/entries/{entry.id}/").content.decode()


def test_confirm_records_the_attempt_once(catalog, submitter):
    from portal.submissions import services
    from tests.portal.submissions.test_confirm_quota import draft

    run = draft(submitter.user, catalog["seed42"])
    services.submission_confirm(user=submitter.user, submission_id=str(run.id))
    services.submission_confirm(user=submitter.user, submission_id=str(run.id))
    ledger = ScoredAttempt.objects.get(submission=run)
    assert (ledger.owner_id, ledger.dataset_id, len(ledger.tasks)) == (submitter.user.id, "seed42", FULL)
