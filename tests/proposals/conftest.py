import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.proposals.proposal_support import copy_task, scaffold_template
from tests.support import cli_env, start_celery_worker, stop_celery_worker


@pytest.fixture(scope="session")
def scaffold_template_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("scaffold")
    return scaffold_template(base / "tasks", cli_env(base / "home"))


@pytest.fixture
def task_dir(scaffold_template_dir: Path, tmp_path: Path) -> Path:
    """A fresh copy of the scaffolded task, with valid OS-sandbox evidence, for one test."""
    return copy_task(scaffold_template_dir, tmp_path / "tasks")


@pytest.fixture(autouse=True)
def _isolated_publishing(tmp_path: Path, settings: object) -> None:
    settings.PUBLISHED_TASKS_DIR = tmp_path / "published"  # type: ignore[attr-defined]


@pytest.fixture
def clean_proposal_storage() -> None:
    # Rolled-back test transactions do not remove files; start from an empty blob store.
    shutil.rmtree(Path(settings.MEDIA_ROOT) / "proposals", ignore_errors=True)


@pytest.fixture
def proposal_worker(_isolated_publishing: None, django_db_setup: None, tmp_path: Path) -> Iterator[object]:
    """A real Celery worker that publishes into this test's catalog dir and writes the mail it sends
    under tmp_path/worker-mail (use with a transactional db)."""
    env = {"ASIBENCH_PUBLISHED_TASKS_DIR": str(settings.PUBLISHED_TASKS_DIR),
           "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
           "EMAIL_FILE_PATH": str(tmp_path / "worker-mail")}
    proc = start_celery_worker("proposals", extra_env=env)
    try:
        yield proc
    finally:
        stop_celery_worker(proc)
