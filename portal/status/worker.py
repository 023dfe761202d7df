"""A worker bootstep that records the worker's heartbeat in the database for the status page.

Each worker writes its own row every WORKER_HEARTBEAT_SECONDS from its timer (the main process,
never a task slot, so a long scoring does not silence it), and deletes it on a clean shutdown.
The status page then counts rows instead of asking the broker, so visitors never reach Celery.
"""

import logging
from typing import Any

from celery import bootsteps
from django.conf import settings
from django.db import connection

logger = logging.getLogger(__name__)


def _beat(hostname: str) -> None:
    # Celery loads this step by name; models are imported once the worker has set Django up.
    from portal.status.services import worker_heartbeat_record

    try:
        worker_heartbeat_record(hostname=hostname)
    except Exception as exc:  # the database being away must not stop the worker's timer
        logger.warning("worker heartbeat not recorded: %s", exc)
    finally:
        # The main process forks task processes: leave no connection for them to inherit.
        connection.close()


class WorkerHeartbeatStep(bootsteps.StartStopStep):
    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.tref: Any = None

    def start(self, worker: Any) -> None:
        _beat(worker.hostname)
        self.tref = worker.timer.call_repeatedly(settings.WORKER_HEARTBEAT_SECONDS, _beat, (worker.hostname,))

    def stop(self, worker: Any) -> None:
        from portal.status.services import worker_heartbeat_forget

        if self.tref is not None:
            self.tref.cancel()
            self.tref = None
        try:
            worker_heartbeat_forget(hostname=worker.hostname)
        except Exception as exc:
            logger.warning("worker heartbeat not removed: %s", exc)
        finally:
            connection.close()
