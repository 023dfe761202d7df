"""The official asibench 0.2.0 `submit` uploads a run produced by our `asibench run` to our Portal, unchanged."""

import json
import re
import shutil
from pathlib import Path

import pytest

from portal.submissions.models import Submission
from tests.support import OUR_CLI, issue_token, run_cli, strip_ansi

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


DOCKER_SANDBOX = {
    "requested_mode": "os", "effective_mode": "os", "enforcement_status": "fail_closed",
    "verification_status": "docker_container", "image_identity": "sha256:" + "4e7d" * 16,
}


def as_docker_provenance(results: Path, dest: Path) -> Path:
    """The official client bundles only results whose provenance says Docker (`--sandbox os`).

    This run is made with our linux_ns sandbox and its provenance stamped as a Docker run would
    record it; every other byte is our `asibench run` output. A genuine `--sandbox os` run is
    submitted in test_official_client_os_run.py.
    """
    shutil.copytree(results, dest)
    stamped = 0
    for result_file in dest.glob("*/*.json"):
        data = json.loads(result_file.read_text())
        if not isinstance(data, dict) or "result_schema_version" not in data:
            continue  # trajectories, model-call logs: not results
        assert data["provenance"]["sandbox"]["effective_mode"] == "linux_ns", result_file
        data["provenance"]["sandbox"] = DOCKER_SANDBOX
        result_file.write_text(json.dumps(data, indent=2))
        stamped += 1
    assert stamped == 8, f"expected the 8 results of the reference run, stamped {stamped}"
    return dest


def test_official_submit_uploads_a_draft_and_prints_the_confirm_url(
    official_client, portal_server, submit_catalog, submitter, run_results, cli_home, tmp_path
):
    results = as_docker_provenance(run_results["reference"], tmp_path / "results")
    env = {**cli_home, "ASIBENCH_SUBMIT_TOKEN": issue_token(submitter.user)}
    done = run_cli([str(official_client), "submit", "--results-dir", str(results), "--endpoint", portal_server.url,
                    "--note", "interop"], env, timeout=300)
    out = strip_ansi(done.stdout + done.stderr)
    assert done.returncode == 0, out
    match = re.search(r"(http://127\.0\.0\.1:\d+/submit/submissions/[0-9a-f-]{36})", out)
    assert match, out
    run = Submission.objects.get()
    assert match.group(1) == f"{portal_server.url}/submit/submissions/{run.id}"
    assert run.status == "draft" and run.owner_id == submitter.user.id
    assert run.sandbox == "os" and run.note == "interop" and run.framework_version == "0.2.0"
    assert run.entries.count() == 8 and run.incomplete_instances == []
    # Each entry keeps the provenance its result recorded: the stamped sandbox, our run's agent.
    originals = {path.stem: json.loads(path.read_text()) for path in results.glob("*/*.json")}
    for entry in run.entries.all():
        recorded = originals[entry.base_name]["provenance"]
        assert entry.provenance["sandbox"] == DOCKER_SANDBOX
        assert entry.provenance["agent"] == recorded["agent"]
        # Our run's provenance.client passes through the official client's bundle untouched.
        assert entry.provenance["client"] == recorded["client"] == {"name": "asibench-portal-cli", "version": "0.1.0"}
    assert run.client_label == "asibench-portal-cli 0.1.0"


def test_an_official_resubmit_of_a_published_run_says_so_without_a_draft_banner(
    official_client, portal_server, submit_catalog, submitter, maintainer, run_results, cli_home, tmp_path
):
    from leaderboard.models import RunReview

    results = as_docker_provenance(run_results["reference"], tmp_path / "results")
    env = {**cli_home, "ASIBENCH_SUBMIT_TOKEN": issue_token(submitter.user)}
    argv = [str(official_client), "submit", "--results-dir", str(results), "--endpoint", portal_server.url]
    first = run_cli(argv, env, timeout=300)
    assert first.returncode == 0, strip_ansi(first.stdout + first.stderr)
    run = Submission.objects.get()
    Submission.objects.filter(id=run.id).update(status="scored", expires_at=None)
    RunReview.objects.create(submission=run, state="published", decided_by=maintainer.user)
    again = run_cli(argv, env, timeout=300)
    out = strip_ansi(again.stdout + again.stderr)
    assert again.returncode == 0, out
    url = f"{portal_server.url}/submit/submissions/{run.id}"
    assert f"nothing new was created: run {run.id} is scored and published on the leaderboard: {url}" in out
    assert "DRAFT" not in out and "confirm" not in out.lower()
    assert Submission.objects.count() == 1


def test_official_submit_is_refused_with_a_reason_when_the_token_is_wrong(
    official_client, portal_server, submit_catalog, run_results, cli_home, tmp_path
):
    results = as_docker_provenance(run_results["reference"], tmp_path / "results")
    env = {**cli_home, "ASIBENCH_SUBMIT_TOKEN": "asi_pat_" + "nope" * 10}
    done = run_cli([str(official_client), "submit", "--results-dir", str(results), "--endpoint", portal_server.url],
                   env, timeout=300)
    assert done.returncode != 0
    assert "401" in strip_ansi(done.stdout + done.stderr)
    assert Submission.objects.count() == 0


def test_our_submit_uploads_a_draft_and_a_resubmit_is_the_same_run(
    portal_server, submit_catalog, submitter, run_results, cli_home, tmp_path
):
    env = {**cli_home, "ASIBENCH_SUBMIT_TOKEN": issue_token(submitter.user)}
    argv = [*OUR_CLI, "submit", "--results-dir", str(run_results["reference"]), "--endpoint", portal_server.url]
    first = run_cli([*argv, "--output", str(tmp_path / "first.tar.gz")], env, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    run = Submission.objects.get()
    url = f"{portal_server.url}/submit/submissions/{run.id}"
    assert url in first.stdout and "UPLOAD COMPLETE" in first.stdout and "DRAFT" in first.stdout
    # Packed again (a new created_at, so new bytes): the Portal knows the result files, says so, makes no draft.
    second = run_cli(argv, env, timeout=300)
    assert second.returncode == 0, second.stdout + second.stderr
    assert Submission.objects.count() == 1
    assert f"ALREADY SUBMITTED — the Portal already has these results as run {run.id} (draft)" in second.stdout
    assert url in second.stdout and "It is still a DRAFT" in second.stdout
    assert "UPLOAD COMPLETE" not in second.stdout
    assert not list(run_results["reference"].glob("submission_*")), "no bundle is left in the results dir"
