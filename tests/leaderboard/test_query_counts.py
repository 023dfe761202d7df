"""Pages cost a fixed number of queries whatever the number of published runs (1 vs 500)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard import services
from leaderboard.models import LeaderboardEntry
from leaderboard.selectors import board_cache_invalidate
from tests.leaderboard.factories import RunSpec, profile_score, published_in_bulk, scored_runs

pytestmark = pytest.mark.django_db

PUBLIC_PAGES = ["/leaderboard/", "/leaderboard/?domain=math&sort=b3", "/api/v1/leaderboard",
                "/api/v1/leaderboard?domain=chemistry", "/leaderboard/export.csv"]


def publish_runs(n: int, catalog: dict, owner, maintainer, offset: int = 0) -> None:
    specs = [RunSpec(owner=owner.user, instances=catalog["seed42"], agent=f"agent-{offset + k}", model="m",
                     score=lambda t, lv, k=k: profile_score(offset + k, t, lv)) for k in range(n)]
    submissions = scored_runs(specs, with_results=n == 1)
    # The first through the service; the rest in bulk with the same snapshot (fast to build).
    services.run_review_publish(submission_id=submissions[0].id, actor=maintainer.user, display_name="Run 0")
    published_in_bulk(submissions[1:], maintainer.user, lambda s: f"Run {s.agent}")


def page_queries(client, url: str) -> tuple[int, int]:
    board_cache_invalidate()
    with CaptureQueriesContext(connection) as cold:
        assert client.get(url).status_code == 200
    with CaptureQueriesContext(connection) as warm:
        assert client.get(url).status_code == 200
    return len(cold), len(warm)


def queue_queries(client, maintainer) -> int:
    client.force_login(maintainer.user)
    with CaptureQueriesContext(connection) as ctx:
        assert client.get("/leaderboard/review/?tab=published").status_code == 200
    client.logout()
    return len(ctx)


def test_query_count_stays_constant_from_1_to_500_published_runs(client, catalog, submitter, maintainer,
                                                                  django_assert_max_num_queries):
    publish_runs(1, catalog, submitter, maintainer)
    one = {url: page_queries(client, url) for url in PUBLIC_PAGES}
    entry_id = LeaderboardEntry.objects.get().id
    with CaptureQueriesContext(connection) as detail_one:
        client.get(f"/leaderboard/entries/{entry_id}/")
    queue_one = queue_queries(client, maintainer)

    publish_runs(499, catalog, submitter, maintainer, offset=1)
    assert LeaderboardEntry.objects.filter(is_current=True).count() == 500
    many = {url: page_queries(client, url) for url in PUBLIC_PAGES}
    assert many == one, (one, many)
    for url, (cold, warm) in many.items():
        # The JSON's cold fetch has one more: the newest moderation events it carries.
        assert cold <= (4 if url.startswith("/api/") else 3) and warm <= 2, (url, cold, warm)
    with django_assert_max_num_queries(len(detail_one)):
        client.get(f"/leaderboard/entries/{entry_id}/")
    assert queue_queries(client, maintainer) == queue_one
    board_cache_invalidate()
    with django_assert_max_num_queries(3):
        page = client.get("/leaderboard/").content.decode()
    assert page.count('data-testid="board-row"') == 100 and "page 1 of 5 (500 rows)" in page
    assert client.get("/api/v1/leaderboard").json()["count"] == 500
