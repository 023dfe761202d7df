"""The two S3 servers the storage tests run against: moto (quick, in a subprocess per module) and a real
one, Ceph's radosgw, which `make test` starts on 127.0.0.1 (scripts/ensure-test-s3.sh, memstore)."""

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
import requests

from config.object_storage import s3_client_config
from tests.support import free_port, wait_http

# scripts/ensure-test-s3.sh creates this user; the server listens on loopback only.
REAL_S3_URL = os.environ.get("ASIBENCH_TEST_S3_URL", "http://127.0.0.1:7480")
REAL_S3_ACCESS_KEY = os.environ.get("ASIBENCH_TEST_S3_ACCESS_KEY", "asibench-test")
REAL_S3_SECRET_KEY = os.environ.get("ASIBENCH_TEST_S3_SECRET_KEY", "asibench-test-secret")


@dataclass(frozen=True)
class S3Server:
    name: str
    url: str
    access_key: str
    secret_key: str
    region: str = "us-east-1"

    def client(self):  # noqa: ANN201 (boto3's client types are generated)
        return boto3.client("s3", endpoint_url=self.url, aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key, region_name=self.region,
                            config=s3_client_config(self.url))

    def storage_options(self, bucket: str) -> dict:
        """django-storages options as config/settings.py builds them for this server."""
        return {"bucket_name": bucket, "endpoint_url": self.url, "access_key": self.access_key,
                "secret_key": self.secret_key, "region_name": self.region, "default_acl": None,
                "querystring_auth": True, "file_overwrite": False, "client_config": s3_client_config(self.url)}

    def environment(self, bucket: str) -> dict[str, str]:
        """The same, as the variables a Portal process reads."""
        return {"ASIBENCH_S3_BUCKET": bucket, "ASIBENCH_S3_ENDPOINT_URL": self.url, "ASIBENCH_S3_REGION": self.region,
                "ASIBENCH_S3_ACCESS_KEY_ID": self.access_key, "ASIBENCH_S3_SECRET_ACCESS_KEY": self.secret_key}

    @contextmanager
    def bucket(self, prefix: str = "asibench-test") -> Iterator[str]:
        """A new, empty bucket for one test or module; emptied and removed afterwards."""
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        s3 = self.client()
        s3.create_bucket(Bucket=name)
        try:
            yield name
        finally:
            bucket_remove(s3, name)


def bucket_remove(s3, name: str) -> None:  # noqa: ANN001
    for upload in s3.list_multipart_uploads(Bucket=name).get("Uploads", []):
        s3.abort_multipart_upload(Bucket=name, Key=upload["Key"], UploadId=upload["UploadId"])
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
        for obj in page.get("Contents", []):
            s3.delete_object(Bucket=name, Key=obj["Key"])
    s3.delete_bucket(Bucket=name)


def real_s3() -> S3Server:
    """radosgw as `make test` runs it; a clear failure (never a skip) when it is not there."""
    try:
        requests.get(REAL_S3_URL, timeout=5)
    except requests.RequestException as exc:
        pytest.fail(f"No S3 server answers on {REAL_S3_URL} ({exc}). `make test` starts one "
                    "(scripts/ensure-services.sh runs scripts/ensure-test-s3.sh: radosgw on 127.0.0.1:7480).")
    return S3Server("radosgw", REAL_S3_URL, REAL_S3_ACCESS_KEY, REAL_S3_SECRET_KEY)


@contextmanager
def moto_s3() -> Iterator[S3Server]:
    port = free_port()
    proc = subprocess.Popen([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url)
        yield S3Server("moto", url, "test", "test")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
