"""Shared fixtures: personas, a live Portal in a subprocess, a Celery worker, the official client,
and a headless Chromium. Everything is real: PostgreSQL, Redis, gunicorn, celery, bubblewrap."""

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import (
    NAIVE_AGENT,
    OUTPUT_DIR,
    PASSWORD,
    REFERENCE_AGENT,
    REPO,
    SERVER_MAIL_DIR,
    SUBMIT_TASKS,
    VENV_BIN,
    LiveServer,
    Persona,
    agent_results,
    cli_env,
    enrol_totp,
    extract_instances,
    free_port,
    start_celery_worker,
    stop_celery_worker,
    subprocess_env,
    test_database_env,
    wait_http,
)

OFFICIAL_CLIENT_VENV = REPO / ".venv-official-asibench"
# Fixtures that make a test slow or a browser test whatever its module marks say: `make test-fast`
# deselects by marker, so a new test that starts a server or Chromium cannot slip into the fast lane.
BROWSER_FIXTURES = {"page", "browser"}
SLOW_FIXTURES = {"portal_server", "celery_worker_process", "official_client", "official_client_with_scoring",
                 "run_results", "full_catalog", *BROWSER_FIXTURES}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselection reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if fixtures & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _fresh_board_cache() -> None:
    # The cache outlives a test's database rollback; start every test from a new generation.
    from leaderboard.selectors import board_cache_invalidate

    board_cache_invalidate()


@pytest.fixture(autouse=True)
def _fast_passwords(request: pytest.FixtureRequest) -> None:
    # Personas hash their password with PBKDF2 (over a second each here). Tests that sign in
    # through a live server keep the real hasher, which that server also uses.
    if "portal_server" in request.fixturenames:
        return
    settings = request.getfixturevalue("settings")
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _make_user(email: str, maintainer: bool = False) -> Persona:
    from allauth.account.models import EmailAddress

    from portal.accounts.models import User
    from portal.accounts.services import user_make_maintainer

    user = User.objects.create_user(email=email, password=PASSWORD, display_name=email.split("@")[0].title())
    EmailAddress.objects.create(user=user, email=email, verified=True, primary=True)
    if maintainer:
        # Maintainers must have a second factor (portal.accounts.middleware): this one has an authenticator
        # app, whose codes tests compute from the secret (tests.support.totp_code).
        user_make_maintainer(user=user)
        return Persona(user=user, email=email, totp_secret=enrol_totp(user))
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


@pytest.fixture(scope="session")
def portal_server(django_db_setup: None, django_db_blocker: object) -> Iterator[LiveServer]:
    """The Portal under gunicorn on a free port, on the test database. Use with transactional_db."""
    port = free_port()
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    log = open(OUTPUT_DIR / "gunicorn.log", "w")
    # Mail the server sends (sign-up verification links) lands in SERVER_MAIL_DIR, one file a message.
    env = subprocess_env({**test_database_env(), "ASIBENCH_DEVICE_POLL_INTERVAL": "1", "DEBUG": "1",
                          "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
                          "EMAIL_FILE_PATH": str(SERVER_MAIL_DIR)})
    proc = subprocess.Popen(
        [str(VENV_BIN / "gunicorn"), "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
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
    return cli_env(tmp_path / "home")


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


def load_catalog(task_ids: set[str] | None = None) -> object:
    """Load the real tasks/ (optionally a subset) into the catalog, committed for live servers."""
    from scoring.task_loading import catalog_load

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
