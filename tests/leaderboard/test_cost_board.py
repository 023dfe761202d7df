"""What a score cost, on the public board: cost and tokens per task in the HTML, CSV and JSON (sortable, each
with its source, unknown shown as unknown), the cost–score chart's points, Pareto front and unplaced runs, and
the same figures per domain."""

from __future__ import annotations

import csv
import io
import re

import pytest

from leaderboard import selectors, services
from leaderboard.costs import cost_score_data, pareto_front
from leaderboard.models import LeaderboardEntry
from tests.leaderboard.factories import RunSpec, scored_run
from tests.usage_bundles import Call, claude_jsonl, not_recorded, official, ours, sonnet_cost, usage_for

pytestmark = pytest.mark.django_db

CHEAP = [Call(output=100, cache_read=0, cache_write=0)]
DEAR = [Call(input=20_000, output=5000, cache_read=0, cache_write=0)] * 3


def recorded(calls: list[Call], math_calls: list[Call] | None = None):
    def usage(task: str, level: str) -> dict:
        chosen = math_calls if math_calls is not None and task.startswith("math.") else calls
        return usage_for(ours(claude_jsonl(chosen), "b"))
    return usage


@pytest.fixture
def board(catalog, submitter, other_user, maintainer):
    """Four published runs on seed42: cheap and good, dear and worse (dominated), self-reported only, none."""
    def publish(owner, agent, score, usage, name):
        run = scored_run(RunSpec(owner=owner.user, instances=catalog["seed42"], agent=agent,
                                 score=lambda t, lv: score, usage=usage))
        services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name=name)
        return LeaderboardEntry.objects.get(submission=run)

    return {
        "cheap": publish(submitter, "cheap-agent", 60.0, recorded(CHEAP, math_calls=DEAR), "Cheap and good"),
        "dear": publish(other_user, "dear-agent", 40.0, recorded(DEAR), "Dear and worse"),
        "stated": publish(submitter, "stated-agent", 70.0,
                          lambda t, lv: usage_for(official(claude_jsonl(CHEAP), "b")), "Official client run"),
        "none": publish(other_user, "silent-agent", 50.0, lambda t, lv: usage_for(not_recorded()), "No usage data"),
    }


CHEAP_COST = sonnet_cost(CHEAP[0])
DEAR_COST = 3 * sonnet_cost(DEAR[0])


def board_rows(client, **params) -> dict[str, dict]:
    body = client.get("/api/v1/leaderboard", params).json()
    return {r["display_name"]: r for r in body["rows"]}


def test_the_json_rows_carry_cost_and_tokens_per_task_with_their_sources(client, board):
    rows = board_rows(client)
    # 3 of the 5 tasks are cheap, the 2 math tasks dear: the mean is over all 20 results.
    assert rows["Cheap and good"]["cost_per_task_usd"] == pytest.approx((12 * CHEAP_COST + 8 * DEAR_COST) / 20)
    assert rows["Cheap and good"]["cost_source"] == "trajectory"
    assert rows["Dear and worse"]["tokens_per_task"] == 3 * 25_000 and rows["Dear and worse"]["tokens_source"] == \
        "trajectory"
    # The official client's bundle states tokens (self-reported) and no cost.
    assert rows["Official client run"]["tokens_per_task"] == 1100
    assert rows["Official client run"]["tokens_source"] == "self-reported"
    assert (rows["Official client run"]["cost_per_task_usd"], rows["Official client run"]["cost_source"]) == \
        (None, "unknown")
    silent = rows["No usage data"]
    assert (silent["cost_per_task_usd"], silent["cost_source"], silent["tokens_per_task"], silent["tokens_source"]) \
        == (None, "unknown", None, "unknown")


def test_the_board_page_shows_unknown_never_zero(client, board):
    page = client.get("/leaderboard/").content.decode()
    assert "$ / task" in page and "Tokens / task" in page
    table = page.split('data-testid="board"')[1].split("</table>")[0]
    cells = dict(zip(re.findall(r'href="/leaderboard/entries/\d+/">([^<]+)</a>', table),
                     re.findall(r'data-testid="cost-per-task"[^>]*>(.*?)</td>', table), strict=True))
    assert "unknown" in cells["No usage data"] and "unknown" in cells["Official client run"]
    assert "trajectory" in cells["Cheap and good"] and "$0." in cells["Cheap and good"]
    assert "$0<" not in page and ">$0.0<" not in page
    tokens = re.findall(r'data-testid="tokens-per-task">(.*?)</td>', page)
    assert any("1.1k" in t and "self-reported" in t for t in tokens)
    assert sum("unknown" in t for t in tokens) == 1


def test_cost_and_tokens_sort_cheapest_first_with_unknown_last_either_way(client, board):
    order = [r["display_name"] for r in client.get("/api/v1/leaderboard?sort=cost").json()["rows"]]
    assert order[:2] == ["Cheap and good", "Dear and worse"] and set(order[2:]) == {"Official client run",
                                                                                     "No usage data"}
    order = [r["display_name"] for r in client.get("/api/v1/leaderboard?sort=cost&dir=desc").json()["rows"]]
    assert order[:2] == ["Dear and worse", "Cheap and good"]
    order = [r["display_name"] for r in client.get("/api/v1/leaderboard?sort=tokens").json()["rows"]]
    assert order == ["Official client run", "Cheap and good", "Dear and worse", "No usage data"]
    page = client.get("/leaderboard/?sort=cost").content.decode()
    assert page.index("Cheap and good") < page.index("Dear and worse")
    assert 'href="?dataset=seed42&amp;sort=cost&amp;dir=desc"' in page  # the active column's header flips it


