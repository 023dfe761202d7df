"""The published asibench 0.2.0 client, in its own venv, against our live Portal."""

from pathlib import Path

import pytest

from portal.accounts.models import CliToken
from portal.accounts.services import cli_token_revoke
from tests.support import OUR_CLI, issue_token, run_cli, strip_ansi

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_official_login_accepts_our_token_and_status_shows_it(official_client, portal_server, submitter, cli_home):
    token = issue_token(submitter.user)
    result = run_cli([str(official_client), "login", "--endpoint", portal_server.url], cli_home, stdin=token + "\n")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Signed in as {submitter.email}" in strip_ansi(result.stdout)
    status = strip_ansi(run_cli([str(official_client), "auth", "status"], cli_home).stdout)
    assert f"stored {portal_server.api}  as {submitter.email}  ({token[:12]}…" in status
    # Our client reads the login the official one saved, and the other way round.
    ours = run_cli([*OUR_CLI, "auth", "status"], cli_home).stdout
    assert f"stored {portal_server.api}  as {submitter.email}" in ours


def test_official_login_refuses_a_revoked_token(official_client, portal_server, submitter, cli_home):
    token = issue_token(submitter.user)
    cli_token_revoke(user=submitter.user, token_id=str(CliToken.objects.get().id))
    result = run_cli([str(official_client), "login", "--endpoint", portal_server.url], cli_home,
                     stdin=(token + "\n") * 3)
    assert result.returncode != 0
    assert "Portal rejected this token" in strip_ansi(result.stdout + result.stderr)
    assert not (Path(cli_home["ASIBENCH_CREDENTIALS_DIR"]) / "credentials").exists()


def test_official_client_reads_a_login_saved_by_our_cli(official_client, portal_server, submitter, cli_home):
    token = issue_token(submitter.user)
    assert run_cli([*OUR_CLI, "login", "--endpoint", portal_server.url], cli_home, stdin=token + "\n").returncode == 0
    status = strip_ansi(run_cli([str(official_client), "auth", "status"], cli_home).stdout)
    assert f"stored {portal_server.api}  as {submitter.email}  ({token[:12]}…" in status
    logout = run_cli([str(official_client), "logout", "--endpoint", portal_server.url], cli_home)
    assert "Signed out." in strip_ansi(logout.stdout)
    assert "Not logged in" in run_cli([*OUR_CLI, "auth", "status"], cli_home).stdout
