"""A run's progress from Confirm to score: the run page (live without reloads, and without JavaScript),
the dashboard, the JSON API and `asibench submit --wait`, against gunicorn, a real Celery worker,
bubblewrap and headless Chromium.

The steps between states are driven by the very services the worker calls (claiming a run, scoring
one instance), so every intermediate state lasts until the test has seen it; the real worker then
finishes the run from where it stands.
"""

import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import requests
from playwright.sync_api import expect

from config.celery import app
from portal.submissions import scoring_runs
from portal.submissions import services as submissions
from portal.submissions.models import Submission
from portal.submissions.scoring_tasks import scoring_run_start_task
from tests.support import (
    VENV_BIN,
    browser_login,
    confirmed_run,
    issue_token,
    screenshot,
    start_celery_worker,
    stop_celery_worker,
    wait_for,
    wait_until_scored,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _empty_queue():
    app.control.purge()
    yield
    app.control.purge()


class WaitingCli:
    """`asibench submit --wait` running in the background; its output read as it comes."""

    def __init__(self, results: Path, server_url: str, token: str, env: dict[str, str], log: Path):
        self.log = log
        self.handle = log.open("w")
        self.proc = subprocess.Popen(
            [str(VENV_BIN / "asibench"), "submit", "--results-dir", str(results), "--endpoint", server_url,
             "--token", token, "--wait", "--poll-interval", "0.3", "--wait-timeout", "600"],
            env=env, stdout=self.handle, stderr=subprocess.STDOUT, text=True)

    def output(self) -> str:
        return self.log.read_text()

    def wait_for_line(self, fragment: str, timeout: float = 60) -> None:
        wait_for(lambda: fragment in self.output(), timeout, f"the CLI to print {fragment!r}: {self.output()[-600:]}")

    def finish(self, timeout: float = 120) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.handle.close()


def results_copy(results: Path, dest: Path) -> Path:
    """`submit` writes its bundle into the results dir: keep the session's shared results clean."""
    shutil.copytree(results, dest)
    return dest


def new_draft(owner) -> Submission:  # noqa: ANN001
    wait_for(lambda: Submission.objects.filter(owner=owner.user, status="draft").exists(), 120, "the upload")
    return Submission.objects.get(owner=owner.user, status="draft")


def live_text(page) -> str:  # noqa: ANN001
    try:
        return page.text_content("[data-testid=run-live]", timeout=5_000) or ""
    except Exception:  # the page is in the middle of refreshing itself
        return ""


def first_instance_scored_shows_everywhere(page, dashboard, no_js, cli, api: str, token: str,  # noqa: ANN001
                                           draft: Submission) -> None:
    """Our run is claimed and its first instance scored: the run page, the dashboard, the no-JS page, the CLI
    and the API each show 4 of 8, with that task's partial score."""
    run = scoring_runs.scoring_run_start(submission_id=str(draft.id))
    first, second = scoring_runs.scoring_run_pending_instances(run)
    scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=first)
    first_task = first.split("__")[0]
    # The page may have refreshed while the instance's results were being stored one by one.
    expect(page.locator("[data-testid=progress]")).to_contain_text("Scored 4 of 8", timeout=20_000)
    rows = page.text_content("[data-testid=task-progress]")
    # The owner sees whole percents (maintainers see decimals).
    assert re.search(re.escape(first_task) + r"\s*4 of 4\s*\d+(?![\d.])", rows), rows
    assert page.evaluate("window.__notReloaded") is True
    screenshot(page, "run-progress-partial")
    dashboard.wait_for_selector("[data-testid=run-task-progress]", timeout=20_000)
    assert "scored 4 of 8" in dashboard.text_content("[data-testid=run-progress]")
    assert first_task in dashboard.text_content("[data-testid=run-task-progress]")
    cli.wait_for_line("scored 4 of 8")
    state = requests.get(api, headers={"Authorization": f"Bearer {token}"}, timeout=30).json()
    assert state["status"] == "scoring" and state["queue_position"] is None
    assert state["progress"] == {"scored": 4, "total": 8}
    partial = {t["task_id"]: t for t in state["tasks"]}
    assert partial[first_task]["scored"] == 4 and partial[first_task]["percent"] >= 95
    assert all(t["percent"] is None and t["scored"] == 0 for k, t in partial.items() if k != first_task)
    wait_for(lambda: "Scored 4 of 8" in live_text(no_js), 30, "the no-JS page to show the progress")