def test_the_csv_has_the_columns_and_leaves_unknown_empty(client, board):
    rows = {r["display_name"]: r for r in csv.DictReader(io.StringIO(
        client.get("/leaderboard/export.csv").content.decode()))}
    assert float(rows["Dear and worse"]["cost_per_task_usd"]) == pytest.approx(DEAR_COST)
    assert rows["Dear and worse"]["cost_source"] == "trajectory"
    assert (rows["No usage data"]["cost_per_task_usd"], rows["No usage data"]["cost_source"]) == ("", "unknown")
    assert rows["Official client run"]["tokens_source"] == "self-reported"


def test_a_domains_board_shows_that_domains_cost(client, board):
    math = board_rows(client, domain="math")
    assert math["Cheap and good"]["cost_per_task_usd"] == pytest.approx(DEAR_COST)
    chemistry = board_rows(client, domain="chemistry")
    assert chemistry["Cheap and good"]["cost_per_task_usd"] == pytest.approx(CHEAP_COST)
    assert chemistry["No usage data"]["cost_per_task_usd"] is None


def test_the_chart_places_runs_with_cost_data_and_draws_the_pareto_front(client, board):
    data = cost_score_data(selectors.board_rows(selectors.BoardQuery(dataset="seed42")), "mean")
    assert [(p["display_name"], p["front"]) for p in data["points"]] == [("Cheap and good", True),
                                                                        ("Dear and worse", False)]
    assert {u["display_name"]: u["why"] for u in data["unplaced"]} == {
        "Official client run": "no cost data", "No usage data": "no cost data"}
    page = client.get("/leaderboard/cost/").content.decode()
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert "1. Cheap and good" in svg and "2. Dear and worse" in svg and "log scale" in svg
    assert "Official client run" not in svg and "No usage data" not in svg  # listed, not placed
    listed = page[page.index('data-testid="cost-unplaced"'):]
    assert "Official client run</a> (no cost data)" in listed and "No usage data</a> (no cost data)" in listed
    table = page[page.index('data-testid="cost-chart-table"'):page.index("</table>", page.index("cost-chart-table"))]
    assert table.count('data-testid="cost-chart-row"') == 2 and "trajectory" in table
    b3 = client.get("/leaderboard/cost/?value=b3").content.decode()
    assert "B3 against $ per task" in b3
    assert "Mean against $ per task" in client.get("/leaderboard/cost/?value=<script>").content.decode()


def test_the_board_page_has_the_chart_and_its_table(client, board):
    page = client.get("/leaderboard/").content.decode()
    assert page.count('data-testid="cost-chart"') == 1 and "Mean against $ per task" in page
    assert 'data-testid="cost-unplaced"' in page


def test_the_pareto_front_keeps_only_runs_nothing_beats():
    points = [(1.0, 50.0), (2.0, 60.0), (2.0, 55.0), (0.5, 40.0), (3.0, 60.0), (0.5, 30.0), (4.0, 90.0)]
    assert pareto_front(points) == {0, 1, 3, 6}
    assert pareto_front([]) == set() and pareto_front([(1.0, 1.0)]) == {0}


def test_the_entry_page_shows_each_figure_with_its_source_and_the_prices_used(client, board):
    page = client.get(f"/leaderboard/entries/{board['cheap'].id}/").content.decode()
    start = page.index('data-testid="run-usage"')
    table = page[start:page.index("</table>", start)]
    cost = table[table.index('data-testid="usage-cost_usd"'):]
    assert "trajectory" in cost[:cost.index("</tr>")] and "20 of 20" in cost[:cost.index("</tr>")]
    calls = table[table.index('data-testid="usage-model_calls"'):]
    calls = calls[:calls.index("</tr>")]
    assert ">1.8<" in calls and ">36<" in calls and "trajectory" in calls  # 12 results of 1 call, 8 of 3
    prices = page[page.index('data-testid="usage-prices"'):]
    assert "<code>claude-sonnet-4-5</code> at $3.00 / $15.00 per million" in prices and "as of 2025-11-15" in prices
    assert 'href="https://docs.anthropic.com/en/docs/about-claude/pricing"' in prices


def test_visitors_read_unknown_for_runs_without_data(client, board):
    silent = client.get(f"/leaderboard/entries/{board['none'].id}/").content.decode()
    table = silent[silent.index('data-testid="run-usage"'):]
    for figure in ("input_tokens", "output_tokens", "model_calls", "turns", "tool_calls", "cost_usd"):
        row = table[table.index(f'data-testid="usage-{figure}"'):]
        row = row[:row.index("</tr>")]
        assert "unknown" in row and "0 of 20" in row, figure
    assert "$0" not in table
    stated = client.get(f"/leaderboard/entries/{board['stated'].id}/").content.decode()
    tokens = stated[stated.index('data-testid="usage-input_tokens"'):]
    assert "self-reported" in tokens[:tokens.index("</tr>")]
    entry = client.get(f"/api/v1/leaderboard/entries/{board['none'].id}").json()
    assert entry["usage"]["figures"]["cost_usd"] == {"total": None, "per_result": None, "results": 0,
                                                     "source": "unknown"}


def test_a_run_published_before_usage_was_kept_says_it_records_nothing(client, board):
    LeaderboardEntry.objects.filter(id=board["none"].id).update(usage={})
    page = client.get(f"/leaderboard/entries/{board['none'].id}/").content.decode()
    assert 'data-testid="usage-unknown"' in page and "unknown (not zero)" in page
