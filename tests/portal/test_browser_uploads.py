"""Browser uploads (/submit/submit-results, the proposal Files step) are sized by Content-Length before
the body is read and stream to disk under the cap; a refusal says why and leaves nothing behind."""

import os
import socket
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from contracts.task_files import MAX_FILE_BYTES
from portal.submissions.models import Submission
from proposals.models import Proposal

SUBMIT = "/submit/submit-results"


def upload_temp_files() -> list[Path]:
    return sorted(Path(settings.FILE_UPLOAD_TEMP_DIR).glob("*.upload*"))


def logged_in(persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


def a_proposal(persona) -> Proposal:
    from proposals.services import proposal_create

    return proposal_create(owner=persona.user, fields={"task_id": "physics.upload_probe", "name": "Upload probe",
                                                      "domain": "physics"})


def files_step(proposal: Proposal) -> str:
    return f"/submit/proposals/{proposal.id}/edit/files"


# --- in process: the test client's body raises if the server reads more than it was given ---------

def test_an_oversize_content_length_is_refused_before_the_body_is_read(submitter, db):
    # The declared length is far over the cap and no body exists: reading even one byte would fail.
    response = logged_in(submitter).generic("POST", SUBMIT, b"", CONTENT_TYPE=MULTIPART_CONTENT,
                                            CONTENT_LENGTH=str(settings.BUNDLE_MAX_COMPRESSED_BYTES + (10 << 20)))
    assert response.status_code == 413
    text = response.content.decode()
    assert "The upload is 522 MB; the limit is 512 MB." in text
    assert response["Connection"] == "close"
    assert Submission.objects.count() == 0 and upload_temp_files() == []


def test_an_upload_without_content_length_is_refused_unread(submitter, db):
    response = logged_in(submitter).generic("POST", SUBMIT, b"", CONTENT_TYPE=MULTIPART_CONTENT, CONTENT_LENGTH="")
    assert response.status_code == 411
    assert "has no Content-Length" in response.content.decode()


def test_file_data_past_the_cap_stops_the_upload_there(submitter, db, settings):
    # Content-Length is within cap + form allowance, so only the streaming handler can stop it.
    settings.BUNDLE_MAX_COMPRESSED_BYTES = 200_000
    body = encode_multipart(BOUNDARY, {"bundle": _named_file("big.tar.gz", os.urandom(250_000))})
    assert len(body) < 200_000 + 64 * 1024
    response = logged_in(submitter).generic("POST", SUBMIT, body, content_type=MULTIPART_CONTENT)
    assert response.status_code == 413
    assert "passed the 0.2 MB limit; it was stopped there and nothing was saved" in response.content.decode()
    assert Submission.objects.count() == 0 and upload_temp_files() == []


def test_a_content_length_shorter_than_the_body_reads_no_further_and_says_so(submitter, db):
    # The client claims 4,000 bytes and sends 300,000: the server reads the claimed bytes only, so the
    # file ends early; Django alone would drop it silently and answer "choose a file".
    body = encode_multipart(BOUNDARY, {"bundle": _named_file("x.tar.gz", os.urandom(300_000))})
    response = logged_in(submitter).generic("POST", SUBMIT, body, content_type=MULTIPART_CONTENT,
                                            CONTENT_LENGTH="4000")
    assert response.status_code == 400
    assert "The upload ended inside a file" in response.content.decode()
    assert Submission.objects.count() == 0 and upload_temp_files() == []


def test_a_cut_off_proposal_upload_stores_nothing_and_says_so(submitter, db):
    proposal = a_proposal(submitter)
    body = encode_multipart(BOUNDARY, {"upload": _named_file("data.npy", os.urandom(300_000))})
    response = logged_in(submitter).generic("POST", files_step(proposal), body, content_type=MULTIPART_CONTENT,
                                            CONTENT_LENGTH="150000")
    assert response.status_code == 400
    assert "Nothing was saved; send it again." in response.content.decode()
    assert proposal.files.count() == 0 and upload_temp_files() == []


def test_a_proposal_file_over_the_per_file_cap_is_stopped(submitter, db):
    proposal = a_proposal(submitter)
    body = encode_multipart(BOUNDARY, {"upload": _named_file("big.bin", bytes(MAX_FILE_BYTES + 1))})
    response = logged_in(submitter).generic("POST", files_step(proposal), body, content_type=MULTIPART_CONTENT)
    assert response.status_code == 413
    assert "big.bin is larger than the 10 MB limit for one file" in response.content.decode()
    assert proposal.files.count() == 0 and upload_temp_files() == []


def test_a_proposal_upload_over_the_total_is_refused_before_reading(submitter, db):
    proposal = a_proposal(submitter)
    response = logged_in(submitter).generic("POST", files_step(proposal), b"", CONTENT_TYPE=MULTIPART_CONTENT,
                                            CONTENT_LENGTH=str(200 << 20))
    assert response.status_code == 413
    assert "The upload is 200 MB; the limit is 100 MB." in response.content.decode()


def test_a_proposal_file_within_the_caps_is_stored_from_its_temp_file(submitter, db):
    proposal = a_proposal(submitter)
    data = os.urandom(3 << 20)  # over Django's old 2.5 MB in-memory threshold, now always on disk
    body = encode_multipart(BOUNDARY, {"upload": _named_file("data.npy", data), "folder": "data"})
    response = logged_in(submitter).generic("POST", files_step(proposal), body, content_type=MULTIPART_CONTENT)
    assert response.status_code == 302, response.content.decode().split('class="error"')[-1][:300]
    row = proposal.files.get(path="data/data.npy")
    from proposals.files import blob_read

    assert blob_read(row.blob) == data
    assert upload_temp_files() == []


def _named_file(name: str, data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


# --- over real HTTP: gunicorn answers before the client has sent the body ---------------------------

def _raw_post(server, path: str, cookie: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", f"Cookie: sessionid={cookie}",
                 f"Content-Type: multipart/form-data; boundary={BOUNDARY}"]
        lines += [f"{key}: {value}" for key, value in headers.items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        answer = b""
        while b"</html>" not in answer.lower() and len(answer) < 200_000:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60, func_only=True)
def test_over_http_an_oversize_upload_is_answered_before_any_body_is_sent(portal_server, submitter):
    client = logged_in(submitter)
    cookie = client.cookies["sessionid"].value
    answer = _raw_post(portal_server, SUBMIT, cookie, {"Content-Length": str(600 << 20)})
    head, _, page = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), head
    assert b"The upload is 600 MB; the limit is 512 MB." in page
    assert Submission.objects.count() == 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60, func_only=True)
def test_over_http_a_chunked_upload_without_length_is_refused_unread(portal_server, submitter):
    client = logged_in(submitter)
    cookie = client.cookies["sessionid"].value
    # One chunk is sent and the stream is left open: the answer must not wait for the rest.
    answer = _raw_post(portal_server, SUBMIT, cookie, {"Transfer-Encoding": "chunked"}, b"10\r\n" + b"x" * 16 + b"\r\n")
    head, _, page = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 411"), head
    assert b"has no Content-Length" in page
