"""Spot validation (issue 32): drawn from the review page with a committed seed, the submitter told (page and
mail), the re-run attached and compared per sampled result, passed or failed, and the `official` label
following."""

import hashlib
import random
import re

import pytest
from django.core import mail
from django.test import Client

from leaderboard.models import LeaderboardEntry, SpotValidation
from portal.submissions.models import Submission
from portal.submissions.scoring_runs import scoring_run_completed_hooks
from scoring.models import ScoringRun
from tests.leaderboard.factories import RunSpec, _outputs, profile_score, scored_run

pytestmark = pytest.mark.django_db


def same_outputs_as(original: Submission):
    """The original run's outputs, byte for byte (what a deterministic agent re-run gives)."""
    return lambda base, level: _outputs(original.id, base)


@pytest.fixture
def original(catalog, submitter) -> Submission:
    return scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))


@pytest.fixture
def reviewer(maintainer) -> Client:
    client = Client()
    client.force_login(maintainer.user)
    return client


@pytest.fixture
def owner(submitter) -> Client:
    client = Client()
    client.force_login(submitter.user)
    return client


def draw(reviewer: Client, run: Submission, k: int = 4) -> SpotValidation:
    page = reviewer.post(f"/leaderboard/review/{run.id}/spot", {"k": str(k)}, follow=True).content.decode()
    assert f"Spot validation drawn: {k} result(s)" in page
    return SpotValidation.objects.get(submission=run)


def publish(reviewer: Client, run: Submission) -> None:
    reviewer.post(f"/leaderboard/review/{run.id}/publish", {"display_name": "Run"})


def test_a_draw_commits_to_its_seed_and_tells_the_submitter_on_the_page_and_by_mail(original, reviewer, owner,
                                                                                     django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        validation = draw(reviewer, original)
    assert validation.seed_sha256 == hashlib.sha256(validation.seed.encode()).hexdigest()
    bases = sorted(e.base_name for e in original.entries.all())
    assert [s["base_name"] for s in validation.sample] == sorted(random.Random(validation.seed).sample(bases, 4))
    page = owner.get(f"/submit/submissions/{original.id}").content.decode()
    assert validation.seed_sha256 in page and validation.seed not in page  # committed, not revealed
    assert all(s["base_name"] in page for s in validation.sample)
    assert ">Original<" not in page  # per-result scores are the maintainers': the owner sees none
    tasks = ",".join(sorted({s["task_id"] for s in validation.sample}))
    assert f"--tasks {tasks} --prompt-levels " in page
    [message] = mail.outbox
    assert message.to == ["alice@uni.example"] and "Spot validation of run" in message.subject
    assert f"--tasks {tasks}" in message.body and validation.seed_sha256 in message.body
    assert validation.seed not in message.body
    review = reviewer.get(f"/leaderboard/review/{original.id}/").content.decode()
    assert 'data-testid="spot-state">waiting for the re-run<' in review and ">Original<" in review


def test_a_rerun_with_identical_outputs_and_scores_passes_and_enables_official(catalog, original, submitter,
                                                                               reviewer, owner):
    publish(reviewer, original)
    validation = draw(reviewer, original)
    refused = reviewer.post(f"/leaderboard/review/{original.id}/trust", {"trust": "official", "reason": "ok"},
                            follow=True).content.decode()
    assert "needs a passed spot validation" in refused
    rerun = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], outputs=same_outputs_as(original),
                               model="rerun"))
    page = owner.post(f"/leaderboard/spot/{validation.id}/attach", {"rerun": str(rerun.id)}, follow=True)
    assert "the spot validation is passed" in page.content.decode()
    validation.refresh_from_db()
    assert validation.state == "passed" and all(r["agree"] and r["identical_outputs"] for r in validation.comparison)
    review = reviewer.get(f"/leaderboard/review/{original.id}/").content.decode()
    assert f'data-testid="spot-seed">{validation.seed}<' in review  # revealed once decided
    reviewer.post(f"/leaderboard/review/{original.id}/trust", {"trust": "official", "reason": "Spot check passed."})
    assert LeaderboardEntry.objects.get(submission=original).trust == "official"


