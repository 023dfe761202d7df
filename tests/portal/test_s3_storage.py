"""S3 storage through django-storages, configured as config/settings.py configures it, against two servers:
moto's standalone server (quick) and a real S3 implementation, Ceph's radosgw (started by `make test`)."""

import hashlib
import os
from collections.abc import Iterator

import boto3
import pytest
import requests
from botocore.config import Config
from django.core.files.base import ContentFile
from django.core.files.storage import storages

from config.object_storage import endpoint_is_aws, s3_client_config
from tests.s3_servers import S3Server, moto_s3, real_s3

CHECKSUM_HEADERS = ("x-amz-checksum-", "x-amz-sdk-checksum-algorithm", "x-amz-trailer")


@pytest.fixture(scope="module", params=["moto", "radosgw"])
def s3_server(request) -> Iterator[S3Server]:
    if request.param == "moto":
        with moto_s3() as server:
            yield server
    else:
        yield real_s3()


@pytest.fixture
def s3_storage(s3_server, settings):
    with s3_server.bucket() as bucket:
        settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "storages.backends.s3.S3Storage",
                                                              "OPTIONS": s3_server.storage_options(bucket)}}
        storages._storages = {}
        yield storages["default"], s3_server.client(), bucket
        storages._storages = {}


def sent_headers(storage) -> list[dict[str, str]]:  # noqa: ANN001
    """Every request the storage's client sends from now on, as its headers (lower-case names)."""
    sent: list[dict[str, str]] = []

    def record(request, **_: object) -> None:  # noqa: ANN001
        sent.append({k.lower(): (v.decode() if isinstance(v, bytes) else str(v)) for k, v in request.headers.items()})

    storage.connection.meta.client.meta.events.register("before-send.s3", record)
    return sent


def test_files_round_trip_through_s3(s3_storage):
    storage, s3, bucket = s3_storage
    name = storage.save("archives/run.tar.gz", ContentFile(b"\x1f\x8b bundle bytes"))
    assert storage.exists(name)
    with storage.open(name) as handle:
        assert handle.read() == b"\x1f\x8b bundle bytes"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert keys == [name]
    second = storage.save("archives/run.tar.gz", ContentFile(b"other"))
    assert second != name, "file_overwrite=False keeps both uploads"
    storage.delete(name)
    assert not storage.exists(name)


def test_objects_are_private(s3_storage):
    storage, s3, bucket = s3_storage
    name = storage.save("references/x_ref.npy", ContentFile(b"secret"))
    acl = s3.get_object_acl(Bucket=bucket, Key=name)
    # Exactly one grant: the bucket owner's own. No group grant (AllUsers, AuthenticatedUsers) exists.
    owner = {"Type": "CanonicalUser", "ID": acl["Owner"]["ID"]}
    assert [({k: g["Grantee"][k] for k in ("Type", "ID") if k in g["Grantee"]}, g["Permission"])
            for g in acl["Grants"]] == [(owner, "FULL_CONTROL")]


def test_a_presigned_get_reads_the_object_and_an_unsigned_one_is_refused(s3_storage, s3_server):
    storage, _, bucket = s3_storage
    name = storage.save("references/x_ref.npy", ContentFile(b"private reference"))
    signed = storage.url(name)
    assert "X-Amz-Signature=" in signed or "Signature=" in signed
    response = requests.get(signed, timeout=30)
    assert response.status_code == 200 and response.content == b"private reference"
    unsigned = requests.get(signed.split("?", 1)[0], timeout=30)
    assert unsigned.status_code == 403, unsigned.text
    if s3_server.name != "moto":  # moto checks no signatures: one reason for a real server here
        forged = requests.get(signed.replace("Signature=", "Signature=0"), timeout=30)
        assert forged.status_code == 403, forged.text


