from django.db import models


class WorkerHeartbeat(models.Model):
    """The last time a Celery worker said it was alive, and whether it can score; written by the worker
    itself (portal.status.worker)."""

    hostname = models.CharField(max_length=255, primary_key=True)  # never shown: only counted
    last_seen = models.DateTimeField(db_index=True)
    sandbox_mode = models.CharField(max_length=100, blank=True)
    """The mode its sandboxed runs take (`scoring.sandbox.modes`); blank from a worker older than this field."""
    sandbox_problem = models.TextField(blank=True)
    """Why it cannot score, when it cannot (no usable sandbox on its host); blank: it can."""

    def __str__(self) -> str:
        return f"{self.hostname} @ {self.last_seen:%Y-%m-%d %H:%M:%S}"
