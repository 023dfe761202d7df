"""Submit queues the sandboxed validation; a worker freezes a revision when it passes. Refused until
complete and valid; immutable once made."""

import io

import pytest

from portal.errors import Conflict, NotFound, ValidationFailed
from proposals import services
from proposals.files import IncomingFile
from proposals.models import Proposal, ProposalJob, Revision, RevisionFile
from tests.proposals.proposal_support import evidence, finished_job, task_files

pytestmark = pytest.mark.usefixtures("clean_proposal_storage")


def with_worker(test):  # noqa: ANN001, ANN201
    """Committed data and a real Celery worker that runs the validation."""
    for mark in (pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("proposal_worker")):
        test = mark(test)
    return test


def incoming(files: dict[str, bytes]) -> list[IncomingFile]:
    import hashlib

    return [IncomingFile(n, io.BytesIO(d), len(d), hashlib.sha256(d).hexdigest()) for n, d in files.items()]


def synced_draft(user, files: dict[str, bytes]) -> Proposal:
    proposal = services.proposal_cli_open(owner=user, task_id="physics.toy_spectrum", name="Toy", domain="physics",
                                          subdomain=None).proposal
    return services.proposal_files_sync(user=user, proposal_id=proposal.id, files=incoming(files),
                                        base_snapshot=proposal.snapshot, force=False)


def test_freezing_without_local_results_is_refused(submitter, task_dir):
    files = task_files(task_dir)
    files["task_submission.yaml"] = evidence(done="false").encode()
    proposal = synced_draft(submitter.user, files)
    with pytest.raises(ValidationFailed) as refused:
        services.proposal_submit(user=submitter.user, proposal_id=proposal.id)
    assert "local testing is not marked as done" in refused.value.detail
    assert Revision.objects.count() == 0 and Proposal.objects.get(pk=proposal.pk).status == "draft"
    assert not ProposalJob.objects.exists()  # nothing queued, no quota spent


@pytest.mark.parametrize(("value", "reason"), [(".nan", "B1 score nan is not finite"),
                                               (".inf", "B1 score inf is not finite"),
                                               ("140", "B1 score 140 is outside 0–100"),
                                               ("null", "no B1 score")])
def test_freezing_with_unusable_scores_is_refused(submitter, task_dir, value, reason):
    files = task_files(task_dir)
    files["task_submission.yaml"] = evidence(b1=value).encode()
    proposal = synced_draft(submitter.user, files)
    with pytest.raises(ValidationFailed) as refused:
        services.proposal_submit(user=submitter.user, proposal_id=proposal.id)
    assert reason in refused.value.detail
    assert Revision.objects.count() == 0


def test_freezing_an_incomplete_draft_names_what_is_missing(submitter, task_dir):
    files = task_files(task_dir)
    del files["generate_gt.py"], files["prompt_b3.md"]
    proposal = synced_draft(submitter.user, files)
    with pytest.raises(ValidationFailed) as refused:
        services.proposal_submit(user=submitter.user, proposal_id=proposal.id)
    assert "Prompts: missing prompt_b3.md" in refused.value.detail
    assert "Files: missing generate_gt.py" in refused.value.detail


@with_worker
def test_a_failing_pre_submit_validation_is_refused_with_the_check(submitter, task_dir):
    files = task_files(task_dir)
    files["generate_gt.py"] = files["generate_gt.py"].replace(
        b'p["seed"] = int(p["n"]), int(p["seed"])', b'p["seed"] = int(p["n"]), __import__("time").time_ns()')
    proposal = synced_draft(submitter.user, files)
    job = finished_job(services.proposal_submit(user=submitter.user, proposal_id=proposal.id))
    assert job.status == "failed"
    assert any(p.startswith("determinism:") for p in job.problems), job.problems
    assert Revision.objects.count() == 0
    assert Proposal.objects.get(pk=proposal.pk).last_validation["ok"] is False


def submit_and_wait(user, proposal: Proposal) -> Revision:
    job = finished_job(services.proposal_submit(user=user, proposal_id=proposal.id))
    assert job.status == "passed", job.problems
    return Revision.objects.get(proposal=proposal, number=int(job.outcome))


@with_worker
def test_a_frozen_revision_is_immutable_and_later_edits_make_a_new_one(submitter, other_user, task_dir):
    files = task_files(task_dir)
    proposal = synced_draft(submitter.user, files)
    with pytest.raises(NotFound):
        services.proposal_submit(user=other_user.user, proposal_id=proposal.id)
    first = submit_and_wait(submitter.user, proposal)
    assert first.number == 1 and first.validation["ok"] is True
    frozen = {f.path: f.sha256 for f in first.files.all()}
    assert set(frozen) == set(files)
    # Pressing Submit again on the unchanged draft gives the same (passed) validation, nothing new.
    again = services.proposal_submit(user=submitter.user, proposal_id=proposal.id)
    assert (again.status, again.outcome) == ("passed", "1") and ProposalJob.objects.count() == 1

    with pytest.raises(RuntimeError):
        first.content_hash = "0" * 64
        first.save()
    with pytest.raises(RuntimeError):
        row = first.files.first()
        row.sha256 = "0" * 64
        row.save()

    # Later edits change the working copy only.
    current = Proposal.objects.get(pk=proposal.pk)
    files["prompt_b4.md"] = b"# Eigenvalues\n\nA new distraction paragraph.\n"
    services.proposal_files_sync(user=submitter.user, proposal_id=proposal.id, files=incoming(files),
                                 base_snapshot=current.snapshot, force=False)
    first.refresh_from_db()
    assert {f.path: f.sha256 for f in RevisionFile.objects.filter(revision=first)} == frozen
    second = submit_and_wait(submitter.user, proposal)
    assert second.number == 2 and second.content_hash != first.content_hash
    assert Revision.objects.get(pk=first.pk).content_hash == first.content_hash
    assert [e.kind for e in Proposal.objects.get(pk=proposal.pk).events.all()] == ["submitted", "submitted"]


def test_a_closed_proposal_refuses_edits(submitter, task_dir):
    proposal = synced_draft(submitter.user, task_files(task_dir))
    Proposal.objects.filter(pk=proposal.pk).update(status="rejected")
    with pytest.raises(Conflict):
        services.proposal_update_fields(user=submitter.user, proposal_id=proposal.id, fields={"name": "x"})
    reopened = services.proposal_cli_open(owner=submitter.user, task_id="physics.toy_spectrum", name="Toy",
                                          domain="physics", subdomain=None)
    assert reopened.reused is False and reopened.proposal.pk != proposal.pk