def test_a_large_file_goes_up_in_parts_and_comes_back_whole(s3_storage):
    storage, s3, bucket = s3_storage
    # Past django-storages' multipart threshold (boto3's 8 MiB): three parts of 8 MiB.
    data = os.urandom(1 << 20) * 20
    sent = sent_headers(storage)
    name = storage.save("submissions/big.tar.gz", ContentFile(data))
    head = s3.head_object(Bucket=bucket, Key=name)
    assert head["ETag"].strip('"').endswith("-3"), f"not a multipart upload: ETag {head['ETag']}"
    assert head["ContentLength"] == len(data)
    with storage.open(name) as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == hashlib.sha256(data).hexdigest()
    assert len(sent) >= 5  # create, three parts, complete
    assert not [h for h in sent for k in h if k.startswith(CHECKSUM_HEADERS)], "checksums sent to a non-AWS S3"
    assert not [h for h in sent if "aws-chunked" in h.get("content-encoding", "")]


def test_no_checksums_are_sent_where_the_endpoint_is_not_aws(s3_storage, s3_server):
    storage, _, bucket = s3_storage
    sent = sent_headers(storage)
    storage.save("archives/small.tar.gz", ContentFile(b"x" * 1000))
    assert sent and not [h for h in sent for k in h if k.startswith(CHECKSUM_HEADERS)], sent
    # What this guards against: the same upload with botocore's defaults carries a CRC32.
    default = boto3.client("s3", endpoint_url=s3_server.url, aws_access_key_id=s3_server.access_key,
                           aws_secret_access_key=s3_server.secret_key, region_name=s3_server.region,
                           config=Config(s3={"addressing_style": "path"}))
    defaults_sent: list[dict[str, str]] = []
    default.meta.events.register("before-send.s3", lambda request, **_: defaults_sent.append(
        {k.lower(): str(v) for k, v in request.headers.items()}))
    default.put_object(Bucket=bucket, Key="archives/default.bin", Body=b"x" * 1000)
    assert [k for k in defaults_sent[0] if k.startswith(CHECKSUM_HEADERS)]


def test_checksums_follow_botocore_on_aws_and_only_when_required_elsewhere():
    for aws in (None, "", "https://s3.eu-west-1.amazonaws.com", "https://s3.cn-north-1.amazonaws.com.cn"):
        assert endpoint_is_aws(aws) and s3_client_config(aws) is None
    for other in ("http://seaweedfs:8333", "http://127.0.0.1:7480", "https://amazonaws.com.evil.example"):
        config = s3_client_config(other)
        assert not endpoint_is_aws(other) and config is not None
        assert (config.request_checksum_calculation, config.response_checksum_validation) == ("when_required",) * 2


def test_healthz_checks_s3(s3_storage, client, db):
    assert client.get("/healthz").json()["checks"]["storage"] == "ok"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_bundle_intake_stores_the_upload_in_s3_byte_for_byte(s3_storage, submit_catalog, run_results, submitter,
                                                                  tmp_path, client):
    from portal.submissions.models import Submission
    from tests.support import bundle_of, issue_token

    storage, s3, bucket = s3_storage
    bundle = bundle_of(run_results["reference"], tmp_path / "reference.tar.gz").read_bytes()
    response = client.generic("POST", "/api/v1/submissions/bundle", bundle, content_type="application/gzip",
                              HTTP_AUTHORIZATION=f"Bearer {issue_token(submitter.user)}",
                              HTTP_X_ASIBENCH_FILENAME="submission_x.tar.gz")
    assert response.status_code == 201, response.content
    run = Submission.objects.get(id=response.json()["submission_id"])
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert keys == [run.archive] and run.archive.startswith("submissions/")
    stored = s3.get_object(Bucket=bucket, Key=run.archive)["Body"].read()
    assert hashlib.sha256(stored).hexdigest() == hashlib.sha256(bundle).hexdigest()
    # Withdrawing the draft removes the object again.
    from portal.submissions import services as submissions

    submissions.submission_withdraw(user=submitter.user, submission_id=str(run.id))
    assert s3.list_objects_v2(Bucket=bucket).get("Contents", []) == []
