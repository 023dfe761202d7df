"""A worker bootstep that records the worker's heartbeat in the database for the status page, and
says at start which sandbox mode the worker's runs take (or why it cannot score).

Each worker writes its own row every WORKER_HEARTBEAT_SECONDS from its timer (the main process,
never a task slot, so a long scoring does not silence it), and deletes it on a clean shutdown.
The status page then counts rows instead of asking the broker, so visitors never reach Celery.
The row carries the worker's sandbox mode and, when it has no usable sandbox, why: Confirm refuses
a run that no live worker could ever score (portal.status.selectors.scoring_workers).
"""

import logging
from typing import Any

from celery import bootsteps
from django.conf import settings
from django.db import connection

from scoring.sandbox.modes import SandboxMode

logger = logging.getLogger(__name__)


def _sandbox_mode(previous: SandboxMode | None) -> SandboxMode:
    """The mode this worker's runs take; probed at start, and again while it cannot score (a fixed
    host is noticed without a restart). Printed at start and whenever it changes."""
    if previous is not None and previous.can_score:
        return previous
    from scoring.sandbox import server_mode

    mode = server_mode(settings.SCORING_SANDBOX)
    if mode != previous:
        logger.log(logging.INFO if mode.can_score else logging.ERROR, "%s", mode.summary())
    return mode


def _beat(hostname: str, mode: SandboxMode) -> None:
    # Celery loads this step by name; models are imported once the worker has set Django up.
    from portal.status.services import worker_heartbeat_record

    try:
        worker_heartbeat_record(hostname=hostname, mode=mode)
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
        self.mode: SandboxMode | None = None

    def start(self, worker: Any) -> None:
        self._tick(worker.hostname)
        self.tref = worker.timer.call_repeatedly(settings.WORKER_HEARTBEAT_SECONDS, self._tick, (worker.hostname,))

    def _tick(self, hostname: str) -> None:
        self.mode = _sandbox_mode(self.mode)
        _beat(hostname, self.mode)

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
