"""`asibench task submit` — the official 0.2.0 client and ours — against the live Portal."""

import io
import os

import pytest

from proposals.models import Proposal, ProposalFile
from tests.proposals.proposal_support import local_hashes
from tests.support import OUR_CLI, issue_token, run_cli, strip_ansi

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("clean_proposal_storage")]


def submit(argv_prefix: list[str], task_dir, server, env, *extra: str):
    done = run_cli([*argv_prefix, "task", "submit", "--task-dir", str(task_dir), "--endpoint", server.url, *extra],
                   env, timeout=180)
    return done.returncode, strip_ansi(done.stdout + done.stderr)


@pytest.fixture(params=["official", "ours"])
def client_argv(request, official_client) -> list[str]:
    return [str(official_client)] if request.param == "official" else list(OUR_CLI)


def test_task_submit_syncs_the_exact_file_set_and_its_hash_check_passes(
        portal_server, client_argv, submitter, task_dir, cli_home):
    env = {**cli_home, "ASIBENCH_SUBMIT_TOKEN": issue_token(submitter.user)}
    code, out = submit(client_argv, task_dir, portal_server, env)
    assert code == 0, out
    expected = local_hashes(task_dir)
    assert f"DRAFT UPLOAD COMPLETE — {len(expected)} files synchronized" in out
    assert "Portal completeness: 100%" in out
    proposal = Proposal.objects.get(owner=submitter.user)
    assert f"{portal_server.url}/submit/proposals/{proposal.id}" in out
    assert dict(ProposalFile.objects.filter(proposal=proposal).values_list("path", "sha256")) == expected
    assert "data/nested/notes.csv" in expected
    assert (proposal.status, proposal.name) == ("draft", "Eigenvalues of a symmetric matrix (template — rename)")

    # A second run reuses the draft and follows local deletions exactly.
    (task_dir / "data" / "nested" / "notes.csv").unlink()
    code, out = submit(client_argv, task_dir, portal_server, env)
    assert code == 0, out
    assert Proposal.objects.filter(owner=submitter.user).count() == 1
    assert dict(ProposalFile.objects.filter(proposal=proposal).values_list("path", "sha256")) == local_hashes(task_dir)


def test_browser_edits_make_the_next_sync_a_conflict_until_forced(
        portal_server, client_argv, submitter, task_dir, cli_home):
    import hashlib

    from proposals import services
    from proposals.files import IncomingFile

    env = {**cli_home, "ASIBENCH_SUBMIT_TOKEN": issue_token(submitter.user)}
    assert submit(client_argv, task_dir, portal_server, env)[0] == 0
    proposal = Proposal.objects.get(owner=submitter.user)
    data = b"# Edited in the browser\n"
    services.proposal_file_write(user=submitter.user, proposal_id=proposal.id, files=[
        IncomingFile("prompt_b1.md", io.BytesIO(data), len(data), hashlib.sha256(data).hexdigest())])
    code, out = submit(client_argv, task_dir, portal_server, env)
    assert code == 1 and "HTTP 409" in out and "--force-file-sync" in out
    assert f"/submit/proposals/{proposal.id}" in out
    assert ProposalFile.objects.get(proposal=proposal, path="prompt_b1.md").sha256 == hashlib.sha256(data).hexdigest()
    code, out = submit(client_argv, task_dir, portal_server, env, "--force-file-sync")
    assert code == 0, out
    assert dict(ProposalFile.objects.filter(proposal=proposal).values_list("path", "sha256")) == local_hashes(task_dir)


def test_client_side_refusals_happen_before_any_network_traffic(portal_server, submitter, task_dir, cli_home):
    env = {**cli_home, "ASIBENCH_SUBMIT_TOKEN": issue_token(submitter.user)}
    os.symlink(task_dir / "prompt_b1.md", task_dir / "linked.md")
    code, out = submit(OUR_CLI, task_dir, portal_server, env)
    assert code == 1 and "may not be symlinks: linked.md" in out
    (task_dir / "linked.md").unlink()
    (task_dir / "run.sh").write_text("echo hi\n")
    code, out = submit(OUR_CLI, task_dir, portal_server, env)
    assert code == 1 and "Task file type .sh is not supported: run.sh" in out
    (task_dir / "run.sh").unlink()
    (task_dir / "task_submission.yaml").write_text("local_testing_done: false\n")
    code, out = submit(OUR_CLI, task_dir, portal_server, env)
    assert code == 1 and "local_testing_done: true" in out
    assert Proposal.objects.count() == 0


def test_a_task_id_without_a_domain_is_refused_by_the_portal(portal_server, official_client, submitter, task_dir,
                                                           cli_home):
    meta = task_dir / "task_meta.yaml"
    meta.write_text(meta.read_text().replace("id: physics.toy_spectrum", "id: toy_spectrum"))
    env = {**cli_home, "ASIBENCH_SUBMIT_TOKEN": issue_token(submitter.user)}
    code, out = submit([str(official_client)], task_dir, portal_server, env)
    assert code == 1 and "HTTP 400: Invalid task id 'toy_spectrum'" in out
    assert Proposal.objects.count() == 0


def test_task_submit_prints_why_a_step_is_missing_as_the_draft_page_does(
        portal_server, client_argv, submitter, task_dir, cli_home):
    """Issue 30: `Missing: Local testing` alone did not say that B3 scored 55, not below 40."""
    from proposals.selectors import completeness

    evidence = task_dir / "task_submission.yaml"
    evidence.write_text(evidence.read_text().replace("score: 31", "score: 55"))
    env = {**cli_home, "ASIBENCH_SUBMIT_TOKEN": issue_token(submitter.user)}
    code, out = submit(client_argv, task_dir, portal_server, env)
    assert code == 0, out
    assert "Missing: Local testing" in out
    proposal = Proposal.objects.get(owner=submitter.user)
    (step,) = [s for s in completeness(proposal)["steps"] if not s["done"]]
    reason = "B3 scored 55, not below 40: the task is too easy without the method (B3 and B4 must stay below 40)"
    assert step["needs"] == [reason]
    if client_argv == list(OUR_CLI):
        # The page's own words, from the one definition both read (proposals.selectors.completeness).
        assert f"  Local testing: needs {reason}" in out
    page = portal_server.url + f"/submit/proposals/{proposal.id}"
    assert page in out
