"""The review page of a proposal whose author made large revisions, against a live Portal: a changed file
past the diff cap is never read (its blobs are gone and the page still answers) and says "too large to
diff" with both versions to download; a diff of files past the in-request limit is left to a worker, which
computes it once and keeps it; the page lists what it does not render with a download link."""

import hashlib
import io

import pytest
from django.core.files.storage import default_storage

from proposals.files import IncomingFile, blob_store
from proposals.models import Proposal, Revision, RevisionDiff, RevisionFile
from tests.support import http_login, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clean_proposal_storage")]
MiB = 1024 * 1024


def code(kib: int, marker: str) -> bytes:
    """`kib` KiB of distinct Python lines, `marker` in the middle."""
    lines = [f"value_{n:07d} = {n} * 3  # line {n}\n" for n in range(kib * 1024 // 36)]
    lines.insert(len(lines) // 2, f"# {marker}\n")
    return "".join(lines).encode()


def revision(proposal: Proposal, number: int, files: dict[str, bytes]) -> Revision:
    frozen = Revision.objects.create(proposal=proposal, number=number, content_hash=f"{number:064d}",
                                     fields={"task_id": proposal.task_id}, validation={"checks": []})
    for path, data in files.items():
        digest = hashlib.sha256(data).hexdigest()
        blob, _ = blob_store(proposal.id, IncomingFile(path, io.BytesIO(data), len(data), digest))
        RevisionFile.objects.create(revision=frozen, path=path, blob=blob, sha256=digest, size=len(data))
    return frozen


@pytest.fixture
def proposal(submitter) -> Proposal:
    return Proposal.objects.create(owner=submitter.user, task_id="physics.big_task", name="Big", domain="physics",
                                   status=Proposal.Status.SUBMITTED, snapshot="0" * 64)


def test_a_file_past_the_diff_cap_is_never_read_and_offered_for_download(portal_server, proposal, maintainer,
                                                                          other_user):
    prompt = b"# Prompt\n\nSolve it.\n"
    first = revision(proposal, 1, {"prompt_b1.md": prompt, "data/big.csv": b"a,b\n" + b"1,2\n" * (MiB // 2)})
    second = revision(proposal, 2, {"prompt_b1.md": prompt, "data/big.csv": b"a,b\n" + b"3,4\n" * (MiB // 2)})
    # Reading either version of big.csv would now fail the request: the page must not try.
    for row in RevisionFile.objects.filter(path="data/big.csv"):
        default_storage.delete(row.blob)
    reviewer = http_login(portal_server, maintainer)
    page = reviewer.get(f"{portal_server.url}/submit/proposals/{proposal.id}/review?revision=2", timeout=60)
    assert page.status_code == 200, page.text[-2000:]
    assert "Too large to diff: download both versions and compare them locally." in page.text
    base = f"/submit/proposals/{proposal.id}/revisions"
    assert f'href="{base}/1/files/data/big.csv"' in page.text and f'href="{base}/2/files/data/big.csv"' in page.text
    assert 'data-testid="not-shown"' in page.text  # big.csv is listed, not rendered
    assert "<h1>Prompt</h1>" in page.text
    kept = RevisionDiff.objects.get(old=first, new=second)
    assert kept.status == "ready" and kept.files == [{"path": "data/big.csv", "change": "changed",
                                                      "note": "too_large"}]
    # The download serves the revision's bytes to the reviewer (and the owner), as an attachment.
    download = reviewer.get(f"{portal_server.url}{base}/1/files/prompt_b1.md", timeout=60)
    assert download.status_code == 200 and download.content == prompt
    assert download.headers["Content-Disposition"].startswith("attachment")
    assert http_login(portal_server, other_user).get(f"{portal_server.url}{base}/1/files/prompt_b1.md",
                                                     timeout=60).status_code == 404


def test_a_diff_past_the_request_limit_is_computed_once_by_a_worker(portal_server, proposal, maintainer, settings,
                                                                    django_db_blocker):
    from tests.support import start_celery_worker, stop_celery_worker

    old, new = code(300, "before the change"), code(300, "THE CHANGED LINE")
    first = revision(proposal, 1, {"generate_gt.py": old})
    second = revision(proposal, 2, {"generate_gt.py": new})
    reviewer = http_login(portal_server, maintainer)
    url = f"{portal_server.url}/submit/proposals/{proposal.id}/review"
    page = reviewer.get(url, timeout=60)
    assert page.status_code == 200
    assert 'data-testid="diff-pending"' in page.text and "THE CHANGED LINE" not in page.text
    assert RevisionDiff.objects.get(old=first, new=second).status == "pending"  # nothing computed in the request
    worker = start_celery_worker("diffs")
    try:
        wait_for(lambda: RevisionDiff.objects.get(old=first, new=second).status == "ready", 120, "the worker's diff")
    finally:
        stop_celery_worker(worker)
    kept = RevisionDiff.objects.get(old=first, new=second)
    (entry,) = kept.files
    assert entry["path"] == "generate_gt.py" and "-# before the change\n+# THE CHANGED LINE\n" in entry["diff"]
    page = reviewer.get(url, timeout=60)
    assert 'data-testid="diff-pending"' not in page.text and "THE CHANGED LINE" in page.text
    # Kept: the blobs can go and the page still shows it (the page reads the kept diff).
    for row in RevisionFile.objects.all():
        default_storage.delete(row.blob)
    assert "THE CHANGED LINE" in reviewer.get(url, timeout=60).text
