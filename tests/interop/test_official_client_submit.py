"""The official asibench 0.2.0 `submit` uploads a run produced by our `asibench run` to our Portal, unchanged."""

import hashlib
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


def test_our_submit_uploads_a_draft_and_a_resubmit_is_keyed_by_its_bytes(
    portal_server, submit_catalog, submitter, run_results, cli_home, tmp_path
):
    env = {**cli_home, "ASIBENCH_SUBMIT_TOKEN": issue_token(submitter.user)}
    archive = tmp_path / "ours.tar.gz"
    argv = [*OUR_CLI, "submit", "--results-dir", str(run_results["reference"]), "--endpoint", portal_server.url,
            "--output", str(archive)]
    first = run_cli(argv, env, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    first_digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    run = Submission.objects.get()
    assert f"{portal_server.url}/submit/submissions/{run.id}" in first.stdout
    assert "DRAFT" in first.stdout
    second = run_cli(argv, env, timeout=300)
    assert second.returncode == 0, second.stdout + second.stderr
    # The Portal keys drafts by archive bytes; a rebuilt bundle carries a new created_at (one-second
    # resolution), so it is the same draft exactly when the rebuilt archive is byte-identical.
    if hashlib.sha256(archive.read_bytes()).hexdigest() == first_digest:
        assert Submission.objects.count() == 1
        assert f"{portal_server.url}/submit/submissions/{run.id}" in second.stdout
    else:
        newer = Submission.objects.exclude(id=run.id).get()
        assert f"{portal_server.url}/submit/submissions/{newer.id}" in second.stdout
