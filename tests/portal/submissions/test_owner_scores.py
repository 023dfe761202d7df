"""Before publication the owner sees whole percents (run page, dashboard, progress API): exact means
would make each confirm a precise probe of the private references. Maintainers see them exact."""

import pytest
from django.test import Client

from portal.accounts.services import cli_token_create
from scoring.models import ScoringRun
from tests.leaderboard.factories import RunSpec, make_catalog, scored_run

pytestmark = pytest.mark.django_db
LEVEL_SCORES = {"b1": 57.4321, "b2": 33.5, "b3": 12.3456, "b4": 0.49}


@pytest.fixture
def run(db, submitter):
    instances = make_catalog()["seed42"]
    return scored_run(RunSpec(owner=submitter.user, instances=instances,
                              score=lambda task, level: LEVEL_SCORES[level]))


def logged_in(persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


def aggregate_cells(html: str) -> list[str]:
    table = html.split('data-testid="aggregate"')[1].split("</table>")[0]
    return [cell.split("</td>")[0].replace("<strong>", "").replace("</strong>", "")
            for cell in table.split('<td class="num">')[1:]]


def progress_api(persona, run):
    token = cli_token_create(user=persona.user, name="cli").plaintext
    return Client().get(f"/api/v1/submissions/{run.id}", HTTP_AUTHORIZATION=f"Bearer {token}").json()


def test_the_owner_sees_whole_percents_on_the_run_page_and_dashboard(run, submitter):
    exact = ScoringRun.objects.get(submission=run).aggregate
    assert exact["levels"]["b1"] == pytest.approx(57.4321) and 25.9 < exact["overall"] < 26.0
    owner = logged_in(submitter)
    assert aggregate_cells(owner.get(f"/submit/submissions/{run.id}").content.decode()) == \
        ["57", "34", "12", "0", "26"]
    dashboard = owner.get("/submit/dashboard").content.decode()
    assert '<td class="num">26</td>' in dashboard and "25.9" not in dashboard


def test_the_owner_gets_whole_percents_from_the_api(run, submitter):
    body = progress_api(submitter, run)
    assert body["levels"] == {"b1": 57, "b2": 34, "b3": 12, "b4": 0} and body["overall_score"] == 26
    assert {task["percent"] for task in body["tasks"]} == {26}  # each task's mean of its four levels


def test_maintainers_see_the_exact_scores(run, maintainer):
    page = logged_in(maintainer).get(f"/submit/submissions/{run.id}").content.decode()
    assert aggregate_cells(page) == ["57.4", "33.5", "12.3", "0.5", "25.9"]
    body = progress_api(maintainer, run)
    assert body["levels"]["b1"] == pytest.approx(57.4321) and body["overall_score"] == pytest.approx(25.94415, 1e-4)
    assert all(task["percent"] == pytest.approx(25.94, abs=0.01) for task in body["tasks"])
