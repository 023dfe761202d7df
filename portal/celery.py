import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Imported by name so that this module stays importable before Django is set up.
app.steps["worker"].add("portal.status.worker:WorkerHeartbeatStep")


@app.task(name="portal.ping")
def ping() -> str:
    """Round-trip probe used by the health check tests and operators."""
    return "pong"
