from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from portal.accounts.authentication import AuthedApiRequest
from portal.accounts.models import User
from portal.accounts.selectors import user_is_maintainer
from portal.public_urls import public_url
from portal.submissions import selectors, services
from portal.submissions.models import Submission


class UploadThrottle(UserRateThrottle):
    """Bundle uploads per user, API and browser page together: the page asks this same throttle,
    so both draw on one cache key and one rate (REST_FRAMEWORK's `bundle_upload`)."""

    scope = "bundle_upload"

    def refusal(self) -> str:
        """The page's message once `allow_request` said no (the API keeps DRF's own)."""
        count, seconds = self.parse_rate(self.get_rate())
        period = {1: "a second", 60: "a minute", 3600: "an hour", 86400: "a day"}.get(
            seconds or 0, f"per {seconds} seconds")
        wait = self.wait()
        minutes = max(1, round(wait / 60)) if wait is not None else None
        return (f"Too many uploads: the limit is {count} {period} (browser and CLI together)."
                + (f" Try again in {minutes} minute{'s' if minutes != 1 else ''}." if minutes else ""))


def intake_response_body(request: object, result: services.IntakeResult) -> dict:
    submission = result.submission
    run_url = public_url(f"/submit/submissions/{submission.id}", request)  # type: ignore[arg-type]
    state = selectors.run_state(submission)
    body = {
        "submission_id": str(submission.id),
        "status": submission.status,
        "integrity_ok": submission.integrity_ok,
        "incomplete_instances": list(submission.incomplete_instances),
        "message": services.intake_message(submission, result.created, run_url),
        "created": result.created,
        # Added (client contract: fields are only ever added): the run's state with its review decision,
        # its page, and where `asibench submit --wait` polls.
        "state": state,
        "run_url": run_url,
        "status_url": public_url(f"/api/v1/submissions/{submission.id}", request),  # type: ignore[arg-type]
    }
    if state == Submission.Status.DRAFT:
        # Only a draft has something to confirm: both clients print a DRAFT banner for a confirm_url.
        body["confirm_url"] = run_url
    return body


class BundleUploadApi(APIView):
    """Raw gzip body, streamed: never touch request.data / request.body here."""

    parser_classes: list = []
    throttle_classes = [UploadThrottle]

    @extend_schema(request={"application/gzip": bytes}, responses={201: dict, 200: dict, 413: dict, 422: dict})
    def post(self, request: AuthedApiRequest) -> Response:
        raw = request._request
        length = raw.META.get("CONTENT_LENGTH")
        result = services.submission_intake(
            user=request.user,
            stream=raw,
            content_length=int(length) if length and length.isdigit() else None,
            filename=raw.META.get("HTTP_X_ASIBENCH_FILENAME", ""),
        )
        return Response(intake_response_body(raw, result), status=201 if result.created else 200)


def progress_response_body(request: object, submission: object, viewer: User) -> dict:
    """A run's state for `asibench submit --wait`: status, queue position, results scored so far and
    each task's partial score; levels and overall once scored (whole percents unless the viewer is
    a maintainer). Fields are only ever added."""
    exact = user_is_maintainer(viewer)
    progress = selectors.submission_progress(submission, exact=exact)  # type: ignore[arg-type]
    body = {
        "submission_id": str(submission.id),  # type: ignore[attr-defined]
        "status": submission.status,  # type: ignore[attr-defined]
        "status_reason": submission.status_reason,  # type: ignore[attr-defined]
        "state": selectors.run_state(submission),  # type: ignore[arg-type]
        "queue_position": progress["queue_position"],
        "queued_total": progress["queued_total"],
        "progress": {"scored": progress["scored"], "total": progress["total"]},
        "tasks": progress["tasks"],
        "judges_waiting": _waiting_body(progress["judges_waiting"]),
        "overall_score": selectors.score_shown(submission.overall_score, exact=exact),  # type: ignore[attr-defined]
        "levels": None,
        "confirm_url": public_url(f"/submit/submissions/{submission.id}", request),  # type: ignore[arg-type, attr-defined]
    }
    if submission.status == "scored":  # type: ignore[attr-defined]
        summary = selectors.scoring_summary(submission, with_details=False, exact=exact)  # type: ignore[arg-type]
        if summary and summary.get("aggregate"):
            body["levels"] = dict(zip(selectors.LEVELS, summary["aggregate"]["levels"], strict=True))
    return body


def _waiting_body(waiting: dict | None) -> dict | None:
    if not waiting:
        return None
    next_at, budget = waiting.get("next_attempt_at"), waiting.get("budget")
    if budget:
        budget = {**budget, "resumes_at": budget["resumes_at"].isoformat() if budget.get("resumes_at") else None}
    return {**waiting, "next_attempt_at": next_at.isoformat() if next_at else None, "budget": budget}


class SubmissionProgressApi(APIView):
    """GET one of your runs: where it is between upload and score (owner or maintainer; else 404)."""

    @extend_schema(responses={200: dict, 404: dict})
    def get(self, request: AuthedApiRequest, submission_id: str) -> Response:
        submission = services.submission_get_for(user=request.user, submission_id=str(submission_id))
        return Response(progress_response_body(request._request, submission, request.user))
