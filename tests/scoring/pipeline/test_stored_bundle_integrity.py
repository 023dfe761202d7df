"""Scoring extracts exactly the bytes intake verified: every declared output is re-hashed against the
sha256 recorded at upload. A stored archive that differs (changed after intake, or read by tarfile under
other names than the verifier saw) fails the run with the reason and scores nothing from it."""

import gzip
import io
import tarfile
from collections.abc import Callable

import pytest
from django.core.files.storage import default_storage

from config.celery import app
from portal.submissions import scoring_runs
from portal.submissions import services as submissions
from portal.submissions.models import Submission, SubmissionEntry
from scoring.models import InstanceScore, ScoringRun
from tests.support import bundle_of, confirmed_run, wait_until_scored

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

Tamper = Callable[[bytes, str], bytes]


@pytest.fixture(autouse=True)
def _empty_queue():
    # confirm enqueues; these tests score by hand or with their own worker, and leave no task behind.
    app.control.purge()
    yield
    app.control.purge()


def flip_a_byte(tar: bytes, name: str) -> bytes:
    """The member's first data byte changed: same size, same tar structure, other content."""
    with tarfile.open(fileobj=io.BytesIO(tar)) as reader:
        offset = reader.getmember(name).offset_data
    return tar[:offset] + bytes([tar[offset] ^ 0x01]) + tar[offset + 1:]


def append_a_second_copy(tar: bytes, name: str) -> bytes:
    """A later member of the same name with other bytes, as tarfile read the GNU-prefix member: a
    stream extraction writes it over the verified one."""
    with tarfile.open(fileobj=io.BytesIO(tar)) as reader:
        reader.getmembers()
        end = reader.offset  # after the last member: where the end-of-archive blocks start
    data = b"not what was verified"
    info = tarfile.TarInfo(name)
    info.size = len(data)
    block = info.tobuf(tarfile.PAX_FORMAT)
    return tar[:end] + block + data + bytes(-len(data) % 512) + bytes(1024)


def tamper_stored(archive: str, member: str, tamper: Tamper) -> None:
    with default_storage.open(archive, "rb") as handle:
        tar = gzip.decompress(handle.read())
    with tarfile.open(fileobj=io.BytesIO(tar)) as reader:
        name = next(n for n in reader.getnames() if n.split("/", 1)[-1] == member)
    with default_storage.open(archive, "wb") as handle:
        handle.write(gzip.compress(tamper(tar, name)))


def first_output(submission: Submission, instance_id: str) -> str:
    entry = SubmissionEntry.objects.filter(submission=submission, instance_id=instance_id).order_by("id").first()
    assert entry is not None and entry.outputs
    return entry.outputs[0]["member"]


@pytest.mark.parametrize(("tamper", "problem"), [
    (flip_a_byte, "sha256 in the stored bundle differs from the one verified at upload"),
    (append_a_second_copy, "appears more than once in the stored bundle; one copy was verified"),
])
def test_a_stored_archive_changed_after_intake_fails_the_run_unscored(
    submit_catalog, submitter, run_results, tmp_path, tamper: Tamper, problem: str
):
    submission = confirmed_run(submitter, run_results["reference"], tmp_path)
    run = scoring_runs.scoring_run_start(submission_id=str(submission.id))
    assert run is not None
    instance_id = scoring_runs.scoring_run_pending_instances(run)[0]
    member = first_output(submission, instance_id)
    tamper_stored(submission.archive, member, tamper)

    assert scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=instance_id) == []
    reason = f"the stored bundle does not match what was verified at upload ({member}: {problem}); it was not scored"
    run.refresh_from_db()
    assert (run.status, run.reason) == (ScoringRun.Status.FAILED, reason)
    submission.refresh_from_db()
    assert (submission.status, submission.status_reason) == (Submission.Status.FAILED, reason)
    assert not InstanceScore.objects.filter(scoring_run=run).exists()
    # The run's other instances find it closed: nothing is scored from the archive afterwards.
    other = scoring_runs.scoring_run_pending_instances(run)[-1]
    assert scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=other) == []
    assert not InstanceScore.objects.filter(scoring_run=run).exists()


def test_a_worker_fails_the_run_of_an_archive_changed_between_intake_and_confirm(
    submit_catalog, submitter, run_results, tmp_path, celery_worker_process
):
    archive = bundle_of(run_results["reference"], tmp_path / "reference.tar.gz")
    with archive.open("rb") as stream:
        intake = submissions.submission_intake(user=submitter.user, stream=stream, content_length=None,
                                               filename=archive.name)
    draft = intake.submission
    instance_id = draft.entries.order_by("id").values_list("instance_id", flat=True)[0]
    member = first_output(draft, instance_id)
    tamper_stored(draft.archive, member, flip_a_byte)
    submissions.submission_confirm(user=submitter.user, submission_id=str(draft.id))

    done = wait_until_scored(draft)
    assert done.status == Submission.Status.FAILED, done.status_reason
    assert done.status_reason == (f"the stored bundle does not match what was verified at upload ({member}: "
                                  "sha256 in the stored bundle differs from the one verified at upload); "
                                  "it was not scored")
    scoring = ScoringRun.objects.get(submission=done)
    assert scoring.status == ScoringRun.Status.FAILED and scoring.reason == done.status_reason
    # No result of that instance got a score (another instance may have been scored before the failure).
    assert not InstanceScore.objects.filter(scoring_run=scoring, entry__instance_id=instance_id).exists()

