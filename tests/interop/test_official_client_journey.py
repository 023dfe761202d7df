"""The official asibench 0.2.0 client's first hour, from an empty directory, as docs/getting-started.md
tells it: sign in, pull seed42 through the Hub endpoint, unpack the Portal's public task definitions, run a
custom agent, submit with our client (the official one refuses a seed42 run not made with `--sandbox os`),
confirm, scored. And the limits of its `--agent-cmd` adapter that the guide states."""

import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from portal.submissions import services as submissions
from portal.submissions.models import Submission
from tests.interop.test_official_client_pull import hf_env
from tests.support import REPO, VENV_BIN, issue_token, strip_ansi, wait_until_scored

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
TASKS = ("chemistry.counterpoise_cbs_energies", "robotics.minimum_snap_trajectory")
# In the official linux_ns sandbox a bare `python` is a task virtualenv the client builds: name ours by its path.
AGENT = f"{sys.executable} {REPO}/examples/agents/reference_agent.py --workspace {{workspace}}"
# What the official client answers, as docs/getting-started.md quotes it (tests/portal/test_docs.py checks the quotes).
OFFICIAL_CLIENT_SAYS = {
    "no_definitions": "not found in tasks",
    "nothing_to_run": "Tasks: 0  |  Instances: 0",
    "submit_needs_os": "requires every result to be produced with `asibench run --sandbox os`",
    "adapter_no_os": "CLIAgentAdapter does not support sandbox 'os'",
    "adapter_no_model": "unexpected keyword argument 'model'",
}


def in_dir(cwd: Path, argv: list[str], env: dict[str, str], stdin: str = "", timeout: float = 600) -> tuple[int, str]:
    done = subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    return done.returncode, strip_ansi(done.stdout + done.stderr)


def test_the_official_client_runs_from_an_empty_directory_with_the_portals_definitions_and_our_client_submits(
    official_client, portal_server, submit_catalog, submitter, celery_worker_process, tmp_path
):
    work = tmp_path / "work"
    work.mkdir()
    env = {**hf_env(portal_server.url, tmp_path / "home"), "ASIBENCH_SUBMIT_ENDPOINT": portal_server.url}
    official = str(official_client)
    status, out = in_dir(work, [official, "login"], env, stdin=issue_token(submitter.user) + "\n")
    assert status == 0 and "Signed in as alice@uni.example" in out, out
    status, out = in_dir(work, [official, "task", "pull", "--repo", "seed42", "--output-dir", "inst42/"], env)
    assert status == 0 and "instances: 2" in out, out

    # Without the definitions the run finds no task: what a newcomer met before the download existed.
    run = [official, "run", "--instances-dir", "inst42/", "--agent-cmd", AGENT, "--sandbox", "linux_ns",
           "--prompt-levels", "b1"]
    status, out = in_dir(work, [*run, "--tasks", TASKS[0], "--output-dir", "nodefs/"], env)
    assert status != 0 and f"Task '{TASKS[0]}' {OFFICIAL_CLIENT_SAYS['no_definitions']}" in out, out
    status, out = in_dir(work, [*run, "--output-dir", "nodefs/"], env)
    assert OFFICIAL_CLIENT_SAYS["nothing_to_run"] in out, out  # and without --tasks it runs nothing, "successfully"

    with urllib.request.urlopen(f"{portal_server.url}/tasks/definitions.tar.gz", timeout=60) as response:
        (work / "definitions.tar.gz").write_bytes(response.read())
    subprocess.run(["tar", "-xzf", "definitions.tar.gz"], cwd=work, check=True)
    status, out = in_dir(work, [*run, "--tasks-dir", "tasks", "--output-dir", "out42/"], env, timeout=900)
    assert status == 0 and "Tasks: 2  |  Instances: 2" in out, out
    results = sorted(work.glob("out42/*/*__b1.json"))
    assert [p.parent.name for p in results] == list(TASKS)

    # The official submit refuses a seed42 run that was not made in its Docker sandbox…
    status, out = in_dir(work, [official, "submit", "--results-dir", "out42/"], env, timeout=300)
    assert status != 0 and OFFICIAL_CLIENT_SAYS["submit_needs_os"] in out, out
    assert not Submission.objects.exists()
    # …ours sends it (same credentials file), and this Portal's seed42 rule accepts linux_ns.
    status, out = in_dir(work, [str(VENV_BIN / "asibench"), "submit", "--results-dir", "out42/"], env, timeout=300)
    assert status == 0, out
    run_row = Submission.objects.get()
    assert f"{portal_server.url}/submit/submissions/{run_row.id}" in out
    assert run_row.sandbox == "linux_ns" and run_row.framework_version == "0.2.0" and run_row.entries.count() == 2
    submissions.submission_confirm(user=submitter.user, submission_id=str(run_row.id))
    scored = wait_until_scored(run_row, timeout=600)
    assert scored.status == "scored", scored.status_reason
    assert scored.overall_score is not None and scored.overall_score > 50


def test_the_official_agent_cmd_adapter_records_no_model_and_cannot_run_in_docker(official_client, tmp_path):
    env = hf_env("http://127.0.0.1:9", tmp_path / "home")  # nothing is fetched: both stop before any task
    base = [str(official_client), "run", "--instances-dir", str(tmp_path), "--agent-cmd", AGENT,
            "--output-dir", str(tmp_path / "out")]
    status, out = in_dir(tmp_path, [*base, "--sandbox", "none", "--agent-config", '{"model": "gpt-x"}'], env)
    assert status != 0 and OFFICIAL_CLIENT_SAYS["adapter_no_model"] in out, out
    status, out = in_dir(tmp_path, [*base, "--sandbox", "os"], env)  # needs a Docker API: DOCKER_HOST
    assert status != 0 and OFFICIAL_CLIENT_SAYS["adapter_no_os"] + ". Supported modes: none, linux_ns." in out, out
