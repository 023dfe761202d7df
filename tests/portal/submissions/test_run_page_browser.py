"""The owner's run page in headless Chromium against gunicorn: each state of a run (screenshots under
var/test-output/run-page-*.png), the queue banner leaving when scoring starts (without a reload), a
Confirm pressed after the session expired, and Withdraw / Revoke asking first, JavaScript or not."""

import pytest
from django.contrib.sessions.models import Session
from playwright.sync_api import expect

from config.celery import app
from portal.accounts.models import CliToken
from portal.accounts.services import cli_token_create
from portal.submissions.models import Submission
from tests.leaderboard.factories import make_catalog
from tests.portal.submissions.run_states import TASK_MEAN_OWNER, run_in_state
from tests.support import browser_login, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _no_scoring_left_behind():
    yield
    app.control.purge()  # Confirm queues a scoring message; no worker here takes it


@pytest.fixture
def instances():
    return make_catalog()["seed42"]


@pytest.mark.parametrize("expiry", ["session row", "session cookie"])
def test_a_confirm_after_the_session_expired_signs_in_and_asks_to_press_confirm_again(
        portal_server, page, submitter, instances, expiry):
    draft = run_in_state(submitter.user, instances, "draft")
    browser_login(page, portal_server, submitter)
    page.goto(f"{portal_server.url}/submit/submissions/{draft.id}")
    page.wait_for_selector("[data-testid=confirm]")
    # The session expires while the draft page is open: on the server, or in the browser.
    if expiry == "session row":
        Session.objects.all().delete()
    else:
        page.context.clear_cookies(name="sessionid")

    page.click("[data-testid=confirm]")
    page.wait_for_selector("input[name=login]")
    assert "/accounts/login/" in page.url
    assert Submission.objects.get(id=draft.id).status == "draft"
    page.fill("input[name=login]", submitter.email)
    page.fill("input[name=password]", submitter.password)
    page.click("button[type=submit]")

    note = page.wait_for_selector("[data-testid=confirm-again]")
    assert page.url == f"{portal_server.url}/submit/submissions/{draft.id}?confirm=again"
    assert "Not confirmed yet" in note.inner_text() and "again" in note.inner_text()
    assert page.text_content("[data-testid=run-status]").strip() == "draft"
    assert Submission.objects.get(id=draft.id).status == "draft", "signing in confirmed nothing"
    screenshot(page, f"run-page-confirm-again-{expiry.replace(' ', '-')}")

    page.click("[data-testid=confirm]")
    banner = page.wait_for_selector("[data-testid=queue-position]")
    assert "Confirmed: your run is in the scoring queue" in banner.inner_text()
    assert page.locator("[data-testid=confirm-again]").count() == 0
    assert Submission.objects.get(id=draft.id).status == "queued"


STATES = {
    "draft": {"status": "draft", "present": ["confirm", "withdraw"], "absent": ["queue-position", "review-state"]},
    "queued": {"status": "queued", "present": ["queue-position"], "absent": ["confirm", "review-state", "aggregate"]},
    "scoring": {"status": "scoring", "present": ["progress", "task-progress"],
                "absent": ["queue-position", "review-state", "confirm"]},
    "scored": {"status": "scored", "present": ["aggregate", "task-progress", "review-state"],
               "absent": ["queue-position", "reject-reason"], "review": "waiting for review"},
    "published": {"status": "scored", "present": ["aggregate", "task-progress", "review-state", "review-entry"],
                  "absent": ["queue-position", "reject-reason"], "review": "published"},
    "rejected": {"status": "scored", "present": ["aggregate", "task-progress", "review-state", "reject-reason"],
                 "absent": ["queue-position"], "review": "rejected"},
}


