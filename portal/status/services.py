from datetime import datetime

from django.utils import timezone

from portal.status.models import WorkerHeartbeat


def worker_heartbeat_record(*, hostname: str, now: datetime | None = None) -> None:
    WorkerHeartbeat.objects.update_or_create(hostname=hostname[:255], defaults={"last_seen": now or timezone.now()})


def worker_heartbeat_forget(*, hostname: str) -> None:
    """A worker shutting down cleanly stops counting at once instead of after the window."""
    WorkerHeartbeat.objects.filter(hostname=hostname[:255]).delete()
