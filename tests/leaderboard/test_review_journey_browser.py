"""Issue 32's review journey in headless Chromium against gunicorn: the queue names the incomplete run, the
maintainer publishes the complete one, overrides for the partial one with a public reason, draws a spot
validation, the owner attaches the re-run, it passes and the label becomes official; the public board ranks the
complete run only and lists the partial one apart. Screenshots under var/test-output/."""

import pytest

from leaderboard.models import LeaderboardEntry, SpotValidation
from tests.leaderboard.factories import RunSpec, _outputs, make_catalog, scored_run
from tests.support import browser_login, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_review_journey(portal_server, page, browser, submitter, other_user, maintainer):
    catalog = make_catalog()
    complete = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], model="opus",
                                  score=lambda t, lv: 100.0))
    partial = scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"][:2], model="sonnet",
                                 score=lambda t, lv: 100.0))

    browser_login(page, portal_server, maintainer)
    page.goto(f"{portal_server.url}/leaderboard/review/")
    assert page.locator("[data-testid=queue-incomplete]").count() == 1
    screenshot(page, "review-queue-coverage")
    page.check(f"[data-testid=select-{complete.id}]")
    page.check(f"[data-testid=select-{partial.id}]")
    page.click("[data-testid=bulk-submit]")
    page.wait_for_selector("text=so nothing was published")
    assert LeaderboardEntry.objects.count() == 0

    page.goto(f"{portal_server.url}/leaderboard/review/{complete.id}/")
    page.fill("[data-testid=display-name]", "Claude Code · Opus")
    page.click("[data-testid=publish]")
    page.wait_for_selector("text=Published on the leaderboard.")

    page.goto(f"{portal_server.url}/leaderboard/review/{partial.id}/")
    assert "8 of 20 task-levels" in page.locator("[data-testid=publish-incomplete]").inner_text()
    page.check("[data-testid=override-incomplete]")
    page.fill("[data-testid=public-reason]", "A two-task pilot, listed for reference.")
    screenshot(page, "review-detail-incomplete")
    page.click("[data-testid=publish]")
    page.wait_for_selector("text=Published on the leaderboard.")

    page.goto(f"{portal_server.url}/leaderboard/review/{complete.id}/")
    page.fill("[data-testid=spot-k]", "3")
    page.click("[data-testid=spot-draw]")
    page.wait_for_selector("text=Spot validation drawn: 3 result(s)")
    validation = SpotValidation.objects.get(submission=complete)

    owner = browser.new_page(viewport={"width": 1280, "height": 900})
    browser_login(owner, portal_server, submitter)
    owner.goto(f"{portal_server.url}/submit/submissions/{complete.id}")
    assert validation.seed_sha256 in owner.locator("[data-testid=spot-validation]").inner_text()
    screenshot(owner, "review-spot-owner")
    rerun = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], model="rerun",
                               outputs=lambda base, level: _outputs(complete.id, base), score=lambda t, lv: 100.0))
    owner.fill("[data-testid=spot-rerun]", str(rerun.id))
    owner.click("[data-testid=spot-attach]")
    owner.wait_for_selector("text=the spot validation is passed")
    owner.close()

    page.goto(f"{portal_server.url}/leaderboard/review/{complete.id}/")
    assert page.locator("[data-testid=spot-state]").inner_text() == "passed"
    page.select_option("[data-testid=trust-select]", "official")
    page.fill("[data-testid=trust-reason]", f"Spot validation #{validation.id} passed.")
    page.click("[data-testid=trust-submit]")
    page.wait_for_selector("text=Trust label set")
    screenshot(page, "review-detail-spot-passed")

    visitor = browser.new_page(viewport={"width": 1280, "height": 900})
    visitor.goto(f"{portal_server.url}/leaderboard/")
    assert visitor.locator("[data-testid=board-row]").count() == 1
    assert visitor.locator("[data-testid=trust-badge]").inner_text() == "official"
    assert "1 incomplete run" in visitor.locator("[data-testid=incomplete-note]").inner_text()
    # The board fits a laptop's window whole, coverage, label and attempts included: nothing to scroll.
    assert visitor.evaluate("() => { const box = document.querySelector('.table-scroll');"
                            " return box.scrollWidth - box.clientWidth; }") <= 0
    screenshot(visitor, "board-ranked-complete-only")
    visitor.click("[data-testid=incomplete-link]")
    visitor.wait_for_selector("[data-testid=unranked-note]")
    assert "40%" in visitor.locator("[data-testid=coverage]").inner_text()
    screenshot(visitor, "board-incomplete-apart")
    visitor.close()
