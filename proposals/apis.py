"""The CLI draft API (client contract §4.4 T1–T5). One class per operation, explicit output fields."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.accounts.authentication import AuthedApiRequest
from portal.api_schema import ErrorOutputSerializer, json_object, json_objects
from portal.public_urls import public_url
from proposals import selectors, services
from proposals.models import Proposal
from proposals.uploads import parsed_task_files


def proposal_summary(request: Request, proposal: Proposal) -> dict[str, Any]:
    return {
        "id": str(proposal.id),
        "status": proposal.status,
        "task_id": proposal.task_id,
        "url": public_url(f"/submit/proposals/{proposal.id}", request),
    }


def file_list(proposal: Proposal) -> list[dict[str, Any]]:
    return [{"file_name": path, "content_hash": sha, "size": size}
            for path, sha, size in proposal.files.order_by("path").values_list("path", "sha256", "size")]


class ProposalSummaryOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.CharField()
    task_id = serializers.CharField()
    url = serializers.URLField()


class ProposalFilesOutputSerializer(serializers.Serializer):
    snapshot = serializers.CharField(help_text="the token a later sync names as base_snapshot")
    files = json_objects("each file: file_name, content_hash (sha256), size")


class ProposalSyncedOutputSerializer(ProposalFilesOutputSerializer):
    proposal = ProposalSummaryOutputSerializer()


class ProposalOpenedOutputSerializer(serializers.Serializer):
    proposal = ProposalSummaryOutputSerializer()
    reused = serializers.BooleanField(help_text="true: the author's open draft for this task id")


class ProposalDetailOutputSerializer(ProposalSummaryOutputSerializer):
    name = serializers.CharField()
    domain = serializers.CharField()
    subdomain = serializers.JSONField(allow_null=True)
    snapshot = serializers.CharField()
    file_count = serializers.IntegerField()
    latest_revision = serializers.IntegerField(allow_null=True)
    completeness = json_object("percent, missing, stopped_at and the steps with what each still needs")


class CliSubmitApi(APIView):
    """T1: create the author's Draft for a task id, or reuse their open one."""

    class InputSerializer(serializers.Serializer):
        task_id = serializers.CharField(max_length=200, allow_blank=True)
        task_name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
        domain = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
        subdomain = serializers.JSONField(required=False, allow_null=True, default=None)
        prefilled = serializers.JSONField(required=False, default=dict)

    @extend_schema(request=InputSerializer,
                   responses={201: ProposalOpenedOutputSerializer, 200: ProposalOpenedOutputSerializer,
                              400: ErrorOutputSerializer})
    def post(self, request: AuthedApiRequest) -> Response:
        data = self.InputSerializer(data=request.data if isinstance(request.data, dict) else {})
        data.is_valid(raise_exception=True)
        values = data.validated_data
        opened = services.proposal_cli_open(
            owner=request.user, task_id=values["task_id"], name=values["task_name"], domain=values["domain"],
            subdomain=values["subdomain"],
        )
        return Response({"proposal": proposal_summary(request, opened.proposal), "reused": opened.reused},
                        status=200 if opened.reused else 201)


class ProposalFileSnapshotApi(APIView):
    """T2/T4: the snapshot token and every file's name and sha256."""

    @extend_schema(responses={200: ProposalFilesOutputSerializer, 404: ErrorOutputSerializer})
    def get(self, request: AuthedApiRequest, proposal_id: str) -> Response:
        proposal = selectors.proposal_get_for_owner(user=request.user, proposal_id=proposal_id)
        return Response({"snapshot": proposal.snapshot, "files": file_list(proposal)})


class ProposalFilesApi(APIView):
    """T3: exact sync of the whole file set (multipart PUT, parsed here, names kept whole)."""

    parser_classes: list = []

    @extend_schema(request=None, responses={200: ProposalSyncedOutputSerializer, 409: ErrorOutputSerializer})
    def put(self, request: AuthedApiRequest, proposal_id: str) -> Response:
        # Refuse a foreign or unknown draft before reading a possibly large body.
        selectors.proposal_get_for_owner(user=request.user, proposal_id=proposal_id)
        force = request.query_params.get("force", "false").strip().lower() == "true"
        with parsed_task_files(request._request) as files:
            proposal = services.proposal_files_sync(
                user=request.user, proposal_id=proposal_id, files=files,
                base_snapshot=request.query_params.get("base_snapshot", ""), force=force,
            )
        return Response({"snapshot": proposal.snapshot, "files": file_list(proposal),
                         "proposal": proposal_summary(request, proposal)})


class ProposalDetailApi(APIView):
    """T5: status and completeness of the Draft."""

    @extend_schema(responses={200: ProposalDetailOutputSerializer, 404: ErrorOutputSerializer})
    def get(self, request: AuthedApiRequest, proposal_id: str) -> Response:
        proposal = selectors.proposal_get_for_owner(user=request.user, proposal_id=proposal_id)
        state = selectors.completeness(proposal)
        latest = selectors.latest_revision(proposal)
        return Response({
            **proposal_summary(request, proposal),
            "name": proposal.name,
            "domain": proposal.domain,
            "subdomain": proposal.subdomain,
            "snapshot": proposal.snapshot,
            "file_count": proposal.files.count(),
            "latest_revision": latest.number if latest else None,
            # `steps` (added; the contract's keys stay) carries what each missing step needs, as the page shows it.
            "completeness": {"percent": state["percent"], "missing": state["missing"],
                             "stopped_at": state["stopped_at"], "steps": state["steps"]},
        })
