import logging

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import connection
from django.http import HttpRequest, JsonResponse
from kombu import Connection

logger = logging.getLogger(__name__)


def _check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _check_broker() -> None:
    with Connection(settings.CELERY_BROKER_URL, transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS) as conn:
        conn.ensure_connection(max_retries=1, timeout=3)


def _check_storage() -> None:
    default_storage.exists("healthz-probe")


CHECKS = {"database": _check_database, "broker": _check_broker, "storage": _check_storage}


def healthz(request: HttpRequest) -> JsonResponse:
    results: dict[str, str] = {}
    for name, check in CHECKS.items():
        try:
            check()
        except Exception as exc:  # any failure of a dependency is a failed check, reported by name
            logger.warning("health check %s failed: %s", name, exc)
            results[name] = f"error: {type(exc).__name__}"
        else:
            results[name] = "ok"
    healthy = all(value == "ok" for value in results.values())
    return JsonResponse({"status": "ok" if healthy else "error", "checks": results}, status=200 if healthy else 503)
