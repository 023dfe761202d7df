"""Every command that talks to a Portal goes where `asibench login --endpoint …` saved the login, unless
--endpoint or ASIBENCH_SUBMIT_ENDPOINT says otherwise (issue 30: `task pull` went to the production host)."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cli_client.errors import ExitStatus
from cli_client.remote.credentials import CredentialStore
from tests.proposals.proposal_support import scaffold_template
from tests.support import OUR_CLI, asibench, cli_env, run_cli


class Portal(BaseHTTPRequestHandler):
    """A Portal that records each request line and refuses everything with a recognisable detail."""

    log: list[str] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        type(self).log.append(f"{self.command} {self.path.split('?')[0]} {self.headers.get('Authorization')}")
        if self.path.startswith("/api/v1/me"):
            status, body = 200, {"id": "u1", "email": "ada@lab.example"}
        elif self.path.startswith("/api/v1/datasets/"):
            status, body = 200, {"instances": []}
        else:
            status, body = 418, {"detail": "reached the saved Portal"}
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = _answer  # noqa: N815 - http.server's naming

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def portal() -> Iterator[tuple[str, type[Portal]]]:
    handler = type("P", (Portal,), {"log": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path / "home")


def logged_in(env: dict[str, str], url: str, token: str = "asi_pat_savedloginsavedlogin") -> None:
    """What `asibench login --endpoint URL` leaves behind (either client writes this file)."""
    CredentialStore.from_env(env).save(f"{url}/api/v1", token, {"id": "u1"})


def test_task_pull_goes_to_the_saved_portal(portal, env, tmp_path):
    url, handler = portal
    logged_in(env, url)
    pulled = asibench("task", "pull", "--repo", "seed42", "--output-dir", str(tmp_path / "inst"), env=env)
    assert handler.log == ["GET /api/v1/datasets/seed42/instances None"]
    assert pulled.exit_status == ExitStatus.ERROR and "Dataset seed42 has no instances" in pulled.stderr


def test_the_environment_and_the_option_still_win(portal, env, tmp_path):
    url, handler = portal
    logged_in(env, "http://127.0.0.1:9")
    args = ("task", "pull", "--repo", "seed42", "--output-dir", str(tmp_path / "inst"))
    assert "Dataset seed42 has no instances" in asibench(*args, "--endpoint", url, env=env).stderr
    assert "Dataset seed42 has no instances" in asibench(*args, env={**env, "ASIBENCH_SUBMIT_ENDPOINT": url}).stderr
    assert len(handler.log) == 2
    saved = asibench(*args, env=env)
    assert saved.exit_status == ExitStatus.ERROR
    assert "Could not reach the Portal at http://127.0.0.1:9/api/v1/datasets/seed42/instances" in saved.stderr


def test_the_most_recent_login_is_the_one_used(portal, env, tmp_path):
    url, handler = portal
    logged_in(env, "http://127.0.0.1:9", "asi_pat_olderloginolderlogin")
    logged_in(env, url)
    status = asibench("auth", "status", env=env)
    assert status.exit_status == ExitStatus.OK
    assert f"Commands talk to {url}/api/v1 (from the saved login; --endpoint overrides it)." in status.stdout
    asibench("task", "pull", "--repo", "seed42", "--output-dir", str(tmp_path / "inst"), env=env)
    assert handler.log == ["GET /api/v1/datasets/seed42/instances None"]


def test_without_any_login_commands_go_to_the_official_portal(env):
    status = asibench("auth", "status", env=env)
    assert "Commands talk to https://asibench.apexin.ai (from the default; --endpoint overrides it)." in status.stdout


def test_logout_forgets_the_saved_portals_login(portal, env):
    url, _ = portal
    logged_in(env, url)
    assert asibench("logout", env=env).stdout.strip() == "Signed out."
    assert CredentialStore.from_env(env).entries() == {}
    assert asibench("logout", env=env).stdout.strip() == "No saved login to remove."


def test_login_again_validates_against_the_saved_portal(portal, env):
    url, handler = portal
    logged_in(env, url, "asi_pat_firstloginfirstlogin")
    # A subprocess: click's hidden prompt reads the real stdin.
    again = run_cli([*OUR_CLI, "login"], env, stdin="asi_pat_secondloginsecondlogin\n")
    assert again.returncode == ExitStatus.OK, again.stderr
    assert f"{url}/submit/settings#cli-tokens" in again.stdout
    assert handler.log == ["GET /api/v1/me Bearer asi_pat_secondloginsecondlogin"]
    assert CredentialStore.from_env(env).load(f"{url}/api/v1")["token"] == "asi_pat_secondloginsecondlogin"


def test_task_submit_goes_to_the_saved_portal(portal, env, tmp_path):
    url, handler = portal
    logged_in(env, url)
    task_dir = scaffold_template(tmp_path / "tasks", env)
    done = asibench("task", "submit", "--task-dir", str(task_dir), env=env)
    assert handler.log == ["POST /api/v1/cli/submit Bearer asi_pat_savedloginsavedlogin"]
    assert done.exit_status == ExitStatus.ERROR and "HTTP 418: reached the saved Portal" in done.stderr
