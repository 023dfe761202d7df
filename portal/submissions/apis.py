from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from portal.accounts.authentication import AuthedApiRequest
from portal.public_urls import public_url
from portal.submissions import services


class UploadThrottle(UserRateThrottle):
    scope = "bundle_upload"


def intake_response_body(request: object, result: services.IntakeResult) -> dict:
    submission = result.submission
    return {
        "submission_id": str(submission.id),
        "status": submission.status,
        "integrity_ok": submission.integrity_ok,
        "incomplete_instances": list(submission.incomplete_instances),
        "message": services.intake_message(submission, result.created),
        "confirm_url": public_url(f"/submit/submissions/{submission.id}", request),  # type: ignore[arg-type]
        "created": result.created,
    }


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
