"""Our `asibench login/logout/auth status` against a live Portal (gunicorn subprocess)."""

import json
import subprocess
from pathlib import Path

import pytest

from portal.accounts.services import cli_token_revoke, device_grant_pending_for_code
from tests.support import OUR_CLI, REPO, browser_login, issue_token, run_cli, screenshot, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def saved(env: dict[str, str]) -> dict:
    return json.loads((Path(env["ASIBENCH_CREDENTIALS_DIR"]) / "credentials").read_text())


def test_login_validates_and_saves_a_pasted_token(portal_server, submitter, cli_home):
    token = issue_token(submitter.user)
    result = run_cli([*OUR_CLI, "login", "--endpoint", portal_server.url], cli_home, stdin=token + "\n")
    assert result.returncode == 0, result.stderr
    assert f"Signed in as {submitter.email}" in result.stdout
    creds = saved(cli_home)
    assert list(creds) == [portal_server.api]
    assert creds[portal_server.api]["token"] == token
    assert creds[portal_server.api]["user"]["id"] == str(submitter.user.id)
    mode = (Path(cli_home["ASIBENCH_CREDENTIALS_DIR"]) / "credentials").stat().st_mode & 0o777
    assert mode == 0o600
    status = run_cli([*OUR_CLI, "auth", "status"], cli_home)
    assert f"stored {portal_server.api}  as {submitter.email}  ({token[:12]}…" in status.stdout


def test_login_refuses_a_revoked_token_and_saves_nothing(portal_server, submitter, cli_home):
    token = issue_token(submitter.user)
    from portal.accounts.models import CliToken

    cli_token_revoke(user=submitter.user, token_id=str(CliToken.objects.get().id))
    result = run_cli([*OUR_CLI, "login", "--endpoint", portal_server.url], cli_home, stdin=token + "\n" * 3)
    assert result.returncode == 1
    assert "This token has been revoked." in result.stderr
    assert not (Path(cli_home["ASIBENCH_CREDENTIALS_DIR"]) / "credentials").exists()


def test_logout_forgets_one_endpoint_or_all(portal_server, submitter, cli_home):
    token = issue_token(submitter.user)
    run_cli([*OUR_CLI, "login", "--endpoint", portal_server.url], cli_home, stdin=token + "\n")
    env = {**cli_home, "ASIBENCH_SUBMIT_ENDPOINT": portal_server.url + "/submit/settings#cli-tokens"}
    result = run_cli([*OUR_CLI, "logout"], env)
    assert result.stdout.strip() == "Signed out."
    assert saved(cli_home) == {}
    run_cli([*OUR_CLI, "login", "--endpoint", portal_server.url], cli_home, stdin=token + "\n")
    result = run_cli([*OUR_CLI, "logout", "--all"], cli_home)
    assert result.stdout.strip() == "Signed out."
    assert not (Path(cli_home["ASIBENCH_CREDENTIALS_DIR"]) / "credentials").exists()
    assert "Not logged in" in run_cli([*OUR_CLI, "auth", "status"], cli_home).stdout


def test_login_refuses_a_url_that_is_not_a_portal(cli_home):
    result = run_cli([*OUR_CLI, "login", "--endpoint", "https://h.example/submit/proposals/p1"], cli_home)
    assert result.returncode == 1
    assert "not a recognized ASI-Bench Portal URL" in result.stderr


def test_env_token_takes_precedence_in_status(cli_home):
    env = {**cli_home, "ASIBENCH_SUBMIT_TOKEN": "asi_pat_abcdefghijklmnop"}
    assert "ASIBENCH_SUBMIT_TOKEN = asi_pat_abcd…  (takes precedence)" in run_cli([*OUR_CLI, "auth", "status"],
                                                                                 env).stdout


def test_device_login_end_to_end_with_approval_in_chromium(portal_server, submitter, cli_home, page):
    proc = subprocess.Popen(
        [*OUR_CLI, "login", "--device", "--endpoint", portal_server.url],
        env=cli_home, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        first_line = proc.stdout.readline()
        assert "enter the code" in first_line, first_line
        user_code = first_line.rsplit(" ", 1)[-1].strip()
        browser_login(page, portal_server, submitter)
        page.goto(f"{portal_server.url}/submit/activate")
        page.fill("input[name=code]", user_code)
        page.click("text=Continue")
        assert page.inner_text("[data-testid=client-name]") == "asibench-cli"
        screenshot(page, "device-approval")
        page.click("button[value=approve]")
        assert "CLI is signed in" in page.inner_text("[data-testid=device-result]")
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert f"Signed in as {submitter.email}" in out
    token = saved(cli_home)[portal_server.api]["token"]
    assert token.startswith("asi_pat_")
    status = run_cli([*OUR_CLI, "auth", "status"], cli_home)
    assert submitter.email in status.stdout


def test_device_login_stops_when_denied(portal_server, submitter, cli_home):
    from django.test import Client

    proc = subprocess.Popen(
        [*OUR_CLI, "login", "--device", "--endpoint", portal_server.url],
        env=cli_home, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    user_code = proc.stdout.readline().rsplit(" ", 1)[-1].strip()
    browser = Client()
    browser.force_login(submitter.user)
    # Deny only once the CLI is polling, so the test covers a denial seen by a waiting client.
    wait_for(lambda: device_grant_pending_for_code(user_code).last_polled_at, 30, "the CLI's first poll")
    browser.post("/submit/activate", {"code": user_code, "decision": "deny"})
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "denied in the browser" in err
    assert not (Path(cli_home["ASIBENCH_CREDENTIALS_DIR"]) / "credentials").exists()
