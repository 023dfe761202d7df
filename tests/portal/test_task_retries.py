"""Every Portal task outlasts a locked database (the embedded SQLite one, written by the web server
and the worker at once): it is retried with backoff instead of dying and leaving its work undone."""

from django.db.utils import OperationalError

from config.celery import DATABASE_LOCKED_RETRIES, PortalTask, app

calls: list[int] = []


@app.task(name="tests.flaky_writer", bind=True)
def flaky_writer(self, failures: int, message: str) -> str:
    calls.append(self.request.retries)
    if len(calls) <= failures:
        raise OperationalError(message)
    return "written"


def test_every_portal_task_retries_a_locked_database():
    app.loader.import_default_modules()
    ours = {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}
    assert {"scoring.score_submission", "scoring.score_instance", "portal.submissions.tasks.reap_stuck_runs",
            "portal.submissions.tasks.expire_drafts", "portal.tasks.sweep_leftovers",
            "proposals.validate_proposal", "proposals.publish_proposal"} <= set(ours)
    assert [name for name, task in ours.items() if not isinstance(task, PortalTask)] == []


def test_a_task_that_meets_a_locked_database_is_retried_until_it_writes():
    calls.clear()
    flaky_writer.apply(args=(2, "database is locked"))
    assert calls == [0, 1, 2]


def test_a_task_gives_up_after_its_lock_retries_with_the_error():
    calls.clear()
    result = flaky_writer.apply(args=(DATABASE_LOCKED_RETRIES + 5, "database is locked"))
    assert calls == list(range(DATABASE_LOCKED_RETRIES + 1))
    assert result.state == "FAILURE" and str(result.result) == "database is locked"


def test_other_database_errors_are_not_retried():
    calls.clear()
    result = flaky_writer.apply(args=(1, "no such table: x"))
    assert calls == [0] and result.state == "FAILURE" and isinstance(result.result, OperationalError)


def test_infrastructure_retries_of_scoring_span_their_whole_schedule(settings):
    """A restart of a few seconds (database, broker, storage) must not use up every retry at once:
    each delay is at least half its exponential step, never Celery's full jitter down to zero."""
    from portal.submissions.scoring_tasks import infra_retry_delay

    settings.SCORING_RETRY_BACKOFF_SECONDS = 2
    for retries in range(5):
        step = 2 * 2 ** retries
        delays = [infra_retry_delay(retries) for _ in range(200)]
        assert step / 2 <= min(delays) and max(delays) <= step
    assert sum(min(infra_retry_delay(n) for _ in range(50)) for n in range(4)) >= 15  # 1 + 2 + 4 + 8
