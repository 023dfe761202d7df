"""The publish journey and the public board in headless Chromium, against gunicorn."""

import pytest

from leaderboard.models import LeaderboardEntry, ReviewAction
from tests.leaderboard.factories import RunSpec, make_catalog, profile_score, published_in_bulk, scored_runs
from tests.support import browser_login, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_maintainer_publishes_from_the_queue_and_the_run_appears_with_charts(
        portal_server, page, submitter, other_user, maintainer):
    catalog = make_catalog()
    runs = scored_runs([RunSpec(owner=(submitter if k % 2 else other_user).user, instances=catalog["seed42"],
                                agent=agent, model=model, score=lambda t, lv, k=k: profile_score(k, t, lv))
                        for k, (agent, model) in enumerate([("claude-code", "opus"), ("codex", "gpt-5"),
                                                            ("kimi-code", "k2"), ("aider", "mixtral")])])
    published_in_bulk(runs[1:3], maintainer.user, lambda s: f"{s.agent} / {s.model}")
    target = runs[0]

    browser_login(page, portal_server, maintainer)
    page.goto(f"{portal_server.url}/leaderboard/review/")
    page.click(f"a[href='/leaderboard/review/{target.id}/']")
    page.wait_for_selector("[data-testid=actions]")
    assert page.locator("[data-testid=no-flags]").count() == 1
    page.fill("[data-testid=display-name]", "Claude Code · Opus")
    screenshot(page, "leaderboard-review-detail")
    page.click("[data-testid=publish]")
    page.wait_for_selector("text=Published on the leaderboard.")
    assert "publish as “Claude Code · Opus”" in page.locator("[data-testid=audit-log]").inner_text()

    page.goto(f"{portal_server.url}/leaderboard/")
    rows = page.locator("[data-testid=board-row]")
    assert rows.count() == 3
    assert "Claude Code · Opus" in page.locator("[data-testid=board]").inner_text()
    assert "aider" not in page.content()  # scored, never published
    assert page.locator("[data-testid=chart-b3] svg").count() == 1
    assert page.locator("[data-testid=chart-profile] svg polyline").count() == 4  # 3 runs + the average
    assert page.locator("small.ci").count() >= 15
    screenshot(page, "leaderboard-board")

    page.click("[data-testid=board] a:has-text('Claude Code · Opus')")
    page.wait_for_selector("[data-testid=provenance]")
    assert "Chemistry" in page.locator("[data-testid=entry-domains]").inner_text()
    screenshot(page, "leaderboard-entry")

    entry = LeaderboardEntry.objects.get(submission=target)
    assert entry.display_name == "Claude Code · Opus"
    assert ReviewAction.objects.filter(submission=target, kind="publish", actor=maintainer.user.id).exists()
