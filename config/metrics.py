"""The Portal's Prometheus metrics server: one per process tree, on ASIBENCH_METRICS_LISTEN (host:port), an
address of its own that the public site never routes to. gunicorn's master serves the web tier's
(django-prometheus: requests, latencies, database; and the Celery queue depth), each Celery worker's main
process serves its tasks' (started, succeeded, failed, retried per task name; scoring and judge metrics
from scoring/metrics.py). Their children write to PROMETHEUS_MULTIPROC_DIR, which the parent adds up.

Django-free at import: gunicorn's config (config/gunicorn.py) loads this before the application."""

import logging
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from celery import signals
from prometheus_client import REGISTRY, CollectorRegistry, Counter, multiprocess, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

LISTEN_VARIABLE = "ASIBENCH_METRICS_LISTEN"
MULTIPROC_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"

CELERY_TASKS = Counter("asibench_celery_tasks", "Celery tasks by name and state (started, succeeded, failed, "
                       "retried)", ["task", "state"])


def listen_address(raw: str) -> tuple[str, int]:
    """`host:port` (IPv4 or a name) -> (host, port); ValueError with the reason otherwise."""
    host, sep, port = raw.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{LISTEN_VARIABLE} must be host:port, such as 127.0.0.1:9100, got {raw!r}")
    return host, int(port)


def multiproc_dir_reset() -> None:
    """Start a process tree from empty files: counters of a previous start must not add to this one's."""
    directory = os.environ.get(MULTIPROC_VARIABLE)
    if not directory:
        return
    path = Path(directory)
    if path.exists():
        for child in path.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    path.mkdir(parents=True, exist_ok=True)


def _registry(extra: Iterable[Collector]) -> CollectorRegistry:
    if os.environ.get(MULTIPROC_VARIABLE):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:  # one process (e.g. a solo worker): its own metrics
        registry = REGISTRY
    for collector in extra:
        registry.register(collector)
    return registry


def metrics_server_start(extra: Iterable[Collector] = ()) -> bool:
    """Serve /metrics on ASIBENCH_METRICS_LISTEN from this process; False when it is unset."""
    raw = os.environ.get(LISTEN_VARIABLE, "").strip()
    if not raw:
        return False
    host, port = listen_address(raw)
    start_http_server(port, addr=host, registry=_registry(extra))
    logger.info("metrics on http://%s:%d/metrics", host, port)
    return True


class QueueDepthCollector(Collector):
    """Messages waiting in each of the Portal's Celery queues, asked of the broker at every scrape. A broker
    that does not answer is reported as such (`asibench_celery_broker_up` 0), never as empty queues, and
    does not take the web tier's other metrics down with it."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from django.conf import settings

        queues = GaugeMetricFamily("asibench_celery_queue_messages", "Messages waiting in a Celery queue",
                                   labels=["queue"])
        try:
            with self.app.connection_for_read() as connection:
                connection.ensure_connection(max_retries=1, timeout=3)
                channel = connection.default_channel
                for queue in (settings.CELERY_TASK_DEFAULT_QUEUE, settings.PROPOSALS_QUEUE):
                    # kombu's own count for the transport (Redis: every priority list of the queue).
                    queues.add_metric([queue], channel._size(queue))
        except Exception as exc:  # any broker failure: say so in the metrics, keep serving the rest
            logger.warning("queue depth: the broker did not answer: %s", exc)
            yield GaugeMetricFamily("asibench_celery_broker_up", "1 if the broker answered this scrape", value=0)
            return
        yield queues
        yield GaugeMetricFamily("asibench_celery_broker_up", "1 if the broker answered this scrape", value=1)


# ---------------------------------------------------------------- Celery
def _task_name(sender: Any) -> str:
    return str(getattr(sender, "name", None) or sender or "unknown")


@signals.task_prerun.connect
def _task_started(sender: Any = None, **_: Any) -> None:
    CELERY_TASKS.labels(task=_task_name(sender), state="started").inc()


@signals.task_success.connect
def _task_succeeded(sender: Any = None, **_: Any) -> None:
    CELERY_TASKS.labels(task=_task_name(sender), state="succeeded").inc()


@signals.task_failure.connect
def _task_failed(sender: Any = None, **_: Any) -> None:
    CELERY_TASKS.labels(task=_task_name(sender), state="failed").inc()


@signals.task_retry.connect
def _task_retried(sender: Any = None, **_: Any) -> None:
    CELERY_TASKS.labels(task=_task_name(sender), state="retried").inc()


@signals.celeryd_init.connect
def _worker_starting(**_: Any) -> None:
    multiproc_dir_reset()


@signals.worker_ready.connect
def _worker_ready(**_: Any) -> None:
    metrics_server_start()
