"""`make run`'s embedded configuration under load: SQLite + kombu's filesystem broker, real gunicorn,
a real worker and beat (scripts/run-portal.sh itself), several confirms at once.

The rest of the suite runs on PostgreSQL; everything here runs in subprocesses with their own
environment pointing at a file SQLite database and a filesystem broker under tmp.
"""

import json
import sqlite3
import subprocess
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from tests.support import (
    OUTPUT_DIR,
    REPO,
    SUBMIT_TASKS,
    VENV_BIN,
    bundle_of,
    embedded_env,
    free_port,
    start_run_portal,
    stop_run_portal,
    wait_for,
    wait_http,
)

RUNS = 6
CSRF = "x" * 32

# Make an embedded Portal's users and drafts, and a logged-in session for each user.
SETUP = textwrap.dedent("""
    import json, sys
    import django
    django.setup()
    from allauth.account.models import EmailAddress
    from django.test import Client
    from portal.accounts.models import User
    from portal.submissions import services

    out = []
    for i, archive in enumerate(sys.argv[1:]):
        user = User.objects.create_user(email=f"runner{i}@example.org", password="pw-not-used-1234")
        EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
        with open(archive, "rb") as stream:
            intake = services.submission_intake(user=user, stream=stream, content_length=None, filename="b.tar.gz")
        client = Client()
        client.force_login(user)
        out.append({"submission": str(intake.submission.id), "session": client.cookies["sessionid"].value})
    print(json.dumps(out))
""")


def manage(env: dict[str, str], *args: str, timeout: float = 600) -> str:
    done = subprocess.run([str(VENV_BIN / "python"), "manage.py", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def statuses(db: Path, ids: list[str]) -> dict[str, str]:
    with sqlite3.connect(db, timeout=30) as conn:
        rows = conn.execute("SELECT id, status, status_reason FROM submissions_submission").fetchall()
    wanted = {i.replace("-", "") for i in ids}
    return {sid: f"{status} {reason}".strip() for sid, status, reason in rows if str(sid).replace("-", "") in wanted}


def test_make_runs_embedded_portal_scores_every_run_confirmed_at_once(run_results, transactional_db, tmp_path):
    var = tmp_path / "var"
    env = embedded_env(var, ASIBENCH_CONFIRMS_PER_DAY="50",
                       # Every run must be scored by its own message: no re-send by the reaper hides a dead task.
                       ASIBENCH_SCORING_QUEUED_RESEND_AFTER="3600")
    manage(env, "migrate", "--noinput")
    manage(env, "catalog_load", "--datasets", "seed42", "--tasks", ",".join(SUBMIT_TASKS), "--strict")
    archives = [bundle_of(run_results["naive"], tmp_path / f"bundle{i}" / "run.tar.gz") for i in range(RUNS)]
    done = subprocess.run([str(VENV_BIN / "python"), "-c", SETUP, *map(str, archives)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    drafts = json.loads(done.stdout.strip().splitlines()[-1])

    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    port = free_port()
    portal = start_run_portal(env, port, OUTPUT_DIR / "embedded-run-portal.log")
    try:
        url = f"http://127.0.0.1:{port}"
        wait_http(url + "/healthz")

        def confirm(draft: dict) -> int:
            response = requests.post(f"{url}/submit/submissions/{draft['submission']}/confirm",
                                     cookies={"sessionid": draft["session"], "csrftoken": CSRF},
                                     headers={"X-CSRFToken": CSRF}, allow_redirects=False, timeout=120)
            return response.status_code

        with ThreadPoolExecutor(RUNS) as pool:
            codes = list(pool.map(confirm, drafts))
        assert codes == [302] * RUNS
        ids = [d["submission"] for d in drafts]
        db = var / "db.sqlite3"
        ended = ("scored", "failed")
        try:
            wait_for(lambda: all(v.startswith(ended) for v in statuses(db, ids).values()), 300,
                     "every confirmed run to be scored", interval=2)
        except AssertionError:
            pass  # the statuses below say which run is stuck where
        final = statuses(db, ids)
        assert sorted(final.values()) == ["scored"] * RUNS, final
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        # The pages everyone reaches answer on SQLite too (the task-health counts of /status once needed
        # PostgreSQL's DISTINCT ON).
        for page in ("/status", "/leaderboard/", "/tasks/", "/api/v1/leaderboard", "/leaderboard/moderation"):
            assert requests.get(url + page, timeout=60).status_code == 200, page
    finally:
        stop_run_portal(portal)
