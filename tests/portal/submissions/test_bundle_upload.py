"""POST /api/v1/submissions/bundle: verified while it streams, parked as a private draft."""

import gzip
import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from portal.submissions.models import Submission, SubmissionEntry
from tests.support import SUBMIT_TASKS, bundle_of, issue_token

pytestmark = [pytest.mark.slow]


@pytest.fixture(autouse=True)
def _empty_submission_storage():
    # Rolled-back test transactions do not remove files; start every test from an empty store.
    import shutil

    shutil.rmtree(Path(settings.MEDIA_ROOT) / "submissions", ignore_errors=True)


@pytest.fixture
def reference_bundle(run_results, tmp_path) -> bytes:
    return bundle_of(run_results["reference"], tmp_path / "reference.tar.gz").read_bytes()


def upload(client: Client, token: str, body: bytes, filename: str = "submission_x.tar.gz"):
    return client.generic(
        "POST", "/api/v1/submissions/bundle", body, content_type="application/gzip",
        HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_X_ASIBENCH_FILENAME=filename,
    )


def stored_archives() -> list[Path]:
    root = Path(settings.MEDIA_ROOT) / "submissions"
    return sorted(root.glob("*")) if root.exists() else []


def leftover_temp_files() -> list[Path]:
    return sorted((Path(settings.VAR_DIR) / "tmp").glob("bundle-*"))


def test_a_valid_bundle_becomes_a_private_draft(submit_catalog, submitter, db, client, reference_bundle):
    token = issue_token(submitter.user)
    response = upload(client, token, reference_bundle)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "draft" and body["integrity_ok"] is True
    assert body["incomplete_instances"] == []
    assert body["confirm_url"] == f"http://testserver/submit/submissions/{body['submission_id']}"
    assert "Parsed 8 results for 2 tasks" in body["message"]
    run = Submission.objects.get(id=body["submission_id"])
    assert run.owner_id == submitter.user.id and run.dataset_id == "seed42"
    assert (run.model, run.effort, run.sandbox) == ("demo-model", "high", "linux_ns")
    assert run.report["per_level"] == {"b1": 2, "b2": 2, "b3": 2, "b4": 2}
    assert set(SubmissionEntry.objects.values_list("task_id", flat=True)) == set(SUBMIT_TASKS)
    assert len(stored_archives()) == 1 and leftover_temp_files() == []
    assert stored_archives()[0].stat().st_mode & 0o777 == 0o600


def test_the_same_bytes_twice_give_back_the_same_draft(submit_catalog, submitter, db, client, reference_bundle):
    token = issue_token(submitter.user)
    first = upload(client, token, reference_bundle).json()
    second = upload(client, token, reference_bundle)
    assert second.status_code == 200
    assert second.json()["submission_id"] == first["submission_id"]
    assert "already uploaded" in second.json()["message"]
    assert Submission.objects.count() == 1 and len(stored_archives()) == 1


def test_missing_levels_are_listed_as_incomplete(submit_catalog, submitter, db, client, run_results, tmp_path):
    body = bundle_of(run_results["naive"], tmp_path / "naive.tar.gz").read_bytes()
    response = upload(client, issue_token(submitter.user), body)
    assert response.status_code == 201
    incomplete = response.json()["incomplete_instances"]
    assert f"{SUBMIT_TASKS[0]}__seed42__b2" in incomplete and f"{SUBMIT_TASKS[0]}__seed42__b4" in incomplete
    assert len(incomplete) == 4


def rewrite_bundle(original: bytes, mutate) -> bytes:
    """Unpack, let `mutate(members)` edit {name: (TarInfo, bytes)}, pack again."""
    members: dict[str, tuple[tarfile.TarInfo, bytes]] = {}
    with tarfile.open(fileobj=io.BytesIO(original), mode="r:gz") as tar:
        for m in tar.getmembers():
            members[m.name] = (m, tar.extractfile(m).read() if m.isfile() else b"")
    mutate(members)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for info, data in members.values():
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return out.getvalue()


def _traversal(members):
    info = tarfile.TarInfo("../../etc/evil.txt")
    members[info.name] = (info, b"x")


def _unsandboxed(members):
    name = next(n for n in members if n.endswith("/manifest.json"))
    info, data = members[name]
    manifest = json.loads(data)
    manifest["instances"][0]["provenance"]["sandbox"]["effective_mode"] = "none"
    members[name] = (info, json.dumps(manifest).encode())