def test_the_run_page_dashboard_api_and_cli_follow_a_run_to_its_score(
    portal_server, submit_catalog, submitter, other_user, run_results, tmp_path, browser, page, cli_home
):
    earlier = confirmed_run(other_user, run_results["naive"], tmp_path / "other")  # first in the queue
    token = issue_token(submitter.user)
    cli = WaitingCli(results_copy(run_results["reference"], tmp_path / "results"), portal_server.url, token,
                     cli_home, tmp_path / "cli.log")
    worker = None
    try:
        draft = new_draft(submitter)
        cli.wait_for_line("Waiting for you to confirm the draft")

        # Confirm in the browser: second in the queue.
        browser_login(page, portal_server, submitter)
        page.goto(f"{portal_server.url}/submit/submissions/{draft.id}")
        page.click("[data-testid=confirm]")
        page.wait_for_selector("[data-testid=queue-position]")
        assert "position 2 of 2" in page.text_content("[data-testid=queue-position]")
        assert page.locator("script[src*='portal/live.js']").count() == 1
        assert page.locator("script:not([src])").count() == 0, "no inline script (CSP)"
        page.evaluate("window.__notReloaded = true")
        cli.wait_for_line("Queued for scoring: position 2 of 2")

        dashboard = page.context.new_page()
        dashboard.goto(f"{portal_server.url}/submit/dashboard")
        assert "position 2 of 2" in dashboard.text_content("[data-testid=run-queue-position]")
        dashboard.evaluate("window.__notReloaded = true")

        no_js = browser.new_context(java_script_enabled=False).new_page()
        browser_login(no_js, portal_server, submitter)
        no_js.goto(f"{portal_server.url}/submit/submissions/{draft.id}")
        assert "position 2 of 2" in live_text(no_js)
        assert no_js.locator("noscript").count() >= 1

        api = f"{portal_server.api}/submissions/{draft.id}"
        state = requests.get(api, headers={"Authorization": f"Bearer {token}"}, timeout=30).json()
        assert state["status"] == "queued" and state["queue_position"] == 2 and state["queued_total"] == 2
        assert state["progress"] == {"scored": 0, "total": 8} and state["levels"] is None

        # The earlier run leaves the queue: ours moves up, on the page without a reload.
        scoring_runs.scoring_run_start(submission_id=str(earlier.id))
        # expect(), not wait_for_function: a string predicate is eval'd in the page, which the CSP forbids.
        expect(page.locator("[data-testid=queue-position]")).to_contain_text("position 1 of 1", timeout=20_000)
        assert page.evaluate("window.__notReloaded") is True
        expect(dashboard.locator("[data-testid=run-queue-position]")).to_contain_text("position 1 of 1",
                                                                                     timeout=20_000)
        assert dashboard.evaluate("window.__notReloaded") is True
        cli.wait_for_line("Queued for scoring: position 1 of 1")
        # Without JavaScript the page refreshes itself (meta refresh inside <noscript>).
        wait_for(lambda: "position 1 of 1" in live_text(no_js), 30, "the no-JS page to refresh itself")

        first_instance_scored_shows_everywhere(page, dashboard, no_js, cli, api, token, draft)

        # A real worker finishes both runs from where they stand.
        worker = start_celery_worker("progress", concurrency=2)
        for submission in (earlier, draft):
            scoring_run_start_task.delay(str(submission.id))
        assert wait_until_scored(draft).status == "scored"
        assert cli.finish() == 0, cli.output()
        # The last fragment carries the final scores and stops the updates: still no reload.
        page.wait_for_selector("[data-testid=aggregate]", timeout=30_000)
        assert page.text_content("[data-testid=run-status]").strip() == "scored"
        assert page.evaluate("window.__notReloaded") is True
        assert page.get_attribute("[data-testid=run-live]", "data-live") == "false"
        expect(dashboard.locator("[data-testid=run-progress]")).to_have_count(0, timeout=30_000)
        assert dashboard.evaluate("window.__notReloaded") is True
        screenshot(page, "run-progress-scored")
    finally:
        if worker is not None:
            stop_celery_worker(worker)
        if cli.proc.poll() is None:
            cli.proc.kill()
    output = cli.output()
    assert "Scoring [###############...............] scored 4 of 8" in output, output
    assert re.search(r"Scored: overall \d+(?![\d.])", output) and "B1 " in output, output
    final = requests.get(api, headers={"Authorization": f"Bearer {token}"}, timeout=30).json()
    assert final["status"] == "scored" and final["progress"] == {"scored": 8, "total": 8}
    assert final["overall_score"] == math.floor(Submission.objects.get(id=draft.id).overall_score + 0.5)
    assert set(final["levels"]) == {"b1", "b2", "b3", "b4"} and all(v >= 95 for v in final["levels"].values())


