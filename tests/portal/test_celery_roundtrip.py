"""A trivial task travels through Redis to a real worker process and back."""

import pytest

from config.celery import app, ping


@pytest.mark.slow
def test_a_task_round_trips_through_redis(celery_worker_process):
    assert app.conf.broker_url.startswith("redis://"), "run through `make test` (Redis broker)"
    assert ping.delay().get(timeout=60) == "pong"
