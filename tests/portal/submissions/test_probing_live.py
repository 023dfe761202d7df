"""The reviewers' "probing" flag against a live Portal: attempts are grouped by owner, dataset and the
tasks they share, whatever free-text labels (model, agent, effort) the bundle carries. Renaming the
model between uploads used to start a new count each time, so editing one output and asking the scorer
again went unflagged."""

import json
from pathlib import Path

import pytest
import requests

from contracts.bundle import build_bundle, write_archive
from portal.submissions.models import Submission
from tests.leaderboard.factories import make_catalog
from tests.results_tree import sha
from tests.support import csrf_of, http_login, issue_token

pytestmark = [pytest.mark.django_db(transaction=True)]

TASKS = ("math.task_1", "math.task_2")


@pytest.fixture
def catalog(transactional_db: None) -> dict:
    return make_catalog({"math": 2})


def results(root: Path, model: str, tasks: tuple[str, ...] = TASKS, tweak: str | None = None,
            agent: str = "codex_cli") -> Path:
    """Results for `tasks` at every level whose run names `model`; `tweak` (a base name) gets other output."""
    from tests.results_tree import write_result

    for task in tasks:
        for level in ("b1", "b2", "b3", "b4"):
            base_name = f"{task}__seed42__{level}"
            data = b'{"tweaked": 1}' if base_name == tweak else f'{{"v": "{task}{level}"}}'.encode()
            base = write_result(root, f"{task}__seed42", level, {"result.json": data})
            path = root / task / f"{base}.json"
            result = json.loads(path.read_text())
            result["provenance"]["agent"].update(agent_name=agent, config={"model": model, "effort": "high"})
            assert result["agent_output"]["persisted_outputs"]["files"][0]["sha256"] == sha(data)
            path.write_text(json.dumps(result))
    return root


def upload_and_confirm(server, persona, token: str, tree: Path, tmp_path: Path) -> Submission:
    bundle = tmp_path / "bundles" / tree.name
    build_bundle(tree, bundle)
    body = write_archive(bundle, bundle.with_suffix(".tar.gz")).read_bytes()
    answer = requests.post(f"{server.api}/submissions/bundle", data=body, timeout=60,
                           headers={"Authorization": f"Bearer {token}", "Content-Type": "application/gzip"})
    assert answer.status_code in (200, 201), answer.text
    run_id = answer.json()["submission_id"]
    browser = http_login(server, persona)
    page = f"{server.url}/submit/submissions/{run_id}"
    confirmed = browser.post(f"{page}/confirm", data={"csrfmiddlewaretoken": csrf_of(browser)},
                             headers={"Referer": page}, timeout=60)
    assert confirmed.ok, confirmed.status_code
    run = Submission.objects.get(id=run_id)
    assert run.confirmed_at is not None, run.status
    return run


def kinds(run: Submission) -> set[str]:
    return {flag["kind"] for flag in Submission.objects.get(id=run.id).conformance}


def test_renaming_the_model_between_attempts_does_not_evade_the_probing_flag(
        portal_server, catalog, submitter, tmp_path, settings):
    token = issue_token(submitter.user)
    first = upload_and_confirm(portal_server, submitter, token, results(tmp_path / "r1", "gpt-5"), tmp_path)
    second = upload_and_confirm(portal_server, submitter, token,
                                results(tmp_path / "r2", "gpt-5 (retry)", agent="claude_code"), tmp_path)
    assert "probing" not in kinds(first) | kinds(second)
    # The server's defaults: a third attempt changing at most 10% of the shared results is probing.
    tweaked = f"{TASKS[0]}__seed42__b2"
    third = upload_and_confirm(portal_server, submitter, token,
                               results(tmp_path / "r3", "totally-new-model", tweak=tweaked), tmp_path)
    assert "probing" not in kinds(third)  # one of eight changed: 12.5%, more than the default 10%
    fourth = upload_and_confirm(portal_server, submitter, token,
                                results(tmp_path / "r4", "yet-another-name", tweak=tweaked), tmp_path)
    assert "probing" in kinds(fourth)
    flag = next(f for f in Submission.objects.get(id=fourth.id).conformance if f["kind"] == "probing")
    assert flag["detail"] == (
        f"attempt 4 at these tasks of seed42 by this owner, whatever its labels; against the last confirmed run "
        f"({str(third.id)[:8]}), 0 of 8 shared results changed")


def test_runs_on_other_tasks_of_the_dataset_are_not_counted(portal_server, catalog, submitter, tmp_path):
    token = issue_token(submitter.user)
    for n in (1, 2):
        upload_and_confirm(portal_server, submitter, token, results(tmp_path / f"a{n}", f"m{n}", (TASKS[0],)),
                           tmp_path)
    other = upload_and_confirm(portal_server, submitter, token, results(tmp_path / "b", "m3", (TASKS[1],)),
                               tmp_path)
    assert "probing" not in kinds(other)
