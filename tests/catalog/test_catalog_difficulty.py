"""The task page shows the latest difficulty evaluation, from public fields only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.test import Client

from proposals.models import Proposal, ReviewEvent, Revision
from scoring.task_loading import catalog_load
from tests.cli.agent_runs import cli, cli_env

TINY = Path(__file__).resolve().parents[1] / "scoring" / "catalog" / "tiny_task"
TASK_ID = "demo.tiny_sum"
# Writes the answer only when the prompt gives the method (B1/B2), or at every level.
SOLVES_B1_B2 = ("if [ {prompt_level} = b1 ] || [ {prompt_level} = b2 ]; then "
                "echo '{{\"total\": 1}}' > {workspace}/total.json; fi")
SOLVES_ALL = "echo '{{\"total\": 1}}' > {workspace}/total.json"
PRIVATE_CONFIG = json.dumps({"agent": "codex_cli", "model": "gpt-x", "endpoint": "https://PRIVATE-ENDPOINT.example"})


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    """A repository layout: <repo>/tasks/demo/tiny_sum/ and (once checked) <repo>/scores/."""
    root = tmp_path / "repo" / "tasks"
    shutil.copytree(TINY, root / "demo" / "tiny_sum")
    return root


def difficulty_check(catalog: Path, agent_cmd: str, home: Path, *extra: str) -> None:
    done = cli(["difficulty-check", "--task", TASK_ID, "--tasks-dir", str(catalog), "--agent-cmd", agent_cmd,
                "--agent-config", PRIVATE_CONFIG, "--seed", "987654", "--scores-dir", str(catalog.parent / "scores"),
                *extra], cli_env(home))
    assert done.returncode in (0, 1), done.stdout + done.stderr


@pytest.mark.slow
def test_it_shows_the_latest_difficulty_check_of_a_repository_task(db, catalog: Path, tmp_path: Path) -> None:
    difficulty_check(catalog, SOLVES_ALL, tmp_path / "home")      # fail: B3/B4 score 100
    difficulty_check(catalog, SOLVES_B1_B2, tmp_path / "home")    # pass: B3/B4 score 0 (the latest)
    record = json.loads((catalog.parent / "scores" / f"{TASK_ID}.json").read_text())
    assert [e["verdict"] for e in record["evaluations"]] == ["fail", "pass"]
    assert not catalog_load(tasks_root=catalog).failures
    # The web host has neither the catalog checkout nor its scores/: the load recorded what it shows.
    shutil.rmtree(catalog.parent)

    html = Client().get(f"/tasks/{TASK_ID}/").content.decode()
    section = html[html.index('data-testid="difficulty"'):html.index("<h2>Inputs</h2>")]
    assert 'data-testid="difficulty-verdict">PASS<' in section and "asibench difficulty-check" in section
    assert "codex_cli" in section and "gpt-x" in section and "sandbox none" in section
    b1 = section[section.index('data-testid="difficulty-b1"'):section.index('data-testid="difficulty-b2"')]
    b3 = section[section.index('data-testid="difficulty-b3"'):section.index('data-testid="difficulty-b4"')]
    assert "100.00" in b1 and "recorded" in b1
    assert "0.00" in b3 and ">pass<" in b3
    # The check's configuration, seeds and local paths never reach the page.
    assert "PRIVATE-ENDPOINT" not in html and "987654" not in html and str(tmp_path) not in html


def test_it_says_when_no_evaluation_is_recorded_and_ignores_foreign_records(db, catalog: Path) -> None:
    assert not catalog_load(tasks_root=catalog).failures
    assert "No difficulty evaluation recorded yet." in Client().get(f"/tasks/{TASK_ID}/").content.decode()

    scores = catalog.parent / "scores"
    scores.mkdir()
    (scores / f"{TASK_ID}.json").write_text(json.dumps({"task_id": "other.task", "evaluations": [
        {"verdict": "pass", "results": [{"agent": "x", "scores": {"b3": {"mean": 1}}}]}]}))
    assert not catalog_load(tasks_root=catalog).failures
    assert "No difficulty evaluation recorded yet." in Client().get(f"/tasks/{TASK_ID}/").content.decode()
    (scores / f"{TASK_ID}.json").write_text("{not json")
    assert not catalog_load(tasks_root=catalog).failures
    response = Client().get(f"/tasks/{TASK_ID}/")
    assert response.status_code == 200 and "No difficulty evaluation recorded yet." in response.content.decode()


def test_a_published_proposal_shows_the_scores_its_accepted_revision_recorded(db, catalog: Path, submitter,
                                                                              maintainer) -> None:
    assert not catalog_load(tasks_root=catalog).failures
    proposal = Proposal.objects.create(owner=submitter.user, task_id=TASK_ID, name="Tiny", domain="demo",
                                       status=Proposal.Status.PUBLISHED, snapshot="0" * 64, published_version="1.0")
    revision = Revision.objects.create(proposal=proposal, number=2, content_hash="3" * 64, fields={
        "task_id": TASK_ID, "score_b1": 88.5, "score_b2": 61, "score_b3": 33.25, "score_b4": 12,
        "test_agent": "claude_code_cli", "test_model": "<script>alert(1)</script>", "test_sandbox": "os",
        "test_provider": "PRIVATE-PROVIDER-NOTE"})
    ReviewEvent.objects.create(proposal=proposal, revision=revision, actor=maintainer.user,
                               kind=ReviewEvent.Kind.ACCEPTED, text="ACCEPT-REASON-TEXT")

    html = Client().get(f"/tasks/{TASK_ID}/").content.decode()
    section = html[html.index('data-testid="difficulty"'):html.index("<h2>Inputs</h2>")]
    assert "the author&#x27;s local test, accepted with revision 2" in section
    assert 'data-testid="difficulty-verdict">PASS<' in section and "sandbox os" in section
    assert "88.50" in section and "61.00" in section and "33.25" in section and "12.00" in section
    # The author's evidence beyond the scores (agent, model, provider) and the review stay private.
    for private in ("claude_code_cli", "alert(1)", "PRIVATE-PROVIDER-NOTE", "ACCEPT-REASON-TEXT"):
        assert private not in html, private
