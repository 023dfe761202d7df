"""Pre-submit validation leaves the web request: a Celery job claimed once in the database, its status on
the proposal page, the server's time limit (never the author's), a daily quota per author."""

import hashlib
import io
import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from portal.errors import QuotaExceeded
from proposals import jobs, services
from proposals.files import IncomingFile
from proposals.models import Proposal, ProposalJob, Revision
from proposals.tasks import proposal_validation_run_task
from tests.proposals.proposal_support import finished_job, task_files
from tests.support import start_celery_worker, stop_celery_worker

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("clean_proposal_storage")]


def synced_draft(user, files: dict[str, bytes]) -> Proposal:
    proposal = services.proposal_cli_open(owner=user, task_id="physics.toy_spectrum", name="Toy", domain="physics",
                                          subdomain=None).proposal
    incoming = [IncomingFile(n, io.BytesIO(d), len(d), hashlib.sha256(d).hexdigest()) for n, d in files.items()]
    return services.proposal_files_sync(user=user, proposal_id=proposal.id, files=incoming,
                                        base_snapshot=proposal.snapshot, force=False)


def page_of(client: Client, proposal: Proposal) -> str:
    return client.get(f"/submit/proposals/{proposal.id}").content.decode()


def test_the_page_shows_validating_then_the_failure_and_the_limit_is_the_servers(submitter, task_dir):
    files = task_files(task_dir)
    # The author asks for a day per generator run; the server's cap (3 s for this worker) wins.
    files["task_eval.yaml"] = files["task_eval.yaml"].replace(b"timeout_seconds: 60", b"timeout_seconds: 86400")
    files["generate_gt.py"] = files["generate_gt.py"].replace(
        b'    p["n"], p["seed"] = int(p["n"]), int(p["seed"])\n',
        b'    p["n"], p["seed"] = int(p["n"]), int(p["seed"])\n    __import__("time").sleep(120)\n')
    proposal = synced_draft(submitter.user, files)
    author = Client()
    author.force_login(submitter.user)

    response = author.post(f"/submit/proposals/{proposal.id}/submit", follow=True)
    assert response.status_code == 200
    assert "Validation started" in response.content.decode()
    job = ProposalJob.objects.get(proposal=proposal)
    assert job.status == "queued" and job.kind == "validate"
    waiting = page_of(author, proposal)
    assert 'data-status="queued"' in waiting and "Validating…" in waiting
    assert '<meta http-equiv="refresh"' in waiting  # no script needed to see the result arrive
    # Pressing Submit again while it waits queues nothing new.
    author.post(f"/submit/proposals/{proposal.id}/submit")
    assert ProposalJob.objects.count() == 1

    worker = start_celery_worker("capped", extra_env={"ASIBENCH_GENERATION_TIMEOUT": "3"})
    try:
        job = finished_job(job, timeout=300)
    finally:
        stop_celery_worker(worker)
    assert job.status == "failed"
    assert any("did not finish within 3 s" in p for p in job.problems), job.problems
    assert (job.finished_at - job.started_at) < timedelta(seconds=120)
    page = page_of(author, proposal)
    assert 'data-status="failed"' in page and "Validation failed" in page and "did not finish within 3 s" in page
    assert 'http-equiv="refresh"' not in page
    assert Revision.objects.count() == 0 and Proposal.objects.get(pk=proposal.pk).status == "draft"


def test_a_job_is_claimed_once(submitter, task_dir, proposal_worker):
    proposal = synced_draft(submitter.user, task_files(task_dir))
    job = finished_job(services.proposal_submit(user=submitter.user, proposal_id=proposal.id))
    assert job.status == "passed" and job.outcome == "1"
    # A redelivered message finds the job done and does nothing.
    jobs.proposal_validation_run(job_id=job.pk)
    proposal_validation_run_task.delay(job.pk).get(timeout=60)
    assert Revision.objects.filter(proposal=proposal).count() == 1
    assert [e.kind for e in Proposal.objects.get(pk=proposal.pk).events.all()] == ["submitted"]


def test_a_job_another_worker_holds_is_left_alone(submitter, task_dir):
    proposal = synced_draft(submitter.user, task_files(task_dir))
    job = ProposalJob.objects.create(proposal=proposal, kind="validate", requested_by=submitter.user,
                                     snapshot=proposal.snapshot, status="running", started_at=timezone.now())
    jobs.proposal_validation_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "running" and job.finished_at is None
    assert Proposal.objects.get(pk=proposal.pk).last_validation == {}


def test_identical_seed42_and_seed31415_references_are_refused(submitter, task_dir, proposal_worker):
    files = task_files(task_dir)
    files["generate_gt.py"] = files["generate_gt.py"].replace(
        b'p["n"], p["seed"] = int(p["n"]), int(p["seed"])', b'p["n"], p["seed"] = 4, 7')
    proposal = synced_draft(submitter.user, files)
    job = finished_job(services.proposal_submit(user=submitter.user, proposal_id=proposal.id))
    assert job.status == "failed"
    assert any(p.startswith("official_seeds:") and "byte-identical" in p for p in job.problems), job.problems
    assert Revision.objects.count() == 0


