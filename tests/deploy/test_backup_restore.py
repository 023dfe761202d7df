"""The backup and restore procedure of docs/operators.md, on PostgreSQL and the real S3 server (radosgw): a
Portal with a published run is dumped (pg_dump) and its bucket copied out (manage.py storage_export); both
are restored into a fresh database and an empty bucket (pg_restore, storage_import), and the restored
Portal serves the same board, run pages and downloads, byte for byte."""

import hashlib
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import requests
from django.conf import settings as django_settings

from tests.conftest import clear_catalog, load_catalog
from tests.s3_servers import real_s3
from tests.support import (
    OUTPUT_DIR,
    REPO,
    SUBMIT_TASKS,
    VENV_BIN,
    confirmed_run,
    free_port,
    start_celery_worker,
    stop_celery_worker,
    subprocess_env,
    wait_http,
    wait_until_scored,
)
from tests.support import test_database_env as database_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PAGES = ("/leaderboard/", "/leaderboard/export.csv", "/leaderboard/moderation", "/leaderboard/heatmap/",
         "/api/v1/leaderboard?dataset=seed42", "/tasks/", "/datasets/seed42/")


def pg(*args: str) -> list[str]:
    db = django_settings.DATABASES["default"]
    return [*args, "-h", db.get("HOST") or "127.0.0.1", "-p", str(db.get("PORT") or 5432), "-U", db.get("USER") or
            "postgres"]


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=subprocess_env(env),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def what_the_portal_serves(env: dict[str, str], var_dir: Path, entry_id: int, instance_ids: list[str]) -> dict:
    """Pages and downloads from a Portal started on `env` (its own var dir: no cache is shared)."""
    port = free_port()
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    with open(OUTPUT_DIR / f"gunicorn-{var_dir.name}.log", "w") as log:
        proc = subprocess.Popen([str(VENV_BIN / "gunicorn"), "config.wsgi:application", "--bind",
                                 f"127.0.0.1:{port}", "--workers", "1"], cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                env=subprocess_env({**env, "DEBUG": "1", "ASIBENCH_VAR_DIR": str(var_dir)}))
        try:
            site = f"http://127.0.0.1:{port}"
            wait_http(site + "/healthz")
            served: dict[str, object] = {}
            for path in (*PAGES, f"/leaderboard/entries/{entry_id}/"):
                response = requests.get(site + path, timeout=60)
                assert response.status_code == 200, (path, response.status_code)
                served[path] = response.text
            for instance_id in instance_ids:
                response = requests.get(f"{site}/api/v1/datasets/seed42/instances/{instance_id}/archive", timeout=60)
                assert response.status_code == 200, instance_id
                assert hashlib.sha256(response.content).hexdigest() == response.headers["X-Content-SHA256"]
                served[instance_id] = hashlib.sha256(response.content).hexdigest()
            return served
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def object_sha256(s3, bucket: str, key: str) -> str:  # noqa: ANN001
    return hashlib.sha256(s3.client().get_object(Bucket=bucket, Key=key)["Body"].read()).hexdigest()


def test_a_restored_backup_serves_the_same_board_run_pages_and_bundles(
        run_results, submitter, maintainer, settings, tmp_path):
    from leaderboard.services import run_review_publish
    from scoring.models import Instance

    s3 = real_s3()
    restored_db = f"asibench_restore_{uuid.uuid4().hex[:8]}"
    with s3.bucket("asibench-live") as live, s3.bucket("asibench-restored") as restored:
        settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": "storages.backends.s3.S3Storage",
                                                              "OPTIONS": s3.storage_options(live)}}
        try:
            # A Portal in use: its catalog and a scored, published run, all in PostgreSQL and the bucket.
            assert not load_catalog(set(SUBMIT_TASKS)).failures
            worker = start_celery_worker("backup", extra_env=s3.environment(live))
            try:
                run = wait_until_scored(confirmed_run(submitter, run_results["reference"], tmp_path))
            finally:
                stop_celery_worker(worker)
            assert run.status == "scored"
            entry = run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="Restored Agent")
            instance_ids = sorted(Instance.objects.filter(dataset_id="seed42").values_list("instance_id", flat=True))
            live_env = {**database_env(), **s3.environment(live)}
            before = what_the_portal_serves(live_env, tmp_path / "var-live", entry.id, instance_ids)
            assert "Restored Agent" in str(before["/leaderboard/"]) and len(instance_ids) == len(SUBMIT_TASKS)

            # Backup: the database dump and the bucket's copy.
            dump = tmp_path / "asibench.dump"
            subprocess.run(pg("pg_dump", "--format=custom", "--file", str(dump),
                              django_settings.DATABASES["default"]["NAME"]), check=True, timeout=300)
            assert "Exported" in manage(live_env, "storage_export", str(tmp_path / "bucket-copy"))

            # Restore onto fresh parts: a new database, an empty bucket.
            subprocess.run(pg("createdb", restored_db), check=True, timeout=60)
            subprocess.run(pg("pg_restore", "--no-owner", "--exit-on-error", "--dbname", restored_db, str(dump)),
                           check=True, timeout=300)
            restored_env = {**database_env(), **s3.environment(restored),
                            "DATABASE_URL": database_env()["DATABASE_URL"].rsplit("/", 1)[0] + "/" + restored_db}
            manage(restored_env, "storage_bucket_create")
            assert "Imported" in manage(restored_env, "storage_import", str(tmp_path / "bucket-copy"))
            after = what_the_portal_serves(restored_env, tmp_path / "var-restored", entry.id, instance_ids)

            assert after.keys() == before.keys()
            assert [key for key in before if after[key] != before[key]] == []
            # The uploaded bundle and every reference came back byte for byte too.
            live_keys = {o["Key"] for page in s3.client().get_paginator("list_objects_v2").paginate(Bucket=live)
                         for o in page.get("Contents", [])}
            assert run.archive in live_keys and any(key.startswith("private/") for key in live_keys)
            for key in sorted(live_keys):
                assert object_sha256(s3, restored, key) == object_sha256(s3, live, key), key
        finally:
            from leaderboard.models import LeaderboardEntry, ModerationEvent
            from portal.submissions.models import Submission

            ModerationEvent.objects.all().delete()
            LeaderboardEntry.objects.all().delete()
            Submission.objects.all().delete()
            clear_catalog()
            subprocess.run(pg("dropdb", "--if-exists", restored_db), check=False, timeout=60)
