"""Shared fixtures: personas, a live Portal in a subprocess, a Celery worker, the official client,
and a headless Chromium. Everything is real: PostgreSQL, Redis, gunicorn, celery, bubblewrap."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
OUTPUT_DIR = REPO / "var" / "test-output"
OFFICIAL_CLIENT_VENV = REPO / ".venv-official-asibench"
PASSWORD = "correct horse battery staple 42"


@dataclass
class Persona:
    user: object
    email: str
    password: str = PASSWORD


def _make_user(email: str, maintainer: bool = False) -> Persona:
    from allauth.account.models import EmailAddress

    from portal.accounts.models import User
    from portal.accounts.services import user_make_maintainer

    user = User.objects.create_user(email=email, password=PASSWORD, display_name=email.split("@")[0].title())
    EmailAddress.objects.create(user=user, email=email, verified=True, primary=True)
    if maintainer:
        user_make_maintainer(user=user)
    return Persona(user=user, email=email)


@pytest.fixture
def submitter(db: None) -> Persona:
    return _make_user("alice@uni.example")


@pytest.fixture
def other_user(db: None) -> Persona:
    return _make_user("bob@lab.example")


@pytest.fixture
def maintainer(db: None) -> Persona:
    return _make_user("maya@asibench.example", maintainer=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            requests.get(url, timeout=2)
            return
        except requests.RequestException:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up within {timeout}s")


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


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen

    @property
    def api(self) -> str:
        return f"{self.url}/api/v1"


def _subprocess_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture(scope="session")
def portal_server(django_db_setup: None, django_db_blocker: object) -> Iterator[LiveServer]:
    """The Portal under gunicorn on a free port, on the test database. Use with transactional_db."""
    port = free_port()
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    log = open(OUTPUT_DIR / "gunicorn.log", "w")
    env = _subprocess_env({**test_database_env(), "ASIBENCH_DEVICE_POLL_INTERVAL": "1", "DEBUG": "1"})
    proc = subprocess.Popen(
        [str(VENV_BIN / "gunicorn"), "portal.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", "2", "--threads", "4", "--timeout", "300"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url + "/healthz")
        yield LiveServer(url=url, process=proc)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def start_celery_worker(name: str, concurrency: int = 2, extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    """A real Celery worker process (its own process group) on the Redis broker and the test database."""
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    log = open(OUTPUT_DIR / f"celery-{name}.log", "w")
    env = _subprocess_env({**test_database_env(), **(extra_env or {})})
    return subprocess.Popen(
        [str(VENV_BIN / "celery"), "-A", "portal", "worker", "--loglevel", "INFO", "--concurrency", str(concurrency),
         "--hostname", f"{name}-{os.getpid()}@%h", "--without-gossip", "--without-mingle"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )


def stop_celery_worker(proc: subprocess.Popen, kill: bool = False) -> None:
    import signal

    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture
def celery_worker_process(django_db_setup: None) -> Iterator[subprocess.Popen]:
    """A real Celery worker for one test; tests that need special workers start their own, and no
    other worker may be left consuming the queue while they run."""
    proc = start_celery_worker("worker")
    try:
        yield proc
    finally:
        stop_celery_worker(proc)


def _official_venv(requirements: str) -> Path:
    """A venv with the published client (and `requirements`), reused while its pins are unchanged."""
    pins = (REPO / "requirements" / requirements).read_text()
    marker = OFFICIAL_CLIENT_VENV / f".installed-{requirements}"
    if not marker.exists() or marker.read_text() != pins:
        if not (OFFICIAL_CLIENT_VENV / "bin" / "pip").exists():
            subprocess.run(["python3", "-m", "venv", str(OFFICIAL_CLIENT_VENV)], check=True)
        pip = OFFICIAL_CLIENT_VENV / "bin" / "pip"
        subprocess.run([str(pip), "install", "-q", "-r", str(REPO / "requirements" / requirements)], check=True)
        marker.write_text(pins)
    return OFFICIAL_CLIENT_VENV / "bin" / "asibench"


@pytest.fixture(scope="session")
def official_client() -> Path:
    """The published `asibench` 0.2.0 client, installed from PyPI into its own virtualenv."""
    return _official_venv("official-client.txt")


@pytest.fixture(scope="session")
def official_client_with_scoring() -> Path:
    """The official client plus the scientific stack its local `asibench score` imports."""
    _official_venv("official-client.txt")
    return _official_venv("official-client-scoring.txt")


@pytest.fixture
def cli_home(tmp_path: Path) -> dict[str, str]:
    """Environment for a CLI subprocess: its own credential dir, no browser, no inherited token."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASIBENCH_", "AI4SCI_"))}
    env.update(
        ASIBENCH_CREDENTIALS_DIR=str(tmp_path / "creds"),
        ASIBENCH_NO_BROWSER="1",
        HOME=str(tmp_path / "home"),
        NO_COLOR="1",
    )
    (tmp_path / "home").mkdir()
    return env


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop on this thread; the ORM calls the tests make
    # between browser steps are still plain synchronous code.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path="/usr/bin/chromium",
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    context = browser.new_context()  # type: ignore[attr-defined]
    pg = context.new_page()
    yield pg
    context.close()


