"""Spot validation: a maintainer draws k sampled results of a run; its submitter re-runs them with the same
configuration and uploads the bundle; the Portal scores it like any other and compares, per sampled result, the
new score with the original one. A maintainer may instead attach a re-run they made themselves.

The sample is drawn with a random seed whose SHA-256 is shown at draw time and the seed itself once the
validation is decided, so anyone can check that the sample was fixed before the re-run was seen
(`random.Random(seed).sample` over the run's validly scored results sorted by base name). Scores agree within
settings.SPOT_VALIDATION_TOLERANCE points; a result whose re-run outputs are byte-identical to the original's
must agree exactly (the scorers are deterministic on identical outputs). A passed validation enables `official`.
"""

import hashlib
import json
import random
import secrets
from typing import Any

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from leaderboard.models import ReviewAction, SpotValidation
from portal.accounts.models import User
from portal.accounts.selectors import user_is_maintainer
from portal.errors import Conflict, NotFound, PermissionDenied, ValidationFailed
from portal.mail import mail_send
from portal.public_urls import public_url
from portal.submissions.models import Submission
from portal.submissions.outcomes import VALID_OUTCOMES, result_outcome, score_end
from scoring.models import InstanceScore, ScoringRun
from scoring.selectors import scoring_run_latest


def _valid_scores(scoring: ScoringRun) -> list[InstanceScore]:
    scores = InstanceScore.objects.filter(scoring_run=scoring).select_related("entry").order_by("entry__base_name")
    return [s for s in scores if result_outcome(score_end(s.entry, s)) in VALID_OUTCOMES]


def _outputs_digest(outputs: list[dict[str, Any]]) -> str:
    files = sorted((str(o.get("path")), str(o.get("sha256"))) for o in outputs or [])
    return hashlib.sha256(json.dumps(files).encode()).hexdigest()


def rerun_command(validation: SpotValidation) -> str:
    """The re-run, as either client takes it: every sampled task at every sampled level (a superset of the
    sample; only the sampled results are compared)."""
    tasks = sorted({s["task_id"] for s in validation.sample})
    levels = sorted({s["prompt_level"] for s in validation.sample})
    return f"--tasks {','.join(tasks)} --prompt-levels {','.join(levels)}"


def spot_validation_draw(*, submission_id: Any, actor: User, k: int | None = None) -> SpotValidation:
    if not user_is_maintainer(actor):
        raise PermissionDenied("Only maintainers can review runs.")
    size = settings.SPOT_VALIDATION_SAMPLE if k is None else k
    if size < 1:
        raise ValidationFailed("Draw at least one result.", code="sample_size")
    with transaction.atomic():
        submission = Submission.objects.select_for_update().filter(id=submission_id).first()
        if submission is None:
            raise NotFound("No such run.")
        scoring = scoring_run_latest(submission.id)
        if scoring is None or scoring.status != ScoringRun.Status.COMPLETE:
            raise Conflict("Only a scored run can be spot-validated.", code="not_scored")
        candidates = _valid_scores(scoring)
        if not candidates:
            raise Conflict("This run has no validly scored result to re-run.", code="nothing_to_sample")
        seed = secrets.token_hex(16)
        chosen = random.Random(seed).sample(candidates, min(size, len(candidates)))
        validation = SpotValidation.objects.create(
            submission=submission, drawn_by=actor, scoring_number=scoring.number, seed=seed,
            seed_sha256=hashlib.sha256(seed.encode()).hexdigest(), tolerance=settings.SPOT_VALIDATION_TOLERANCE,
            sample=[{"base_name": s.entry.base_name, "instance_id": s.entry.instance_id, "task_id": s.entry.task_id,
                     "prompt_level": s.entry.prompt_level, "original": s.percent,
                     "outputs": _outputs_digest(s.entry.outputs)}
                    for s in sorted(chosen, key=lambda s: s.entry.base_name)])
        ReviewAction.objects.create(submission=submission, actor=actor, kind=ReviewAction.Kind.SPOT,
                                    reason=f"spot validation #{validation.id} drawn: {len(chosen)} result(s), "
                                           f"seed SHA-256 {validation.seed_sha256}")
        transaction.on_commit(lambda: _mail_owner(validation.id))
    return validation


