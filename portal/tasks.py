from celery import shared_task

from portal.housekeeping import leftovers_sweep


@shared_task(name="portal.tasks.sweep_leftovers")
def leftovers_sweep_task() -> int:
    """Periodic (beat): remove stale temp bundles, upload temp files and sandbox scratch dirs."""
    return len(leftovers_sweep().removed)
