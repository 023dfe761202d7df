"""The web tier's queue-depth metrics when the broker does not answer: said so, and the scrape still works."""

from celery import Celery
from prometheus_client import CollectorRegistry, generate_latest

from config.metrics import QueueDepthCollector


def test_a_broker_that_does_not_answer_is_reported_not_counted_as_empty(monkeypatch):
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)  # Celery would take it over the app's own
    registry = CollectorRegistry()
    registry.register(QueueDepthCollector(Celery(broker="redis://127.0.0.1:9/0")))
    text = generate_latest(registry).decode()
    assert "asibench_celery_broker_up 0.0" in text
    assert "asibench_celery_queue_messages{" not in text
