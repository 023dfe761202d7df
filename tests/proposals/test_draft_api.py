"""The CLI draft API (T1–T5) through Django's test client: exact sync, conflicts, refusals."""

import hashlib
import io
import re

import pytest
from django.test import Client

from proposals.models import Proposal, ProposalFile
from proposals.selectors import completeness
from tests.hostile_yaml import alias_bomb
from tests.proposals.proposal_support import multipart, stored_blobs, task_files
from tests.support import issue_token

pytestmark = pytest.mark.usefixtures("clean_proposal_storage")


def api(client: Client, token: str, method: str, path: str, **kwargs):
    return client.generic(method, f"/api/v1{path}", HTTP_AUTHORIZATION=f"Bearer {token}", **kwargs)


def open_draft(client: Client, token: str, task_id: str = "physics.toy_spectrum"):
    import json

    body = {"task_name": "Toy", "task_id": task_id, "domain": task_id.split(".")[0], "subdomain": None,
            "prefilled": {}}
    return api(client, token, "POST", "/cli/submit", data=json.dumps(body), content_type="application/json")


def put_files(client: Client, token: str, proposal_id: str, files: dict[str, bytes], snapshot: str,
              force: bool = False, field: str = "files"):
    body, content_type = multipart(files, field)
    query = f"base_snapshot={snapshot}&force={str(force).lower()}"
    return api(client, token, "PUT", f"/proposals/{proposal_id}/files?{query}", data=body, content_type=content_type)


def snapshot_of(client: Client, token: str, proposal_id: str) -> dict:
    response = api(client, token, "GET", f"/proposals/{proposal_id}/file-snapshot")
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def draft(client, submitter):
    token = issue_token(submitter.user)
    response = open_draft(client, token)
    assert response.status_code == 201, response.content
    return token, response.json()["proposal"]["id"]


def test_t1_creates_a_draft_then_reuses_the_open_one(client, submitter, db):
    token = issue_token(submitter.user)
    first = open_draft(client, token)
    assert first.status_code == 201
    body = first.json()
    assert body["reused"] is False and body["proposal"]["status"] == "draft"
    assert body["proposal"]["url"] == f"http://testserver/submit/proposals/{body['proposal']['id']}"
    again = open_draft(client, token)
    assert again.status_code == 200 and again.json() == {**body, "reused": True}
    assert Proposal.objects.count() == 1


@pytest.mark.parametrize("bad_id", ["mytask", "Physics.toy", "physics.toy-spectrum", "physics.a.b", "", "1x.y"])
def test_t1_refuses_a_bad_task_id_with_its_reason(client, submitter, db, bad_id):
    response = open_draft(client, issue_token(submitter.user), bad_id)
    assert response.status_code == 400
    assert response.json()["code"] == "bad_task_id" and "domain.task_name" in response.json()["detail"]
    assert response.json()["detail"].endswith("(Portal check, not in the official pre-submit: the catalog id rule).")
    assert Proposal.objects.count() == 0