def _tampered_output(members):
    name = next(n for n in members if "/outputs/" in n and members[n][0].isfile())
    info, data = members[name]
    members[name] = (info, data[:-1] + bytes([data[-1] ^ 1]))


@pytest.mark.parametrize(
    ("mutate", "code", "status"),
    [
        (_traversal, "path_traversal", 422),
        (_unsandboxed, "sandbox_policy", 422),
        (_tampered_output, "hash_mismatch", 422),
    ],
)
def test_a_broken_bundle_is_refused_with_its_reason_and_leaves_nothing(
    submit_catalog, submitter, db, client, reference_bundle, mutate, code, status
):
    response = upload(client, issue_token(submitter.user), rewrite_bundle(reference_bundle, mutate))
    assert response.status_code == status, response.content
    assert response.json()["code"] == code
    assert response.json()["detail"].startswith(f"Bundle refused ({code}):")
    assert Submission.objects.count() == 0 and SubmissionEntry.objects.count() == 0
    assert stored_archives() == [] and leftover_temp_files() == []


def test_instances_outside_the_official_dataset_are_refused(submit_catalog, submitter, db, client, reference_bundle):
    from scoring.models import Instance

    Instance.objects.filter(dataset="seed42", task_id=SUBMIT_TASKS[1]).delete()
    response = upload(client, issue_token(submitter.user), reference_bundle)
    assert response.status_code == 422
    assert response.json()["code"] == "unknown_instance"
    assert SUBMIT_TASKS[1] in response.json()["detail"]
    assert Submission.objects.count() == 0 and stored_archives() == []


def test_a_gzip_bomb_is_refused(submit_catalog, submitter, db, client):
    bomb = io.BytesIO()
    with tarfile.open(fileobj=bomb, mode="w:gz") as tar:
        info = tarfile.TarInfo("sub/instances/x/outputs/zeros.npy")
        info.size = 400 * 1024 * 1024
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    body = bomb.getvalue()
    assert len(body) < 1024 * 1024
    response = upload(client, issue_token(submitter.user), body)
    assert response.status_code == 422
    assert response.json()["code"] == "ratio_exceeded"
    assert Submission.objects.count() == 0 and stored_archives() == [] and leftover_temp_files() == []


def test_not_gzip_and_oversize_are_refused(submit_catalog, submitter, db, client, settings):
    token = issue_token(submitter.user)
    garbage = upload(client, token, b"this is not a bundle")
    assert garbage.status_code == 422 and garbage.json()["code"] == "not_gzip"
    settings.BUNDLE_MAX_COMPRESSED_BYTES = 100
    big = upload(client, token, gzip.compress(os.urandom(10_000)))
    assert big.status_code == 413 and big.json()["code"] == "too_large"
    assert Submission.objects.count() == 0 and leftover_temp_files() == []


def test_uploads_need_a_valid_token(submit_catalog, db, client, reference_bundle):
    response = client.generic("POST", "/api/v1/submissions/bundle", reference_bundle, content_type="application/gzip")
    assert response.status_code == 401
    assert Submission.objects.count() == 0


def test_uploads_are_rate_limited_per_user(submit_catalog, submitter, db, client, settings):
    from django.core.cache import cache

    cache.clear()
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "bundle_upload": "2/hour"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    from rest_framework.settings import api_settings
    from rest_framework.throttling import SimpleRateThrottle

    api_settings.reload()
    original = SimpleRateThrottle.THROTTLE_RATES
    SimpleRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
    try:
        token = issue_token(submitter.user)
        statuses = [upload(client, token, b"junk").status_code for _ in range(3)]
    finally:
        # A class attribute: restoring `settings` does not reset it, and later tests would see 2/hour.
        SimpleRateThrottle.THROTTLE_RATES = original
        cache.clear()
    assert statuses == [422, 422, 429]


def test_a_custom_agent_is_labelled_by_program_and_script_not_its_paths(submit_catalog, submitter, run_results,
                                                                      tmp_path):
    from portal.submissions.services import submission_intake

    archive = bundle_of(run_results["naive"], tmp_path / "naive.tar.gz")
    with archive.open("rb") as stream:
        draft = submission_intake(user=submitter.user, stream=stream, content_length=None,
                                  filename=archive.name).submission
    assert draft.agent == "python naive_agent.py"
    assert (draft.model, draft.effort) == ("demo-model", "high")
