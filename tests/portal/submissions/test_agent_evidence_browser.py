"""Agent evidence end to end: bundles made by the official asibench 0.2.0 client and by our `asibench run`,
uploaded to the Portal under gunicorn, looked at in headless Chromium by the owner, a maintainer,
another user and an anonymous visitor."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.bundle import build_bundle, write_archive
from portal.submissions import services as submissions
from tests.leaderboard.factories import make_catalog
from tests.portal.submissions.test_agent_evidence import MARKER, result_tree
from tests.results_tree import OS_SANDBOX
from tests.support import OUR_CLI, browser_login, cli_env, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

OUR_AGENT = r'''
import json, sys
ws = sys.argv[1]
events = [
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "writing"},
        {"type": "tool_use", "id": "t1", "name": "Write",
         "input": {"file_path": ws + "/result.json", "content": "{\"v\": 1}"}}]}},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "done"}]}},
]
open("_trajectory.jsonl", "w").write("\n".join(json.dumps(e) for e in events))
open("result.json", "w").write('{"v": 1}')
open("curve.npy", "wb").write(b"\x93NUMPY")
print("<img src=x onerror=alert(1)> our-agent-says-hello")
'''


def official_bundle(official_client: Path, tmp_path: Path) -> Path:
    results = result_tree(tmp_path / "official_results")
    out = tmp_path / "official.tar.gz"
    done = subprocess.run([str(official_client), "submit", "--results-dir", str(results), "--no-upload",
                           "--output", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def our_bundle(tmp_path: Path) -> Path:
    instance = tmp_path / "instances" / "math.task_1__seed42"
    (instance / "data").mkdir(parents=True)
    (instance / "prompt_b3.md").write_text("compute\n")
    (instance / "task_info.json").write_text(json.dumps({"expected_outputs": [
        {"name": "result.json", "type": "json"}, {"name": "curve.npy", "type": "npy"}]}))
    agent = tmp_path / "agent.py"
    agent.write_text(OUR_AGENT)
    out = tmp_path / "our_results"
    done = subprocess.run([*OUR_CLI, "run", "--instances-dir", str(tmp_path / "instances"), "--agent-cmd",
                           f"{sys.executable} {agent} {{workspace}}", "--prompt-levels", "b3", "--output-dir", str(out),
                           "--tasks-dir", str(tmp_path / "no_catalog")], env=cli_env(tmp_path / "home"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for path in out.glob("*/*.json"):  # only Docker runs are submittable: stamp it as one (see interop tests)
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "result_schema_version" in data:
            data["provenance"]["sandbox"] = OS_SANDBOX
            path.write_text(json.dumps(data))
    build_bundle(out, tmp_path / "ours")
    return write_archive(tmp_path / "ours", tmp_path / "ours.tar.gz")


def intake(persona, archive: Path):
    with archive.open("rb") as stream:
        return submissions.submission_intake(user=persona.user, stream=stream, content_length=None,
                                             filename=archive.name).submission


def test_owner_and_maintainer_see_what_the_agent_did_others_see_nothing(
        official_client, portal_server, page, submitter, other_user, maintainer, tmp_path):
    make_catalog({"math": 2})
    official = intake(submitter, official_bundle(official_client, tmp_path))
    ours = intake(submitter, our_bundle(tmp_path))
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

    browser_login(page, portal_server, maintainer)
    page.goto(f"{portal_server.url}/leaderboard/review/{official.id}/")
    run_row = page.locator("[data-testid=evidence-run]").inner_text()
    assert run_row.split() == ["Run", "8", "8", "24", "40", "8", "100.0", "0", "0"]
    b4 = page.locator("[data-testid='evidence-math.task_1__seed42__b4']")
    assert "3 turns, 5 tool calls, wrote constants.py, result.json" in b4.locator("summary").inner_text()
    assert not page.locator("[data-testid=evidence-log]").first.is_visible()  # collapsed until opened
    b4.locator("summary").click()
    log = b4.locator("[data-testid=evidence-log]")
    assert log.is_visible() and MARKER in log.inner_text() and "<script>alert('pwn')</script>" in log.inner_text()
    assert "constants.py" in b4.locator("[data-testid=evidence-file-versions]").inner_text()
    screenshot(page, "review-agent-evidence")

    page.goto(f"{portal_server.url}/leaderboard/review/{ours.id}/")
    ours_b3 = page.locator("[data-testid='evidence-math.task_1__seed42__b3']")
    ours_b3.locator("summary").click()
    assert "2 turns, 1 tool call" in ours_b3.locator("summary").inner_text()
    our_log = ours_b3.locator("[data-testid=evidence-log]").inner_text()
    assert "<img src=x onerror=alert(1)> our-agent-says-hello" in our_log
    assert "final" in ours_b3.locator("[data-testid=evidence-file-versions]").inner_text()
    assert page.locator("img[src=x]").count() == 0 and dialogs == []

    page.context.clear_cookies()
    browser_login(page, portal_server, submitter)
    page.goto(f"{portal_server.url}/submit/submissions/{official.id}")
    assert page.locator("[data-testid=agent-evidence]").count() == 1
    assert page.locator("[data-testid=conformance]").count() == 0  # flags are for reviewers

    page.context.clear_cookies()
    browser_login(page, portal_server, other_user)
    for run in (official, ours):
        for url in (f"/submit/submissions/{run.id}", f"/leaderboard/review/{run.id}/"):
            response = page.goto(f"{portal_server.url}{url}")
            assert response.status == 404 and MARKER not in page.content() and "our-agent-says" not in page.content()

    page.context.clear_cookies()
    page.goto(f"{portal_server.url}/submit/submissions/{official.id}")
    assert "/accounts/login/" in page.url and MARKER not in page.content()
    assert dialogs == []
