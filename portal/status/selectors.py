"""The public status page's figures: queue, scoring, waiting times, live workers.

Counts and durations only (no run ids, owners or worker names), computed at most once per
STATUS_CACHE_SECONDS whatever the traffic, so the page cannot be used to load the database.
"""

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import Exists, OuterRef
from django.utils import timezone

from portal.status.models import WorkerHeartbeat
from portal.submissions.models import Submission
from scoring.health_selectors import task_health_counts
from scoring.models import ScoringRun

CACHE_KEY = "status:snapshot"
WAIT_WINDOW = timedelta(days=1)


def percentile(sorted_values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile: a value that occurred, never an interpolation between two."""
    if not sorted_values:
        return None
    return sorted_values[max(0, math.ceil(fraction * len(sorted_values)) - 1)]


def first_scoring_waits(since: datetime) -> list[float]:
    """Seconds from Confirm to the first complete scoring, for runs first scored after `since`.

    A rescore or a re-queued stuck run has an earlier confirm and would read as a wait of days, so
    only a run's first complete scoring counts.
    """
    earlier = ScoringRun.objects.filter(submission=OuterRef("submission"), status=ScoringRun.Status.COMPLETE,
                                        number__lt=OuterRef("number"))
    rows = (ScoringRun.objects.filter(status=ScoringRun.Status.COMPLETE, finished_at__gte=since,
                                      submission__confirmed_at__isnull=False)
            .filter(~Exists(earlier)).values_list("finished_at", "submission__confirmed_at"))
    return sorted(max(0.0, (finished - confirmed).total_seconds()) for finished, confirmed in rows
                  if finished is not None and confirmed is not None)


@dataclass(frozen=True)
class ScoringWorkers:
    """The workers seen within WORKER_SEEN_MINUTES, and how many of them can score."""

    alive: int
    able: int
    problem: str
    """What the most recently seen worker that cannot score reported ("" when none)."""

    @property
    def none_can_score(self) -> bool:
        """Workers are running and not one of them could ever score a run."""
        return self.alive > 0 and self.able == 0


def scoring_workers(now: datetime | None = None) -> ScoringWorkers:
    seen_since = (now or timezone.now()) - timedelta(minutes=settings.WORKER_SEEN_MINUTES)
    live = WorkerHeartbeat.objects.filter(last_seen__gte=seen_since)
    unable = live.exclude(sandbox_problem="")
    problem = unable.order_by("-last_seen").values_list("sandbox_problem", flat=True).first() or ""
    alive = live.count()
    return ScoringWorkers(alive=alive, able=alive - unable.count(), problem=problem)


def status_snapshot(now: datetime | None = None) -> dict[str, Any]:
    now = now or timezone.now()
    waits = first_scoring_waits(now - WAIT_WINDOW)
    workers = scoring_workers(now)
    return {
        "queued": Submission.objects.filter(status=Submission.Status.QUEUED).count(),
        "scoring": Submission.objects.filter(status=Submission.Status.SCORING).count(),
        "scored_last_day": len(waits),
        "wait_p50": percentile(waits, 0.50),
        "wait_p95": percentile(waits, 0.95),
        "workers": workers.alive,
        "workers_unable": workers.alive - workers.able,
        "worker_window_minutes": settings.WORKER_SEEN_MINUTES,
        # Task health (scoring.health): how many catalog tasks are healthy, failing and unchecked.
        "tasks": task_health_counts(),
        "generated_at": now,
        "cache_seconds": settings.STATUS_CACHE_SECONDS,
    }


def status_cached() -> dict[str, Any]:
    snapshot = cache.get(CACHE_KEY)
    if snapshot is None:
        snapshot = status_snapshot()
        cache.set(CACHE_KEY, snapshot, settings.STATUS_CACHE_SECONDS)
    return snapshot
