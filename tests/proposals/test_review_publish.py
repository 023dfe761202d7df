"""The maintainer journey: queue, review page, request changes, resubmit, accept, publish."""

import hashlib
import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client

from portal.errors import ValidationFailed
from proposals import jobs, services
from proposals.files import IncomingFile
from proposals.models import Proposal, ProposalJob
from proposals.revisions import freeze_problems
from scoring.models import Instance, Task
from scoring.task_storage import task_source_dir
from tests.proposals.proposal_support import finished_job, task_files
from tests.support import start_celery_worker, stop_celery_worker

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("clean_proposal_storage", "proposal_worker")]


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


def published_task_reaches_other_hosts_and_visitors(task: Task, published: Path, tmp_path: Path,
                                                    settings, submitter) -> None:  # noqa: ANN001
    """After the publish: another worker host scores the task from the files in storage, the worker mailed the
    author, and a visitor sees the public task page, nothing private."""
    # Another worker host has neither the publishing host's published dir nor its var dir: it scores
    # the task from the files the publish put in storage.
    settings.VAR_DIR = tmp_path / "other-worker-var"
    elsewhere = task_source_dir(task)
    assert not elsewhere.is_relative_to(Path(settings.PUBLISHED_TASKS_DIR).resolve())
    assert elsewhere.is_relative_to(tmp_path / "other-worker-var")
    assert 'version: "0.1"' in (elsewhere / "task_meta.yaml").read_text()
    assert (elsewhere / "prompt_b4.md").read_bytes() == (published / "prompt_b4.md").read_bytes()
    worker_mail = "".join(p.read_text() for p in (tmp_path / "worker-mail").iterdir())  # sent by the worker
    assert "Published: physics.toy_spectrum v0.1" in worker_mail and submitter.email in worker_mail

    visitor = Client()
    assert b"physics.toy_spectrum" in visitor.get("/tasks/").content
    public = visitor.get("/tasks/physics.toy_spectrum/").content.decode()
    assert "Eigenvalues of a symmetric matrix" in public and "0.1" in public
    for private in ("generate_gt", "eigenvalues_ref", "Common mistakes", "codex_cli", "OpenAI", "timeout_seconds",
                    "local_testing_done", "reference_specs"):
        assert private not in public, private


def test_review_and_publish_journey(submitter, other_user, maintainer, task_dir, tmp_path, settings, mailoutbox):
    settings.TASKS_DIR = tmp_path / "repo_tasks"  # keep the repository catalog out of this load
    Path(settings.TASKS_DIR).mkdir()
    files = task_files(task_dir)
    # Raw HTML and script links in an author's Markdown must not reach the reviewer's browser.
    files["prompt_b2.md"] += b"\n<script>alert(1)</script> [x](javascript:alert(2))\n"
    proposal = services.proposal_cli_open(owner=submitter.user, task_id="physics.toy_spectrum", name="Toy",
                                          domain="physics", subdomain=None).proposal
    sync(submitter.user, proposal, files)
    assert finished_job(services.proposal_submit(user=submitter.user, proposal_id=proposal.id)).status == "passed"

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
    assert "Validation started" in messages_of(response)
    assert finished_job(ProposalJob.objects.filter(proposal=proposal).first()).outcome == "2"
    assert "revision 2 is frozen" in author.get(f"/submit/proposals/{proposal.id}").content.decode()
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
                             {"datasets": ["seed42", "seed31415"], "status": "final"}, follow=True)
    assert "Publishing started" in messages_of(response)
    job = finished_job(ProposalJob.objects.get(proposal=proposal, kind="publish"))
    # Published as the author's version, as written in task_meta.yaml: never rewritten.
    assert (job.status, job.outcome) == ("passed", "0.1"), job.problems
    assert "Published as version 0.1" in reviewer.get(f"/submit/proposals/{proposal.id}/review").content.decode()
    task = Task.objects.get(id="physics.toy_spectrum")
    assert (task.version, task.status, task.revision) == ("0.1", "final", 1)
    assert set(Instance.objects.filter(task=task).values_list("dataset_id", flat=True)) == {"seed42", "seed31415"}
    published = Path(settings.PUBLISHED_TASKS_DIR) / "physics" / "toy_spectrum"
    assert not (published / "task_submission.yaml").exists()
    assert (published / "task_meta.yaml").read_text() == files["task_meta.yaml"].decode().replace(
        "status: in_development", "status: final")  # the author's file, with the status the maintainer chose
    assert "moments of inertia" in (published / "prompt_b4.md").read_text()  # the accepted revision
    assert Proposal.objects.get(pk=proposal.pk).status == "published" and len(mailoutbox) == 2
    published_task_reaches_other_hosts_and_visitors(task, published, tmp_path, settings, submitter)

    again = reviewer.post(f"/submit/proposals/{proposal.id}/review/publish",
                          {"datasets": ["seed42"], "status": "final"}, follow=True)
    assert "Only an accepted proposal" in messages_of(again)
    history = author.get(f"/submit/proposals/{proposal.id}").content.decode()
    for text in ("Changes requested", "Make B4 more distracting.", "Accepted", "Published as version 0.1"):
        assert text in history


