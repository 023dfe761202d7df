"""/status: queue depth, runs scoring now, p50/p95 wait from Confirm to first score over the last day,
and workers heard from in the last minutes. Public, cached, counts only."""

import re
import uuid
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from portal.status.models import WorkerHeartbeat
from portal.status.selectors import CACHE_KEY, percentile
from portal.submissions.models import Submission
from scoring.models import ScoringRun
from scoring.sandbox.modes import BWRAP_ROOT
from tests.leaderboard.factories import make_catalog
from tests.support import OUTPUT_DIR, start_celery_worker, stop_celery_worker, wait_for

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_status_cache():
    cache.delete(CACHE_KEY)
    yield
    cache.delete(CACHE_KEY)


def run(owner, status: str, *, confirmed_ago: timedelta | None = None) -> Submission:
    now = timezone.now()
    return Submission.objects.create(
        owner=owner, dataset_id="seed42", status=status, archive="submissions/x", archive_sha256=uuid.uuid4().hex * 2,
        archive_bytes=1, agent="secret-agent", model="unreleased-model",
        confirmed_at=now - confirmed_ago if confirmed_ago is not None else None)


def scoring(submission: Submission, number: int, status: str, finished_ago: timedelta) -> ScoringRun:
    return ScoringRun.objects.create(submission=submission, number=number, status=status,
                                     finished_at=timezone.now() - finished_ago)


def figures(client: Client) -> dict[str, str]:
    page = client.get("/status")
    assert page.status_code == 200
    html = page.content.decode()
    return dict(re.findall(r'data-testid="status-([a-z0-9]+)">([^<]*)<', html))


@pytest.fixture
def seeded_queue(submitter, other_user):
    make_catalog()
    for _ in range(3):
        run(submitter.user, "queued", confirmed_ago=timedelta(minutes=5))
    run(other_user.user, "queued", confirmed_ago=timedelta(minutes=1))
    for _ in range(2):
        run(other_user.user, "scoring", confirmed_ago=timedelta(minutes=30))
    run(submitter.user, "draft")  # not in the queue until confirmed
    # Runs first scored in the last day: waits of 10, 20, 30, 40 and 600 minutes.
    for wait in (10, 20, 30, 40, 600):
        done = run(submitter.user, "scored", confirmed_ago=timedelta(minutes=wait + 60))
        scoring(done, 1, "complete", finished_ago=timedelta(minutes=60))
    # A rescore finished today of a run confirmed a week ago: its first scoring was last week.
    old = run(other_user.user, "scored", confirmed_ago=timedelta(days=7))
    scoring(old, 1, "complete", finished_ago=timedelta(days=6, hours=23))
    scoring(old, 2, "complete", finished_ago=timedelta(minutes=3))
    # A stuck first scoring that failed, then a complete one: one wait, to the complete scoring.
    retried = run(other_user.user, "scored", confirmed_ago=timedelta(minutes=90))
    scoring(retried, 1, "failed", finished_ago=timedelta(minutes=80))
    scoring(retried, 2, "complete", finished_ago=timedelta(minutes=40))  # waited 50 minutes
    # Scored two days ago: outside the window.
    scoring(run(submitter.user, "scored", confirmed_ago=timedelta(days=2, hours=1)), 1, "complete",
            finished_ago=timedelta(days=2))
    now = timezone.now()
    WorkerHeartbeat.objects.create(hostname="worker-a@internal-host-1", last_seen=now - timedelta(seconds=20))
    WorkerHeartbeat.objects.create(hostname="worker-b@internal-host-2", last_seen=now - timedelta(minutes=4))
    WorkerHeartbeat.objects.create(hostname="worker-gone@internal-host-3", last_seen=now - timedelta(minutes=30))


def test_the_figures_match_a_seeded_queue(client, seeded_queue, settings):
    settings.WORKER_SEEN_MINUTES = 5
    shown = figures(client)
    # Waits (minutes): 10, 20, 30, 40, 50, 600 -> nearest-rank p50 = 30, p95 = 600.
    assert shown == {"queued": "4", "scoring": "2", "scored": "6", "p50": "30 min 00 s", "p95": "10 h 00 min",
                     "workers": "2"}


def test_workers_without_a_usable_sandbox_are_counted_but_their_reason_is_not_shown(client, seeded_queue, settings):
    settings.WORKER_SEEN_MINUTES = 5
    WorkerHeartbeat.objects.filter(hostname="worker-b@internal-host-2").update(
        sandbox_mode=BWRAP_ROOT, sandbox_problem="bubblewrap cannot start a sandbox here as root: internal detail")
    shown = figures(client)
    assert (shown["workers"], shown["unable"]) == ("2", "1")
    assert "internal detail" not in client.get("/status").content.decode()


def test_nothing_private_is_shown(client, seeded_queue, submitter):
    html = client.get("/status").content.decode()
    for private in ("internal-host", "worker-a", submitter.email, "secret-agent", "unreleased-model", "seed42__"):
        assert private not in html, private
    assert "Scoring workers seen in the last 5 minutes" in html


def test_an_empty_queue_reads_as_zeros_and_dashes(client, db):
    assert figures(client) == {"queued": "0", "scoring": "0", "scored": "0", "p50": "—", "p95": "—", "workers": "0"}


def test_the_figures_are_cached_and_cost_no_query_while_fresh(client, seeded_queue, submitter,
                                                              django_assert_num_queries):
    assert figures(client)["queued"] == "4"
    run(submitter.user, "queued", confirmed_ago=timedelta(seconds=1))
    with django_assert_num_queries(0):
        assert figures(client)["queued"] == "4"  # anonymous visitor, cached snapshot: no database at all
    cache.delete(CACHE_KEY)  # what expiry does after STATUS_CACHE_SECONDS
    assert figures(client)["queued"] == "5"


def test_percentile_is_nearest_rank():
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 0.5) == 2.0 and percentile(values, 0.95) == 4.0 and percentile([], 0.5) is None
    assert percentile([7.0], 0.95) == 7.0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_running_worker_is_seen_and_leaves_when_it_stops(client, settings):
    settings.WORKER_SEEN_MINUTES = 5
    worker = start_celery_worker("status", concurrency=1, extra_env={"ASIBENCH_WORKER_HEARTBEAT_SECONDS": "1"})
    try:
        beat = wait_for(lambda: WorkerHeartbeat.objects.filter(hostname__startswith="status-").first(), 60,
                        "the worker's first heartbeat")
        first_seen = beat.last_seen
        # The worker said at start which sandbox mode its runs take, and records it with its heartbeat.
        assert (beat.sandbox_mode, beat.sandbox_problem) == (BWRAP_ROOT, "")
        assert f"sandbox {BWRAP_ROOT}: enforces namespaces, seccomp" in (OUTPUT_DIR / "celery-status.log").read_text()
        wait_for(lambda: WorkerHeartbeat.objects.get(hostname=beat.hostname).last_seen > first_seen, 30,
                 "a later heartbeat from the worker's timer")
        assert figures(client)["workers"] == "1"
    finally:
        stop_celery_worker(worker)
    # A clean shutdown removes the row at once.
    assert not WorkerHeartbeat.objects.filter(hostname=beat.hostname).exists()
