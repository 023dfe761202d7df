"""The official asibench 0.2.0 `task pull`, unchanged, pulls our datasets through the Hub endpoint
(`HF_ENDPOINT=<portal>/hf`), byte for byte what our own `task pull` gives; its run is submitted and scored,
and the draft report says whether each result's inputs are ours."""

import json
import os
import shutil
from pathlib import Path

import pytest

from cli_client.remote.instance_fetch import MARKER
from portal.submissions import services as submissions
from portal.submissions.models import Submission
from tests.support import (
    OUR_CLI,
    REFERENCE_AGENT,
    agent_results,
    bundle_of,
    cli_env,
    issue_token,
    run_cli,
    strip_ansi,
    wait_until_scored,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
TASK = "chemistry.counterpoise_cbs_energies"
DOCKER_SANDBOX = {
    "requested_mode": "os", "effective_mode": "os", "enforcement_status": "fail_closed",
    "verification_status": "docker_container", "image_identity": "sha256:" + "4e7d" * 16,
}


def hf_env(portal_url: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in cli_env(home).items() if not k.startswith(("HF_", "HUGGING"))}
    env.update(HF_ENDPOINT=f"{portal_url}/hf", HF_HOME=str(home / "hf"), HF_HUB_DISABLE_TELEMETRY="1",
               HF_HUB_DISABLE_PROGRESS_BARS="1")
    return env


def official_pull(client: Path, portal_url: str, home: Path, out: Path, *extra: str) -> str:
    done = run_cli([str(client), "task", "pull", "--output-dir", str(out), *extra], hf_env(portal_url, home),
                   timeout=300)
    text = strip_ansi(done.stdout + done.stderr)
    assert done.returncode == 0, text
    return text


def our_pull(portal_url: str, home: Path, out: Path, *extra: str) -> None:
    done = run_cli([*OUR_CLI, "task", "pull", "--output-dir", str(out), "--endpoint", portal_url, *extra],
                   cli_env(home), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def files_of(root: Path) -> dict[str, bytes]:
    """Every file below root by relative path, without our client's own bookkeeping marker."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != MARKER}


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {p.relative_to(root).as_posix(): (p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*")}


def test_official_pull_of_seed42_is_ours_byte_for_byte_and_never_holds_a_reference(
    official_client, portal_server, submit_catalog, tmp_path
):
    text = official_pull(official_client, portal_server.url, tmp_path / "home", tmp_path / "official",
                         "--repo", "seed42")
    assert "Pulled from Apexintelligence-AI/ASI-Bench-seed42" in text and "instances: 2" in text, text
    our_pull(portal_server.url, tmp_path / "ours-home", tmp_path / "ours", "--repo", "seed42")
    official, ours = files_of(tmp_path / "official"), files_of(tmp_path / "ours")
    assert official == ours
    assert {name.split("/")[0] for name in official} == {f"{TASK}__seed42", "robotics.minimum_snap_trajectory__seed42"}
    # Nothing private anywhere: not in the output, not in huggingface_hub's cache.
    for path in tmp_path.rglob("*"):
        assert "reference" not in path.name and path.name != "instance_meta.json", path
    assert list((tmp_path / "home" / "hf" / "hub").glob("datasets--Apexintelligence-AI--ASI-Bench-seed42/blobs/*"))

    # A second pull is a no-op: nothing rewritten, in the output or in the cache.
    before = snapshot(tmp_path / "official"), snapshot(tmp_path / "home" / "hf")
    again = official_pull(official_client, portal_server.url, tmp_path / "home", tmp_path / "official",
                          "--repo", "seed42")
    assert "skipped (already present, use --overwrite): 2" in again, again
    assert (snapshot(tmp_path / "official"), snapshot(tmp_path / "home" / "hf")) == before


def test_official_pull_of_seed31415_with_tasks_carries_the_public_references(
    official_client, portal_server, submit_catalog, tmp_path
):
    text = official_pull(official_client, portal_server.url, tmp_path / "home", tmp_path / "official",
                         "--repo", "seed31415", "--tasks", TASK)
    assert "instances: 1" in text and "references: public" in text, text
    our_pull(portal_server.url, tmp_path / "ours-home", tmp_path / "ours", "--repo", "seed31415", "--tasks", TASK)
    official = files_of(tmp_path / "official")
    assert official == files_of(tmp_path / "ours")
    assert {name.split("/")[0] for name in official} == {f"{TASK}__seed31415"}
    assert any(name.startswith(f"{TASK}__seed31415/reference/") for name in official)


def test_an_unknown_revision_is_a_clear_failure_of_the_official_client(
    official_client, portal_server, submit_catalog, tmp_path
):
    done = run_cli([str(official_client), "task", "pull", "--repo", "seed42", "--revision", "f" * 40,
                    "--output-dir", str(tmp_path / "out")], hf_env(portal_server.url, tmp_path / "home"), timeout=120)
    text = strip_ansi(done.stdout + done.stderr)
    assert done.returncode != 0 and "Revision" in text and "not found" in text, text
    assert not list((tmp_path / "out").glob("*"))


def as_docker_provenance(results: Path) -> int:
    """The official client bundles only Docker (`--sandbox os`) results; its `--agent-cmd` cannot run in
    Docker, so this run (made with `--sandbox none`) is stamped as one. Every other byte is its own."""
    stamped = 0
    for result_file in results.glob("*/*.json"):
        data = json.loads(result_file.read_text())
        if isinstance(data, dict) and "result_schema_version" in data:
            data["provenance"]["sandbox"] = DOCKER_SANDBOX
            result_file.write_text(json.dumps(data, indent=2))
            stamped += 1
    return stamped


def test_the_official_client_pulls_runs_and_submits_and_the_run_is_scored(
    official_client, portal_server, submit_catalog, submitter, celery_worker_process, tmp_path
):
    instances = tmp_path / "instances"
    official_pull(official_client, portal_server.url, tmp_path / "home", instances, "--repo", "seed42")
    env = {**hf_env(portal_server.url, tmp_path / "home"), "ASIBENCH_SUBMIT_TOKEN": issue_token(submitter.user)}
    results = tmp_path / "results"
    ran = run_cli([str(official_client), "run", "--instances-dir", str(instances), "--agent-cmd", REFERENCE_AGENT,
                   "--sandbox", "none", "--prompt-levels", "b1,b3", "--output-dir", str(results)], env, timeout=900)
    assert ran.returncode == 0, strip_ansi(ran.stdout + ran.stderr)
    assert as_docker_provenance(results) == 4
    sent = run_cli([str(official_client), "submit", "--results-dir", str(results), "--endpoint", portal_server.url],
                   env, timeout=300)
    assert sent.returncode == 0, strip_ansi(sent.stdout + sent.stderr)
    run = Submission.objects.get()
    assert run.framework_version == "0.2.0" and run.entries.count() == 4
    # Its results name no client of their own: shown as the official client's.
    assert (run.client_name, run.client_label) == ("", "asibench 0.2.0 (official client)")
    # The official client records no input digest: said so, per instance, not guessed.
    assert {check["state"] for check in run.report["inputs"].values()} == {"not_recorded"}
    assert set(run.report["inputs"]) == {f"{TASK}__seed42", "robotics.minimum_snap_trajectory__seed42"}
    submissions.submission_confirm(user=submitter.user, submission_id=str(run.id))
    scored = wait_until_scored(run, timeout=600)
    assert scored.status == "scored", scored.status_reason
    assert scored.overall_score is not None and scored.overall_score > 50


def test_our_run_on_an_official_pull_records_inputs_that_match_and_other_inputs_are_flagged(
    official_client, portal_server, submit_catalog, submitter, tmp_path
):
    instances = tmp_path / "instances"
    official_pull(official_client, portal_server.url, tmp_path / "home", instances, "--repo", "seed42")
    # The official dataset's inputs for the same task id differ from ours: stand them in with other data.
    foreign = tmp_path / "foreign"
    shutil.copytree(instances, foreign)
    data_file = next(p for p in sorted((foreign / f"{TASK}__seed42" / "data").rglob("*")) if p.is_file())
    os.chmod(data_file, 0o644)
    data_file.write_bytes(data_file.read_bytes() + b"\n")
    for name, source in (("ours", instances), ("foreign", foreign)):
        results = agent_results(source, tmp_path / f"{name}-results", REFERENCE_AGENT, levels="b1")
        archive = bundle_of(results, tmp_path / f"{name}.tar.gz")
        with archive.open("rb") as stream:
            draft = submissions.submission_intake(user=submitter.user, stream=stream, content_length=None,
                                                  filename=archive.name).submission
        states = {iid: check["state"] for iid, check in draft.report["inputs"].items()}
        if name == "ours":
            assert states == {f"{TASK}__seed42": "match", "robotics.minimum_snap_trajectory__seed42": "match"}
        else:
            assert states == {f"{TASK}__seed42": "mismatch", "robotics.minimum_snap_trajectory__seed42": "match"}
            from django.test import Client

            page = Client()
            page.force_login(submitter.user)
            html = page.get(f"/submit/submissions/{draft.id}").content.decode()
            assert 'data-testid="inputs-mismatch"' in html and "MISMATCH" in html and "not recorded" not in html


@pytest.mark.parametrize("raw_path", [
    f"/hf/datasets/Apexintelligence-AI/ASI-Bench-seed42/resolve/main/tasks/{TASK}__seed42/../../../../etc/passwd",
    f"/hf/datasets/Apexintelligence-AI/ASI-Bench-seed42/resolve/main/tasks/{TASK}__seed42/%2e%2e/%2e%2e/manage.py",
    f"/hf/datasets/Apexintelligence-AI/ASI-Bench-seed42/resolve/main/tasks/{TASK}__seed42/..%2f..%2fREADME.md",
    f"/hf/datasets/seed42/resolve/main/tasks/{TASK}__seed31415/reference/../prompt_b1.md",
    f"/hf/datasets/seed42/resolve/main/tasks/{TASK}__seed42/reference/",
])
def test_raw_traversal_paths_reach_nothing_on_the_live_server(portal_server, submit_catalog, raw_path):
    """Sent byte for byte (no client-side normalisation) to gunicorn."""
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(portal_server.url)
    for method in ("HEAD", "GET"):
        connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
        connection.putrequest(method, raw_path, skip_accept_encoding=True)
        connection.endheaders()
        response = connection.getresponse()
        body = response.read()
        connection.close()
        assert response.status == 404, (method, raw_path, body[:200])
        assert response.getheader("X-Error-Code") in ("EntryNotFound", "RepoNotFound"), raw_path
        assert b"root:" not in body and b"DJANGO" not in body