def accepted_proposal(author, maintainer, files: dict[str, bytes]) -> Proposal:
    proposal = services.proposal_cli_open(owner=author.user, task_id="physics.toy_spectrum", name="Toy",
                                          domain="physics", subdomain=None).proposal
    sync(author.user, proposal, files)
    job = finished_job(services.proposal_submit(user=author.user, proposal_id=proposal.id))
    assert job.status == "passed", job.problems
    services.proposal_decide(maintainer=maintainer.user, proposal_id=proposal.id, revision_number=int(job.outcome),
                             decision="accept", reason="Fine.")
    return proposal


def catalog_state(published: Path) -> tuple:
    task = Task.objects.filter(id="physics.toy_spectrum").first()
    instances = sorted(Instance.objects.filter(task_id="physics.toy_spectrum").values_list(
        "instance_id", "input_archive", "reference_archive", "input_sha256"))
    link = published / "physics" / "toy_spectrum"
    on_disk = (link.resolve(), (link / "prompt_b4.md").read_bytes()) if link.exists() else None
    return (task.version if task else None, task.source_hash if task else None, instances, on_disk)


def test_a_crash_mid_publish_leaves_the_catalog_as_it_was(submitter, maintainer, task_dir, settings, proposal_worker,
                                                          monkeypatch):
    files = task_files(task_dir)
    first = accepted_proposal(submitter, maintainer, files)
    job = finished_job(services.proposal_publish(maintainer=maintainer.user, proposal_id=first.id,
                                                 dataset_names=["seed42", "seed31415"]))
    assert (job.status, job.outcome) == ("passed", "0.1"), job.problems
    published = Path(settings.PUBLISHED_TASKS_DIR)
    before = catalog_state(published)
    assert before[0] == "0.1" and len(before[2]) == 2

    # A second version of the task, accepted; the worker that would publish it dies mid-publish:
    # after every new instance is stored, just before the task directory swaps in.
    files["prompt_b4.md"] += b"\nVersion three of the distraction.\n"
    second = accepted_proposal(submitter, maintainer, files)
    stop_celery_worker(proposal_worker)
    job = services.proposal_publish(maintainer=maintainer.user, proposal_id=second.id,
                                    dataset_names=["seed42", "seed31415"])
    import scoring.task_loading

    def worker_dies(link: Path, directory: Path) -> None:
        raise SystemExit("worker killed")

    monkeypatch.setattr(scoring.task_loading, "_swap_link", worker_dies)
    with pytest.raises(SystemExit):
        jobs.proposal_publish_run(job_id=job.pk)
    assert catalog_state(published) == before
    staged = [p for p in (published / "physics").iterdir() if p.name.startswith(".toy_spectrum.")]
    assert staged == [before[3][0]]  # the live version's directory only: the crashed one's staging is gone
    assert Proposal.objects.get(pk=second.pk).status == "accepted"
    assert b"Version three" not in Client().get("/tasks/physics.toy_spectrum/").content

    # The job was left running; once abandoned, a redelivery claims it again and publishes.
    monkeypatch.undo()
    ProposalJob.objects.filter(pk=job.pk).update(started_at=job.created_at - timedelta(days=1))
    jobs.proposal_publish_run(job_id=job.pk)
    job.refresh_from_db()
    # The same author's version again, with changed files: the catalog's revision tells them apart.
    assert (job.status, job.outcome) == ("passed", "0.1"), job.problems
    after = catalog_state(published)
    assert after[0] == "0.1" and after[3][0] != before[3][0] and b"Version three" in after[3][1]
    assert Task.objects.get(id="physics.toy_spectrum").revision == 2
    assert not before[3][0].exists()  # the previous version's directory is gone once replaced
    assert Proposal.objects.get(pk=second.pk).status == "published"


