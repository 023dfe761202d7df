"""Django's debug page is for this machine only. DEBUG is on when DEBUG=1 or unset (`make run`); then a
gunicorn bind other machines can reach, a public host name, a public URL or a TLS proxy refuses to
start, and any client but loopback (or one behind a proxy) gets a plain 403, never the debug page."""

import os
import socket
import subprocess
import sys

import pytest
import requests
from django.test import Client

from tests.support import REPO, VENV_BIN, free_port

CLEAN = {k: v for k, v in os.environ.items()
         if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL", "ALLOWED_HOSTS", "ASIBENCH_PUBLIC_URL",
                      "BEHIND_TLS_PROXY", "CACHE_URL"}}


def gunicorn(tmp_path, bind: str, **env: str) -> subprocess.CompletedProcess:
    """gunicorn started from the checkout as scripts/run-portal.sh starts it, with another bind."""
    return subprocess.run(
        [str(VENV_BIN / "gunicorn"), "config.wsgi:application", "--bind", bind, "--workers", "1",
         "--graceful-timeout", "1"],
        cwd=REPO, env={**CLEAN, "ASIBENCH_VAR_DIR": str(tmp_path), **env}, capture_output=True, text=True,
        timeout=30)


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("debug", [{"DEBUG": "1"}, {}])
@pytest.mark.parametrize("host", ["0.0.0.0", "[::]", "192.0.2.10"])
def test_gunicorn_with_debug_on_a_reachable_bind_refuses_to_start(tmp_path, debug, host):
    port = free_port()
    done = gunicorn(tmp_path, f"{host}:{port}", **debug)
    assert done.returncode == 3, done.stderr[-2000:]
    assert f"Refusing to start: DEBUG is on (DEBUG=1, or DEBUG unset) and it listens on {host}:{port}, which " \
           "other machines can reach." in done.stderr
    assert not listening(port)


def load_settings(tmp_path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c",
         "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"],
        cwd=REPO, env={**CLEAN, "ASIBENCH_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True, text=True)


@pytest.mark.parametrize("env, named", [
    ({"ALLOWED_HOSTS": "portal.example,127.0.0.1"}, "portal.example"),
    ({"DEBUG": "1", "ALLOWED_HOSTS": "*"}, "*"),
    ({"DEBUG": "1", "ALLOWED_HOSTS": "10.1.2.3"}, "10.1.2.3"),
    ({"ASIBENCH_PUBLIC_URL": "https://portal.example"}, "ASIBENCH_PUBLIC_URL=https://portal.example"),
    ({"DEBUG": "1", "BEHIND_TLS_PROXY": "1"}, "BEHIND_TLS_PROXY=1"),
])
def test_debug_with_the_settings_of_a_deployment_refuses_to_start(tmp_path, env, named):
    done = load_settings(tmp_path, **env)
    assert done.returncode != 0
    assert f"DEBUG is on (DEBUG=1, or DEBUG unset) for a deployment ({named})" in done.stderr


def test_debug_on_this_machine_starts(tmp_path):
    done = load_settings(tmp_path, ALLOWED_HOSTS="127.0.0.1,localhost,[::1],.localhost",
                         ASIBENCH_PUBLIC_URL="http://localhost:8000")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


@pytest.mark.django_db
@pytest.mark.parametrize("meta", [{"REMOTE_ADDR": "203.0.113.7"}, {"REMOTE_ADDR": "10.0.0.2"},
                                  {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "203.0.113.7"},
                                  {"REMOTE_ADDR": "127.0.0.1", "HTTP_FORWARDED": "for=203.0.113.7"}])
def test_with_debug_on_any_other_client_gets_a_plain_403(settings, meta):
    settings.DEBUG = True
    client = Client(raise_request_exception=False)
    for path in ("/", "/no/such/page", "/api/v1/leaderboard?offset=abc"):
        answer = client.get(path, **meta)
        assert answer.status_code == 403, path
        assert answer["Content-Type"].startswith("text/plain")
        assert answer.content.decode() == ("This Portal runs with DEBUG on, which answers this machine only. "
                                           "Its operator sets DEBUG=0 to serve others.")
    assert client.get("/no/such/page", REMOTE_ADDR="127.0.0.1").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_the_live_debug_server_refuses_what_came_through_a_proxy(portal_server):
    assert requests.get(f"{portal_server.url}/healthz", timeout=30).status_code == 200
    proxied = requests.get(f"{portal_server.url}/no/such/page", headers={"X-Forwarded-For": "203.0.113.7"},
                           timeout=30)
    assert proxied.status_code == 403 and "DEBUG" in proxied.text and "Traceback" not in proxied.text