def test_the_daily_validation_quota_is_enforced_with_a_clear_message(submitter, other_user, task_dir, settings):
    settings.PROPOSAL_VALIDATIONS_PER_DAY = 2
    proposal = synced_draft(submitter.user, task_files(task_dir))
    for hours_ago in (30, 5, 1):  # the first is older than a day and no longer counts
        ProposalJob.objects.create(proposal=proposal, kind="validate", requested_by=submitter.user,
                                   snapshot=proposal.snapshot, status="failed",
                                   created_at=timezone.now() - timedelta(hours=hours_ago))
    with pytest.raises(QuotaExceeded) as refused:
        services.proposal_submit(user=submitter.user, proposal_id=proposal.id)
    assert refused.value.status_code == 429
    assert "2 pre-submit validations in the last 24 hours" in refused.value.detail
    assert "next one can start at" in refused.value.detail
    assert ProposalJob.objects.count() == 3  # nothing queued

    author = Client()
    author.force_login(submitter.user)
    response = author.post(f"/submit/proposals/{proposal.id}/submit", follow=True)
    assert "the daily limit" in response.content.decode()
    assert ProposalJob.objects.count() == 3
    # Another author's quota is their own.
    assert not ProposalJob.objects.filter(requested_by=other_user.user).exists()


def _waiting_in(queue: str) -> int:
    from config.celery import app

    with app.connection_for_write() as connection:
        return connection.default_channel.queue_declare(queue=queue).message_count


def test_validation_waits_in_the_proposals_queue_and_a_worker_of_that_queue_alone_runs_it(submitter, task_dir):
    from config.celery import app

    route = app.amqp.router.route
    assert route({}, "proposals.validate_proposal")["queue"].name == "proposals"
    assert route({}, "proposals.publish_proposal")["queue"].name == "proposals"
    assert route({}, "scoring.score_submission")["queue"].name == "celery"
    proposal = synced_draft(submitter.user, task_files(task_dir))
    before = _waiting_in("celery")
    job = services.proposal_submit(user=submitter.user, proposal_id=proposal.id)
    assert _waiting_in("proposals") == 1 and _waiting_in("celery") == before
    worker = start_celery_worker("proposals-only", queues="proposals")
    try:
        job = finished_job(job, timeout=300)
    finally:
        stop_celery_worker(worker)
    assert job.status == "passed" and job.outcome == "1", job.problems
    assert _waiting_in("proposals") == 0


def test_a_nul_in_the_validators_report_is_stored_as_a_replacement_character(submitter, task_dir, proposal_worker):
    # The generator's stderr flows into the report; PostgreSQL refuses U+0000 in text and jsonb.
    files = task_files(task_dir)
    files["generate_gt.py"] = files["generate_gt.py"].replace(
        b'    p["n"], p["seed"] = int(p["n"]), int(p["seed"])\n',
        b'    p["n"], p["seed"] = int(p["n"]), int(p["seed"])\n'
        b'    __import__("sys").stderr.write("bad\\x00byte\\n")\n    raise SystemExit(3)\n')
    proposal = synced_draft(submitter.user, files)
    job = finished_job(services.proposal_submit(user=submitter.user, proposal_id=proposal.id), timeout=240)
    assert job.status == "failed"
    stored = json.dumps([job.problems, job.report, Proposal.objects.get(pk=proposal.pk).last_validation],
                        ensure_ascii=False)
    assert "bad\ufffdbyte" in stored and "\x00" not in stored and "\\u0000" not in stored
    assert any("bad\ufffdbyte" in p for p in job.problems), job.problems
    assert Revision.objects.count() == 0


FORGED_REPORT = json.dumps({"ok": True, "checks": [{"name": "static", "status": "pass", "summary": "forged pass",
                                                    "details": []}], "warnings": []})
# Every way the author's generator can print: at import and when it runs, on fd 1 itself, in an atexit hook,
# from a child it leaves running, and through /proc into the validator's (and the sandbox init's) stdout.
FORGER = f'''
import atexit as _atexit, os as _os, subprocess as _subprocess, sys as _sys
_FORGED = {FORGED_REPORT!r}


def _forge():
    print(_FORGED, flush=True)
    _os.write(1, (_FORGED + "\\n").encode())
    for pid in {{_os.getppid(), 1, 2}}:
        try:
            fd = _os.open(f"/proc/{{pid}}/fd/1", _os.O_WRONLY)
            _os.write(fd, (_FORGED + "\\n").encode())
            _os.close(fd)
        except OSError:
            pass


_forge()
if __name__ == "__main__":
    _atexit.register(_forge)
    _subprocess.Popen([_sys.executable, "-c", "import time; time.sleep(1); print(" + repr(_FORGED) + ")"],
                      start_new_session=True)
'''.encode()


# docker is the deployed backend (docker-compose.yml): there the validator was reachable through /proc.
@pytest.mark.parametrize("sandbox", ["bwrap", "docker"])
def test_a_generator_printing_a_passing_report_cannot_pass_its_failing_validation(submitter, task_dir, sandbox):
    files = task_files(task_dir)
    # The real failure: the seed is ignored, so seed42 and seed31415 give the same references.
    files["generate_gt.py"] = files["generate_gt.py"].replace(
        b"from __future__ import annotations\n", b"from __future__ import annotations\n" + FORGER, 1).replace(
        b'p["n"], p["seed"] = int(p["n"]), int(p["seed"])', b'p["n"], p["seed"] = 4, 7')
    proposal = synced_draft(submitter.user, files)
    job = services.proposal_submit(user=submitter.user, proposal_id=proposal.id)
    worker = start_celery_worker(f"forged-{sandbox}", extra_env={"ASIBENCH_SANDBOX": sandbox})
    try:
        job = finished_job(job, timeout=300)
    finally:
        stop_celery_worker(worker)
    assert job.status == "failed", job.problems
    assert any(p.startswith("official_seeds:") and "byte-identical" in p for p in job.problems), job.problems
    assert "forged pass" not in json.dumps([job.problems, job.report]), job.report
    assert job.report["ok"] is False and Revision.objects.count() == 0