@pytest.mark.parametrize("ending", ["withdrawn", "failed"])
def test_submit_wait_exits_non_zero_when_the_run_will_never_be_scored(
    portal_server, submit_catalog, submitter, run_results, tmp_path, cli_home, ending
):
    token = issue_token(submitter.user)
    cli = WaitingCli(results_copy(run_results["naive"], tmp_path / "results"), portal_server.url, token, cli_home,
                     tmp_path / "cli.log")
    try:
        draft = new_draft(submitter)
        cli.wait_for_line("Waiting for you to confirm the draft")
        if ending == "withdrawn":
            submissions.submission_withdraw(user=submitter.user, submission_id=str(draft.id))
        else:
            submissions.submission_confirm(user=submitter.user, submission_id=str(draft.id))
            run = scoring_runs.scoring_run_start(submission_id=str(draft.id))
            scoring_runs.scoring_run_fail(scoring_run_id=run.id, reason="infrastructure error: storage unreachable")
        code = cli.finish(timeout=60)
    finally:
        if cli.proc.poll() is None:
            cli.proc.kill()
    output = cli.output()
    assert code == 1, output
    if ending == "withdrawn":
        assert "Error: The draft was withdrawn: Withdrawn by the submitter." in output
    else:
        assert "Error: Scoring failed: infrastructure error: storage unreachable" in output


def test_the_progress_api_is_the_owners_alone(portal_server, submit_catalog, submitter, other_user, run_results,
                                              tmp_path):
    run = confirmed_run(submitter, run_results["naive"], tmp_path)
    url = f"{portal_server.api}/submissions/{run.id}"
    mine = requests.get(url, headers={"Authorization": f"Bearer {issue_token(submitter.user)}"}, timeout=30)
    assert mine.status_code == 200 and mine.json()["submission_id"] == str(run.id)
    assert set(mine.json()) >= {"status", "status_reason", "queue_position", "queued_total", "progress", "tasks",
                                "overall_score", "levels", "confirm_url"}
    theirs = requests.get(url, headers={"Authorization": f"Bearer {issue_token(other_user.user)}"}, timeout=30)
    assert theirs.status_code == 404 and theirs.json()["code"] == "not_found"
    assert requests.get(url, timeout=30).status_code in (401, 403)
    live = requests.get(f"{portal_server.url}/submit/submissions/{run.id}/live", timeout=30, allow_redirects=False)
    assert live.status_code == 302 and "/accounts/login/" in live.headers["Location"]


def test_the_upload_reply_adds_a_status_url(portal_server, submit_catalog, submitter, run_results, tmp_path):
    from tests.support import bundle_of

    archive = bundle_of(run_results["naive"], tmp_path / "naive.tar.gz")
    reply = requests.post(f"{portal_server.api}/submissions/bundle", data=archive.read_bytes(), timeout=120,
                          headers={"Authorization": f"Bearer {issue_token(submitter.user)}",
                                   "Content-Type": "application/gzip"}).json()
    assert reply["status_url"] == f"{portal_server.api}/submissions/{reply['submission_id']}"
    assert {"submission_id", "status", "integrity_ok", "incomplete_instances", "message", "confirm_url",
            "created"} <= set(reply), "the contract's fields stay"
    assert os.path.basename(reply["confirm_url"]) == reply["submission_id"]
