"""`asibench run --sandbox os` runs the agent in a container on the engine at DOCKER_HOST and records
exactly the provenance the official 0.2.0 client records for `os`; with the official sandbox policy
(seed42 takes only `os`), the official client's `submit` of that run is accepted."""

import json
import re
import subprocess
from pathlib import Path

import pytest
from django.test import Client

from portal.submissions.models import Submission
from scoring.sandbox.docker_backend import DockerBackend
from scoring.task_loading import datasets_ensure
from tests.support import OUR_CLI, REFERENCE_AGENT, REPO, bundle_of, cli_env, issue_token, run_cli, strip_ansi

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
IMAGE = "asibench-scoring:1.0.0"


def os_run(instances: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_cli([*OUR_CLI, "run", "--instances-dir", str(instances), "--agent-cmd", REFERENCE_AGENT,
                    "--sandbox", "os", "--image", IMAGE, *extra, "--output-dir", str(out),
                    "--agent-config", '{"model": "demo-model", "effort": "high"}'],
                   cli_env(out.parent / "home"), timeout=900)


@pytest.fixture(scope="module")
def os_results(run_results, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("os-run") / "results"
    done = os_run(run_results["instances"], out, "--network", "none",
                  "--ro-mount", str(REPO / "examples"), "--ro-mount", str(REPO / "tasks"))
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture
def official_policy(settings, submit_catalog):
    settings.DATASET_SANDBOX_MODES = {**settings.DATASET_SANDBOX_MODES, "seed42": ["os"]}
    datasets_ensure()  # what bootstrap does with ASIBENCH_SANDBOX_POLICY=official


def official_provenance(official_client: Path, image_identity: str) -> dict:
    code = ("import json; from ai4sci_bench.runner.metadata import build_sandbox_provenance as b;"
            f"print(json.dumps(b('os', image_identity={image_identity!r})))")
    done = subprocess.run([str(official_client.parent / "python"), "-c", code], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def test_the_os_run_records_the_official_clients_provenance(os_results, official_client):
    image_id = DockerBackend(image=IMAGE).image_id()
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", image_id)
    expected = official_provenance(official_client, image_id)
    assert expected["verification_status"] == "docker_container" and expected["enforcement_status"] == "fail_closed"
    metadata = json.loads((os_results / "run_metadata.json").read_text())
    assert metadata["sandbox"] == expected
    results = [json.loads(p.read_text()) for p in os_results.glob("*/*.json")]
    assert len(results) == 8 and {r["status"] for r in results} == {"completed"}
    for result in results:
        assert result["provenance"]["sandbox"] == expected
        runtime = result["provenance"]["runtime"]
        assert runtime["runtime_source"] == "docker_image" and runtime["docker_image_identity"] == image_id


def test_the_agent_ran_in_the_container(run_results, tmp_path):
    """What the agent saw: uid 65534, the image's root read-only, no network, no host checkout (with its
    var/ of references), its workspace."""
    probe = ("id -u > {workspace}/probe.txt; ls /sys/class/net >> {workspace}/probe.txt;"
             " (touch /usr/x 2>/dev/null && echo rootfs-writable || echo rootfs-ro) >> {workspace}/probe.txt;"
             f" (test -e {REPO}/var -o -e {REPO}/.git && echo host-visible || echo host-hidden)"
             " >> {workspace}/probe.txt")
    out = tmp_path / "results"
    done = run_cli([*OUR_CLI, "run", "--instances-dir", str(run_results["instances"]), "--agent-cmd", probe,
                    "--sandbox", "os", "--image", IMAGE, "--network", "none", "--prompt-levels", "b1",
                    "--tasks", "chemistry.counterpoise_cbs_energies", "--keep-workspaces", "--output-dir", str(out)],
                   cli_env(tmp_path / "home"), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    probes = list((out / "instances" / "_workspaces").glob("*/workspace_b1/probe.txt"))
    assert len(probes) == 1, done.stdout
    assert probes[0].read_text().split() == ["65534", "lo", "rootfs-ro", "host-hidden"]


def test_os_needs_an_image_and_an_explicit_network(run_results, tmp_path):
    missing_network = os_run(run_results["instances"], tmp_path / "a")
    assert missing_network.returncode != 0
    assert "--network" in strip_ansi(missing_network.stdout + missing_network.stderr)
    unknown_image = run_cli([*OUR_CLI, "run", "--instances-dir", str(run_results["instances"]), "--agent-cmd", "true",
                             "--sandbox", "os", "--image", "asibench-no-such-image:1", "--network", "none",
                             "--output-dir", str(tmp_path / "b")], cli_env(tmp_path / "home"))
    assert unknown_image.returncode != 0
    assert "asibench-no-such-image:1" in strip_ansi(unknown_image.stdout + unknown_image.stderr)
    assert not (tmp_path / "b" / "run_metadata.json").exists()  # failed closed, before any agent ran


def test_official_submit_of_an_os_run_is_accepted_under_the_official_policy(
    official_policy, official_client, portal_server, submitter, os_results, cli_home, tmp_path
):
    env = {**cli_home, "ASIBENCH_SUBMIT_TOKEN": issue_token(submitter.user)}
    done = run_cli([str(official_client), "submit", "--results-dir", str(os_results), "--endpoint", portal_server.url,
                    "--note", "os run"], env, timeout=300)
    out = strip_ansi(done.stdout + done.stderr)
    assert done.returncode == 0, out
    run = Submission.objects.get()
    assert run.status == "draft" and run.sandbox == "os" and run.framework_version == "0.2.0"
    assert run.entries.count() == 8 and run.incomplete_instances == []
    assert run.report["sandbox_policy"] == {"name": "official", "accepted_modes": ["os"]}
    page = Client()
    page.force_login(submitter.user)
    html = page.get(f"/submit/submissions/{run.id}").content.decode()
    policy = re.search(r'data-testid="sandbox-policy">(.*?)</dd>', html, re.S)
    assert policy and "official" in policy.group(1) and "seed42 accepts\n    os" in policy.group(1), html


def test_a_linux_ns_run_is_refused_under_the_official_policy(official_policy, submitter, run_results, tmp_path):
    from portal.submissions import services as submissions
    from portal.submissions.services import BundleRefused

    archive = bundle_of(run_results["reference"], tmp_path / "linux_ns.tar.gz")  # made with --sandbox linux_ns
    with archive.open("rb") as stream, pytest.raises(BundleRefused) as refused:
        submissions.submission_intake(user=submitter.user, stream=stream, content_length=None, filename=archive.name)
    assert refused.value.code == "sandbox_policy" and "'linux_ns' is not accepted" in str(refused.value)
    assert Submission.objects.count() == 0
