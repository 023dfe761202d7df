"""The public board, its row pages, JSON and CSV: published runs only, filters, sorting, the cache."""

import csv
import io

import pytest
from django.core.cache import cache

from leaderboard import services
from tests.leaderboard.factories import RunSpec, profile_score, scored_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def board(catalog, submitter, other_user, maintainer):
    """Two published runs on seed42, one on seed31415, one scored but unpublished, one rejected."""
    def run(owner, ds, agent, model, k):
        return scored_run(RunSpec(owner=owner.user, instances=catalog[ds], agent=agent, model=model,
                                  score=lambda t, lv: profile_score(k, t, lv)))

    runs = {
        "strong": run(submitter, "seed42", "codex", "gpt-x", 0),
        "weak": run(other_user, "seed42", "kimi", "k2", 5),
        "other_ds": run(submitter, "seed31415", "codex", "gpt-x", 1),
        "hidden": run(other_user, "seed42", "secret-agent", "unreleased", 2),
        "rejected": run(other_user, "seed42", "rejected-agent", "m", 3),
    }
    for key, name in (("strong", "Codex GPT-X"), ("weak", "Kimi K2"), ("other_ds", "Codex on 31415")):
        services.run_review_publish(submission_id=runs[key].id, actor=maintainer.user, display_name=name)
    services.run_review_reject(submission_id=runs["rejected"].id, actor=maintainer.user, reason="copied")
    return runs


def test_only_published_runs_appear_on_the_page(client, board):
    page = client.get("/leaderboard/").content.decode()
    assert "Codex GPT-X" in page and "Kimi K2" in page
    for secret in ("secret-agent", "unreleased", "rejected-agent", "Codex on 31415", "alice@", "bob@"):
        assert secret not in page
    assert page.count('data-testid="board-row"') == 2
    assert '<svg xmlns="http://www.w3.org/2000/svg"' in page and "B3 across agents" in page


