"""A 3 KB YAML file nested 1,500 levels deep, sent to a live Portal (gunicorn) through the CLI's file
sync (API) and the browser's upload form: each is refused with its reason, never a 500, and nothing
is stored. The same loader (scoring.engine.safe_yaml) reads task files for catalog_load and generation."""

import json
import re

import pytest
import requests

from proposals.models import ProposalFile
from scoring.engine.safe_yaml import MAX_DEPTH
from tests.hostile_yaml import deeply_nested
from tests.proposals.proposal_support import multipart, task_files
from tests.support import csrf_of, http_login, issue_token

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clean_proposal_storage")]


def open_draft(server, token: str) -> str:
    body = {"task_name": "Toy", "task_id": "physics.toy_spectrum", "domain": "physics", "subdomain": None,
            "prefilled": {}}
    opened = requests.post(f"{server.api}/cli/submit", json=body, timeout=30,
                           headers={"Authorization": f"Bearer {token}"})
    assert opened.status_code == 201, opened.text
    return opened.json()["proposal"]["id"]


def deep_meta(task_dir) -> bytes:
    meta = task_files(task_dir)["task_meta.yaml"] + b"notes: " + deeply_nested(1500).encode() + b"\n"
    assert 3000 < len(meta) < 4500
    return meta


def test_the_file_sync_refuses_deep_yaml_with_its_reason(portal_server, submitter, task_dir):
    token = issue_token(submitter.user)
    proposal_id = open_draft(portal_server, token)
    headers = {"Authorization": f"Bearer {token}"}
    files = {**task_files(task_dir), "task_meta.yaml": deep_meta(task_dir)}
    before = requests.get(f"{portal_server.api}/proposals/{proposal_id}/file-snapshot", headers=headers,
                          timeout=30).json()["snapshot"]
    body, content_type = multipart(files)
    answer = requests.put(f"{portal_server.api}/proposals/{proposal_id}/files?base_snapshot={before}&force=false",
                          data=body, headers={**headers, "Content-Type": content_type}, timeout=60)
    assert answer.status_code == 400, answer.text
    assert answer.json()["code"] == "yaml_too_deep"
    assert answer.json()["detail"].startswith(
        f"task_meta.yaml: YAML nested deeper than {MAX_DEPTH} levels is refused (at line ")
    after = requests.get(f"{portal_server.api}/proposals/{proposal_id}/file-snapshot", headers=headers,
                         timeout=30).json()["snapshot"]
    assert after == before and not ProposalFile.objects.exists()


def test_the_browser_upload_refuses_deep_yaml_with_its_reason(portal_server, submitter, task_dir):
    proposal_id = open_draft(portal_server, issue_token(submitter.user))
    session = http_login(portal_server, submitter)
    page = f"{portal_server.url}/submit/proposals/{proposal_id}/edit/files"
    assert session.get(page, timeout=30).status_code == 200
    answer = session.post(page, data={"csrfmiddlewaretoken": csrf_of(session), "folder": ""},
                          files={"upload": ("task_meta.yaml", deep_meta(task_dir), "application/x-yaml")},
                          headers={"Referer": page}, timeout=60)
    assert answer.status_code == 422, answer.status_code
    text = re.sub(r"\s+", " ", answer.text)
    assert f"task_meta.yaml: YAML nested deeper than {MAX_DEPTH} levels is refused (at line " in text
    assert not ProposalFile.objects.exists()
    # The draft page (which reads the task files it holds) still answers.
    assert session.get(f"{portal_server.url}/submit/proposals/{proposal_id}", timeout=30).status_code == 200


def test_a_deep_task_eval_yaml_is_refused_the_same_way(portal_server, submitter, task_dir):
    # A deep task_eval.yaml too (every file the Portal parses goes through the one loader).
    token = issue_token(submitter.user)
    proposal_id = open_draft(portal_server, token)
    headers = {"Authorization": f"Bearer {token}"}
    files = {**task_files(task_dir), "task_eval.yaml": b"evaluation: " + deeply_nested(1500, "{a: ", "}").encode()}
    snapshot = requests.get(f"{portal_server.api}/proposals/{proposal_id}/file-snapshot", headers=headers,
                            timeout=30).json()["snapshot"]
    body, content_type = multipart(files)
    answer = requests.put(f"{portal_server.api}/proposals/{proposal_id}/files?base_snapshot={snapshot}&force=false",
                          data=body, headers={**headers, "Content-Type": content_type}, timeout=60)
    assert answer.status_code == 400, answer.text
    assert json.loads(answer.text)["detail"].startswith("task_eval.yaml: YAML nested deeper than")
    assert not ProposalFile.objects.exists()
