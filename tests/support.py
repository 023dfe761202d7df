"""Helpers for tests that drive real processes: the CLI clients, servers, workers and the browser.

Test modules and conftest files import from here (never from each other), so every helper has one home.
"""

import json
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
    # Maintainers sign in with a second factor: the base32 TOTP secret they enrolled (tests/conftest.py).
    totp_secret: str | None = None


def totp_code(secret: str, at: float | None = None, period: int = 30, digits: int = 6) -> str:
    """RFC 6238 TOTP (HMAC-SHA1), written out here rather than borrowed from the server under test."""
    import base64
    import hashlib
    import hmac
    import struct

    counter = int((time.time() if at is None else at) // period)
    mac = hmac.new(base64.b32decode(secret, casefold=True), struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = mac[-1] & 0x0F
    value = struct.unpack(">I", mac[offset:offset + 4])[0] & 0x7FFFFFFF
    return f"{value % 10 ** digits:0{digits}d}"


def enrol_totp(user: object) -> str:
    """Give `user` an authenticator app (a TOTP secret, with recovery codes) through allauth's own
    activation, as the enrolment page does; returns the base32 secret to compute codes from."""
    import base64
    import secrets

    from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
    from allauth.mfa.totp.internal.auth import TOTP

    secret = base64.b32encode(secrets.token_bytes(20)).decode()
    TOTP.activate(user, secret)  # type: ignore[arg-type]
    RecoveryCodes.activate(user)  # type: ignore[arg-type]
    return secret


_USED_TOTP_STEPS: set[tuple[str, int]] = set()


def fresh_totp_code(secret: str, period: int = 30) -> str:
    """A code the server has not seen yet: each code is accepted once, so a second sign-in within the
    same 30 s step waits for the next step."""
    step = int(time.time() // period)
    if (secret, step) in _USED_TOTP_STEPS:
        time.sleep((step + 1) * period - time.time() + 0.2)
        step = int(time.time() // period)
    # Not too close to the end of a step: the code must still be current when the server checks it.
    if (step + 1) * period - time.time() < 2:
        time.sleep((step + 1) * period - time.time() + 0.2)
        step = int(time.time() // period)
    _USED_TOTP_STEPS.add((secret, step))
    return totp_code(secret, at=step * period + 1, period=period)


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


def signals_as_in_a_terminal() -> None:
    """Ctrl-C's signals at their defaults, as a terminal's shell starts `make run` (a Popen preexec_fn). A
    suite started in the background of a script inherits SIGINT and SIGQUIT ignored, and a signal that
    was ignored when bash started can never be trapped by it: run-portal.sh would not hear Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def start_run_portal(env: dict[str, str], port: int, log: Path) -> subprocess.Popen:
    """`make run`'s servers (scripts/run-portal.sh) in a session of their own, the script's process group
    first in it as `make run`'s is in a terminal; the servers make groups of their own in that session."""
    with open(log, "w") as out:
        return subprocess.Popen([str(RUN_PORTAL)], cwd=REPO, env={**env, "PORT": str(port)}, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=signals_as_in_a_terminal)


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
    """Sign in through the login form, and the second-factor form when the account has one."""
    page.goto(f"{server.url}/accounts/login/")  # type: ignore[attr-defined]
    page.fill("input[name=login]", persona.email)  # type: ignore[attr-defined]
    page.fill("input[name=password]", persona.password)  # type: ignore[attr-defined]
    page.click("button[type=submit]")  # type: ignore[attr-defined]
    if persona.totp_secret:
        page.wait_for_url("**/accounts/2fa/authenticate/")  # type: ignore[attr-defined]
        page.fill("input[name=code]", fresh_totp_code(persona.totp_secret))  # type: ignore[attr-defined]
        page.click("form[action$='/2fa/authenticate/'] button[type=submit]")  # type: ignore[attr-defined]
    page.wait_for_selector("[data-testid=signed-in-as]")  # type: ignore[attr-defined]


def http_session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # straight to the live server, never through a proxy of the environment
    return session


def http_post_form(session: requests.Session, server: LiveServer, path: str, data: dict[str, str] | None = None,
                   ) -> requests.Response:
    """POST a page's form (CSRF token and referer as the browser sends them)."""
    return session.post(f"{server.url}{path}", timeout=60, headers={"Referer": f"{server.url}{path}"},
                        data={**(data or {}), "csrfmiddlewaretoken": session.cookies["csrftoken"]})


def http_upload_and_confirm(server: LiveServer, persona: Persona, archive: Path) -> str:
    """`archive` uploaded through the API with a CLI token, then confirmed on the run's page by its
    owner; returns the run's id."""
    with archive.open("rb") as body:
        answer = http_session().post(f"{server.api}/submissions/bundle", data=body, timeout=180,
                                     headers={"Authorization": f"Bearer {issue_token(persona.user)}",
                                              "Content-Type": "application/gzip", "X-ASIBench-Filename": archive.name})
    assert answer.status_code == 201, answer.text
    submission_id = answer.json()["submission_id"]
    session = http_login(server, persona)
    confirmed = http_post_form(session, server, f"/submit/submissions/{submission_id}/confirm")
    assert confirmed.status_code == 200, confirmed.text[-2000:]
    state = session.get(f"{server.api}/submissions/{submission_id}", timeout=30).json()
    assert state["status"] in ("queued", "scoring", "scored"), state
    return str(submission_id)


def http_wait_status(server: LiveServer, persona: Persona, submission_id: str, statuses: tuple[str, ...],
                     timeout: float, predicate: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
    """Poll the run's progress API as its owner until its status is one of `statuses` (and `predicate`
    holds of the body); the body."""
    token = issue_token(persona.user, name="wait")
    session = http_session()

    def progress() -> dict[str, Any] | None:
        body = session.get(f"{server.api}/submissions/{submission_id}", timeout=30,
                           headers={"Authorization": f"Bearer {token}"}).json()
        return body if body.get("status") in statuses and (predicate is None or predicate(body)) else None

    return wait_for(progress, timeout, f"run {submission_id} to be {' or '.join(statuses)}", interval=1)


def http_login(server: LiveServer, persona: Persona) -> requests.Session:
    """A requests session signed in as `persona` through the same forms a browser posts (password, then
    the TOTP code for an account with a second factor); post with `csrf_of(session)`."""
    session = http_session()
    session.get(f"{server.url}/accounts/login/", timeout=30).raise_for_status()
    answer = session.post(f"{server.url}/accounts/login/", timeout=30, data={
        "login": persona.email, "password": persona.password, "csrfmiddlewaretoken": session.cookies["csrftoken"]})
    if "/accounts/2fa/authenticate/" in answer.url:
        assert persona.totp_secret, f"{persona.email} has a second factor but the test gave no TOTP secret"
        answer = session.post(answer.url, timeout=30, data={
            "code": fresh_totp_code(persona.totp_secret), "csrfmiddlewaretoken": session.cookies["csrftoken"]})
    assert answer.ok and 'data-testid="signed-in-as"' in answer.text, (answer.status_code, answer.url)
    return session


def csrf_of(session: requests.Session) -> str:
    return session.cookies["csrftoken"]


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

    from contracts.archives import extract_tree
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


# An ordinary user: an account and group of their own, no supplementary groups, no capabilities.
UNPRIVILEGED_UID = 64930
UNPRIVILEGED_USER = "asibench-newcomer"


def unprivileged_account() -> None:
    """Create UNPRIVILEGED_USER (uid and gid UNPRIVILEGED_UID, no home, no login shell) unless it exists.
    Celery, for one, takes a uid without a passwd entry for a possible root and says so."""
    import grp
    import pwd

    for _ in range(20):  # another process may hold the passwd lock for a moment
        try:
            grp.getgrgid(UNPRIVILEGED_UID)
        except KeyError:
            subprocess.run(["groupadd", "--gid", str(UNPRIVILEGED_UID), UNPRIVILEGED_USER], capture_output=True)
        try:
            pwd.getpwuid(UNPRIVILEGED_UID)
            return
        except KeyError:
            subprocess.run(["useradd", "--uid", str(UNPRIVILEGED_UID), "--gid", str(UNPRIVILEGED_UID),
                            "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
                            UNPRIVILEGED_USER], capture_output=True)
        time.sleep(0.5)
    raise RuntimeError(f"could not create the account {UNPRIVILEGED_USER} (uid {UNPRIVILEGED_UID})")


def unprivileged_dir(name: str) -> Path:
    """A fresh directory owned by UNPRIVILEGED_UID (whose account this makes if need be), in a parent
    others can traverse (pytest's tmp root is root's alone). The caller removes it (`shutil.rmtree`)."""
    import tempfile

    unprivileged_account()
    parent = Path(tempfile.mkdtemp(prefix=f"asibench-{name}-"))
    parent.chmod(0o755)
    path = parent / "home"
    path.mkdir(mode=0o700)
    os.chown(path, UNPRIVILEGED_UID, UNPRIVILEGED_UID)
    return path


def as_unprivileged(argv: list[str], uid: int = UNPRIVILEGED_UID) -> list[str]:
    """`argv` run as `uid` (gid the same, no supplementary groups) through setpriv.

    That user must be able to run this interpreter, its venv and the checkout. Where one of them
    sits below a directory others cannot traverse (CI's pyenv Python is under mode-700 /root), the
    command runs in a private mount namespace where that directory is a tmpfs holding only those
    trees, as they would be for a user with their own Python and clone; nothing else of it is seen."""
    needed = {REPO, Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent}
    binds: list[tuple[Path, Path]] = []  # (blocked directory, needed tree below it)
    for path in sorted(p.resolve() for p in needed):
        blocked = next((a for a in reversed(path.parents) if not os.stat(a).st_mode & 0o001), None)
        if blocked is not None and not any(path == p or p in path.parents for _, p in binds):
            binds.append((blocked, path))
    drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--"]
    if not binds:
        return [*drop, *argv]
    lines = ["set -e", "mount -t tmpfs -o mode=700 asibench-stash /mnt"]
    for i, (_, path) in enumerate(binds):
        lines += [f"mkdir /mnt/{i}", f"mount --rbind '{path}' /mnt/{i}"]
    for blocked in sorted({b for b, _ in binds}):
        lines.append(f"mount -t tmpfs -o mode=755 asibench-open '{blocked}'")
    for i, (_, path) in enumerate(binds):
        lines += [f"mkdir -p '{path}'", f"mount --rbind /mnt/{i} '{path}'"]
    lines.append('exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", "\n".join(lines), "sh",
            *drop, *argv]


def deny_user_namespaces() -> None:
    """From now on this process and everything it starts cannot create user namespaces, as under a
    container's default seccomp profile: clone and unshare with CLONE_NEWUSER fail with EPERM, and
    clone3 (whose flags a filter cannot read) with ENOSYS, so that callers fall back to clone."""
    import ctypes
    import struct

    def insn(code: int, jt: int, jf: int, k: int) -> bytes:
        return struct.pack("=HBBI", code, jt, jf, k)

    load, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    allow, errno_ret = 0x7FFF0000, 0x00050000
    clone, unshare, clone3, clone_newuser = 56, 272, 435, 0x10000000
    program = b"".join([
        insn(load, 0, 0, 4),                 # 0: arch
        insn(jeq, 1, 0, 0xC000003E),         # 1: x86_64 → 3
        insn(ret, 0, 0, allow),              # 2
        insn(load, 0, 0, 0),                 # 3: syscall number
        insn(jeq, 0, 1, clone3),             # 4: clone3 → 5, else → 6
        insn(ret, 0, 0, errno_ret | 38),     # 5: ENOSYS
        insn(jeq, 1, 0, clone),              # 6: clone → 8
        insn(jeq, 0, 3, unshare),            # 7: unshare → 8, else → 11
        insn(load, 0, 0, 16),                # 8: the flags (args[0], low word)
        insn(jset, 0, 1, clone_newuser),     # 9: CLONE_NEWUSER → 10, else → 11
        insn(ret, 0, 0, errno_ret | 1),      # 10: EPERM
        insn(ret, 0, 0, allow),              # 11
    ])

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    prog = SockFprog(len(program) // 8, program)
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # NO_NEW_PRIVS, SECCOMP
        raise OSError(ctypes.get_errno(), "could not install the seccomp filter")


# What another local account sees while a sandbox runs: every process's command line, and its environment
# where the kernel lets it read one. The key comes on stdin (never in this scanner's own argv); the next
# line, or the end of stdin, stops it.
_SCAN = r"""
import json, os, select, sys, time
key = sys.stdin.readline().strip().encode()
marker = sys.argv[1].encode()
found = {"cmdline": [], "environ": [], "environ_readable": 0, "marked_seen": 0, "scans": 0}
while not select.select([sys.stdin], [], [], 0)[0]:  # until told to stop (a line, or stdin closed)
    found["scans"] += 1
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if marker in cmdline:
            found["marked_seen"] += 1
        if key in cmdline:
            found["cmdline"].append(cmdline.replace(b"\0", b" ").decode(errors="replace")[:300])
        try:
            environ = open(f"/proc/{pid}/environ", "rb").read()
        except OSError:
            continue
        found["environ_readable"] += 1
        if key in environ:
            found["environ"].append(pid)
    time.sleep(0.05)
print(json.dumps(found))
"""


class ProcScanner:
    """`_SCAN` run as uid/gid 65534 (another local user) for as long as the `with` block lasts: where it
    found `key`, and how often it saw a process whose command line holds `marker` (proof the scan
    overlapped what it watched)."""

    def __init__(self, key: str, marker: str) -> None:
        self.key, self.marker = key, marker
        self.found: dict[str, Any] = {}

    def __enter__(self) -> "ProcScanner":
        self.proc = subprocess.Popen(["/usr/bin/python3", "-I", "-S", "-c", _SCAN, self.marker],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, user=65534,
                                     group=65534, extra_groups=[], cwd="/")
        assert self.proc.stdin is not None
        self.proc.stdin.write(self.key + "\n")
        self.proc.stdin.flush()
        return self

    def __exit__(self, *exc: object) -> None:
        out, _ = self.proc.communicate("stop\n", timeout=60)
        self.found = json.loads(out)
