"""Reads for proposals: lookups with their access rules, completeness, the review queue."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from contracts import PROMPT_LEVELS
from contracts import difficulty as difficulty_policy
from contracts.difficulty import GATED_LEVELS, gate_problems, too_easy_problems
from contracts.task_files import MULTI_TURN_AGENTS, PORTAL_TASK_ID_RE, score_problem
from portal.accounts.models import User
from portal.accounts.selectors import user_is_maintainer
from portal.errors import NotFound
from proposals.files import blob_read, load_yaml
from proposals.models import Proposal, ProposalJob, ReviewEvent, Revision, RevisionFile
from scoring.engine.static_checks import PORTAL_CHECK
from scoring.generation import RECOMMENDED, REQUIRED_FILES

PROMPT_FILES = tuple(f"prompt_{level}.md" for level in PROMPT_LEVELS)
TASK_FILES = tuple(f for f in REQUIRED_FILES if f not in PROMPT_FILES and f != "task_eval.yaml")


@dataclass(frozen=True)
class Step:
    key: str
    title: str


STEPS = (
    Step("identity", "Identity"),
    Step("objective", "Scientific objective and source"),
    Step("io", "Inputs and outputs"),
    Step("prompts", "Prompts"),
    Step("scoring", "Scoring rules"),
    Step("files", "Files"),
    Step("testing", "Local testing"),
)
STEP_KEYS = tuple(s.key for s in STEPS)


def _not_found(proposal_id: object) -> NotFound:
    return NotFound(f"No proposal {proposal_id} among your drafts.", code="proposal_not_found")


def _parse_id(proposal_id: object) -> uuid.UUID:
    try:
        return uuid.UUID(str(proposal_id))
    except ValueError:
        raise NotFound(f"{str(proposal_id)[:80]!r} is not a proposal id.", code="proposal_not_found") from None


def proposal_get_for_owner(*, user: User, proposal_id: object) -> Proposal:
    """The owner's proposal; anybody else's (or none) is the same 404, so ids leak nothing."""
    proposal = Proposal.objects.filter(id=_parse_id(proposal_id), owner_id=user.pk).first()
    if proposal is None:
        raise _not_found(proposal_id)
    return proposal


def proposal_get_for_review(*, user: User, proposal_id: object) -> Proposal:
    proposal = Proposal.objects.filter(id=_parse_id(proposal_id)).select_related("owner").first()
    if proposal is None or not user_is_maintainer(user):
        raise _not_found(proposal_id)
    return proposal


def revision_file_get(*, user: User, proposal_id: object, number: int, path: str) -> RevisionFile:
    """A file of a frozen revision, for its proposal's owner and for maintainers; the same 404 otherwise."""
    proposal = Proposal.objects.filter(id=_parse_id(proposal_id)).first()
    if proposal is None or (proposal.owner_id != user.pk and not user_is_maintainer(user)):
        raise _not_found(proposal_id)
    row = RevisionFile.objects.filter(revision__proposal=proposal, revision__number=number, path=path).first()
    if row is None:
        raise NotFound(f"Revision {number} of this proposal has no file {path[:200]!r}.")
    return row


def proposal_list_for_owner(user: User) -> QuerySet[Proposal]:
    return Proposal.objects.filter(owner=user).order_by("-updated_at")


def proposal_review_queue() -> QuerySet[Proposal]:
    """Submitted revisions waiting for a decision, oldest first; then accepted ones to publish."""
    return Proposal.objects.filter(
        status__in=[Proposal.Status.SUBMITTED, Proposal.Status.ACCEPTED]
    ).select_related("owner").order_by("status", "submitted_at")


def latest_revision(proposal: Proposal) -> Revision | None:
    return proposal.revisions.order_by("-number").first()


def latest_job(proposal: Proposal, kind: str) -> ProposalJob | None:
    return proposal.jobs.filter(kind=kind).order_by("-created_at", "-id").first()


def history(proposal: Proposal) -> QuerySet[ReviewEvent]:
    return proposal.events.select_related("actor", "revision").order_by("created_at", "id")


def testing_problems(proposal: Proposal) -> list[str]:
    problems = []
    if not proposal.local_testing_done:
        problems.append("local testing is not marked as done")
    if not proposal.test_provider.strip() or not proposal.test_model.strip():
        problems.append("name the provider and the model you tested with")
    if proposal.test_agent not in MULTI_TURN_AGENTS or proposal.test_sandbox != "os":
        problems.append("record a run of a multi-turn agent harness (codex_cli, claude_code_cli, …) in the os sandbox")
    for level, value in proposal.scores.items():
        problem = score_problem(level, value)
        if problem:
            problems.append(problem)
    problems += too_easy_problems(proposal.scores)
    return problems


def revision_difficulty_problems(revision: Revision) -> list[str]:
    """Why a frozen revision breaks the B3/B4 acceptance rule (scoring contract §4.5); empty if it does not."""
    return gate_problems({level: revision.fields.get(f"score_{level}") for level in GATED_LEVELS})


