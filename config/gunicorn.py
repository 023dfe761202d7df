"""gunicorn's settings hooks for the web tier (`gunicorn -c config/gunicorn.py`): the master serves the
workers' metrics, added up from PROMETHEUS_MULTIPROC_DIR, on ASIBENCH_METRICS_LISTEN (config/metrics.py)."""

from typing import Any


def on_starting(server: Any) -> None:
    from config.metrics import multiproc_dir_reset

    multiproc_dir_reset()


def when_ready(server: Any) -> None:
    from config.celery import app
    from config.metrics import QueueDepthCollector, metrics_server_start

    metrics_server_start(extra=[QueueDepthCollector(app)])


def child_exit(server: Any, worker: Any) -> None:
    import os

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
