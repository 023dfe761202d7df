"""Helpers for tests that drive real processes: the CLI clients, servers, workers and the browser.

Test modules and conftest files import from here (never from each other), so every helper has one home.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import requests

from contracts.archives import extract_tree

REPO = Path(__file__).resolve().parent.parent
OUR_CLI = [sys.executable, "-m", "cli_client"]
VENV_BIN = Path(sys.executable).parent
OUTPUT_DIR = REPO / "var" / "test-output"
PASSWORD = "correct horse battery staple 42"
SERVER_MAIL_DIR = OUTPUT_DIR / "server-mail"  # the `portal_server` fixture's file-based mail

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.2) -> T:
    """Poll until `predicate()` is truthy and return its value; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


@dataclass
class Persona:
    user: object
    email: str
    password: str = PASSWORD


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen

    @property
    def api(self) -> str:
        return f"{self.url}/api/v1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http(url: str, timeout: float = 30.0) -> None:
    def answers() -> bool:
        try:
            requests.get(url, timeout=2)
            return True
        except requests.RequestException:
            return False

    wait_for(answers, timeout, f"{url} to come up")


def test_database_env() -> dict[str, str]:
    """Environment that points a subprocess at the test database pytest-django created."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.postgresql":
        raise RuntimeError("Live-server tests need PostgreSQL: run them through `make test`.")
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    user = db.get("USER") or "postgres"
    return {
        "DATABASE_URL": f"postgres://{user}@{host}:{port}/{db['NAME']}",
        "DATABASE_CONN_MAX_AGE": "0",
    }


def subprocess_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def embedded_env(var_dir: Path, **extra: str) -> dict[str, str]:
    """`make run`'s environment: no database, broker or cache URL, so the embedded defaults apply."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL")}
    env.update(ASIBENCH_VAR_DIR=str(var_dir), DEBUG="1", PYTHONUNBUFFERED="1", DJANGO_SETTINGS_MODULE="config.settings",
               **extra)
    return env


RUN_PORTAL = REPO / "scripts" / "run-portal.sh"


def start_run_portal(env: dict[str, str], port: int, log: Path) -> subprocess.Popen:
    """`make run`'s servers (scripts/run-portal.sh) in a session of their own, the script's process group
    first in it as `make run`'s is in a terminal; the servers make groups of their own in that session."""
    with open(log, "w") as out:
        return subprocess.Popen([str(RUN_PORTAL)], cwd=REPO, env={**env, "PORT": str(port)}, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def session_pids(sid: int) -> list[int]:
    """The live processes of session `sid` (zombies excluded): a started script and all it started."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            state, _ppid, _pgrp, session = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[:4]
        except (OSError, ValueError):
            continue
        if int(session) == sid and state != "Z":
            found.append(int(entry.name))
    return found


def kill_session(sid: int) -> None:
    for pid in session_pids(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def stop_run_portal(proc: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM to the script's process group, as to `make run`'s; whatever is left after `timeout` is killed."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
        wait_for(lambda: not session_pids(proc.pid), timeout, "make run's servers to stop")
    finally:
        kill_session(proc.pid)
        proc.wait(timeout=10)


def start_celery_worker(name: str, concurrency: int = 2, extra_env: dict[str, str] | None = None,
                        queues: str = "celery,proposals") -> subprocess.Popen:
    """A real Celery worker process (its own process group) on the Redis broker and the test database,
    consuming `queues` (scoring's and proposals', as every worker we deploy)."""
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    log = open(OUTPUT_DIR / f"celery-{name}.log", "w")
    env = subprocess_env({**test_database_env(), **(extra_env or {})})
    return subprocess.Popen(
        [str(VENV_BIN / "celery"), "-A", "config", "worker", "--loglevel", "INFO", "--concurrency", str(concurrency),
         "--hostname", f"{name}-{os.getpid()}@%h", "--without-gossip", "--without-mingle", "-Q", queues],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )


def stop_celery_worker(proc: subprocess.Popen, kill: bool = False) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def host_pids_with(marker: str) -> list[int]:
    """Host processes whose command line contains `marker` (zombies and this process excluded)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes()
            state = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def browser_login(page: object, server: LiveServer, persona: Persona) -> None:
    page.goto(f"{server.url}/accounts/login/")  # type: ignore[attr-defined]
    page.fill("input[name=login]", persona.email)  # type: ignore[attr-defined]
    page.fill("input[name=password]", persona.password)  # type: ignore[attr-defined]
    page.click("button[type=submit]")  # type: ignore[attr-defined]
    page.wait_for_selector("[data-testid=signed-in-as]")  # type: ignore[attr-defined]


def mailed_link(to: str, path_prefix: str, since: float, timeout: float = 20) -> str:
    """The first link starting with `path_prefix` in the newest mail to `to` that the live server
    wrote after `since` (a time.time()), waiting for it to arrive."""

    def newest() -> str | None:
        files = sorted((f for f in SERVER_MAIL_DIR.glob("*.log") if f.stat().st_mtime >= since),
                       key=lambda f: f.stat().st_mtime, reverse=True)
        for file in files:
            text = file.read_text()
            if f"To: {to}" in text:
                match = re.search(r"https?://\S+?" + re.escape(path_prefix) + r"\S*", text)
                if match:
                    return match.group(0)
        return None

    return wait_for(newest, timeout, f"a mail to {to} with a {path_prefix} link")


def screenshot(page: object, name: str) -> Path:
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUTPUT_DIR / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
    return path


def run_cli(argv: list[str], env: dict[str, str], stdin: str = "", timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=timeout, cwd=REPO)


@dataclass
class CliRun:
    exit_status: int
    stdout: str
    stderr: str


def asibench(*args: str, env: dict[str, str], stdin: str = "", context: Any = None) -> CliRun:
    """`asibench ARGS` run in this process through `cli_client.main.main` and its context seam (as
    httpie's tests call `http()`): the real commands and error boundary, with `env` and `stdin` as
    the outside world. `context` replaces the whole `CliContext` (e.g. one whose parts misbehave)."""
    import contextlib
    import io

    from cli_client.context import CliContext
    from cli_client.main import main

    out, err = io.StringIO(), io.StringIO()
    context = context or CliContext(env=env, stdin=io.StringIO(stdin))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args), context=context)
        except SystemExit as exc:
            status = int(exc.code or 0)
        else:
            raise AssertionError("cli_client.main.main returned instead of exiting")
    return CliRun(exit_status=status, stdout=out.getvalue(), stderr=err.getvalue())


