"""One current board row per configuration, and the owner is part of the configuration: another user's
run with the same free-text labels (agent, model, effort, sandbox come from the bundle) never takes a
competitor's row off the board."""

import csv
import io

import pytest
from django.template.defaultfilters import floatformat
from django.test import Client

from leaderboard.models import LeaderboardEntry
from tests.leaderboard.factories import RunSpec, profile_score, scored_run

pytestmark = pytest.mark.django_db


def labelled_run(catalog, owner, k: int):
    # The same labels for everyone: what a copycat puts in its bundle's provenance.
    return scored_run(RunSpec(owner=owner.user, instances=catalog["seed42"], agent="codex", model="gpt-x",
                              effort="high", sandbox="os", score=lambda t, lv: profile_score(k, t, lv)))


@pytest.fixture
def review(maintainer, django_capture_on_commit_callbacks):
    """The maintainer's publish and unpublish buttons, through the review pages; after-commit work runs."""
    staff = Client()
    staff.force_login(maintainer.user)

    def act(action: str, run, **form: str) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            response = staff.post(f"/leaderboard/review/{run.id}/{action}", form)
        assert response.status_code == 302

    return act


def board_names(client) -> tuple[list[str], list[str], str]:
    body = client.get("/api/v1/leaderboard").json()
    rows = list(csv.DictReader(io.StringIO(client.get("/leaderboard/export.csv").content.decode())))
    return (sorted(r["display_name"] for r in body["rows"]), sorted(r["display_name"] for r in rows),
            client.get("/leaderboard/").content.decode())


def test_a_copycat_run_with_a_competitors_labels_does_not_replace_the_competitors_row(
        client, catalog, submitter, other_user, review):
    original = labelled_run(catalog, submitter, 0)
    review("publish", original, display_name="Original lab")
    assert board_names(client)[0] == ["Original lab"]  # warm the cache too
    copycat = labelled_run(catalog, other_user, 3)
    review("publish", copycat, display_name="Copycat lab")

    json_names, csv_names, page = board_names(client)
    assert json_names == csv_names == ["Copycat lab", "Original lab"]
    assert page.count('data-testid="board-row"') == 2 and "Original lab" in page and "Copycat lab" in page
    assert LeaderboardEntry.objects.filter(is_current=True).count() == 2
    # Unpublishing the copycat leaves the competitor's row exactly as it was.
    review("unpublish", copycat, reason="copied")
    assert board_names(client)[:2] == (["Original lab"], ["Original lab"])


def test_the_same_owners_newer_run_replaces_their_older_row(client, catalog, submitter, review):
    older = labelled_run(catalog, submitter, 0)
    review("publish", older, display_name="Lab v1")
    newer = labelled_run(catalog, submitter, 1)
    review("publish", newer, display_name="Lab v2")
    json_names, csv_names, page = board_names(client)
    assert json_names == csv_names == ["Lab v2"]
    assert page.count('data-testid="board-row"') == 1 and "Lab v1" not in page
    review("unpublish", newer, reason="withdrawn")
    assert board_names(client)[0] == ["Lab v1"]  # the older run is the current row again


def test_the_review_page_says_which_row_a_publish_would_replace(client, catalog, submitter, other_user, maintainer,
                                                                review):
    older = labelled_run(catalog, submitter, 0)
    client.force_login(maintainer.user)
    page = client.get(f"/leaderboard/review/{older.id}/").content.decode()
    assert 'data-testid="replaces"' in page and "replaces no board row" in page

    review("publish", older, display_name="Lab v1")
    entry = LeaderboardEntry.objects.get(submission=older)
    newer = labelled_run(catalog, submitter, 1)
    page = client.get(f"/leaderboard/review/{newer.id}/").content.decode()
    assert "replaces this owner’s current row" in page and "Lab v1" in page
    assert f"mean {floatformat(entry.mean, 1)}" in page and f"/leaderboard/entries/{entry.id}/" in page

    # Another user's run with the same labels replaces nothing.
    copycat = labelled_run(catalog, other_user, 3)
    page = client.get(f"/leaderboard/review/{copycat.id}/").content.decode()
    assert "replaces no board row" in page and "Lab v1" not in page

    # Publishing the run again (its own row) is not a replacement of another row.
    page = client.get(f"/leaderboard/review/{older.id}/").content.decode()
    assert "replaces no board row" in page
