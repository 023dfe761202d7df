"""Sentry error reports, against a local server speaking Sentry's envelope protocol: off unless SENTRY_DSN is
set; on, a failing request (Django integration) and a failing task in a real Celery worker (Celery
integration) are reported, and nothing that names a person or carries a secret goes with them."""

import json
import os
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from tests.sentry_server import SentryServer
from tests.support import OUTPUT_DIR, REPO, VENV_BIN, subprocess_env
from tests.support import test_database_env as database_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# What the failing request carries (in the order tests/deploy/sentry_django_request.py takes them), and the
# task's argument: none of it may reach Sentry. (The session cookie's name is checked too.)
REQUEST = ("carol@lab.example", "203.0.113.9", "198.51.100.7", "cookie-value-77", "header-secret-44",
           "query-secret-55", "body-secret-66", "reset-key-31337")
LEAKS = (*REQUEST, "dave@lab.example", "sessionid")


@pytest.fixture
def sentry() -> Iterator[SentryServer]:
    server = SentryServer()
    yield server
    server.close()


def assert_nothing_personal(event: dict, raw: str) -> None:
    assert [leak for leak in LEAKS if leak in raw] == [], raw
    assert "user" not in event
    request = event.get("request", {})
    assert not {"cookies", "data", "query_string", "env"} & set(request)
    assert {k.lower() for k in request.get("headers", {})} <= {"content-type", "content-length", "accept"}


def test_error_reporting_is_off_by_default(tmp_path):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SENTRY_")}
    done = subprocess.run([sys.executable, "-c", "import django; django.setup(); import sentry_sdk; "
                                                 "print(sentry_sdk.get_client().is_active())"],
                          cwd=REPO, env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings",
                                         "ASIBENCH_VAR_DIR": str(tmp_path)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_failing_request_is_reported_without_personal_data(sentry):
    done = subprocess.run([sys.executable, "tests/deploy/sentry_django_request.py", *REQUEST], cwd=REPO,
                          # DEBUG off, as in production: with it on, the Portal answers only loopback clients.
                          env=subprocess_env({**database_env(), "SENTRY_DSN": sentry.dsn, "DEBUG": "0",
                                              "SECRET_KEY": secrets.token_urlsafe(48),
                                              "SECURE_SSL_REDIRECT": "0", "SENTRY_ENVIRONMENT": "test-env"}),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    ((event, raw),) = sentry.wait_for_events(1)
    assert sentry.envelopes[0]["path"] == "/api/42/envelope/"
    assert "sentry_key=0123456789abcdef0123456789abcdef" in sentry.envelopes[0]["auth"]
    (exception,) = event["exception"]["values"]
    assert exception["type"] == "RuntimeError" and exception["value"] == "page broke for [email]"
    assert event["environment"] == "test-env" and event["level"] == "error"
    assert event["transaction"] == "/explodes/{key}/"
    # sentry-sdk sends no URL without send_default_pii; if one is sent, it is the route, never the path.
    assert event.get("request", {}).get("url", "/explodes/{key}/").endswith("/explodes/{key}/")
    assert all("vars" not in frame for frame in exception["stacktrace"]["frames"])
    assert_nothing_personal(event, raw)


def test_a_failing_task_in_a_worker_is_reported_without_personal_data(sentry):
    from config.celery import app

    queue = f"sentry-{uuid.uuid4().hex[:8]}"
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    with open(OUTPUT_DIR / "celery-sentry.log", "w") as log:
        worker = subprocess.Popen(
            [str(VENV_BIN / "celery"), "-A", "tests.deploy.sentry_celery_app", "worker", "--concurrency", "1",
             "--loglevel", "INFO", "--without-gossip", "--without-mingle", "-Q", queue, "--hostname", f"{queue}@%h"],
            cwd=REPO, env=subprocess_env({**database_env(), "SENTRY_DSN": sentry.dsn}), stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
        try:
            result = app.send_task("tests.fails_for_sentry", args=["dave@lab.example"], queue=queue)
            with pytest.raises(ValueError, match="scoring blew up"):
                result.get(timeout=60)
            ((event, raw),) = sentry.wait_for_events(1)
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    (exception,) = event["exception"]["values"]
    assert exception["type"] == "ValueError" and exception["value"] == "scoring blew up for [email]"
    assert exception["mechanism"]["type"] == "celery" and exception["mechanism"]["handled"] is False
    assert event["transaction"] == "tests.fails_for_sentry"
    # The task's arguments (here an address) are not in the report.
    assert "dave@lab.example" not in json.dumps(event.get("extra", {}))
    assert_nothing_personal(event, raw)
