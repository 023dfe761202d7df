"""A judged task's health check asks the Portal's configured judge endpoint (here the local one speaking
the OpenAI protocol) and records which judge answered; without an endpoint the check is an error, never
a verdict on the task."""

import pytest

from scoring.health import task_health_check
from scoring.judging.endpoint import PROVIDER_KEY_ENVS
from scoring.models import Erratum
from scoring.task_loading import catalog_load
from tests.judge_endpoint import JudgeEndpoint
from tests.scoring.health.health_support import TASK, judged_task_root

pytestmark = pytest.mark.django_db
KEY_ENV, SECRET = "HEALTH_JUDGE_KEY", "sk-health-judge-5e1f"


@pytest.fixture
def judged_task(tmp_path):
    report = catalog_load(tasks_root=judged_task_root(tmp_path))
    assert not report.failures, report.failures


def test_a_judged_task_is_checked_with_the_configured_local_endpoint(judged_task, settings, monkeypatch):
    with JudgeEndpoint() as endpoint:
        settings.JUDGE_API_BASE, settings.JUDGE_API_PROTOCOL = endpoint.url + "/v1", "openai"
        settings.JUDGE_API_KEY_ENV = KEY_ENV
        monkeypatch.setenv(KEY_ENV, SECRET)
        checks = task_health_check(task_id=TASK, trigger="maintainer")
        asked = len(endpoint.requests)
    assert {c.outcome for c in checks} == {"healthy"}, [c.reason for c in checks]
    assert asked >= 2 * 5 * 4  # every probe at every level on both datasets went to the local endpoint
    assert checks[0].judge == (f"the configured judge endpoint, {endpoint.url}/v1 (openai protocol, key from "
                               f"{KEY_ENV}); models openai/gpt-5.4")
    reference = [row for row in checks[0].probes if row["probe"] == "reference"]
    assert {row["percent"] for row in reference} == {100.0}
    assert SECRET not in str([c.probes for c in checks]) + checks[0].judge


def test_without_a_judge_endpoint_the_check_is_an_error_not_a_failure(judged_task, settings, monkeypatch):
    settings.JUDGE_API_BASE, settings.JUDGE_API_KEY_ENV, settings.JUDGE_API_PROTOCOL = "", "", ""
    for name in {name for names in PROVIDER_KEY_ENVS.values() for name in names}:
        monkeypatch.delenv(name, raising=False)
    checks = task_health_check(task_id=TASK, trigger="schedule")
    assert {c.outcome for c in checks} == {"error"}
    assert "no judge endpoint is configured" in checks[0].reason
    assert not Erratum.objects.exists()
