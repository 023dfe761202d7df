import os
import random
from typing import Any

from celery import Celery, Task
from django.db.utils import OperationalError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# A task that meets a locked database tries again this often, waiting 1, 2, 4, … s (jittered).
DATABASE_LOCKED_RETRIES = 8


def database_locked(exc: BaseException) -> bool:
    """SQLite's "database is locked" / "database table is locked": another connection is writing."""
    return isinstance(exc, OperationalError) and "is locked" in str(exc)


class PortalTask(Task):
    """Every task of the Portal. On the embedded SQLite database the web server and the worker
    write at once; a task that still loses the write lock after the busy timeout is retried with
    backoff instead of dying (a dead `scoring_run_start_task` left its run queued until the reaper)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except OperationalError as exc:
            if not database_locked(exc) or self.request.called_directly:
                raise
            delay = min(2 ** self.request.retries, 60) * random.uniform(0.5, 1.5)
            raise self.retry(exc=exc, countdown=delay, max_retries=DATABASE_LOCKED_RETRIES) from exc


app = Celery("portal", task_cls=PortalTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Imported by name so that this module stays importable before Django is set up.
app.steps["worker"].add("portal.status.worker:WorkerHeartbeatStep")
# Task counters per name and state, and each worker's metrics server (ASIBENCH_METRICS_LISTEN).
import config.metrics  # noqa: E402,F401


@app.task(name="portal.ping")
def ping() -> str:
    """Round-trip probe used by the health check tests and operators."""
    return "pong"