def issue_token(user: object, name: str = "cli") -> str:
    from portal.accounts.services import cli_token_create

    return cli_token_create(user=user, name=name).plaintext  # type: ignore[arg-type]


def read_archive_members(data: bytes) -> dict[str, bytes]:
    """Every regular file of a small tar.gz held in memory."""
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


SUBMIT_TASKS = ("chemistry.counterpoise_cbs_energies", "robotics.minimum_snap_trajectory")
REFERENCE_AGENT = f"python {REPO}/examples/agents/reference_agent.py --workspace {{workspace}}"
NAIVE_AGENT = f"python {REPO}/examples/agents/naive_agent.py --workspace {{workspace}}"


def cli_env(home: Path) -> dict[str, str]:
    """Environment for a CLI subprocess: HOME and credentials under `home`, no browser, no inherited token."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASIBENCH_", "AI4SCI_"))}
    env.update(NO_COLOR="1", HOME=str(home), ASIBENCH_NO_BROWSER="1", ASIBENCH_CREDENTIALS_DIR=str(home / "creds"))
    home.mkdir(parents=True, exist_ok=True)
    return env


def extract_instances(dataset: str, task_ids: tuple[str, ...], dest: Path) -> Path:
    """The catalog's public instance archives, unpacked as `task pull` would (no HTTP)."""
    import tarfile

    from django.core.files.storage import default_storage

    from scoring.models import Instance

    dest.mkdir(parents=True, exist_ok=True)
    for instance in Instance.objects.filter(dataset_id=dataset, task_id__in=task_ids):
        with default_storage.open(instance.input_archive, "rb") as handle, tarfile.open(
            fileobj=handle, mode="r:gz"
        ) as tar:
            extract_tree(tar, dest)
    return dest


def agent_results(instances: Path, out: Path, agent_cmd: str, levels: str = "b1,b2,b3,b4",
                  sandbox: str = "linux_ns", config: str = '{"model": "demo-model", "effort": "high"}') -> Path:
    """`asibench run` of an example agent: a real results dir in the contract's layout."""
    args = [*OUR_CLI, "run", "--instances-dir", str(instances), "--agent-cmd", agent_cmd, "--sandbox", sandbox,
            "--prompt-levels", levels, "--output-dir", str(out), "--agent-config", config]
    if sandbox == "linux_ns":
        args += ["--ro-mount", str(REPO / "examples"), "--ro-mount", str(REPO / "tasks")]
    done = run_cli(args, cli_env(out.parent / "home"), timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def bundle_of(results: Path, archive: Path) -> Path:
    done = run_cli([*OUR_CLI, "submit", "--results-dir", str(results), "--no-upload", "--output", str(archive)],
                   cli_env(archive.parent / "home"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NOT SUBMITTED" in done.stdout
    return archive


def confirmed_run(persona: Persona, results: Path, tmp_path: Path) -> Any:
    """Upload `results` as `persona` through the intake service and confirm it: the run is queued."""
    from portal.submissions import services as submissions

    bundles = tmp_path / "bundles"
    bundles.mkdir(parents=True, exist_ok=True)
    archive = bundle_of(results, bundles / f"{results.name}.tar.gz")
    with archive.open("rb") as stream:
        intake = submissions.submission_intake(user=persona.user, stream=stream, content_length=None,
                                               filename=archive.name)
    return submissions.submission_confirm(user=persona.user, submission_id=str(intake.submission.id))


def wait_until_scored(run: Any, timeout: float = 300) -> Any:
    from portal.submissions.models import Submission

    wait_for(lambda: Submission.objects.get(id=run.id).status in ("scored", "failed"), timeout, "scoring")
    return Submission.objects.get(id=run.id)
