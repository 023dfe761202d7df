"""The submitter confirms a draft in the browser; the run is scored; owner and maintainer see their views."""

import pytest

from portal.submissions import services
from portal.submissions.models import Submission
from tests.support import browser_login, bundle_of, screenshot, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_confirm_in_the_browser_then_see_the_scores(
    portal_server, submit_catalog, submitter, maintainer, run_results, tmp_path, page, browser, celery_worker_process
):
    archive = bundle_of(run_results["reference"], tmp_path / "run.tar.gz")
    with archive.open("rb") as stream:
        run = services.submission_intake(user=submitter.user, stream=stream, content_length=None).submission
    browser_login(page, portal_server, submitter)
    page.goto(f"{portal_server.url}/submit/submissions/{run.id}")
    assert page.inner_text("[data-testid=run-status]") == "draft"
    assert "every file matches the manifest" in page.inner_text("[data-testid=integrity]")
    screenshot(page, "draft-report")
    page.click("[data-testid=confirm]")
    assert page.inner_text("[data-testid=run-status]") in ("queued", "scoring", "scored")
    wait_for(lambda: Submission.objects.get(id=run.id).status in ("scored", "failed"), 240, "scoring", interval=1)
    page.goto(f"{portal_server.url}/submit/submissions/{run.id}")
    assert page.inner_text("[data-testid=run-status]") == "scored"
    assert "Overall" in page.inner_text("[data-testid=aggregate]")
    assert page.query_selector("[data-testid=details]") is None, "per-result details are for maintainers"
    screenshot(page, "scored-run-owner")
    page.goto(f"{portal_server.url}/submit/dashboard")
    assert "scored" in page.inner_text("main")

    reviewer = browser.new_context().new_page()
    browser_login(reviewer, portal_server, maintainer)
    reviewer.goto(f"{portal_server.url}/submit/submissions/{run.id}")
    assert "counterpoise" in reviewer.inner_text("[data-testid=details]")
    screenshot(reviewer, "scored-run-maintainer")
    reviewer.context.close()
