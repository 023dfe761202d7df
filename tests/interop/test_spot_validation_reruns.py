"""Issue 32: a spot validation re-run with our client (`--spot-validation N`) and with the official 0.2.0 client
(`--tasks`, `--prompt-levels`), uploaded, scored by a real worker and compared: the same agent passes, a changed
agent (other outputs, other scores) fails, and the `official` label follows."""

import subprocess
import urllib.request

import pytest

from leaderboard import services as board
from leaderboard import spot_validation as spot
from leaderboard.models import SpotValidation
from portal.errors import Conflict
from tests.interop.test_official_client_pull import hf_env
from tests.support import (
    NAIVE_AGENT,
    OUR_CLI,
    REFERENCE_AGENT,
    REPO,
    VENV_BIN,
    cli_env,
    confirmed_run,
    issue_token,
    run_cli,
    strip_ansi,
    wait_for,
    wait_until_scored,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
MOUNTS = ["--ro-mount", str(REPO / "examples"), "--ro-mount", str(REPO / "tasks")]
CONFIG = '{"model": "demo-model", "effort": "high"}'


def decided(validation: SpotValidation) -> SpotValidation:
    wait_for(lambda: SpotValidation.objects.get(id=validation.id).state != "drawn", 300, "the comparison")
    return SpotValidation.objects.get(id=validation.id)


def test_reruns_with_either_client_pass_or_fail_and_the_label_follows(
    official_client, portal_server, submit_catalog, submitter, maintainer, run_results, celery_worker_process,
    tmp_path
):
    original = wait_until_scored(confirmed_run(submitter, run_results["reference"], tmp_path / "original"))
    assert original.status == "scored", original.status_reason
    board.run_review_publish(submission_id=original.id, actor=maintainer.user, display_name="Reference")
    ours = spot.spot_validation_draw(submission_id=original.id, actor=maintainer.user, k=2)

    # Our client takes the validation's number and asks the Portal for the sample.
    env = {**cli_env(tmp_path / "home"), "ASIBENCH_SUBMIT_ENDPOINT": portal_server.url,
           "ASIBENCH_SUBMIT_TOKEN": issue_token(submitter.user)}
    rerun_dir = tmp_path / "rerun-ours"
    done = run_cli([*OUR_CLI, "run", "--instances-dir", str(run_results["instances"]), "--agent-cmd", REFERENCE_AGENT,
                    "--sandbox", "linux_ns", *MOUNTS, "--agent-config", CONFIG, "--spot-validation", str(ours.id),
                    "--output-dir", str(rerun_dir)], env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    rerun = wait_until_scored(confirmed_run(submitter, rerun_dir, tmp_path / "ours"))
    spot.spot_validation_attach(validation_id=ours.id, actor=submitter.user, rerun_id=rerun.id)
    ours = decided(ours)
    assert ours.state == "passed", ours.comparison
    assert [r["rerun"] == r["original"] for r in ours.comparison] == [True, True]

    # The official client re-runs the sample of a second validation with a changed agent: other outputs.
    theirs = spot.spot_validation_draw(submission_id=original.id, actor=maintainer.user, k=2)
    work = tmp_path / "official"
    work.mkdir()
    with urllib.request.urlopen(f"{portal_server.url}/tasks/definitions.tar.gz", timeout=60) as response:
        (work / "definitions.tar.gz").write_bytes(response.read())
    subprocess.run(["tar", "-xzf", "definitions.tar.gz"], cwd=work, check=True)
    tasks, levels = spot.rerun_command(theirs).split()[1], spot.rerun_command(theirs).split()[3]
    official_env = {**hf_env(portal_server.url, tmp_path / "ohome"), "ASIBENCH_SUBMIT_ENDPOINT": portal_server.url}
    done = subprocess.run([str(official_client), "run", "--instances-dir", str(run_results["instances"]),
                           "--agent-cmd", NAIVE_AGENT.replace("python ", f"{VENV_BIN / 'python'} ", 1),
                           "--sandbox", "linux_ns", "--tasks-dir", "tasks", "--tasks", tasks,
                           "--prompt-levels", levels, "--output-dir", "out/"],
                          env=official_env, cwd=work, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, strip_ansi(done.stdout + done.stderr)
    changed = wait_until_scored(confirmed_run(submitter, work / "out", tmp_path / "theirs"))
    spot.spot_validation_attach(validation_id=theirs.id, actor=submitter.user, rerun_id=changed.id)
    theirs = decided(theirs)
    assert theirs.state == "failed" and not all(r["agree"] for r in theirs.comparison), theirs.comparison

    # A run with only a failed validation may not be `official`; one passed validation enables it.
    SpotValidation.objects.filter(id=ours.id).update(state="failed")
    with pytest.raises(Conflict, match="needs a passed spot validation"):
        board.entry_trust_set(submission_id=original.id, actor=maintainer.user, label="official", reason="x")
    SpotValidation.objects.filter(id=ours.id).update(state="passed")
    entry = board.entry_trust_set(submission_id=original.id, actor=maintainer.user, label="official",
                                  reason=f"Spot validation #{ours.id} passed.")
    assert entry.trust == "official"