def test_a_failed_publish_shows_its_reason_and_changes_nothing(submitter, maintainer, task_dir, settings,
                                                              proposal_worker):
    files = task_files(task_dir)
    files["generate_gt.py"] = files["generate_gt.py"].replace(
        b'    np.save(output_dir / "data" / "matrix.npy", matrix)\n',
        b'    np.save(output_dir / "data" / "matrix.npy", matrix)\n'
        b'    (output_dir / "data" / "padding.bin").write_bytes(bytes(40 << 20))\n')
    proposal = accepted_proposal(submitter, maintainer, files)
    stop_celery_worker(proposal_worker)
    # This worker's server allows 16 MiB of scratch disk per generator run; the generator writes 40.
    worker = start_celery_worker("small-scratch", extra_env={
        "ASIBENCH_PUBLISHED_TASKS_DIR": str(settings.PUBLISHED_TASKS_DIR), "ASIBENCH_SANDBOX_SCRATCH_MB": "16"})
    reviewer = login(maintainer)
    try:
        response = reviewer.post(f"/submit/proposals/{proposal.id}/review/publish",
                                 {"datasets": ["seed42", "seed31415"], "status": "final"}, follow=True)
        assert "Publishing started" in messages_of(response)
        job = finished_job(ProposalJob.objects.get(proposal=proposal, kind="publish"))
    finally:
        stop_celery_worker(worker)
    assert job.status == "failed"
    assert "scratch disk limit of 16777216 bytes" in " ".join(job.problems), job.problems
    page = reviewer.get(f"/submit/proposals/{proposal.id}/review").content.decode()
    assert "Publishing failed; the catalog is unchanged" in page and "scratch disk limit" in page
    assert 'data-testid="publish-button"' in page  # accepted still: the maintainer may try again
    assert Proposal.objects.get(pk=proposal.pk).status == "accepted"
    assert not Task.objects.filter(id="physics.toy_spectrum").exists() and not Instance.objects.exists()
    assert not (Path(settings.PUBLISHED_TASKS_DIR) / "physics" / "toy_spectrum").exists()


def test_a_published_task_id_stays_with_the_author_who_published_it_first(
        submitter, other_user, maintainer, task_dir, tmp_path, settings):
    settings.TASKS_DIR = tmp_path / "repo_tasks"
    Path(settings.TASKS_DIR).mkdir()
    files = task_files(task_dir)
    first, second = (services.proposal_cli_open(owner=p.user, task_id="physics.toy_spectrum", name="Toy",
                                                domain="physics", subdomain=None).proposal
                     for p in (submitter, other_user))
    sync(submitter.user, first, files)
    sync(other_user.user, second, {**files, "prompt_b1.md": files["prompt_b1.md"] + b"\nTaken over.\n"})
    for persona, proposal in ((submitter, first), (other_user, second)):  # both frozen before any publish
        assert finished_job(services.proposal_submit(user=persona.user, proposal_id=proposal.id)).status == "passed"
    reviewer = login(maintainer)
    reviewer.post(f"/submit/proposals/{first.id}/review/decide", {"revision": 1, "decision": "accept", "reason": "ok"})
    reviewer.post(f"/submit/proposals/{first.id}/review/publish", {"datasets": ["seed42"], "status": "final"})
    assert finished_job(ProposalJob.objects.get(proposal=first, kind="publish")).status == "passed"
    published = Path(settings.PUBLISHED_TASKS_DIR) / "physics" / "toy_spectrum"
    before = (Task.objects.get(id="physics.toy_spectrum").source_hash, (published / "prompt_b1.md").read_bytes())
    taken = "The task id physics.toy_spectrum is already published by another author"

    page = reviewer.get(f"/submit/proposals/{second.id}/review").content.decode()
    assert 'data-testid="task-id-taken"' in page and taken in page
    response = reviewer.post(f"/submit/proposals/{second.id}/review/decide",
                             {"revision": 1, "decision": "accept", "reason": "ok"}, follow=True)
    assert taken in messages_of(response)
    assert Proposal.objects.get(pk=second.pk).status == "submitted"

    # Accepted before the first publish (or before this rule): Publish refuses it, and so does the worker.
    Proposal.objects.filter(pk=second.pk).update(status="accepted")
    second.events.create(revision=second.revisions.get(), actor=maintainer.user, kind="accepted", text="ok")
    response = reviewer.post(f"/submit/proposals/{second.id}/review/publish",
                             {"datasets": ["seed42"], "status": "final"}, follow=True)
    assert taken in messages_of(response)
    assert '<a href="/guides/faq/#task_id_taken" data-testid="message-help">' in response.content.decode()
    assert not ProposalJob.objects.filter(proposal=second, kind="publish").exists()
    job = ProposalJob.objects.create(proposal=second, kind="publish", requested_by=maintainer.user,
                                     options={"datasets": ["seed42"], "status": "final"})
    jobs.proposal_publish_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and job.problems[0].startswith(taken), job.problems
    assert (Task.objects.get(id="physics.toy_spectrum").source_hash, (published / "prompt_b1.md").read_bytes()) \
        == before
    assert Proposal.objects.get(pk=second.pk).status == "accepted"

    # A new draft of the same id by the other author cannot even be submitted.
    again = services.proposal_cli_open(owner=other_user.user, task_id="physics.toy_spectrum", name="Toy",
                                       domain="physics", subdomain=None).proposal
    sync(other_user.user, again, files)
    with pytest.raises(ValidationFailed) as refused:
        services.proposal_submit(user=other_user.user, proposal_id=again.id)
    assert taken in refused.value.detail
    # The first author keeps their id: a new version of it can still be frozen.
    mine = services.proposal_cli_open(owner=submitter.user, task_id="physics.toy_spectrum", name="Toy",
                                      domain="physics", subdomain=None).proposal
    assert freeze_problems(sync(submitter.user, mine, files)) == []
