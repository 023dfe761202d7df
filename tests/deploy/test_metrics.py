"""Prometheus metrics as compose runs them: gunicorn (config/gunicorn.py) and a Celery worker, each serving its
process tree's metrics on an address of its own. A scored run moves the counters; the public site has none."""

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.support import (
    OUTPUT_DIR,
    REPO,
    VENV_BIN,
    confirmed_run,
    free_port,
    start_celery_worker,
    stop_celery_worker,
    subprocess_env,
    wait_for,
    wait_http,
    wait_until_scored,
)
from tests.support import test_database_env as database_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = requests.get(url, timeout=10)
    assert response.status_code == 200, response.text
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.text) for sample in family.samples}


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def metrics_env(tmp_path: Path, name: str) -> tuple[dict[str, str], str]:
    port = free_port()
    return ({"ASIBENCH_METRICS_LISTEN": f"127.0.0.1:{port}", "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / name)},
            f"http://127.0.0.1:{port}/metrics")


@pytest.fixture
def web(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """gunicorn as compose starts it: its master serves the metrics of its two workers."""
    env, metrics_url = metrics_env(tmp_path, "web-metrics")
    port = free_port()
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    with open(OUTPUT_DIR / "gunicorn-metrics.log", "w") as log:
        proc = subprocess.Popen(
            [str(VENV_BIN / "gunicorn"), "config.wsgi:application", "-c", "config/gunicorn.py",
             "--bind", f"127.0.0.1:{port}", "--workers", "2"],
            cwd=REPO, env=subprocess_env({**database_env(), "DEBUG": "1", **env}), stdout=log,
            stderr=subprocess.STDOUT)
        try:
            wait_http(f"http://127.0.0.1:{port}/healthz")
            wait_http(metrics_url)
            yield f"http://127.0.0.1:{port}", metrics_url
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def test_a_scored_run_moves_the_counters_and_the_public_site_serves_none(
        web, submit_catalog, run_results, submitter, tmp_path):
    from config.celery import app

    site, web_metrics = web
    with app.connection_for_write() as connection:  # messages other tests left must not be counted here
        for queue in ("celery", "proposals"):
            connection.default_channel.queue_purge(queue)
    # Queue depth, from the web tier's metrics: three messages wait while no worker runs.
    first_scrape = scrape(web_metrics)
    assert value(first_scrape, "asibench_celery_broker_up") == 1
    before = value(first_scrape, "asibench_celery_queue_messages", queue="proposals")
    for _ in range(3):
        app.send_task("portal.ping", queue="proposals")
    assert value(scrape(web_metrics), "asibench_celery_queue_messages", queue="proposals") == before + 3

    env, worker_metrics = metrics_env(tmp_path, "worker-metrics")
    worker = start_celery_worker("metrics", extra_env=env)
    try:
        wait_http(worker_metrics, timeout=60)
        wait_for(lambda: value(scrape(web_metrics), "asibench_celery_queue_messages", queue="proposals") == before,
                 60, "the worker to drain the proposals queue")
        wait_for(lambda: value(scrape(worker_metrics), "asibench_celery_tasks_total", task="portal.ping",
                               state="succeeded") >= 3, 30, "the pings to be counted")

        submission = wait_until_scored(confirmed_run(submitter, run_results["reference"], tmp_path))
        assert submission.status == "scored"

        def all_finished() -> dict:  # the run is scored inside the last task, just before it is counted
            samples = scrape(worker_metrics)
            return samples if all(
                value(samples, "asibench_celery_tasks_total", task=task, state="started")
                == value(samples, "asibench_celery_tasks_total", task=task, state="succeeded")
                for task in ("scoring.score_submission", "scoring.score_instance")) else {}
        samples = wait_for(all_finished, 30, "the scoring tasks to be counted")
    finally:
        stop_celery_worker(worker)

    results = submission.entries.count()
    assert results == 8
    for task in ("scoring.score_submission", "scoring.score_instance"):
        started = value(samples, "asibench_celery_tasks_total", task=task, state="started")
        assert started >= 1 and value(samples, "asibench_celery_tasks_total", task=task, state="succeeded") == started
        assert value(samples, "asibench_celery_tasks_total", task=task, state="failed") == 0
    # One observation per scored result, from the children that scored them, added up by the worker.
    assert value(samples, "asibench_scoring_result_seconds_count", outcome="scored") == results
    assert value(samples, "asibench_scoring_result_seconds_sum", outcome="scored") > 0

    # The web tier: requests and database queries counted across both gunicorn workers.
    first = scrape(web_metrics)
    for path in ("/", "/leaderboard/", "/tasks/", "/status"):
        assert requests.get(site + path, timeout=30).status_code == 200
    after = scrape(web_metrics)
    assert value(after, "django_http_requests_total_by_method_total", method="GET") \
        >= value(first, "django_http_requests_total_by_method_total", method="GET") + 4
    assert value(after, "django_db_execute_total", alias="default", vendor="postgresql") \
        > value(first, "django_db_execute_total", alias="default", vendor="postgresql")

    # An anonymous request through the public site gets no metrics, whatever the path.
    for path in ("/metrics", "/metrics/", "/prometheus/metrics", "/django_prometheus/metrics"):
        response = requests.get(site + path, timeout=30)
        assert response.status_code == 404
        assert "django_http_requests" not in response.text and "asibench_celery" not in response.text
