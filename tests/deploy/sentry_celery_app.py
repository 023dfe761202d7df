"""The Portal's Celery app plus one task that fails, for the Sentry test's worker
(`celery -A tests.deploy.sentry_celery_app worker`)."""

from config.celery import app

__all__ = ["app"]


@app.task(name="tests.fails_for_sentry")
def fails_for_sentry(email: str) -> None:
    raise ValueError(f"scoring blew up for {email}")
