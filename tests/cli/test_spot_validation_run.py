"""`asibench run --spot-validation N` (issue 32): our client reads a spot validation's sample from the Portal it
is logged in to and runs exactly its tasks and levels; nobody else's validation, and not without a login."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderboard.models import SpotValidation
from portal.submissions.models import Submission
from tests.cli.agent_runs import AGENTS, TASK_IDS, cli, make_instances
from tests.leaderboard.factories import make_catalog
from tests.support import cli_env, issue_token

pytestmark = [pytest.mark.django_db(transaction=True)]


def validation_of(owner) -> SpotValidation:
    make_catalog()
    run = Submission.objects.create(owner=owner, dataset_id="seed42", archive="submissions/x", archive_sha256="0" * 64,
                                    archive_bytes=1, status="scored")
    sample = [{"base_name": f"{TASK_IDS[1]}__seed42__b3", "instance_id": f"{TASK_IDS[1]}__seed42",
               "task_id": TASK_IDS[1], "prompt_level": "b3", "original": 50.0, "outputs": ""}]
    return SpotValidation.objects.create(submission=run, scoring_number=1, seed="s", seed_sha256="h" * 64,
                                         sample=sample, tolerance=1.0)


def env_for(portal_server, user, home: Path) -> dict[str, str]:
    return {**cli_env(home), "ASIBENCH_SUBMIT_ENDPOINT": portal_server.url, "ASIBENCH_SUBMIT_TOKEN": issue_token(user)}


def test_our_client_runs_exactly_the_samples_tasks_and_levels(portal_server, submitter, tmp_path):
    validation = validation_of(submitter.user)
    out = tmp_path / "rerun"
    done = cli(["run", "--instances-dir", str(make_instances(tmp_path)), "--agent-cmd", AGENTS["naive"],
                "--spot-validation", str(validation.id), "--output-dir", str(out)],
               env_for(portal_server, submitter.user, tmp_path / "home"))
    assert f"Spot validation {validation.id}: re-running {TASK_IDS[1]} at b3" in done.stderr
    written = sorted(p.name for p in out.rglob("*__b?.json"))
    assert written == [f"{TASK_IDS[1]}__seed31415__b3.json"], (written, done.stdout, done.stderr)


def test_another_users_validation_is_not_found_and_nothing_runs(portal_server, submitter, other_user, tmp_path):
    validation = validation_of(submitter.user)
    out = tmp_path / "rerun"
    done = cli(["run", "--instances-dir", str(make_instances(tmp_path)), "--agent-cmd", AGENTS["naive"],
                "--spot-validation", str(validation.id), "--output-dir", str(out)],
               env_for(portal_server, other_user.user, tmp_path / "home"))
    assert done.returncode != 0 and "No such spot validation" in done.stderr + done.stdout
    assert not out.exists() or not list(out.rglob("*.json"))