def test_only_published_runs_appear_in_json_and_csv(client, board):
    body = client.get("/api/v1/leaderboard").json()
    assert body["dataset"] == "seed42" and body["count"] == 2
    assert [r["display_name"] for r in body["rows"]] == ["Codex GPT-X", "Kimi K2"]
    row = body["rows"][0]
    assert set(row) == {"id", "rank", "display_name", "dataset", "agent", "model", "effort", "sandbox", "b1", "b2",
                        "b3", "b4", "mean", "intervals", "instances_scored", "task_count", "published_at",
                        "confirmed_attempts", "scored_attempts", "coverage", "complete", "trust", "scored_at", "url",
                        "moderation_url", "entry_url",
                        "cost_per_task_usd", "cost_source", "tokens_per_task", "tokens_source", "consistency"}
    assert row["intervals"]["b3"][0] <= row["b3"] <= row["intervals"]["b3"][1]
    text = client.get("/leaderboard/export.csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["display_name"] for r in rows] == ["Codex GPT-X", "Kimi K2"]
    assert float(rows[0]["b3"]) == pytest.approx(row["b3"]) and rows[0]["b3_ci_low"] == str(row["intervals"]["b3"][0])
    for secret in ("secret-agent", "rejected-agent", "alice@"):
        assert secret not in text and secret not in str(body)


def test_unpublished_and_rejected_runs_have_no_public_page(client, board, maintainer):
    from leaderboard.models import LeaderboardEntry

    entry = LeaderboardEntry.objects.get(submission=board["weak"])
    assert client.get(f"/leaderboard/entries/{entry.id}/").status_code == 200
    services.run_review_unpublish(submission_id=board["weak"].id, actor=maintainer.user, reason="x")
    assert client.get(f"/leaderboard/entries/{entry.id}/").status_code == 404
    assert "Kimi K2" not in client.get("/leaderboard/").content.decode()
    assert client.get("/api/v1/leaderboard").json()["count"] == 1


def test_filters_by_dataset_and_domain(client, board):
    other = client.get("/api/v1/leaderboard?dataset=seed31415").json()
    assert [r["display_name"] for r in other["rows"]] == ["Codex on 31415"]
    assert client.get("/api/v1/leaderboard?dataset=seed7").status_code == 404
    math = client.get("/api/v1/leaderboard?domain=math").json()
    whole = client.get("/api/v1/leaderboard").json()
    assert math["count"] == 2 and all(r["task_count"] == 2 and r["instances_scored"] == 8 for r in math["rows"])
    assert math["rows"][0]["b1"] != whole["rows"][0]["b1"]
    unknown = client.get("/api/v1/leaderboard?domain=astronomy")  # no such domain in the catalog
    assert unknown.status_code == 400 and unknown.json()["code"] == "unknown_domain"
    page = client.get("/leaderboard/?dataset=seed42&domain=math").content.decode()
    assert "Kimi K2" in page and "B3 across agents · Math" in page


def test_rows_sort_by_any_column(client, board):
    def names(query: str) -> list[str]:
        return [r["display_name"] for r in client.get(f"/api/v1/leaderboard?{query}").json()["rows"]]

    assert names("sort=mean&dir=desc") == ["Codex GPT-X", "Kimi K2"]
    assert names("sort=mean&dir=asc") == ["Kimi K2", "Codex GPT-X"]
    assert names("sort=name&dir=desc") == ["Kimi K2", "Codex GPT-X"]
    assert names("sort=agent") == ["Codex GPT-X", "Kimi K2"]
    page = client.get("/leaderboard/?sort=b3&dir=asc").content.decode()
    assert page.index("Kimi K2") < page.index("Codex GPT-X") or page.index("Codex GPT-X") < page.index("Kimi K2")
    assert 'href="?dataset=seed42&amp;sort=b3&amp;dir=desc"' in page


def test_the_row_page_breaks_down_by_domain_and_task_with_provenance(client, board):
    row = client.get("/api/v1/leaderboard").json()["rows"][0]
    page = client.get(row["url"]).content.decode()
    assert "Codex GPT-X" in page
    for text in ("chemistry", "biology", "math.task_2", "Provenance", "os (20 results)", "docker_container",
                 "engine 1.0.0", "r1"):
        assert text in page, text
    assert "alice@" not in page


def test_the_cache_is_invalidated_on_publish_and_unpublish(client, board, maintainer, catalog, submitter,
                                                           django_capture_on_commit_callbacks):
    assert client.get("/api/v1/leaderboard").json()["count"] == 2  # warm the cache
    late = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], agent="late", model="m"))
    assert client.get("/api/v1/leaderboard").json()["count"] == 2  # not published: cache still right
    with django_capture_on_commit_callbacks(execute=True):
        services.run_review_publish(submission_id=late.id, actor=maintainer.user, display_name="Late")
    assert client.get("/api/v1/leaderboard").json()["count"] == 3
    assert "Late" in client.get("/leaderboard/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        services.run_review_unpublish(submission_id=late.id, actor=maintainer.user, reason="x")
    assert client.get("/api/v1/leaderboard").json()["count"] == 2
    assert "Late" not in client.get("/leaderboard/export.csv").content.decode()


REVIEW_URLS = ["/leaderboard/review/", "/leaderboard/review/{id}/"]
ACTION_URLS = ["/leaderboard/review/{id}/publish", "/leaderboard/review/{id}/reject",
               "/leaderboard/review/{id}/rescore", "/leaderboard/review/{id}/unpublish"]


@pytest.mark.parametrize("who", ["visitor", "submitter", "other_user"])
def test_non_maintainers_cannot_reach_the_queue_or_any_action(client, board, who, request):
    from leaderboard.models import ReviewAction

    if who != "visitor":
        client.force_login(request.getfixturevalue(who).user)
    before = ReviewAction.objects.count()
    target = board["hidden"].id
    for url in REVIEW_URLS:
        assert client.get(url.format(id=target)).status_code == 404
    for url in ACTION_URLS:
        response = client.post(url.format(id=target), {"display_name": "X", "reason": "y"})
        assert response.status_code == 404, url
    assert ReviewAction.objects.count() == before
    assert "secret-agent" not in client.get("/leaderboard/").content.decode()


def test_the_maintainer_queue_shows_scored_runs_with_flags_and_actions(client, board, maintainer):
    client.force_login(maintainer.user)
    queue = client.get("/leaderboard/review/").content.decode()
    assert "secret-agent" in queue and "bob@lab.example" in queue and "rejected-agent" not in queue
    assert "Codex GPT-X" not in queue  # published runs are under their own tab
    assert "codex" in client.get("/leaderboard/review/?tab=published").content.decode()
    detail = client.get(f"/leaderboard/review/{board['hidden'].id}/").content.decode()
    for text in ('data-testid="publish"', 'data-testid="reject"', 'data-testid="rescore"', "No integrity flags",
                 "hard gate failed" if "hard gate failed" in detail else "Per-result scores"):
        assert text in detail
    response = client.post(f"/leaderboard/review/{board['hidden'].id}/publish", {"display_name": "Secret agent"})
    assert response.status_code == 302
    assert "Secret agent" in client.get("/leaderboard/").content.decode()
    detail = client.get(f"/leaderboard/review/{board['hidden'].id}/").content.decode()
    assert "publish as “Secret agent”" in detail and "maya@asibench.example" in detail


def test_the_owner_reads_the_reason_and_the_audit_log_on_the_run_page(client, board, other_user):
    client.force_login(other_user.user)
    page = client.get(f"/submit/submissions/{board['rejected'].id}").content.decode()
    assert 'data-testid="reject-reason"' in page and "Reason: copied" in page
    assert 'data-testid="audit-log"' in page and "reject" in page
    assert 'data-testid="run-flags"' not in page


def test_the_json_export_is_paginated(client, board):
    assert client.get("/api/v1/leaderboard?limit=0").status_code == 400
    assert client.get("/api/v1/leaderboard?offset=-1").status_code == 400
    assert client.get("/api/v1/leaderboard?limit=abc").json()["code"] == "bad_page"
    whole = client.get("/api/v1/leaderboard").json()
    assert whole["count"] >= 2 and whole["limit"] == 100
    second = client.get("/api/v1/leaderboard?limit=1&offset=1").json()
    assert second["count"] == whole["count"]
    assert second["rows"] == whole["rows"][1:2]


def test_any_number_of_distinct_limit_and_offset_values_keeps_a_bounded_number_of_cache_keys(client, board):
    cache.clear()  # the test cache is a file per key: count the files
    whole = client.get("/api/v1/leaderboard").json()
    before = len(cache._list_cache_files())  # type: ignore[attr-defined]
    for k in range(150):
        limit, offset = 1 + k % 7, k // 7
        body = client.get(f"/api/v1/leaderboard?limit={limit}&offset={offset}").json()
        assert (body["limit"], body["offset"], body["count"]) == (limit, offset, whole["count"])
        assert body["rows"] == whole["rows"][offset:offset + limit]
    assert client.get("/api/v1/leaderboard?offset=1000000&limit=1000").json()["rows"] == []
    assert len(cache._list_cache_files()) - before <= 2  # type: ignore[attr-defined]
