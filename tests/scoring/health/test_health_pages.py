"""What visitors and maintainers see of task health: the task page's last check, the maintainers' history
with every probe, /status counts, and errata from a failing check (private until confirmed)."""

import pytest
from django.core.cache import cache
from django.test import Client

from leaderboard.models import ModerationEvent
from portal.status.selectors import CACHE_KEY
from scoring.health import task_health_check
from scoring.models import Erratum, Task, TaskHealthCheck
from scoring.task_loading import catalog_load
from tests.scoring.catalog.catalog_support import make_root
from tests.scoring.health.health_support import TASK, task_root

pytestmark = pytest.mark.django_db
BROKEN = "demo.tiny_sum"  # its contract only checks that total.json exists: constant values score 100


@pytest.fixture
def checked(tmp_path, settings):
    """The sound fixture task and tiny_sum in the catalog, each checked once by the beat job."""
    assert not catalog_load(tasks_root=[task_root(tmp_path), make_root(tmp_path / "tiny")]).failures
    cache.delete(CACHE_KEY)
    return {task: task_health_check(task_id=task, trigger="schedule") for task in (TASK, BROKEN)}


def login(persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


def test_visitors_see_the_last_check_per_dataset_and_no_details(client, checked):
    page = client.get(f"/tasks/{TASK}/").content.decode()
    assert 'data-testid="task-health" data-state="healthy"' in page
    assert page.count('data-testid="health-outcome">Healthy<') == 2
    assert "revision 1" in page and "scoring engine 1.0.0" in page
    broken = client.get(f"/tasks/{BROKEN}/").content.decode()
    assert 'data-state="failing"' in broken and broken.count('data-testid="health-outcome">Failing<') == 2
    # The failing check's details and its erratum stay private until a maintainer confirms it.
    assert "constant values" not in broken and 'data-testid="health-history"' not in broken
    assert 'data-testid="erratum-public"' not in broken and "Check now" not in broken


def test_maintainers_see_every_check_with_its_probes_and_the_open_erratum(maintainer, checked):
    page = login(maintainer).get(f"/tasks/{BROKEN}/").content.decode()
    assert page.count('data-testid="health-check-row"') == 2
    assert 'data-testid="probe-constant_values-b3"' in page and "right shapes, constant values scored 100" in page
    assert 'data-testid="erratum-open"' in page and "Check now" in page


def test_status_counts_healthy_failing_and_unchecked_tasks(client, checked, tmp_path):
    Task.objects.filter(id=TASK).update(revision=2)  # a new revision is unchecked until it is checked
    page = client.get("/status").content.decode()
    assert 'data-testid="tasks-healthy">0<' in page and 'data-testid="tasks-failing">1<' in page
    assert 'data-testid="tasks-unchecked">1<' in page
    Task.objects.filter(id=TASK).update(revision=1)
    cache.delete(CACHE_KEY)
    page = client.get("/status").content.decode()
    assert 'data-testid="tasks-healthy">1<' in page and 'data-testid="tasks-unchecked">0<' in page


def test_a_failing_check_opens_one_private_erratum_that_a_maintainer_confirms(client, maintainer, checked):
    [erratum] = Erratum.objects.filter(task_id=BROKEN)  # both datasets failed: one erratum
    assert erratum.status == Erratum.Status.OPEN and erratum.task_revision == 1
    assert "right shapes, constant values scored 100" in erratum.summary
    assert not ModerationEvent.objects.exists()
    assert "constant values" not in client.get("/leaderboard/moderation").content.decode()
    staff = login(maintainer)
    url = f"/tasks/{BROKEN}/errata/{erratum.id}/confirm"
    assert "cannot be undone" in staff.get(url).content.decode()  # GET asks first
    assert Erratum.objects.get(id=erratum.id).status == Erratum.Status.OPEN
    staff.post(url, {"confirmed": "yes"})
    staff.post(url, {"confirmed": "yes"})  # twice is once
    erratum.refresh_from_db()
    assert erratum.status == Erratum.Status.CONFIRMED and erratum.confirmed_by == maintainer.user
    [event] = ModerationEvent.objects.all()
    assert event.kind == "erratum" and event.task_id == BROKEN and event.submission is None
    public = client.get(f"/tasks/{BROKEN}/").content.decode()
    assert 'data-testid="erratum-public"' in public and "right shapes, constant values scored 100" in public
    log = client.get("/leaderboard/moderation").content.decode()
    assert 'data-testid="moderation-erratum"' in log and f'href="/tasks/{BROKEN}/"' in log
    # A second failing check adds nothing while the erratum is active.
    task_health_check(task_id=BROKEN, trigger="schedule")
    assert Erratum.objects.filter(task_id=BROKEN).count() == 1


def test_only_maintainers_can_check_now_confirm_or_dismiss(client, other_user, maintainer, checked,
                                                           django_capture_on_commit_callbacks):
    erratum = Erratum.objects.get(task_id=BROKEN)
    for who in (client, login(other_user)):
        assert who.post(f"/tasks/{BROKEN}/health/check").status_code == 404
        assert who.post(f"/tasks/{BROKEN}/errata/{erratum.id}/confirm", {"confirmed": "yes"}).status_code == 404
        assert who.post(f"/tasks/{BROKEN}/errata/{erratum.id}/dismiss").status_code == 404
    assert Erratum.objects.get(id=erratum.id).status == Erratum.Status.OPEN
    staff = login(maintainer)
    with django_capture_on_commit_callbacks() as queued:
        staff.post(f"/tasks/{BROKEN}/health/check")
    assert len(queued) == 1  # one check queued, after commit
    # An erratum of another task is not reachable through this one's address.
    staff.post(f"/tasks/{TASK}/errata/{erratum.id}/dismiss")
    assert Erratum.objects.get(id=erratum.id).status == Erratum.Status.OPEN
    staff.post(f"/tasks/{BROKEN}/errata/{erratum.id}/dismiss")
    assert Erratum.objects.get(id=erratum.id).status == Erratum.Status.DISMISSED
    assert 'data-testid="erratum-public"' not in client.get(f"/tasks/{BROKEN}/").content.decode()


def test_a_running_check_is_not_started_twice(checked):
    task = Task.objects.get(id=TASK)
    TaskHealthCheck.objects.create(task=task, task_revision=1, task_source_hash=task.source_hash,
                                   engine_version="1.0.0", trigger="schedule")
    assert task_health_check(task_id=TASK, trigger="maintainer") == []
