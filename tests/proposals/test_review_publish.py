"""The maintainer journey: queue, review page, request changes, resubmit, accept, publish."""

import hashlib
import io
from pathlib import Path

import pytest
from django.test import Client

from proposals import services
from proposals.files import IncomingFile
from proposals.models import Proposal
from scoring.models import Instance, Task
from tests.proposals.proposal_support import task_files

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("clean_proposal_storage")]


def incoming(files: dict[str, bytes]) -> list[IncomingFile]:
    return [IncomingFile(n, io.BytesIO(d), len(d), hashlib.sha256(d).hexdigest()) for n, d in files.items()]


def sync(user, proposal: Proposal, files: dict[str, bytes]) -> Proposal:
    proposal.refresh_from_db()
    return services.proposal_files_sync(user=user, proposal_id=proposal.id, files=incoming(files),
                                        base_snapshot=proposal.snapshot, force=False)


def login(persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


def messages_of(response) -> str:
    return " ".join(str(m) for m in response.context["messages"]) if response.context else ""


def test_review_and_publish_journey(submitter, other_user, maintainer, task_dir, tmp_path, settings, mailoutbox):
    settings.TASKS_DIR = tmp_path / "repo_tasks"  # keep the repository catalog out of this load
    Path(settings.TASKS_DIR).mkdir()
    files = task_files(task_dir)
    # Raw HTML and script links in an author's Markdown must not reach the reviewer's browser.
    files["prompt_b2.md"] += b"\n<script>alert(1)</script> [x](javascript:alert(2))\n"
    proposal = services.proposal_cli_open(owner=submitter.user, task_id="physics.toy_spectrum", name="Toy",
                                          domain="physics", subdomain=None).proposal
    sync(submitter.user, proposal, files)
    services.proposal_submit(user=submitter.user, proposal_id=proposal.id)

    reviewer, author = login(maintainer), login(submitter)
    queue = reviewer.get("/submit/proposals/review")
    assert queue.status_code == 200 and b"physics.toy_spectrum" in queue.content
    # Maintainer pages answer 404 to everyone else, as other users' objects do (portal/pages.py).
    assert login(other_user).get("/submit/proposals/review").status_code == 404
    assert login(other_user).get(f"/submit/proposals/{proposal.id}/review").status_code == 404
    assert login(other_user).get(f"/submit/proposals/{proposal.id}").status_code == 404

    page = reviewer.get(f"/submit/proposals/{proposal.id}/review").content.decode()
    assert "<h1>Eigenvalues of a symmetric matrix</h1>" in page  # rendered Markdown prompt
    assert 'class="highlight"' in page and "generate_gt.py" in page  # highlighted code
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert "javascript:alert(2)" not in page

    response = reviewer.post(f"/submit/proposals/{proposal.id}/review/decide",
                             {"revision": 1, "decision": "request_changes", "reason": "Make B4 more distracting."},
                             follow=True)
    assert "Decision recorded" in messages_of(response)
    assert Proposal.objects.get(pk=proposal.pk).status == "changes_requested"
    assert len(mailoutbox) == 1 and mailoutbox[0].to == [submitter.email]
    assert "Make B4 more distracting." in mailoutbox[0].body

    files["prompt_b4.md"] += b"\nSymmetric matrices also describe moments of inertia.\n"
    sync(submitter.user, proposal, files)
    response = author.post(f"/submit/proposals/{proposal.id}/submit", follow=True)
    assert "Revision 2 is frozen" in messages_of(response)
    page = reviewer.get(f"/submit/proposals/{proposal.id}/review").content.decode()
    assert "Changes since revision 1" in page and "moments of inertia" in page and "prompt_b4.md" in page

    stale = reviewer.post(f"/submit/proposals/{proposal.id}/review/decide",
                          {"revision": 1, "decision": "accept", "reason": "ok"}, follow=True)
    assert "not the latest revision" in messages_of(stale)
    assert Proposal.objects.get(pk=proposal.pk).status == "submitted"
    no_reason = reviewer.post(f"/submit/proposals/{proposal.id}/review/decide",
                              {"revision": 2, "decision": "reject", "reason": ""}, follow=True)
    assert Proposal.objects.get(pk=proposal.pk).status == "submitted" and "reason" in messages_of(no_reason)
    reviewer.post(f"/submit/proposals/{proposal.id}/review/decide",
                  {"revision": 2, "decision": "accept", "reason": "Clear, deterministic, well scored."})
    assert Proposal.objects.get(pk=proposal.pk).status == "accepted" and len(mailoutbox) == 2

    response = reviewer.post(f"/submit/proposals/{proposal.id}/review/publish",
                             {"datasets": ["seed42", "seed31415"], "status": "final"})
    assert response.status_code == 302 and response["Location"] == "/tasks/physics.toy_spectrum/"
    task = Task.objects.get(id="physics.toy_spectrum")
    assert (task.version, task.status) == ("0.2", "final")
    assert set(Instance.objects.filter(task=task).values_list("dataset_id", flat=True)) == {"seed42", "seed31415"}
    published = Path(settings.PUBLISHED_TASKS_DIR) / "physics" / "toy_spectrum"
    assert not (published / "task_submission.yaml").exists()
    assert 'version: "0.2"' in (published / "task_meta.yaml").read_text()
    assert "moments of inertia" in (published / "prompt_b4.md").read_text()  # the accepted revision
    assert Proposal.objects.get(pk=proposal.pk).status == "published" and len(mailoutbox) == 3

    visitor = Client()
    assert b"physics.toy_spectrum" in visitor.get("/tasks/").content
    public = visitor.get("/tasks/physics.toy_spectrum/").content.decode()
    assert "Eigenvalues of a symmetric matrix" in public and "0.2" in public
    for private in ("generate_gt", "eigenvalues_ref", "Common mistakes", "codex_cli", "OpenAI", "timeout_seconds",
                    "local_testing_done", "reference_specs"):
        assert private not in public, private

    again = reviewer.post(f"/submit/proposals/{proposal.id}/review/publish",
                          {"datasets": ["seed42"], "status": "final"}, follow=True)
    assert "Only an accepted proposal" in messages_of(again)
    history = author.get(f"/submit/proposals/{proposal.id}").content.decode()
    for text in ("Changes requested", "Make B4 more distracting.", "Accepted", "Published as version 0.2"):
        assert text in history
