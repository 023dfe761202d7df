"""The first hour of an ordinary user: `make run`'s configuration (SQLite, the filesystem broker, the
default sandbox, gunicorn, the Celery worker and beat from scripts/run-portal.sh), run by a uid
that is not root, from the catalog load to a run pulled, run and uploaded with our CLI, confirmed
and scored.

Everything the user runs goes through tests.support.as_unprivileged (setpriv from this root test
process); only the catalog is cut to one task, to keep the test short.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import textwrap
from pathlib import Path

import pytest
import requests

from scoring.sandbox.modes import BWRAP_UNPRIVILEGED
from tests.support import (
    OUTPUT_DIR,
    REFERENCE_AGENT,
    REPO,
    SUBMIT_TASKS,
    UNPRIVILEGED_UID,
    VENV_BIN,
    as_unprivileged,
    free_port,
    signals_as_in_a_terminal,
    unprivileged_dir,
    wait_for,
    wait_http,
)

pytestmark = pytest.mark.slow

TASK = SUBMIT_TASKS[0]
CSRF = "y" * 32

# The user's account (verified), an API token for the CLI and a signed-in browser session.
ACCOUNT = textwrap.dedent("""
    import json
    import django
    django.setup()
    from allauth.account.models import EmailAddress
    from django.test import Client
    from portal.accounts.models import User
    from portal.accounts.services import cli_token_create

    user = User.objects.create_user(email="newcomer@example.org", password="pw-not-used-1234")
    EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
    client = Client()
    client.force_login(user)
    print(json.dumps({"token": cli_token_create(user=user, name="cli").plaintext,
                      "session": client.cookies["sessionid"].value}))
""")


def processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                status = Path(f"/proc/{entry.name}/status").read_text()
            except OSError:
                continue
            uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
            if int(uid_line.split()[1]) == uid and "State:\tZ" not in status:
                found.append(int(entry.name))
    return found


def confirm_in_the_browser_session_and_wait_until_scored(url: str, run_id: str, session_key: str) -> None:
    """Confirm in the browser session, then watch the run page until it is scored."""
    session = requests.Session()
    session.cookies.update({"sessionid": session_key, "csrftoken": CSRF})
    confirmed = session.post(f"{url}/submit/submissions/{run_id}/confirm", headers={"X-CSRFToken": CSRF},
                             timeout=60)
    assert confirmed.status_code == 200
    assert re.search(r'data-testid="run-status"[^>]*>\s*(queued|scoring|scored)\s*<', confirmed.text), \
        re.sub(r"\s+", " ", confirmed.text)[-3000:]

    def run_status() -> str:
        page = session.get(f"{url}/submit/submissions/{run_id}", timeout=60).text
        found = re.search(r'data-testid="run-status"[^>]*>([^<]+)<', page)
        return found.group(1).strip() if found else ""

    final = wait_for(lambda: run_status() in ("scored", "failed") and run_status(), 300, "the run to be scored",
                     interval=2)
    page = session.get(f"{url}/submit/submissions/{run_id}", timeout=60).text
    assert final == "scored", re.sub(r"\s+", " ", page)[-3000:]
    assert "Overall" in page
    session.close()  # an open keep-alive connection would hold a web worker for its graceful timeout


def test_an_ordinary_user_runs_make_run_and_gets_a_run_scored():
    home = unprivileged_dir("newcomer")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # `make run`'s environment: no database, broker or cache URL and no sandbox named, so the embedded
    # defaults apply; the user's own HOME, and the venv first on PATH as `make run` would have it.
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1",
           "ASIBENCH_VAR_DIR": str(home / "var"), "PORT": str(port), "DJANGO_SETTINGS_MODULE": "config.settings",
           "ASIBENCH_NO_BROWSER": "1", "ASIBENCH_CREDENTIALS_DIR": str(home / "creds")}

    def as_user(*argv: str, timeout: float = 600) -> str:
        done = subprocess.run(as_unprivileged(list(argv)), cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=timeout)
        assert done.returncode == 0, f"{argv}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
        return done.stdout

    manage = [str(VENV_BIN / "python"), "manage.py"]
    asibench = [str(VENV_BIN / "asibench")]
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    log_path = OUTPUT_DIR / "unprivileged-make-run.log"
    portal = None
    try:
        # `make bootstrap`, as that user.
        as_user(*manage, "migrate", "--noinput")
        as_user(*manage, "bootstrap_portal")
        loaded = as_user(*manage, "catalog_load", "--tasks", TASK)
        assert f"generated  {TASK} [seed42]" in loaded, loaded
        account = json.loads(as_user(str(VENV_BIN / "python"), "-c", ACCOUNT).strip().splitlines()[-1])

        # `make run`'s last step: the web server and the worker, in the foreground of one script.
        with log_path.open("w") as log:
            portal = subprocess.Popen(as_unprivileged(["scripts/run-portal.sh"]), cwd=REPO, env=env, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True,
                                      preexec_fn=signals_as_in_a_terminal)
        wait_http(url + "/healthz", timeout=60)
        wait_for(lambda: f"sandbox {BWRAP_UNPRIVILEGED}: enforces" in log_path.read_text(), 60,
                 "the worker to say which sandbox mode it runs")
        started = log_path.read_text()
        assert "CANNOT SCORE" not in started and "superuser privileges" not in started, started

        # Pull, run the reference agent in the CLI's own sandbox (linux_ns, unprivileged too), upload.
        instances, results = home / "instances", home / "results"
        as_user(*asibench, "task", "pull", "--repo", "seed42", "--tasks", TASK, "--output-dir", str(instances),
                "--endpoint", url)
        as_user(*asibench, "run", "--instances-dir", str(instances), "--agent-cmd", REFERENCE_AGENT,
                "--sandbox", "linux_ns", "--prompt-levels", "b1,b2", "--output-dir", str(results),
                "--agent-config", '{"model": "demo-model", "effort": "high"}',
                "--ro-mount", str(REPO / "examples"), "--ro-mount", str(REPO / "tasks"))
        env["ASIBENCH_SUBMIT_TOKEN"] = account["token"]
        sent = as_user(*asibench, "submit", "--results-dir", str(results), "--endpoint", url,
                       "--output", str(home / "run.tar.gz"))
        del env["ASIBENCH_SUBMIT_TOKEN"]
        run_id = re.search(rf"{re.escape(url)}/submit/submissions/([0-9a-f-]+)", sent).group(1)  # type: ignore[union-attr]

        confirm_in_the_browser_session_and_wait_until_scored(url, run_id, account["session"])

        # Ctrl-C's way out: run-portal.sh stops all three, and nothing of the user's is left running.
        os.killpg(portal.pid, signal.SIGINT)
        portal.wait(timeout=60)
        wait_for(lambda: not processes_of(UNPRIVILEGED_UID), 60, "every process of the user to end")
    finally:
        if portal is not None and portal.poll() is None:
            os.killpg(portal.pid, signal.SIGKILL)
            portal.wait(timeout=10)
        for pid in processes_of(UNPRIVILEGED_UID):  # what a failed test left
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(home.parent)
