"""A custom agent's label: short on every page, and the review page's suggested display name
always publishable, also for runs whose draft stored the whole `--agent-cmd` command."""

import pytest
from django.test import Client

from leaderboard.models import LeaderboardEntry
from leaderboard.services import MAX_NAME
from tests.leaderboard.factories import RunSpec, scored_run

pytestmark = pytest.mark.django_db

# What a draft stored for `make run`'s example agent before labels were short (129 characters
# with " · demo-model · high" appended: over the limit).
REPO_ROOT = "/home/newcomer/src/asibench-portal-checkout"
LEGACY_AGENT = (f"agent-cmd: {REPO_ROOT}/.venv/bin/python {REPO_ROOT}/examples/agents/naive_agent.py "
                "--workspace {workspace}")


def review_page(maintainer, run) -> str:
    client = Client()
    client.force_login(maintainer.user)
    return client.get(f"/leaderboard/review/{run.id}/").content.decode()


def prefilled_name(page: str) -> str:
    import re

    return re.search(r'name="display_name" value="([^"]*)"', page).group(1)


def test_a_long_agent_command_is_shown_short_and_the_prefilled_name_publishes(catalog, submitter, maintainer):
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], agent=LEGACY_AGENT,
                             model="demo-model", effort="high"))
    assert len(" · ".join((LEGACY_AGENT, "demo-model", "high"))) > MAX_NAME
    page = review_page(maintainer, run)
    name = prefilled_name(page)
    assert name == "python naive_agent.py · demo-model · high"
    assert REPO_ROOT not in page  # the configuration line shows the short label too
    assert f'maxlength="{MAX_NAME}"' in page and f"At most {MAX_NAME} characters." in page
    client = Client()
    client.force_login(maintainer.user)
    client.post(f"/leaderboard/review/{run.id}/publish", {"display_name": name})
    assert LeaderboardEntry.objects.get(submission=run).display_name == name
    run_page = client.get(f"/submit/submissions/{run.id}").content.decode()
    assert "python naive_agent.py" in run_page and REPO_ROOT not in run_page
    board = Client().get("/leaderboard/").content.decode()
    assert "python naive_agent.py" in board and REPO_ROOT not in board


def test_the_prefilled_name_fits_the_limit_whatever_the_labels(catalog, submitter, maintainer):
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], agent="a" * 200,
                             model="m" * 150, effort="e" * 60))
    name = prefilled_name(review_page(maintainer, run))
    assert 0 < len(name) <= MAX_NAME and name.endswith("…")
    run2 = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed31415"], agent="my-agent " * 20,
                              model="gpt-x", effort="low"))
    name2 = prefilled_name(review_page(maintainer, run2))
    assert len(name2) <= MAX_NAME and name2.endswith("… · gpt-x · low")  # the agent gives way first
