from django.db import models


class WorkerHeartbeat(models.Model):
    """The last time a Celery worker said it was alive; written by the worker itself (portal.status.worker)."""

    hostname = models.CharField(max_length=255, primary_key=True)  # never shown: only counted
    last_seen = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.hostname} @ {self.last_seen:%Y-%m-%d %H:%M:%S}"
