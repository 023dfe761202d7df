"""manage.py storage_bucket_create / storage_export / storage_import against the real S3 server (radosgw)
and the filesystem storage."""

import io
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.core.management import CommandError, call_command

from tests.s3_servers import S3Server, bucket_remove, real_s3


@contextmanager
def storage_on(settings, options: dict) -> Iterator[object]:  # noqa: ANN001
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "storages.backends.s3.S3Storage",
                                                          "OPTIONS": options}}
    storages._storages = {}
    try:
        yield storages["default"]
    finally:
        storages._storages = {}


def command(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture(scope="module")
def s3() -> S3Server:
    return real_s3()


def test_the_bucket_is_created_once_and_private(s3, settings):
    name = f"asibench-new-{uuid.uuid4().hex[:10]}"
    client = s3.client()
    try:
        with storage_on(settings, s3.storage_options(name)):
            assert command("storage_bucket_create") == "Bucket created (private).\n"
            assert command("storage_bucket_create") == "Bucket already there (private).\n"
        grants = client.get_bucket_acl(Bucket=name)["Grants"]
        assert [g["Permission"] for g in grants] == ["FULL_CONTROL"]
    finally:
        bucket_remove(client, name)


def test_a_public_bucket_is_refused(s3, settings):
    with s3.bucket() as name, storage_on(settings, s3.storage_options(name)):
        s3.client().put_bucket_acl(Bucket=name, ACL="public-read")
        with pytest.raises(CommandError, match="grants .*READ.* to everyone"):
            command("storage_bucket_create")


def test_wrong_credentials_are_named(s3, settings):
    with s3.bucket() as name, storage_on(settings, {**s3.storage_options(name), "secret_key": "wrong"}):
        with pytest.raises(CommandError, match="S3 refused these credentials .*ASIBENCH_S3_SECRET_ACCESS_KEY"):
            command("storage_bucket_create")


def test_waiting_for_s3_ends_with_the_reason(settings):
    options = S3Server("nothing", "http://127.0.0.1:9", "k", "s").storage_options("asibench-private")
    with storage_on(settings, options), pytest.raises(CommandError, match="S3 at http://127.0.0.1:9 did not answer"):
        command("storage_bucket_create", "--wait", "1")


def test_filesystem_storage_needs_no_bucket(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path)}}}
    storages._storages = {}
    try:
        assert "no bucket to create" in command("storage_bucket_create")
    finally:
        storages._storages = {}


def test_an_export_restores_into_an_empty_bucket_byte_for_byte(s3, settings, tmp_path):
    files = {"submissions/a.tar.gz": b"\x1f\x8b bundle", "private/references/seed42/x/ref.tar.gz": b"secret",
             "instances/seed42/x.tar.gz": bytes(range(256)) * 100}
    with s3.bucket() as source, s3.bucket() as target:
        with storage_on(settings, s3.storage_options(source)) as storage:
            for name, data in files.items():
                storage.save(name, ContentFile(data))
            assert "Exported 3 objects" in command("storage_export", str(tmp_path / "backup"))
        manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())["objects"]
        assert set(manifest) == set(files)
        with storage_on(settings, s3.storage_options(target)) as storage:
            assert "Imported 3 objects" in command("storage_import", str(tmp_path / "backup"))
            assert {name: storage.open(name).read() for name in files} == files
            # Again: everything is there already with the same content.
            again = command("storage_import", str(tmp_path / "backup"))
            assert "Imported 0 objects (0 bytes); 3 already there" in again
            # A backup altered after the fact is refused before anything of it is stored.
            (tmp_path / "backup" / "objects" / "submissions" / "a.tar.gz").write_bytes(b"tampered")
            storage.delete("submissions/a.tar.gz")
            with pytest.raises(CommandError, match="does not match the manifest"):
                command("storage_import", str(tmp_path / "backup"))
            assert not storage.exists("submissions/a.tar.gz")


def test_an_export_never_mixes_with_an_older_one(s3, settings, tmp_path):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "manifest.json").write_text("{}")
    with s3.bucket() as source, storage_on(settings, s3.storage_options(source)):
        with pytest.raises(CommandError, match="is not empty"):
            command("storage_export", str(tmp_path / "old"))
