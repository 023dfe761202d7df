"""The B3/B4 acceptance rule (scoring contract §4.5): recorded B3 or B4 ≥ 40 is never accepted."""

from __future__ import annotations

import hashlib
import io

import pytest
from django.test import Client

from portal.errors import ValidationFailed
from proposals import services
from proposals.files import IncomingFile
from proposals.models import Proposal, ReviewEvent, Revision
from tests.proposals.proposal_support import evidence, task_files

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clean_proposal_storage")]


def submitted_revision(owner, *, b3: object, b4: object) -> Proposal:
    """A proposal under review whose revision was frozen with these scores (e.g. before the rule existed)."""
    proposal = Proposal.objects.create(owner=owner, task_id="physics.toy_spectrum", name="Toy", domain="physics",
                                       status=Proposal.Status.SUBMITTED, snapshot="0" * 64)
    fields = {"task_id": "physics.toy_spectrum", "score_b1": 90.0, "score_b2": 70.0, "score_b3": b3, "score_b4": b4,
              "test_agent": "codex_cli", "test_sandbox": "os"}
    Revision.objects.create(proposal=proposal, number=1, content_hash="1" * 64, fields=fields)
    return proposal


def login(persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


@pytest.mark.parametrize(("b3", "b4", "reason"), [
    (45.0, 10.0, "B3 scored 45, not below 40"),
    (12.0, 40.0, "B4 scored 40, not below 40"),
    (12.0, None, "no usable B4 score is recorded (None)"),
    ("nan", 12.0, "no usable B3 score is recorded ('nan')"),
])
def test_the_service_refuses_to_accept_a_revision_that_is_too_easy(submitter, maintainer, mailoutbox, b3, b4,
                                                                   reason) -> None:
    proposal = submitted_revision(submitter.user, b3=b3, b4=b4)
    with pytest.raises(ValidationFailed) as refused:
        services.proposal_decide(maintainer=maintainer.user, proposal_id=proposal.id, revision_number=1,
                                 decision="accept", reason="Looks good.")
    assert refused.value.code == "difficulty_gate"
    assert "Revision 1 cannot be accepted" in refused.value.detail and reason in refused.value.detail
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.SUBMITTED
    assert not proposal.events.exists() and mailoutbox == []


def test_the_service_accepts_below_40_and_other_decisions_are_not_gated(submitter, maintainer) -> None:
    easy = submitted_revision(submitter.user, b3=45.0, b4=50.0)
    services.proposal_decide(maintainer=maintainer.user, proposal_id=easy.id, revision_number=1,
                             decision="request_changes", reason="B3 and B4 are far too easy.")
    assert Proposal.objects.get(pk=easy.pk).status == Proposal.Status.CHANGES_REQUESTED

    hard = Proposal.objects.create(owner=submitter.user, task_id="physics.hard_one", name="Hard", domain="physics",
                                   status=Proposal.Status.SUBMITTED, snapshot="0" * 64)
    Revision.objects.create(proposal=hard, number=1, content_hash="2" * 64,
                            fields={"task_id": "physics.hard_one", "score_b3": 39.99, "score_b4": 0})
    services.proposal_decide(maintainer=maintainer.user, proposal_id=hard.id, revision_number=1,
                             decision="accept", reason="Hard enough.")
    assert Proposal.objects.get(pk=hard.pk).status == Proposal.Status.ACCEPTED


def test_the_review_page_shows_why_and_refuses_the_accept_button(submitter, maintainer) -> None:
    proposal = submitted_revision(submitter.user, b3=62.5, b4=12.0)
    reviewer = login(maintainer)
    page = reviewer.get(f"/submit/proposals/{proposal.id}/review").content.decode()
    assert 'data-testid="difficulty-gate"' in page and "B3 scored 62.5, not below 40" in page

    response = reviewer.post(f"/submit/proposals/{proposal.id}/review/decide",
                             {"revision": 1, "decision": "accept", "reason": "ok"}, follow=True)
    assert response.status_code == 200
    shown = " ".join(str(m) for m in response.context["messages"])
    assert "Revision 1 cannot be accepted: B3 scored 62.5, not below 40" in shown
    assert "B3 scored 62.5" in response.content.decode()
    assert Proposal.objects.get(pk=proposal.pk).status == Proposal.Status.SUBMITTED
    assert not ReviewEvent.objects.filter(proposal=proposal, kind=ReviewEvent.Kind.ACCEPTED).exists()


def _incoming(files: dict[str, bytes]) -> list[IncomingFile]:
    return [IncomingFile(n, io.BytesIO(d), len(d), hashlib.sha256(d).hexdigest()) for n, d in files.items()]


def test_a_draft_whose_b3_is_too_high_cannot_be_frozen(submitter, task_dir) -> None:
    files = task_files(task_dir)
    files["task_submission.yaml"] = evidence().replace("score: 31", "score: 55").encode()
    proposal = services.proposal_cli_open(owner=submitter.user, task_id="physics.toy_spectrum", name="Toy",
                                          domain="physics", subdomain=None).proposal
    proposal = services.proposal_files_sync(user=submitter.user, proposal_id=proposal.id, files=_incoming(files),
                                            base_snapshot=proposal.snapshot, force=False)
    assert proposal.score_b3 == 55

    with pytest.raises(ValidationFailed) as refused:
        services.proposal_submit(user=submitter.user, proposal_id=proposal.id)
    assert refused.value.code == "incomplete"
    assert "Local testing: B3 scored 55, not below 40" in refused.value.detail
    assert not proposal.revisions.exists()

    author = login(submitter)
    page = author.get(f"/submit/proposals/{proposal.id}").content.decode()
    assert 'data-testid="freeze-problems"' in page and "B3 scored 55, not below 40" in page
    response = author.post(f"/submit/proposals/{proposal.id}/submit", follow=True)
    assert "B3 scored 55, not below 40" in response.content.decode()
    assert Proposal.objects.get(pk=proposal.pk).status == Proposal.Status.DRAFT and not proposal.revisions.exists()