def test_the_run_page_in_each_state(portal_server, page, submitter, maintainer, instances):
    runs = {state: run_in_state(submitter.user, instances, state, maintainer=maintainer.user, model=f"model-{state}")
            for state in STATES}
    browser_login(page, portal_server, submitter)
    for state, expected in STATES.items():
        page.goto(f"{portal_server.url}/submit/submissions/{runs[state].id}")
        page.wait_for_selector("[data-testid=run-status]")
        assert page.text_content("[data-testid=run-status]").strip() == expected["status"], state
        for testid in expected["present"]:
            assert page.locator(f"[data-testid={testid}]").count() >= 1, f"{state}: no {testid}"
        for testid in expected["absent"]:
            assert page.locator(f"[data-testid={testid}]").count() == 0, f"{state}: {testid} shown"
        if "review" in expected:
            assert page.text_content("[data-testid=review-state]").strip() == expected["review"]
        if "task-progress" in expected["present"]:
            cells = page.locator("[data-testid=task-progress] td.num").all_inner_texts()
            assert TASK_MEAN_OWNER in cells and not any("." in c for c in cells), cells  # whole percents
        assert page.locator("script:not([src])").count() == 0, "no inline script (CSP)"
        screenshot(page, f"run-page-{state}")
    assert "another user" in page.text_content("[data-testid=reject-reason]")

    page.goto(f"{portal_server.url}/submit/dashboard")
    states = page.locator("[data-testid=run-review-state]").all_inner_texts()
    assert sorted(s.strip() for s in states) == ["published", "rejected", "waiting for review"]
    assert "another user" in page.text_content("[data-testid=run-review-reason]")
    screenshot(page, "run-page-my-runs")


def test_the_queue_banner_leaves_when_the_run_moves_on_without_a_reload(portal_server, page, submitter, instances):
    run = run_in_state(submitter.user, instances, "scored")
    Submission.objects.filter(id=run.id).update(status="queued")
    browser_login(page, portal_server, submitter)
    page.goto(f"{portal_server.url}/submit/submissions/{run.id}")
    page.wait_for_selector("[data-testid=queue-position]")
    page.evaluate("window.__notReloaded = true")

    Submission.objects.filter(id=run.id).update(status="scored")
    expect(page.locator("[data-testid=review-state]")).to_have_text("waiting for review", timeout=20_000)
    assert page.locator("[data-testid=queue-position]").count() == 0
    assert page.locator("[data-testid=task-progress]").count() == 1
    assert page.get_attribute("[data-testid=run-live]", "data-live") == "false"
    assert page.evaluate("window.__notReloaded") is True


@pytest.mark.parametrize("javascript", [True, False])
def test_withdraw_and_revoke_ask_first(portal_server, browser, submitter, instances, javascript):
    page = browser.new_context(java_script_enabled=javascript).new_page()
    draft = run_in_state(submitter.user, instances, "draft")
    token = cli_token_create(user=submitter.user, name="laptop").token
    browser_login(page, portal_server, submitter)

    page.goto(f"{portal_server.url}/submit/submissions/{draft.id}")
    page.click("[data-testid=withdraw]")
    page.wait_for_selector("[data-testid=confirm-action]")
    assert "is deleted from the Portal" in page.inner_text("[data-testid=confirm-action]")
    assert Submission.objects.get(id=draft.id).status == "draft"
    screenshot(page, f"run-page-withdraw-question{'' if javascript else '-nojs'}")
    page.click("[data-testid=confirm-action-cancel]")
    page.wait_for_selector("[data-testid=confirm]")
    assert Submission.objects.get(id=draft.id).status == "draft"
    page.click("[data-testid=withdraw]")
    page.click("[data-testid=confirm-action-submit]")
    expect(page.locator("[data-testid=run-status]")).to_have_text("withdrawn")
    assert "Draft withdrawn; its bundle was deleted." in page.inner_text(".messages")

    page.goto(f"{portal_server.url}/submit/settings")
    page.click("[data-testid=revoke]")
    page.wait_for_selector("[data-testid=confirm-action]")
    assert "“laptop”" in page.inner_text("[data-testid=confirm-action]")
    assert CliToken.objects.get(id=token.id).revoked_at is None
    page.click("[data-testid=confirm-action-submit]")
    page.wait_for_selector(".messages")
    assert "revoked" in page.inner_text("#cli-tokens")
    assert CliToken.objects.get(id=token.id).revoked_at is not None
    page.context.close()