def test_an_exact_sync_keeps_nested_names_and_hashes(client, draft, task_dir, django_capture_on_commit_callbacks):
    token, proposal_id = draft
    before = snapshot_of(client, token, proposal_id)
    assert len(before["snapshot"]) == 64 and before["files"] == []
    files = task_files(task_dir)
    assert "data/nested/notes.csv" in files and "solution/solve.py" in files
    response = put_files(client, token, proposal_id, files, before["snapshot"])
    assert response.status_code == 200, response.content
    after = snapshot_of(client, token, proposal_id)
    assert {f["file_name"]: f["content_hash"] for f in after["files"]} == {
        name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    assert after["snapshot"] != before["snapshot"]
    detail = api(client, token, "GET", f"/proposals/{proposal_id}").json()
    # Imported from task_meta.yaml and task_submission.yaml: everything but nothing is missing.
    proposal = Proposal.objects.get(id=proposal_id)
    assert detail["completeness"] == {"percent": 100, "missing": [], "stopped_at": None,
                                      "steps": completeness(proposal)["steps"]}
    assert all(step["done"] and step["needs"] == [] for step in detail["completeness"]["steps"])
    assert proposal.imported_from["score_b1"] == "task_submission.yaml" and proposal.score_b1 == 82
    assert (proposal.test_agent, proposal.test_sandbox, proposal.local_testing_done) == ("codex_cli", "os", True)

    # Exact: a second sync without some files deletes them; an unchanged file keeps its blob.
    del files["data/nested/notes.csv"]
    files["prompt_b1.md"] = b"# changed\n"
    with django_capture_on_commit_callbacks(execute=True):  # replaced blobs are removed after commit
        assert put_files(client, token, proposal_id, files, after["snapshot"]).status_code == 200
    assert set(ProposalFile.objects.filter(proposal_id=proposal_id).values_list("path", flat=True)) == set(files)
    assert len(stored_blobs()) == len(set(files.values()))


def test_a_draft_without_solution_or_reference_specs_is_complete_and_says_what_is_advised(
        client, draft, task_dir, submitter):
    # Neither is asked for by the official pre-submit: Portal advice, never a reason to hold a draft back.
    from proposals.revisions import freeze_problems

    token, proposal_id = draft
    files = {name: data for name, data in task_files(task_dir).items()
             if name != "reference_specs.md" and not name.startswith("solution/")}
    assert put_files(client, token, proposal_id, files, snapshot_of(client, token, proposal_id)["snapshot"]
                     ).status_code == 200
    detail = api(client, token, "GET", f"/proposals/{proposal_id}").json()
    assert {k: v for k, v in detail["completeness"].items() if k != "steps"} == {
        "percent": 100, "missing": [], "stopped_at": None}
    assert freeze_problems(Proposal.objects.get(id=proposal_id)) == []
    page = Client()
    page.force_login(submitter.user)
    html = page.get(f"/submit/proposals/{proposal_id}").content.decode()
    advice = re.search(r'<p class="muted small" data-testid="advice">(.*?)</p>', html, re.S)
    assert advice is not None
    assert "solution/ (a reference solver, so the task can be checked end to end; Portal check, not in the " \
           "official pre-submit)" in advice.group(1)
    assert "reference_specs.md (notes for reviewers" in advice.group(1)


def test_a_stale_snapshot_is_a_conflict_unless_forced(client, draft, task_dir):
    token, proposal_id = draft
    files = task_files(task_dir)
    first = snapshot_of(client, token, proposal_id)["snapshot"]
    assert put_files(client, token, proposal_id, files, first).status_code == 200
    current = snapshot_of(client, token, proposal_id)
    stale = put_files(client, token, proposal_id, {"task_meta.yaml": b"id: x\n"}, first)
    assert stale.status_code == 409 and "--force-file-sync" in stale.json()["detail"]
    assert snapshot_of(client, token, proposal_id) == current  # nothing half-written
    forced = put_files(client, token, proposal_id, {"task_meta.yaml": b"id: x\n"}, first, force=True)
    assert forced.status_code == 200
    assert [f["file_name"] for f in snapshot_of(client, token, proposal_id)["files"]] == ["task_meta.yaml"]


def test_browser_edits_since_the_last_cli_sync_are_a_conflict(client, draft, task_dir, submitter):
    from proposals import services
    from proposals.files import IncomingFile

    token, proposal_id = draft
    put_files(client, token, proposal_id, task_files(task_dir), snapshot_of(client, token, proposal_id)["snapshot"])
    data = b"# edited in the browser\n"
    services.proposal_file_write(user=submitter.user, proposal_id=proposal_id, files=[
        IncomingFile("prompt_b2.md", __import__("io").BytesIO(data), len(data), hashlib.sha256(data).hexdigest())])
    fresh = snapshot_of(client, token, proposal_id)["snapshot"]
    response = put_files(client, token, proposal_id, task_files(task_dir), fresh)
    assert response.status_code == 409 and "edited in the browser" in response.json()["detail"]
    assert put_files(client, token, proposal_id, task_files(task_dir), fresh, force=True).status_code == 200


def test_another_users_draft_is_not_found(client, draft, other_user, task_dir):
    token, proposal_id = draft
    stranger = issue_token(other_user.user)
    for method, path in (("GET", f"/proposals/{proposal_id}"), ("GET", f"/proposals/{proposal_id}/file-snapshot")):
        response = api(client, stranger, method, path)
        assert response.status_code == 404 and response.json()["code"] == "proposal_not_found"
    snapshot = snapshot_of(client, token, proposal_id)["snapshot"]
    response = put_files(client, stranger, proposal_id, task_files(task_dir), snapshot)
    assert response.status_code == 404
    assert ProposalFile.objects.count() == 0 and stored_blobs() == []


@pytest.mark.parametrize("bad", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_a_bad_proposal_id_is_a_json_404(client, submitter, db, bad):
    response = api(client, issue_token(submitter.user), "GET", f"/proposals/{bad}/file-snapshot")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert "proposal" in response.json()["detail"]


@pytest.mark.parametrize(("name", "code"), [
    ("run.sh", "file_type"),
    ("Makefile", "file_type"),
    ("../escape.py", "bad_path"),
    ("/etc/passwd.txt", "bad_path"),
    ("data\\\\win.csv", "bad_path"),
    ("data//double.csv", "bad_path"),
    ("./here.py", "bad_path"),
    (".env.txt", "bad_path"),
    ("results/x.json", "bad_path"),
    ("bad\x01name.py", "bad_path"),
    ("x" * 256 + ".py", "bad_path"),
])
def test_disallowed_names_are_refused_and_nothing_is_written(client, draft, task_dir, name, code):
    token, proposal_id = draft
    snapshot = snapshot_of(client, token, proposal_id)["snapshot"]
    files = {**task_files(task_dir), name: b"print(1)\n"}
    response = put_files(client, token, proposal_id, files, snapshot)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == code
    assert ProposalFile.objects.count() == 0 and stored_blobs() == []


def test_names_colliding_after_nfc_are_refused(client, draft):
    token, proposal_id = draft
    snapshot = snapshot_of(client, token, proposal_id)["snapshot"]
    response = put_files(client, token, proposal_id, {"caf\u00e9.md": b"a", "cafe\u0301.md": b"b"}, snapshot)
    assert response.status_code == 400 and response.json()["code"] == "collision"


def test_an_oversize_file_is_refused_while_streaming(client, draft):
    token, proposal_id = draft
    snapshot = snapshot_of(client, token, proposal_id)["snapshot"]
    response = put_files(client, token, proposal_id, {"big.npy": b"\0" * (10 * 1024 * 1024 + 1)}, snapshot)
    assert response.status_code == 413 and "exceeds 10485760 bytes: big.npy" in response.json()["detail"]
    assert ProposalFile.objects.count() == 0 and stored_blobs() == []


def test_too_many_files_are_refused(client, draft):
    token, proposal_id = draft
    snapshot = snapshot_of(client, token, proposal_id)["snapshot"]
    response = put_files(client, token, proposal_id, {f"d/f{i}.txt": b"x" for i in range(1001)}, snapshot)
    assert response.status_code == 400 and "at most 1000" in response.json()["detail"]
    assert ProposalFile.objects.count() == 0


def test_an_oversize_body_is_refused_before_parsing(client, draft, settings):
    settings.PROPOSAL_MAX_BODY_BYTES = 1000
    token, proposal_id = draft
    snapshot = snapshot_of(client, token, proposal_id)["snapshot"]
    response = put_files(client, token, proposal_id, {"a.txt": b"x" * 2000}, snapshot)
    assert response.status_code == 413 and response.json()["code"] == "set_too_large"


def test_other_form_fields_and_bad_snapshots_are_refused(client, draft):
    token, proposal_id = draft
    snapshot = snapshot_of(client, token, proposal_id)["snapshot"]
    assert put_files(client, token, proposal_id, {"a.txt": b"x"}, snapshot, field="upload").status_code == 400
    response = put_files(client, token, proposal_id, {"a.txt": b"x"}, "abc")
    assert response.status_code == 400 and response.json()["code"] == "bad_snapshot"
    assert ProposalFile.objects.count() == 0


def test_api_routes_never_redirect(client, draft):
    token, proposal_id = draft
    assert api(client, token, "GET", f"/proposals/{proposal_id}/").status_code == 404
    assert api(client, token, "GET", f"/proposals/{proposal_id}").status_code == 200


def _peak_bytes(action):  # noqa: ANN001, ANN202
    import tracemalloc

    tracemalloc.start()
    try:
        result = action()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_sync_refuses_a_yaml_alias_bomb_with_its_reason_and_stores_nothing(client, draft, task_dir):
    token, proposal_id = draft
    files = task_files(task_dir)
    files["task_meta.yaml"] += alias_bomb(6, key="subdomain").encode()  # 9**6 strings once expanded
    before = snapshot_of(client, token, proposal_id)["snapshot"]
    response, peak = _peak_bytes(lambda: put_files(client, token, proposal_id, files, before))
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "yaml_alias"
    assert response.json()["detail"].startswith("task_meta.yaml: YAML anchors and aliases (&name / *name) are refused")
    assert peak < 20_000_000
    assert snapshot_of(client, token, proposal_id)["snapshot"] == before
    assert not ProposalFile.objects.exists() and stored_blobs() == []


def test_the_page_of_a_draft_holding_an_alias_bomb_stays_small_and_says_why(client, submitter, draft, task_dir):
    from proposals.files import IncomingFile, blob_store

    _, proposal_id = draft
    # As a sync before the loader refused aliases stored it.
    data = task_files(task_dir)["task_meta.yaml"] + alias_bomb(6, key="id").encode()
    item = IncomingFile("task_meta.yaml", io.BytesIO(data), len(data), hashlib.sha256(data).hexdigest())
    ProposalFile.objects.create(proposal_id=proposal_id, path=item.name, blob=blob_store(proposal_id, item)[0],
                                sha256=item.sha256, size=item.size)
    client.force_login(submitter.user)
    response, peak = _peak_bytes(lambda: client.get(f"/submit/proposals/{proposal_id}"))
    assert response.status_code == 200
    assert len(response.content) < 200_000 and peak < 20_000_000
    assert "task_meta.yaml: YAML anchors and aliases (&amp;name / *name) are refused" in response.content.decode()


def test_imported_fields_are_strings_under_their_length_cap(client, draft, task_dir):
    token, proposal_id = draft
    files = task_files(task_dir)
    meta = re.sub(r"(?m)^name: .*$", f'name: "{"x" * 201}"', files["task_meta.yaml"].decode())
    files["task_meta.yaml"] = re.sub(r"(?m)^subdomain: .*$", "subdomain: 12345", meta).encode()
    evidence = files["task_submission.yaml"].decode().replace(
        'core_method: "Tridiagonal reduction and implicit QR."', "core_method: 12345")
    files["task_submission.yaml"] = evidence.encode()
    response = put_files(client, token, proposal_id, files, snapshot_of(client, token, proposal_id)["snapshot"])
    assert response.status_code == 200, response.content
    proposal = Proposal.objects.get(pk=proposal_id)
    assert proposal.name == "Toy" and proposal.subdomain == "" and proposal.core_method == ""
    assert {"name", "subdomain", "core_method"}.isdisjoint(proposal.imported_from)
    assert proposal.objective.startswith("Recover the spectrum")
