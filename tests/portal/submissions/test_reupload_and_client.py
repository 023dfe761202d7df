"""Issue 30: the same results uploaded again are the run already made, answered with its real state; and
which client made a run's results is recorded at intake and shown to its owner and to reviewers."""

import json
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from leaderboard.models import RunReview
from portal.submissions.models import Submission
from portal.submissions.services import submission_withdraw
from tests.support import bundle_of, issue_token

pytestmark = [pytest.mark.slow]


@pytest.fixture(autouse=True)
def _empty_submission_storage():
    shutil.rmtree(Path(settings.MEDIA_ROOT) / "submissions", ignore_errors=True)


def upload(client: Client, token: str, archive: Path) -> tuple[int, dict]:
    response = client.generic("POST", "/api/v1/submissions/bundle", archive.read_bytes(),
                              content_type="application/gzip", HTTP_AUTHORIZATION=f"Bearer {token}")
    return response.status_code, response.json()


def results_copy(results: Path, dest: Path, edit=None) -> Path:
    """A copy of a results tree; `edit(result_dict)` changes every result.json."""
    shutil.copytree(results, dest)
    if edit is not None:
        for path in dest.glob("*/*.json"):
            data = json.loads(path.read_text())
            if isinstance(data, dict) and "result_schema_version" in data:
                edit(data)
                path.write_text(json.dumps(data, indent=2))
    return dest


@pytest.fixture
def first(submit_catalog, submitter, db, client, run_results, tmp_path) -> tuple[str, dict]:
    token = issue_token(submitter.user)
    status, body = upload(client, token, bundle_of(run_results["reference"], tmp_path / "a" / "first.tar.gz"))
    assert status == 201 and body["created"] is True and body["state"] == "draft"
    return token, body


def test_the_same_results_packed_again_are_the_same_draft(first, client, run_results, tmp_path):
    token, body = first
    again = bundle_of(run_results["reference"], tmp_path / "b" / "again.tar.gz")
    assert again.read_bytes() != (tmp_path / "a" / "first.tar.gz").read_bytes(), "a new created_at, new bytes"
    status, reply = upload(client, token, again)
    assert status == 200
    assert (reply["submission_id"], reply["created"], reply["status"], reply["state"]) == (
        body["submission_id"], False, "draft", "draft")
    url = f"http://testserver/submit/submissions/{body['submission_id']}"
    assert reply["confirm_url"] == reply["run_url"] == url
    assert reply["message"] == ("These results were already uploaded (8 results for 2 tasks), nothing new was "
                                f"created: run {body['submission_id']} is a draft waiting for you to confirm it in "
                                f"your browser: {url}")
    assert Submission.objects.count() == 1


@pytest.mark.parametrize(("status", "review", "state", "said"), [
    ("queued", None, "queued", "is queued for scoring"),
    ("scoring", None, "scoring", "is being scored"),
    ("scored", None, "scored", "is scored"),
    ("failed", None, "failed", "could not be scored (infrastructure error: storage unreachable); a maintainer can "
                               "rescore it"),
    ("scored", "published", "published", "is scored and published on the leaderboard"),
    ("scored", "rejected", "rejected", "was rejected by a maintainer (outputs copied from another run)"),
])
def test_a_reupload_of_a_run_past_its_draft_says_where_it_is_and_asks_for_no_confirm(
        first, client, run_results, tmp_path, maintainer, status, review, state, said):
    token, body = first
    run = Submission.objects.get(id=body["submission_id"])
    Submission.objects.filter(id=run.id).update(
        status=status, confirmed_at=timezone.now(), expires_at=None,
        status_reason="infrastructure error: storage unreachable" if status == "failed" else "")
    if review:
        RunReview.objects.create(submission=run, state=review, decided_by=maintainer.user,
                                 reason="outputs copied from another run" if review == "rejected" else "")
    code, reply = upload(client, token, bundle_of(run_results["reference"], tmp_path / "b" / "again.tar.gz"))
    assert code == 200 and reply["created"] is False
    assert (reply["submission_id"], reply["status"], reply["state"]) == (body["submission_id"], status, state)
    # Both clients print a DRAFT banner for a confirm_url: a run past its draft sends none.
    assert "confirm_url" not in reply
    url = f"http://testserver/submit/submissions/{run.id}"
    assert reply["run_url"] == url
    assert reply["message"].endswith(f"run {run.id} {said}: {url}")
    assert "Confirm" not in reply["message"] and Submission.objects.count() == 1


def test_a_withdrawn_draft_lets_the_same_results_in_again(first, submitter, client, run_results, tmp_path):
    token, body = first
    submission_withdraw(user=submitter.user, submission_id=body["submission_id"])
    code, reply = upload(client, token, bundle_of(run_results["reference"], tmp_path / "b" / "again.tar.gz"))
    assert code == 201 and reply["created"] is True and reply["submission_id"] != body["submission_id"]