def completeness(proposal: Proposal, files: dict[str, int] | None = None) -> dict[str, Any]:
    """Which guided-flow steps are done: {"percent", "missing", "stopped_at", "steps": [...], "advice"}.

    `files` maps path → size (the working draft's files when not given). `advice` lists what the
    Portal recommends and the draft lacks; it never keeps a draft from being submitted.
    """
    if files is None:
        files = dict(proposal.files.values_list("path", "size"))
    reasons: dict[str, list[str]] = {key: [] for key in STEP_KEYS}
    if not PORTAL_TASK_ID_RE.match(proposal.task_id or ""):
        reasons["identity"].append(f"a task id of the form domain.task_name ({PORTAL_CHECK}: the catalog id rule)")
    elif proposal.domain != proposal.task_id.split(".")[0]:
        reasons["identity"].append(f"the domain must be {proposal.task_id.split('.')[0]!r} (the id's prefix)")
    if not proposal.name.strip():
        reasons["identity"].append("a name")
    if not proposal.objective.strip():
        reasons["objective"].append("the scientific objective")
    if not proposal.inputs.strip():
        reasons["io"].append("the inputs")
    if not proposal.outputs.strip():
        reasons["io"].append("the outputs")
    reasons["prompts"] = [f"{name} (non-empty)" for name in PROMPT_FILES if not files.get(name)]
    if not files.get("task_eval.yaml"):
        reasons["scoring"].append("task_eval.yaml")
    reasons["files"] = [name for name in TASK_FILES if not files.get(name)]
    advice = [f"{name} ({why}; {PORTAL_CHECK})" for name, why in RECOMMENDED.items()
              if not any(path == name or (name.endswith("/") and path.startswith(name)) for path in files)]
    reasons["testing"] = testing_problems(proposal)
    steps = [{"key": s.key, "title": s.title, "done": not reasons[s.key], "needs": reasons[s.key]} for s in STEPS]
    missing = [s["title"] for s in steps if not s["done"]]
    return {
        "percent": round(100 * (len(steps) - len(missing)) / len(steps)),
        "missing": missing,
        "stopped_at": missing[0] if missing else None,
        "steps": steps,
        "advice": advice,
    }


def revision_version(revision: Revision) -> str | None:
    """The version a frozen revision's task_meta.yaml declares: what publishing it keeps."""
    meta = revision.files.filter(path="task_meta.yaml").first()
    version = load_yaml(blob_read(meta.blob)).get("version") if meta is not None else None
    return None if version in (None, "") else str(version)


def accepted_revision(proposal: Proposal) -> Revision | None:
    """The revision of the proposal's latest acceptance (what Publish publishes); None if never accepted."""
    accepted = proposal.events.filter(kind=ReviewEvent.Kind.ACCEPTED).order_by("-created_at").first()
    return accepted.revision if accepted is not None else None


def task_id_taken_problem(*, task_id: str, owner_id: uuid.UUID) -> str | None:
    """Why an author may not have `task_id` (None when they may): a published task id stays with the author
    who published it first, so another author's proposal can never replace their task in the catalog."""
    taken = Proposal.objects.filter(task_id=task_id, status=Proposal.Status.PUBLISHED).exclude(owner_id=owner_id)
    if not task_id or not taken.exists():
        return None
    return (f"The task id {task_id} is already published by another author, and a published task id stays "
            "with its author: choose another task id.")


def proposal_published_difficulty(task_id: str, task_version: str) -> dict[str, Any] | None:
    """The public difficulty summary of the B1–B4 results recorded in the accepted revision of the proposal
    that published task `task_id` (None when no proposal published it), for the catalog's task page."""
    proposal = Proposal.objects.filter(task_id=task_id, status=Proposal.Status.PUBLISHED).order_by(
        "-updated_at").first()
    if proposal is None:
        return None
    accepted = proposal.events.filter(kind=ReviewEvent.Kind.ACCEPTED, revision__isnull=False).select_related(
        "revision").order_by("-created_at").first()
    if accepted is None:
        return None
    revision = accepted.revision
    assert revision is not None  # filtered on revision__isnull=False
    fields = revision.fields
    scores = {level: {"mean": fields.get(f"score_{level}")} for level in difficulty_policy.PROMPT_LEVELS}
    record = {"evaluations": [{
        "date": accepted.created_at.date().isoformat(),
        "verdict": "fail" if difficulty_policy.gate_problems({lv: s["mean"] for lv, s in scores.items()}) else "pass",
        "threshold": difficulty_policy.DIFFICULTY_THRESHOLD,
        "sandbox": fields.get("test_sandbox"),
        # Which agent, model and provider the author used is their private evidence: scores only.
        "results": [{"scores": scores}],
    }]}
    summary = difficulty_policy.public_summary(record)
    if summary is None:
        return None
    return {**summary, "source": f"the author's local test, accepted with revision {revision.number}",
            "task_version": task_version}