def _mail_owner(validation_id: int) -> bool:
    validation = SpotValidation.objects.select_related("submission__owner").get(id=validation_id)
    run = validation.submission
    listed = "\n".join(f"  - {s['instance_id']} at {s['prompt_level'].upper()}" for s in validation.sample)
    body = (f"A maintainer drew a spot validation of your run {run.id} on {run.dataset_id}: re-run these "
            f"{len(validation.sample)} result(s) with the same configuration (agent, model, effort, sandbox):\n\n"
            f"{listed}\n\nWith either client, run the sampled tasks and levels:\n\n"
            f"  asibench run ... {rerun_command(validation)}\n\n(this Portal's client also takes "
            f"--spot-validation {validation.id} instead), then upload the bundle as usual, confirm it, and "
            "name it as the re-run on your run page. The sample was drawn with a seed whose SHA-256 is "
            f"{validation.seed_sha256}; the seed is shown once the validation is decided.")
    body += f"\n\nYour run: {public_url(reverse('submission-detail', args=[run.id]))}\n"
    return mail_send(to=run.owner.email, subject=f"Spot validation of run {str(run.id)[:8]}", body=body)


def spot_validation_attach(*, validation_id: Any, actor: User, rerun_id: Any) -> SpotValidation:
    """Name the run that re-ran the sample: the owner's own upload, or a maintainer's run (`by_maintainers`).
    Compared at once when the re-run is scored, else when its scoring completes."""
    with transaction.atomic():
        validation = (SpotValidation.objects.select_for_update().select_related("submission")
                      .filter(id=validation_id).first())
        if validation is None:
            raise NotFound("No such spot validation.")
        maintainer = user_is_maintainer(actor)
        if not maintainer and validation.submission.owner_id != actor.id:
            raise NotFound("No such spot validation.")
        if validation.state != SpotValidation.State.DRAWN:
            raise Conflict(f"This spot validation is already {validation.state}.", code="decided")
        rerun = Submission.objects.filter(id=str(rerun_id).strip()).first() if _uuid(rerun_id) else None
        if rerun is None or rerun.owner_id != actor.id:
            raise ValidationFailed("Name one of your own runs as the re-run.", code="rerun_unknown")
        if rerun.id == validation.submission_id or rerun.dataset_id != validation.submission.dataset_id:
            raise ValidationFailed("The re-run must be another run on the same dataset.", code="rerun_mismatch")
        validation.rerun = rerun
        validation.by_maintainers = maintainer and rerun.owner_id != validation.submission.owner_id
        validation.save(update_fields=["rerun", "by_maintainers"])
        ReviewAction.objects.create(submission=validation.submission, actor=actor, kind=ReviewAction.Kind.SPOT,
                                    reason=f"spot validation #{validation.id}: re-run {rerun.id} attached"
                                           + (" (made by the maintainers)" if validation.by_maintainers else ""))
    scoring = scoring_run_latest(rerun.id)
    if scoring is not None and scoring.status == ScoringRun.Status.COMPLETE:
        return spot_validation_compare(validation_id=validation.id)
    return validation


def _uuid(value: Any) -> bool:
    import uuid

    try:
        uuid.UUID(str(value).strip())
    except ValueError:
        return False
    return True


