"""The full pipeline with ASIBENCH_SANDBOX=docker: confirm → a real Celery worker → one container
per result on the engine at DOCKER_HOST (podman here) → scores, identical to bwrap's."""

import os

import pytest

from scoring.models import InstanceScore, ScoringRun
from tests.support import confirmed_run, start_celery_worker, stop_celery_worker, wait_until_scored

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def docker_worker(django_db_setup):
    assert os.environ.get("DOCKER_HOST"), "make test points DOCKER_HOST at the container engine"
    proc = start_celery_worker("docker-worker", extra_env={"ASIBENCH_SANDBOX": "docker"})
    try:
        yield proc
    finally:
        stop_celery_worker(proc)


def test_a_confirmed_run_is_scored_in_containers(submit_catalog, submitter, run_results, tmp_path, docker_worker):
    from docker import from_env

    engine = from_env()
    before = {c.id for c in engine.containers.list(all=True, filters={"label": "org.asibench.sandbox"})}
    run = wait_until_scored(confirmed_run(submitter, run_results["reference"], tmp_path))

    assert run.status == "scored", run.status_reason
    scoring = ScoringRun.objects.get(submission=run)
    levels = scoring.aggregate["levels"]
    assert all(levels[level] >= 95 for level in ("b1", "b2", "b3", "b4")), levels
    scores = InstanceScore.objects.filter(scoring_run=scoring)
    assert scores.count() == run.entries.count() == 8
    assert {s.sandbox_backend for s in scores} == {"docker"}
    assert all(s.result["score_results"] and not s.reason for s in scores), [s.reason for s in scores]
    # Every scoring container was removed after its result.
    assert {c.id for c in engine.containers.list(all=True, filters={"label": "org.asibench.sandbox"})} == before