def browser_login(page: object, server: LiveServer, persona: Persona) -> None:
    page.goto(f"{server.url}/accounts/login/")  # type: ignore[attr-defined]
    page.fill("input[name=login]", persona.email)  # type: ignore[attr-defined]
    page.fill("input[name=password]", persona.password)  # type: ignore[attr-defined]
    page.click("button[type=submit]")  # type: ignore[attr-defined]
    page.wait_for_selector("[data-testid=signed-in-as]")  # type: ignore[attr-defined]


def screenshot(page: object, name: str) -> Path:
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUTPUT_DIR / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
    return path


def load_catalog(task_ids: set[str] | None = None) -> object:
    """Load the real tasks/ (optionally a subset) into the catalog, committed for live servers."""
    from scoring.services import catalog_load

    return catalog_load(only_tasks=task_ids)


def clear_catalog() -> None:
    from django.db import connections

    from scoring.models import Dataset, Task

    Task.objects.all().delete()
    Dataset.objects.all().delete()
    # Module fixtures hold their own connection; close it so the test database can be dropped.
    connections.close_all()


@pytest.fixture(scope="module")
def full_catalog(django_db_setup: None, django_db_blocker: object) -> Iterator[object]:
    """Every task of tasks/ in both datasets, committed (so a live server sees it), for one module."""
    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        report = load_catalog()
        yield report
        clear_catalog()


@pytest.fixture(scope="module")
def _submit_catalog_rows(django_db_setup: None, django_db_blocker: object) -> Iterator[list]:
    """Generate the two tasks the submission tests use once per module; clear them afterwards."""
    from scoring.models import Dataset, Instance, Task
    from tests.support import SUBMIT_TASKS

    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        report = load_catalog(set(SUBMIT_TASKS))
        assert not report.failures, report.failures
        rows = [list(Dataset.objects.all()), list(Task.objects.all()), list(Instance.objects.all())]
        yield rows
        from portal.submissions.models import Submission

        Submission.objects.all().delete()
        clear_catalog()


@pytest.fixture
def submit_catalog(_submit_catalog_rows: list, django_db_blocker: object) -> list:
    """The submission tests' catalog, committed; restored (rows only, files stay) after a flush."""
    from scoring.models import Instance

    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        if not Instance.objects.exists():
            for model_rows in _submit_catalog_rows:
                type(model_rows[0]).objects.bulk_create(model_rows)
    return _submit_catalog_rows


@pytest.fixture(scope="session")
def run_results(tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: object) -> dict:
    """Real `asibench run` results (reference and naive agents, seed42, all levels), made once per session.

    Generation is deterministic, so these stay valid for every catalog load of the same tasks.
    """
    from scoring.models import Instance
    from tests.support import NAIVE_AGENT, REFERENCE_AGENT, SUBMIT_TASKS, agent_results, extract_instances

    base = tmp_path_factory.mktemp("runs")
    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        present = Instance.objects.filter(dataset_id="seed42", task_id__in=SUBMIT_TASKS).count()
        had_catalog = present == len(SUBMIT_TASKS)
        if not had_catalog:
            load_catalog(set(SUBMIT_TASKS))
        instances = extract_instances("seed42", SUBMIT_TASKS, base / "instances")
        if not had_catalog:
            clear_catalog()
    return {
        "instances": instances,
        "reference": agent_results(instances, base / "reference", REFERENCE_AGENT),
        "naive": agent_results(instances, base / "naive", NAIVE_AGENT, levels="b1,b3"),
    }
