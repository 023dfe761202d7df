"""How reliable a score is: where an owner has published three runs of one configuration, per-task agreement
(pass^k for pass/fail tasks, the score range otherwise) with bootstrap intervals, on the entry page and in the
JSON; fewer runs, or another owner's runs, are not compared."""

from __future__ import annotations

import pytest

from leaderboard import services
from leaderboard.consistency import agreement
from leaderboard.models import LeaderboardEntry
from tests.leaderboard.factories import RunSpec, scored_run

pytestmark = pytest.mark.django_db


def tasks(**levels: dict[str, float]) -> dict:
    return {task.replace("__", "."): {"levels": scores, "mean": sum(scores.values()) / len(scores)}
            for task, scores in levels.items()}


# --- the arithmetic ------------------------------------------------------------------------------------

def test_pass_k_counts_a_level_only_when_every_run_passed_it():
    runs = [tasks(math__a={"b1": 100, "b2": 100}, math__b={"b1": 100, "b2": 0}),
            tasks(math__a={"b1": 100, "b2": 100}, math__b={"b1": 100, "b2": 0}),
            tasks(math__a={"b1": 100, "b2": 100}, math__b={"b1": 0, "b2": 0})]
    result = agreement(runs)
    per_task = {t["task_id"]: t for t in result["per_task"]}
    assert per_task["math.a"] == {"task_id": "math.a", "kind": "pass/fail", "pass_k": 100.0, "pass_1": 100.0,
                                  "levels": {"b1": {"passes": 3, "runs": 3}, "b2": {"passes": 3, "runs": 3}}}
    assert per_task["math.b"]["pass_k"] == 0.0  # b1 passed twice of three: not every time
    assert per_task["math.b"]["pass_1"] == pytest.approx(100 * 2 / 6, abs=1e-3)
    summary = result["pass_fail"]
    assert summary["tasks"] == 2 and summary["pass_k"]["value"] == 50.0
    assert summary["pass_k"]["low"] <= 50.0 <= summary["pass_k"]["high"] and summary["pass_k"]["low"] < 50.0
    assert result["scored"] is None and result["runs"] == 3


def test_other_tasks_report_the_range_of_their_scores_across_runs():
    runs = [tasks(chem__x={"b1": 40.0, "b3": 10.0}, chem__y={"b1": 70.0}),
            tasks(chem__x={"b1": 55.5, "b3": 10.0}, chem__y={"b1": 72.0}),
            tasks(chem__x={"b1": 48.0, "b3": 30.0}, chem__y={"b1": 71.0})]
    result = agreement(runs)
    x = next(t for t in result["per_task"] if t["task_id"] == "chem.x")
    assert x["kind"] == "scored" and x["levels"]["b1"] == {"low": 40.0, "high": 55.5}
    assert x["range"] == pytest.approx((15.5 + 20.0) / 2)
    assert result["scored"]["tasks"] == 2
    assert result["scored"]["range"]["value"] == pytest.approx(((15.5 + 20.0) / 2 + 2.0) / 2, abs=1e-3)


def test_only_what_every_run_scored_is_compared_and_a_domain_narrows_it():
    runs = [tasks(math__a={"b1": 100, "b2": 0}, math__c={"b1": 50}, chem__x={"b1": 20}),
            tasks(math__a={"b1": 100}, chem__x={"b1": 30}),
            tasks(math__a={"b1": 0, "b2": 100}, chem__x={"b1": 20})]
    result = agreement(runs)
    assert [t["task_id"] for t in result["per_task"]] == ["chem.x", "math.a"]
    assert list(next(t for t in result["per_task"] if t["task_id"] == "math.a")["levels"]) == ["b1"]
    assert [t["task_id"] for t in agreement(runs, domain="math")["per_task"]] == ["math.a"]


# --- on the site -------------------------------------------------------------------------------------------

def binary_or_scored(run: int):
    """Chemistry tasks pass or fail (the first passes every time, the second in two runs of three); the others
    get scores that move from run to run."""
    def score(task: str, level: str) -> float:
        if task == "chemistry.task_1":
            return 100.0
        if task == "chemistry.task_2":
            return 100.0 if run < 2 else 0.0
        return 40.0 + 5 * run + (10 if level == "b1" else 0)
    return score


