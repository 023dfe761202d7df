from typing import Any, NotRequired, TypedDict

from django.http import HttpRequest
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from contracts import PROMPT_LEVELS
from portal.accounts.authentication import AuthedApiRequest
from portal.accounts.models import User
from portal.accounts.selectors import user_is_maintainer
from portal.api_schema import ErrorOutputSerializer
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


# The two answers both clients read: a TypedDict each (mypy checks what is built) and its serializer, which
# declares the fields to the OpenAPI schema. tests/portal/submissions/test_api_outputs.py holds the two to the
# same fields. The body is sent as built (fields are only ever added; the serializer never rewrites a value).
class IntakeBody(TypedDict):
    submission_id: str
    status: str
    integrity_ok: bool
    incomplete_instances: list[str]
    message: str
    created: bool
    state: str
    run_url: str
    status_url: str
    confirm_url: NotRequired[str]


class IntakeOutputSerializer(serializers.Serializer):
    submission_id = serializers.UUIDField()
    status = serializers.CharField(help_text="draft after an upload; the run's status when it was uploaded before")
    integrity_ok = serializers.BooleanField()
    incomplete_instances = serializers.ListField(child=serializers.CharField())
    message = serializers.CharField(help_text="what both clients print")
    created = serializers.BooleanField(help_text="false: these results were uploaded before (the same run)")
    state = serializers.CharField(help_text="the status, or published / rejected once reviewed")
    run_url = serializers.URLField()
    status_url = serializers.URLField(help_text="where `asibench submit --wait` polls")
    confirm_url = serializers.URLField(required=False, help_text="a draft's page, to confirm it")


def intake_response_body(request: HttpRequest, result: services.IntakeResult) -> IntakeBody:
    submission = result.submission
    run_url = public_url(f"/submit/submissions/{submission.id}", request)
    state = selectors.run_state(submission)
    body: IntakeBody = {
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
        "status_url": public_url(f"/api/v1/submissions/{submission.id}", request),
    }
    if state == Submission.Status.DRAFT:
        # Only a draft has something to confirm: both clients print a DRAFT banner for a confirm_url.
        body["confirm_url"] = run_url
    return body


class BundleUploadApi(APIView):
    """Raw gzip body, streamed: never touch request.data / request.body here."""

    parser_classes: list = []
    throttle_classes = [UploadThrottle]

    @extend_schema(request={"application/gzip": bytes},
                   responses={201: IntakeOutputSerializer, 200: IntakeOutputSerializer, 413: ErrorOutputSerializer,
                              422: ErrorOutputSerializer})
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


class ProgressCounts(TypedDict):
    scored: int
    total: int


class ProgressBody(TypedDict):
    submission_id: str
    status: str
    status_reason: str
    state: str
    queue_position: int | None
    queued_total: int | None
    progress: ProgressCounts
    tasks: list[dict[str, Any]]
    judges_waiting: dict[str, Any] | None
    overall_score: float | int | None
    levels: dict[str, float | int | None] | None
    confirm_url: str


class ProgressOutputSerializer(serializers.Serializer):
    submission_id = serializers.UUIDField()
    status = serializers.CharField()
    status_reason = serializers.CharField(allow_blank=True)
    state = serializers.CharField()
    queue_position = serializers.IntegerField(allow_null=True, help_text="1 = next to be scored; null unless queued")
    queued_total = serializers.IntegerField(allow_null=True)
    progress = serializers.DictField(child=serializers.IntegerField(), help_text="{scored, total} results")
    tasks = serializers.ListField(child=serializers.DictField(), help_text="each task's results so far")
    judges_waiting = serializers.DictField(allow_null=True, help_text="why results wait for their judges, if any")
    overall_score = serializers.FloatField(allow_null=True, help_text="a whole percent unless a maintainer asks")
    levels = serializers.DictField(child=serializers.FloatField(allow_null=True), allow_null=True,
                                   help_text="B1–B4 once scored")
    confirm_url = serializers.URLField()


def progress_response_body(request: HttpRequest, submission: Submission, viewer: User) -> ProgressBody:
    """A run's state for `asibench submit --wait`: status, queue position, results scored so far and
    each task's partial score; levels and overall once scored (whole percents unless the viewer is
    a maintainer). Fields are only ever added."""
    exact = user_is_maintainer(viewer)
    progress = selectors.submission_progress(submission, exact=exact)
    body: ProgressBody = {
        "submission_id": str(submission.id),
        "status": submission.status,
        "status_reason": submission.status_reason,
        "state": selectors.run_state(submission),
        "queue_position": progress["queue_position"],
        "queued_total": progress["queued_total"],
        "progress": {"scored": progress["scored"], "total": progress["total"]},
        "tasks": progress["tasks"],
        "judges_waiting": _waiting_body(progress["judges_waiting"]),
        "overall_score": selectors.score_shown(submission.overall_score, exact=exact),
        "levels": None,
        "confirm_url": public_url(f"/submit/submissions/{submission.id}", request),
    }
    if submission.status == "scored":
        summary = selectors.scoring_summary(submission, with_details=False, exact=exact)
        if summary and summary.get("aggregate"):
            body["levels"] = dict(zip(PROMPT_LEVELS, summary["aggregate"]["levels"], strict=True))
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

    @extend_schema(responses={200: ProgressOutputSerializer, 404: ErrorOutputSerializer})
    def get(self, request: AuthedApiRequest, submission_id: str) -> Response:
        submission = services.submission_get_for(user=request.user, submission_id=str(submission_id))
        return Response(progress_response_body(request._request, submission, request.user))
