"""The agent × task heatmap and a published run's per-task and per-domain figures: published scores only."""

import re

import pytest

from leaderboard import services
from leaderboard.models import LeaderboardEntry
from scoring.aggregation import ScoredResult, aggregate
from scoring.models import ScoringRun
from tests.leaderboard.factories import LEVELS, RunSpec, profile_score, scored_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def board(catalog, submitter, other_user, maintainer):
    """Two published runs on seed42 (one with a newer, unpublished scoring), one on seed31415, one scored
    and never published, one rejected."""
    def run(owner, ds, agent, k):
        return scored_run(RunSpec(owner=owner.user, instances=catalog[ds], agent=agent, model="m",
                                  score=lambda t, lv: profile_score(k, t, lv)))

    runs = {"strong": run(submitter, "seed42", "codex", 0), "weak": run(other_user, "seed42", "kimi", 5),
            "other_ds": run(submitter, "seed31415", "codex", 1), "hidden": run(other_user, "seed42", "secret-agent", 2),
            "rejected": run(other_user, "seed42", "rejected-agent", 3)}
    for key, name in (("strong", "Codex <b>X</b>"), ("weak", "Kimi K2"), ("other_ds", "Codex on 31415")):
        services.run_review_publish(submission_id=runs[key].id, actor=maintainer.user, display_name=name)
    services.run_review_reject(submission_id=runs["rejected"].id, actor=maintainer.user, reason="copied")
    # A later scoring of the strong run (a rescore) that nobody has published: every task at 99.
    results = [ScoredResult(i.instance_id, i.task_id, lv, 1, True, 99.0) for i in catalog["seed42"] for lv in LEVELS]
    ScoringRun.objects.create(submission=runs["strong"], number=2, status="complete", aggregate=aggregate(results))
    return runs


def published(run) -> dict:
    return LeaderboardEntry.objects.get(submission=run).tasks


def table_rows(html: str) -> dict[str, list[str]]:
    """{run name: [cell texts]} from the heatmap's table."""
    rows = {}
    for row in re.findall(r'<tr data-testid="heatmap-row">(.*?)</tr>', html, re.S):
        name = re.search(r'<th scope="row"><a [^>]*>(.*?)</a></th>', row).group(1)
        rows[name] = re.findall(r'<td class="num">([^<]*)</td>', row)
    return rows


def test_the_heatmap_shows_published_runs_against_tasks_and_nothing_else(client, board, catalog):
    html = client.get("/leaderboard/heatmap/").content.decode()
    tasks = sorted(i.task_id for i in catalog["seed42"])
    header = re.findall(r'<th scope="col" class="num"><a href="/tasks/([^/]+)/">', html)
    assert header == sorted(tasks, key=lambda t: (t.split(".")[0], t))
    rows = table_rows(html)
    assert list(rows) == ["Codex &lt;b&gt;X&lt;/b&gt;", "Kimi K2"]  # best mean first, names escaped
    strong = published(board["strong"])
    assert rows["Codex &lt;b&gt;X&lt;/b&gt;"] == [f"{strong[t]['mean']:.1f}" for t in header]
    for hidden in ("secret-agent", "rejected-agent", "Codex on 31415", "99.0", "<b>X</b>"):
        assert hidden not in html, hidden
    svg = re.search(r"<svg.*?</svg>", html, re.S).group(0)
    cells = re.findall(r'<rect [^>]*><title>([^<]*)</title></rect>', svg)
    assert len(cells) == 2 * len(tasks)
    assert f"Kimi K2 · {header[0]}: {published(board['weak'])[header[0]]['mean']:.1f}" in cells


def test_a_level_and_a_domain_can_be_chosen(client, board):
    html = client.get("/leaderboard/heatmap/?value=b3&domain=chemistry").content.decode()
    rows = table_rows(html)
    weak = published(board["weak"])
    chemistry = sorted(t for t in weak if t.startswith("chemistry."))
    assert rows["Kimi K2"] == [f"{weak[t]['levels']['b3']:.1f}" for t in chemistry]
    assert "math." not in re.search(r"<table.*?</table>", html, re.S).group(0)
    assert "B3 per task, seed42 · Chemistry" in html
    # An unknown figure falls back to the mean; unknown filters are refused like the board's.
    assert table_rows(client.get("/leaderboard/heatmap/?value=b9").content.decode()) == table_rows(
        client.get("/leaderboard/heatmap/").content.decode())
    assert client.get("/leaderboard/heatmap/?domain=alchemy").status_code == 400
    assert client.get("/leaderboard/heatmap/?dataset=seed7").status_code == 404


def test_the_heatmap_is_linked_from_the_board_and_empty_datasets_say_so(client, catalog):
    assert 'data-testid="heatmap-link"' in client.get("/leaderboard/").content.decode()
    assert 'data-testid="heatmap-empty"' in client.get("/leaderboard/heatmap/").content.decode()


def test_the_run_page_breaks_down_per_task_and_domain_with_published_scores_only(client, board):
    entry = LeaderboardEntry.objects.get(submission=board["strong"])
    html = client.get(f"/leaderboard/entries/{entry.id}/").content.decode()
    by_task = re.search(r'data-testid="entry-tasks">(.*?)</table>', html, re.S).group(1)
    for task, figures in entry.tasks.items():
        row = re.search(rf"<code>{re.escape(task)}</code></a></td>(.*?)</tr>", by_task, re.S).group(1)
        cells = re.findall(r'<td class="num">(?:<strong>)?([^<]*)', row)
        assert cells == [f"{figures['levels'][lv]:.1f}" for lv in LEVELS] + [f"{figures['mean']:.1f}"], task
    by_domain = re.search(r'data-testid="entry-domains">(.*?)</table>', html, re.S).group(1)
    chemistry = [t for t in entry.tasks if t.startswith("chemistry.")]
    b1 = sum(entry.tasks[t]["levels"]["b1"] for t in chemistry) / len(chemistry)
    row = re.search(r"<td>Chemistry</td>(.*?)</tr>", by_domain, re.S).group(1)
    assert re.findall(r'<td class="num">([^<]*)</td>', row)[:2] == [str(len(chemistry)), f"{b1:.1f}"]
    assert "99.0" not in html  # the newer scoring is not published