def spot_validation_compare(*, validation_id: Any) -> SpotValidation:
    """Compare each sampled result's original score with its re-run's; decide once. Safe to repeat."""
    with transaction.atomic():
        validation = SpotValidation.objects.select_for_update().get(id=validation_id)
        if validation.state != SpotValidation.State.DRAWN or validation.rerun_id is None:
            return validation
        scoring = scoring_run_latest(validation.rerun_id)
        if scoring is None or scoring.status != ScoringRun.Status.COMPLETE:
            return validation
        rerun: dict[tuple[str, str], InstanceScore] = {}
        for score in _valid_scores(scoring):
            key = (score.entry.instance_id, score.entry.prompt_level)
            if key not in rerun or score.entry.attempt < rerun[key].entry.attempt:
                rerun[key] = score
        rows = []
        for sampled in validation.sample:
            new = rerun.get((sampled["instance_id"], sampled["prompt_level"]))
            identical = new is not None and _outputs_digest(new.entry.outputs) == sampled["outputs"]
            allowed = 0.0 if identical else validation.tolerance
            agree = new is not None and abs(new.percent - sampled["original"]) <= allowed
            rows.append({"base_name": sampled["base_name"], "original": sampled["original"],
                         "rerun": new.percent if new is not None else None, "identical_outputs": identical,
                         "agree": agree})
        validation.comparison = rows
        validation.state = (SpotValidation.State.PASSED if all(r["agree"] for r in rows)
                            else SpotValidation.State.FAILED)
        validation.decided_at = timezone.now()
        validation.save(update_fields=["comparison", "state", "decided_at"])
        disagree = [r["base_name"] for r in rows if not r["agree"]]
        ReviewAction.objects.create(
            submission_id=validation.submission_id, kind=ReviewAction.Kind.SPOT,
            reason=f"spot validation #{validation.id} {validation.state}: {len(rows) - len(disagree)} of {len(rows)} "
                   f"agree" + (f" (differ: {', '.join(disagree[:5])})" if disagree else "")
                   + f"; seed {validation.seed}")
    return validation


def spot_validation_compare_for_run(scoring_run_id: int) -> None:
    """Completion hook: a scored re-run decides the spot validations that wait for it."""
    submission_id = ScoringRun.objects.filter(id=scoring_run_id).values_list("submission_id", flat=True).first()
    for validation_id in SpotValidation.objects.filter(rerun_id=submission_id, state=SpotValidation.State.DRAWN
                                                       ).values_list("id", flat=True):
        spot_validation_compare(validation_id=validation_id)


def spot_validation_get_for(*, user: Any, validation_id: Any) -> SpotValidation:
    """The validation if `user` owns its run or is a maintainer; NotFound otherwise (its existence is not told)."""
    validation = SpotValidation.objects.select_related("submission").filter(id=validation_id).first()
    if validation is None or not (user_is_maintainer(user) or validation.submission.owner_id == user.id):
        raise NotFound("No such spot validation.")
    return validation


def spot_validation_public(validation: SpotValidation) -> dict[str, Any]:
    """What the submitter's client needs to re-run the sample; the seed once decided; never the scores' detail."""
    decided = validation.state != SpotValidation.State.DRAWN
    return {"id": validation.id, "run": str(validation.submission_id), "dataset": validation.submission.dataset_id,
            "state": validation.state, "seed_sha256": validation.seed_sha256,
            "seed": validation.seed if decided else None,
            "tasks": sorted({s["task_id"] for s in validation.sample}),
            "prompt_levels": sorted({s["prompt_level"] for s in validation.sample}),
            "sample": [{"instance_id": s["instance_id"], "task_id": s["task_id"], "prompt_level": s["prompt_level"]}
                       for s in validation.sample]}


def spot_validation_passed(submission: Submission) -> bool:
    return SpotValidation.objects.filter(submission=submission, state=SpotValidation.State.PASSED).exists()


def spot_validations_of(submission: Submission) -> list[dict[str, Any]]:
    """The run's spot validations as the review page and the owner's run page show them: the seed only once
    decided."""
    return [{"v": v, "command": rerun_command(v), "seed": v.seed if v.state != SpotValidation.State.DRAWN else "",
             "rows": v.comparison or [{**s, "rerun": None, "agree": None} for s in v.sample]}
            for v in SpotValidation.objects.filter(submission=submission).select_related("rerun")]


