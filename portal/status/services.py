from datetime import datetime

from django.utils import timezone

from portal.status.models import WorkerHeartbeat
from scoring.sandbox.modes import SandboxMode


def worker_heartbeat_record(*, hostname: str, mode: SandboxMode | None = None, now: datetime | None = None) -> None:
    """This worker is alive; with `mode`, also the sandbox mode its runs take and why it cannot score, if not."""
    fields: dict[str, object] = {"last_seen": now or timezone.now()}
    if mode is not None:
        fields.update(sandbox_mode=mode.label[:100], sandbox_problem=mode.problem or "")
    WorkerHeartbeat.objects.update_or_create(hostname=hostname[:255], defaults=fields)


def worker_heartbeat_forget(*, hostname: str) -> None:
    """A worker shutting down cleanly stops counting at once instead of after the window."""
    WorkerHeartbeat.objects.filter(hostname=hostname[:255]).delete()