def test_a_rerun_with_changed_outputs_and_scores_fails_and_official_stays_refused(catalog, original, submitter,
                                                                                   reviewer, owner):
    publish(reviewer, original)
    validation = draw(reviewer, original)
    rerun = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], model="changed",
                               score=lambda t, lv: max(0.0, profile_score(0, t, lv) - 20)))
    owner.post(f"/leaderboard/spot/{validation.id}/attach", {"rerun": str(rerun.id)})
    validation.refresh_from_db()
    assert validation.state == "failed"
    assert [r["agree"] for r in validation.comparison] == [False] * 4
    refused = reviewer.post(f"/leaderboard/review/{original.id}/trust", {"trust": "official", "reason": "x"},
                            follow=True).content.decode()
    assert "needs a passed spot validation" in refused
    assert LeaderboardEntry.objects.get(submission=original).trust == "community"
    review = reviewer.get(f"/leaderboard/review/{original.id}/").content.decode()
    assert 'data-testid="spot-state">failed<' in review and re.search(r'<span class="error">no</span>', review)


def test_changed_outputs_within_the_tolerance_agree_but_identical_outputs_must_agree_exactly(
        catalog, original, submitter, reviewer, owner, settings):
    settings.SPOT_VALIDATION_TOLERANCE = 1.0
    validation = draw(reviewer, original)
    nudged = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], model="nudged",
                                score=lambda t, lv: profile_score(0, t, lv) + 0.5))
    owner.post(f"/leaderboard/spot/{validation.id}/attach", {"rerun": str(nudged.id)})
    validation.refresh_from_db()
    assert validation.state == "passed"
    second = draw_again(reviewer, original)
    same_but_off = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], model="off",
                                      outputs=same_outputs_as(original),
                                      score=lambda t, lv: profile_score(0, t, lv) + 0.5))
    owner.post(f"/leaderboard/spot/{second.id}/attach", {"rerun": str(same_but_off.id)})
    second.refresh_from_db()
    assert second.state == "failed"


def draw_again(reviewer: Client, run: Submission) -> SpotValidation:
    reviewer.post(f"/leaderboard/review/{run.id}/spot", {"k": "4"})
    return SpotValidation.objects.filter(submission=run).order_by("-id").first()


def test_a_rerun_still_scoring_is_compared_when_its_scoring_completes(catalog, original, submitter, reviewer, owner):
    validation = draw(reviewer, original)
    rerun = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], outputs=same_outputs_as(original),
                               model="later"))
    ScoringRun.objects.filter(submission=rerun).update(status="running")
    owner.post(f"/leaderboard/spot/{validation.id}/attach", {"rerun": str(rerun.id)})
    validation.refresh_from_db()
    assert validation.state == "drawn" and validation.rerun_id == rerun.id
    ScoringRun.objects.filter(submission=rerun).update(status="complete")
    scoring_run_completed_hooks(rerun.scoring_runs.get().id)
    validation.refresh_from_db()
    assert validation.state == "passed"


def test_a_maintainer_may_attach_a_run_they_made(catalog, original, maintainer, reviewer):
    validation = draw(reviewer, original)
    ours = scored_run(RunSpec(owner=maintainer.user, instances=catalog["seed42"], outputs=same_outputs_as(original)))
    reviewer.post(f"/leaderboard/spot/{validation.id}/attach", {"rerun": str(ours.id)})
    validation.refresh_from_db()
    assert validation.state == "passed" and validation.by_maintainers


@pytest.mark.parametrize("persona", [None, "other_user"])
def test_nobody_else_draws_or_attaches(catalog, original, reviewer, persona, request, other_user):
    validation = draw(reviewer, original)
    client = Client()
    if persona:
        client.force_login(request.getfixturevalue(persona).user)
    theirs = scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"], outputs=same_outputs_as(original)))
    response = client.post(f"/leaderboard/spot/{validation.id}/attach", {"rerun": str(theirs.id)})
    assert response.status_code in (302, 404)
    assert client.post(f"/leaderboard/review/{original.id}/spot", {"k": "2"}).status_code in (302, 404)
    validation.refresh_from_db()
    assert validation.rerun_id is None and SpotValidation.objects.count() == 1
    if persona:
        page = client.get(f"/submit/submissions/{original.id}")
        assert page.status_code == 404


def test_the_owner_cannot_name_someone_elses_run_or_the_original(catalog, original, reviewer, owner, other_user):
    validation = draw(reviewer, original)
    theirs = scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"], model="theirs"))
    page = owner.post(f"/leaderboard/spot/{validation.id}/attach", {"rerun": str(theirs.id)}, follow=True)
    assert "Name one of your own runs as the re-run." in page.content.decode()
    page = owner.post(f"/leaderboard/spot/{validation.id}/attach", {"rerun": str(original.id)}, follow=True)
    assert "must be another run on the same dataset" in page.content.decode()
    validation.refresh_from_db()
    assert validation.rerun_id is None
