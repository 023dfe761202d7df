"""S3 storage through django-storages against moto's standalone server over HTTP."""

import subprocess
import sys
from pathlib import Path

import boto3
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import storages

from tests.support import free_port, wait_http


@pytest.fixture(scope="module")
def moto_endpoint():
    port = free_port()
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def s3_storage(moto_endpoint, settings):
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                      region_name="us-east-1")
    s3.create_bucket(Bucket="asibench-private")
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {"bucket_name": "asibench-private", "endpoint_url": moto_endpoint, "access_key": "test",
                        "secret_key": "test", "region_name": "us-east-1", "default_acl": None,
                        "file_overwrite": False},
        },
    }
    storages._storages = {}
    yield storages["default"], s3
    storages._storages = {}


def test_files_round_trip_through_s3(s3_storage):
    storage, s3 = s3_storage
    name = storage.save("archives/run.tar.gz", ContentFile(b"\x1f\x8b bundle bytes"))
    assert storage.exists(name)
    with storage.open(name) as handle:
        assert handle.read() == b"\x1f\x8b bundle bytes"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="asibench-private").get("Contents", [])]
    assert keys == [name]
    second = storage.save("archives/run.tar.gz", ContentFile(b"other"))
    assert second != name, "file_overwrite=False keeps both uploads"
    storage.delete(name)
    assert not storage.exists(name)


def test_objects_are_private(s3_storage):
    storage, s3 = s3_storage
    name = storage.save("references/x_ref.npy", ContentFile(b"secret"))
    acl = s3.get_object_acl(Bucket="asibench-private", Key=name)
    # Exactly one grant: the bucket owner's own. No group grant (AllUsers, AuthenticatedUsers) exists.
    owner = {"Type": "CanonicalUser", "ID": acl["Owner"]["ID"]}
    assert [({k: g["Grantee"][k] for k in ("Type", "ID") if k in g["Grantee"]}, g["Permission"])
            for g in acl["Grants"]] == [(owner, "FULL_CONTROL")]


def test_healthz_checks_s3(s3_storage, client, db):
    assert client.get("/healthz").json()["checks"]["storage"] == "ok"