def test_a_changed_result_is_a_new_run(first, client, run_results, tmp_path):
    token, body = first

    def slower(result: dict) -> None:
        result["execution_time_seconds"] += 1

    changed = results_copy(run_results["reference"], tmp_path / "changed", slower)
    code, reply = upload(client, token, bundle_of(changed, tmp_path / "b" / "changed.tar.gz"))
    assert code == 201 and reply["created"] is True and reply["submission_id"] != body["submission_id"]


def test_another_owners_identical_results_are_their_own_run(first, other_user, client, run_results, tmp_path):
    _, body = first
    code, reply = upload(client, issue_token(other_user.user),
                         bundle_of(run_results["reference"], tmp_path / "b" / "theirs.tar.gz"))
    assert code == 201 and reply["submission_id"] != body["submission_id"]


def test_our_clients_runs_are_named_on_the_run_page_and_the_review_page(first, submitter, maintainer, run_results):
    _, body = first
    run = Submission.objects.get(id=body["submission_id"])
    assert (run.client_name, run.client_version, run.framework_version) == ("asibench-portal-cli", "0.1.0", "0.2.0")
    assert run.client_label == "asibench-portal-cli 0.1.0"
    assert all(e.provenance["client"] == {"name": "asibench-portal-cli", "version": "0.1.0"}
               for e in run.entries.all())
    assert "clients" not in {flag["kind"] for flag in run.conformance}
    owner, reviewer = Client(), Client()
    owner.force_login(submitter.user)
    reviewer.force_login(maintainer.user)
    shown = '<dd data-testid="client">asibench-portal-cli 0.1.0</dd>'
    assert shown in owner.get(f"/submit/submissions/{run.id}").content.decode()
    assert shown in reviewer.get(f"/leaderboard/review/{run.id}/").content.decode()


def without_client(result: dict) -> None:
    result["provenance"].pop("client")


@pytest.mark.parametrize(("edit", "label"), [
    (without_client, "asibench 0.2.0 (official client)"),
    (lambda r: r["provenance"].update(client={"name": "<script>x</script>", "version": "1"}), "(unreadable)"),
    (lambda r: r["provenance"].update(client="asibench-portal-cli 9"), "(unreadable)"),
])
def test_results_naming_no_client_are_the_official_clients_and_a_hostile_name_is_not_read(
        submit_catalog, submitter, db, run_results, tmp_path, edit, label):
    results = results_copy(run_results["reference"], tmp_path / "results", edit)
    code, reply = upload(Client(), issue_token(submitter.user), bundle_of(results, tmp_path / "b.tar.gz"))
    assert code == 201, reply
    run = Submission.objects.get(id=reply["submission_id"])
    assert run.client_label == label
    owner = Client()
    owner.force_login(submitter.user)
    page = owner.get(f"/submit/submissions/{run.id}").content.decode()
    assert f'<dd data-testid="client">{label}</dd>' in page and "<script>x" not in page


def test_results_of_two_clients_in_one_run_are_flagged_for_reviewers(submit_catalog, submitter, db, run_results,
                                                                     tmp_path):
    results = results_copy(run_results["reference"], tmp_path / "results")
    official = sorted(p for p in results.glob("*/*__b1.json"))
    assert len(official) == 2
    for path in official:
        data = json.loads(path.read_text())
        without_client(data)
        path.write_text(json.dumps(data, indent=2))
    code, reply = upload(Client(), issue_token(submitter.user), bundle_of(results, tmp_path / "b.tar.gz"))
    assert code == 201, reply
    run = Submission.objects.get(id=reply["submission_id"])
    assert run.client_label == "asibench-portal-cli 0.1.0", "the client of most results"
    flags = {flag["kind"]: flag["detail"] for flag in run.conformance}
    assert flags["clients"] == "asibench 0.2.0 (official client) ×2, asibench-portal-cli 0.1.0 ×6"


def test_the_upload_page_says_the_same_of_a_reupload(first, submitter, run_results, tmp_path):
    _, body = first
    Submission.objects.filter(id=body["submission_id"]).update(status="queued", confirmed_at=timezone.now())
    owner = Client()
    owner.force_login(submitter.user)
    with bundle_of(run_results["reference"], tmp_path / "b" / "page.tar.gz").open("rb") as handle:
        response = owner.post("/submit/submit-results", {"bundle": handle}, follow=True)
    assert response.redirect_chain == [(f"/submit/submissions/{body['submission_id']}", 302)]
    assert f"nothing new was created: run {body['submission_id']} is queued for scoring" in \
        response.content.decode()
    assert Submission.objects.count() == 1