@pytest.fixture
def repeated(catalog, submitter, other_user, maintainer):
    """Three published runs of one configuration by the submitter; one with the same labels by another user."""
    entries = []
    for run in range(3):
        submission = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], score=binary_or_scored(run)))
        services.run_review_publish(submission_id=submission.id, actor=maintainer.user, display_name=f"Run {run + 1}")
        entries.append(LeaderboardEntry.objects.get(submission=submission))
    lookalike = scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"], score=binary_or_scored(9)))
    services.run_review_publish(submission_id=lookalike.id, actor=maintainer.user, display_name="Same labels")
    return entries


def test_the_entry_page_shows_agreement_across_the_owners_three_runs(client, repeated):
    page = client.get(f"/leaderboard/entries/{repeated[0].id}/").content.decode()
    summary = page[page.index('data-testid="consistency-summary"'):]
    assert "3 published runs of this configuration" in summary and "compared on the\n  5 tasks" in summary
    assert "Pass/fail tasks (2): <strong>pass^3 50.0%</strong>" in summary
    assert "Scored tasks (3): scores spread by <strong>10.0 points</strong>" in summary
    table = page[page.index('data-testid="entry-consistency"'):]
    assert "2/3 passed" in table and "3/3 passed" in table and "40.0–50.0" in table
    assert "Same labels" not in page  # another owner's run is another configuration


def test_the_json_export_carries_the_summary_per_row_and_the_tasks_per_entry(client, repeated):
    rows = {r["display_name"]: r for r in client.get("/api/v1/leaderboard").json()["rows"]}
    assert set(rows) == {"Run 3", "Same labels"}  # the board's row is the configuration's newest run
    consistency = rows["Run 3"]["consistency"]
    assert consistency["runs"] == 3 and consistency["pass_fail"]["pass_k"]["value"] == 50.0
    assert consistency["scored"]["range"]["value"] == 10.0 and "per_task" not in consistency
    assert rows["Same labels"]["consistency"] is None
    entry = client.get(rows["Run 3"]["entry_url"]).json()
    assert entry["display_name"] == "Run 3" and entry["consistency"]["min_runs"] == 3
    assert [r["display_name"] for r in entry["consistency"]["published_runs"]] == ["Run 1", "Run 2", "Run 3"]
    per_task = {t["task_id"]: t for t in entry["consistency"]["agreement"]["per_task"]}
    assert per_task["chemistry.task_2"]["levels"]["b3"] == {"passes": 2, "runs": 3}
    assert per_task["math.task_1"]["levels"]["b1"] == {"low": 50.0, "high": 60.0}
    assert client.get("/api/v1/leaderboard/entries/999999").status_code == 404


def test_a_domains_board_compares_that_domains_tasks(client, repeated):
    rows = {r["display_name"]: r for r in client.get("/api/v1/leaderboard?domain=chemistry").json()["rows"]}
    assert rows["Run 3"]["consistency"]["tasks"] == 2 and rows["Run 3"]["consistency"]["scored"] is None


def test_with_fewer_runs_visitors_read_when_agreement_will_show(client, catalog, submitter, maintainer):
    for run in range(2):
        submission = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], score=binary_or_scored(run)))
        services.run_review_publish(submission_id=submission.id, actor=maintainer.user, display_name=f"Run {run + 1}")
    entry = LeaderboardEntry.objects.get(display_name="Run 2")
    page = client.get(f"/leaderboard/entries/{entry.id}/").content.decode()
    assert "2 runs of this configuration are published" in page and "once its submitter has published 3" in page
    assert 'data-testid="entry-consistency"' not in page
    body = client.get(f"/api/v1/leaderboard/entries/{entry.id}").json()
    assert body["consistency"]["agreement"] is None and len(body["consistency"]["published_runs"]) == 2
    assert client.get("/api/v1/leaderboard").json()["rows"][0]["consistency"] is None
