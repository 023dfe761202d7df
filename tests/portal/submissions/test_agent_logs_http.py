"""Agent logs as they come from real agents, in the result.json files of a bundle the official asibench
0.2.0 client builds, uploaded over HTTP to the Portal under gunicorn: a binary log (NUL bytes, control
characters, invalid UTF-8), an HTML log and a log big enough to push its result.json past the cap are
all accepted, and each is kept cleaned, cut to its tail and shown escaped."""

import json
import subprocess
from pathlib import Path

import pytest
import requests
from django.test import Client

from portal.submissions.bundle_verify import BundleLimits
from portal.submissions.models import Submission
from tests.leaderboard.factories import make_catalog
from tests.portal.submissions.test_agent_evidence import TASKS, entry, result_tree
from tests.support import issue_token

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MARKER = "agent-log-end-9d41"
BINARY_LOG = ("\x00\x00\x00ELF\x02\x01\x01" + "".join(map(chr, range(1, 32))) + "\x7f"
              + b"\xff\xfe\xc3(".decode("utf-8", "surrogateescape") + "\ufffd"
              + "<script>alert('binary-log')</script>\x1b[1;31mred\x1b[0m\n") * 200 + MARKER
HUGE_LOG = "".join(f"step {i}: the agent printed \"something\" <b>long</b>\n" for i in range(240_000)) + MARKER


def set_log(results: Path, task: str, level: str, log: str) -> Path:
    path = results / task / f"{task}__seed42__{level}.json"
    data = json.loads(path.read_text())
    data["agent_output"]["log"] = log
    path.write_text(json.dumps(data))  # ASCII escapes, as json.dumps writes by default: \u0000, \udcff
    return path


def official_bundle(official_client: Path, results: Path, out: Path) -> bytes:
    done = subprocess.run([str(official_client), "submit", "--results-dir", str(results), "--no-upload",
                           "--output", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out.read_bytes()


def test_binary_html_and_huge_logs_are_accepted_and_kept_cleaned(official_client, portal_server, submitter,
                                                                  maintainer, tmp_path, settings):
    make_catalog({"math": 2})
    results = result_tree(tmp_path / "results")
    set_log(results, TASKS[0], "b1", BINARY_LOG)
    huge = set_log(results, TASKS[0], "b2", HUGE_LOG)
    assert huge.stat().st_size > BundleLimits().max_result_json_bytes  # what used to be file_too_large
    body = official_bundle(official_client, results, tmp_path / "official.tar.gz")

    response = requests.post(f"{portal_server.api}/submissions/bundle", data=body, timeout=120,
                             headers={"Authorization": f"Bearer {issue_token(submitter.user)}",
                                      "Content-Type": "application/gzip"})
    assert response.status_code == 201, response.text
    run = Submission.objects.get(id=response.json()["submission_id"])
    assert run.entries.count() == 8

    binary = entry(run, TASKS[0], "b1").evidence
    assert binary["log_tail"].endswith(MARKER) and binary["log_chars"] == len(BINARY_LOG)
    assert "ELF" in binary["log_tail"] and "\ufffd" in binary["log_tail"]
    assert not any(c in binary["log_tail"] for c in "\x00\x01\x1b\x7f")
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in binary["log_tail"])
    big = entry(run, TASKS[0], "b2").evidence
    assert big["log_tail"].endswith('printed "something" <b>long</b>\n' + MARKER)
    assert len(big["log_tail"]) == settings.EVIDENCE_LOG_TAIL_CHARS
    assert big["log_chars_estimated"] and big["log_chars"] >= len(HUGE_LOG)
    assert big["status"] == "completed" and big["elapsed_seconds"] == 12.5

    for persona, url in ((submitter, f"/submit/submissions/{run.id}"), (maintainer, f"/leaderboard/review/{run.id}/")):
        client = Client()
        client.force_login(persona.user)
        page = client.get(url).content.decode()
        assert MARKER in page, url
        assert "&lt;script&gt;alert(&#x27;binary-log&#x27;)&lt;/script&gt;" in page
        assert "alert('binary-log')" not in page
        assert "&lt;b&gt;long&lt;/b&gt;" in page and "<b>long</b>" not in page
        assert f"last {settings.EVIDENCE_LOG_TAIL_CHARS} of about {big['log_chars']} characters" in page, url
