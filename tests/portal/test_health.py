import pytest
from django.test import Client


def test_healthz_checks_database_broker_and_storage(db, client: Client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok", "storage": "ok"}}


@pytest.mark.parametrize("broken_url", ["redis://127.0.0.1:1/0"])
def test_healthz_reports_a_dead_broker_by_name(db, client: Client, settings, broken_url):
    settings.CELERY_BROKER_URL = broken_url
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "error"
    assert body["checks"]["broker"].startswith("error:")
    assert body["checks"]["database"] == "ok"


def test_openapi_schema_lists_the_cli_endpoints(db, client: Client):
    response = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    text = response.content.decode()
    for path in ("/api/v1/me", "/api/v1/cli/device-code", "/api/v1/cli/device-token"):
        assert path in text


def test_api_routes_never_redirect(db, client: Client):
    for path in ("/api/v1/me", "/api/v1/cli/device-code", "/api/v1/cli/device-token"):
        response = client.post(path, {}, content_type="application/json")
        assert response.status_code not in (301, 302, 307, 308), path
