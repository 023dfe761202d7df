"""Issue 30, "the first hour of a real user", against a live Portal: log in once with --endpoint, then
pull, submit and submit again without naming the Portal; a wrong token is refused before packing."""

import pytest

from cli_client.errors import ExitStatus
from portal.submissions.models import Submission
from tests.support import OUR_CLI, SUBMIT_TASKS, issue_token, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_one_login_then_every_command_talks_to_that_portal(portal_server, submit_catalog, submitter, run_results,
                                                           cli_home, tmp_path):
    token = issue_token(submitter.user)
    login = run_cli([*OUR_CLI, "login", "--endpoint", portal_server.url], cli_home, stdin=token + "\n")
    assert login.returncode == ExitStatus.OK, login.stderr

    status = run_cli([*OUR_CLI, "auth", "status"], cli_home)
    assert f"Commands talk to {portal_server.api} (from the saved login" in status.stdout

    pulled = run_cli([*OUR_CLI, "task", "pull", "--repo", "seed42", "--tasks", SUBMIT_TASKS[0],
                      "--output-dir", str(tmp_path / "inst")], cli_home, timeout=300)
    assert pulled.returncode == ExitStatus.OK, pulled.stderr
    assert [p.name for p in (tmp_path / "inst").iterdir()] == [f"{SUBMIT_TASKS[0]}__seed42"]

    results = run_results["reference"]
    before = sorted(p.name for p in results.iterdir())
    first = run_cli([*OUR_CLI, "submit", "--results-dir", str(results)], cli_home, timeout=300)
    assert first.returncode == ExitStatus.OK, first.stdout + first.stderr
    run = Submission.objects.get()
    assert run.owner_id == submitter.user.id
    assert f"Uploading to {portal_server.api}/submissions/bundle" in first.stdout and "UPLOAD COMPLETE" in first.stdout

    again = run_cli([*OUR_CLI, "submit", "--results-dir", str(results)], cli_home, timeout=300)
    assert again.returncode == ExitStatus.OK, again.stdout + again.stderr
    assert f"ALREADY SUBMITTED — the Portal already has these results as run {run.id} (draft)" in again.stdout
    assert Submission.objects.count() == 1
    assert sorted(p.name for p in results.iterdir()) == before, "submit leaves nothing in the results dir"


def test_a_revoked_token_is_refused_before_anything_is_packed(portal_server, submit_catalog, submitter, run_results,
                                                              cli_home):
    from portal.accounts.models import CliToken
    from portal.accounts.services import cli_token_revoke

    token = issue_token(submitter.user)
    cli_token_revoke(user=submitter.user, token_id=str(CliToken.objects.get().id))
    done = run_cli([*OUR_CLI, "submit", "--results-dir", str(run_results["reference"]), "--endpoint",
                    portal_server.url, "--token", token], cli_home, timeout=300)
    assert done.returncode == ExitStatus.ERROR
    assert done.stderr.strip() == (f"Error: The Portal at {portal_server.url} refused the token (This token has been "
                                   "revoked): run `asibench login`, or pass --token / set ASIBENCH_SUBMIT_TOKEN. "
                                   "Nothing was packed or uploaded.")
    assert "Bundle" not in done.stdout and Submission.objects.count() == 0
