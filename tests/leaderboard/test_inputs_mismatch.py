"""A run made from inputs other than ours is flagged for maintainers and published only by an explicit,
logged override."""

import pytest
from django.test import Client

from leaderboard import integrity_flags, services
from leaderboard.models import IntegrityFlag, LeaderboardEntry, ReviewAction
from portal.errors import Conflict
from portal.submissions.models import Submission
from tests.leaderboard.factories import RunSpec, scored_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def mismatched(catalog, submitter) -> Submission:
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))
    first, second = (i.instance_id for i in catalog["seed42"][:2])
    # What intake records (services.inputs_report) for a run whose first instance had other inputs.
    run.report = {**run.report, "inputs": {
        first: {"state": "mismatch", "detail": "made from inputs 0123456789ab, not the ones this Portal generated"},
        second: {"state": "not_recorded", "detail": "the client recorded no input digest"}}}
    run.save(update_fields=["report"])
    return run


def test_mismatched_inputs_are_an_integrity_flag(mismatched, catalog):
    flags = integrity_flags.integrity_flags_compute(submission_id=mismatched.id)
    [flag] = [f for f in flags if f.kind == IntegrityFlag.Kind.INPUTS_MISMATCH]
    assert flag.base_name == catalog["seed42"][0].instance_id and "0123456789ab" in flag.detail


def test_publishing_needs_the_explicit_override_which_is_logged(mismatched, maintainer):
    with pytest.raises(Conflict) as refused:
        services.run_review_publish(submission_id=mismatched.id, actor=maintainer.user, display_name="A")
    assert refused.value.code == "inputs_mismatch" and "override" in refused.value.detail
    assert not LeaderboardEntry.objects.exists()
    services.run_review_publish(submission_id=mismatched.id, actor=maintainer.user, display_name="A",
                            override_inputs_mismatch=True)
    assert LeaderboardEntry.objects.filter(submission=mismatched).exists()
    action = ReviewAction.objects.get(submission=mismatched, kind="publish")
    assert "despite mismatched inputs" in action.reason


def test_the_review_page_warns_and_the_form_carries_the_override(mismatched, maintainer):
    page = Client()
    page.force_login(maintainer.user)
    html = page.get(f"/leaderboard/review/{mismatched.id}/").content.decode()
    assert 'data-testid="inputs-mismatch"' in html and 'name="override_inputs_mismatch"' in html
    refused = page.post(f"/leaderboard/review/{mismatched.id}/publish", {"display_name": "A"}, follow=True)
    assert "explicit inputs-mismatch override" in refused.content.decode()
    assert not LeaderboardEntry.objects.exists()
    page.post(f"/leaderboard/review/{mismatched.id}/publish",
              {"display_name": "A", "override_inputs_mismatch": "1"}, follow=True)
    assert LeaderboardEntry.objects.filter(submission=mismatched).exists()


def test_runs_without_a_mismatch_publish_as_before(catalog, submitter, maintainer):
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))
    services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="A")
    assert ReviewAction.objects.get(submission=run, kind="publish").reason == ""


def test_a_refused_publish_links_its_faq_entry_one_run_or_in_bulk(mismatched, maintainer):
    page = Client()
    page.force_login(maintainer.user)
    help_link = '<a href="/guides/faq/#inputs_mismatch" data-testid="message-help">'
    one = page.post(f"/leaderboard/review/{mismatched.id}/publish", {"display_name": "A"}, follow=True)
    assert help_link in one.content.decode()
    bulk = page.post("/leaderboard/review/bulk", {"runs": [str(mismatched.id)], "action": "publish"}, follow=True)
    html = bulk.content.decode()
    assert f"{str(mismatched.id)[:8]}: " in html and "explicit inputs-mismatch override" in html
    assert help_link in html
    assert not LeaderboardEntry.objects.exists()
