"""The analysis API: start a run, read its state and progress, read its result.

Same access as the pages: PI and auditors read, the PI starts; a blind reviewer or a stranger
gets 404, an editor 403. The result answers 403 while the version's outcomes are sealed (the
caller may know a result exists — its hash is in the run's state — but not read it) and 409
while the run has none.
"""

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.analysis.access import START_ROLES, get_analysis_version_for, get_run_for
from apps.analysis.models import AnalysisRun, RunState
from apps.analysis.selectors import result_bytes, run_is_sealed
from apps.analysis.services import analysis_run_request
from apps.core.apis import validated


class NoResult(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "This analysis run has no result."


class RunOutputSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    kind = serializers.CharField()
    state = serializers.ChoiceField(choices=RunState.choices)
    progress = serializers.IntegerField(help_text="Percent done, 0–100.")
    progress_message = serializers.CharField()
    attempts = serializers.IntegerField()
    requested_by = serializers.CharField(source="requested_by.username")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    protocol_sha256 = serializers.CharField()
    input_sha256 = serializers.CharField()
    result_sha256 = serializers.CharField()
    parameters = serializers.DictField(child=serializers.CharField(allow_blank=True))
    seed = serializers.IntegerField()
    error = serializers.CharField(allow_blank=True)
    rerun_of = serializers.IntegerField(source="rerun_of.number", allow_null=True, default=None)
    sealed = serializers.SerializerMethodField(
        help_text="Whether the version's outcomes are sealed."
    )

    def get_sealed(self, run: AnalysisRun) -> bool:
        return run_is_sealed(run)


def _output(run: AnalysisRun) -> dict[str, Any]:
    return RunOutputSerializer(run).data


class AnalysisRunStartApi(APIView):
    """Queue a run of the frozen version's analysis plan (the PI only)."""

    @extend_schema_serializer(component_name="AnalysisRunStart")
    class InputSerializer(serializers.Serializer):
        kind = serializers.CharField(
            required=False,
            help_text="The pipeline; the frozen plan's own, and no other (400 for another).",
        )
        reason = serializers.CharField(
            required=False, allow_blank=True, help_text="Why, for a rerun (logged)."
        )

    @extend_schema(request=InputSerializer, responses={201: RunOutputSerializer})
    def post(self, request, code: str, label: str):
        version = get_analysis_version_for(
            user=request.user, code=code, label=label, roles=START_ROLES
        )
        data = validated(self.InputSerializer, request.data)
        run = analysis_run_request(
            version=version,
            user=request.user,
            kind=data.get("kind") or None,
            reason=data.get("reason", ""),
        )
        return Response(_output(run), status=status.HTTP_201_CREATED)


class AnalysisRunDetailApi(APIView):
    """A run's state, progress, hashes, parameters and seed (PI and auditors)."""

    @extend_schema(responses={200: RunOutputSerializer})
    def get(self, request, code: str, label: str, number: int):
        run = get_run_for(user=request.user, code=code, label=label, number=number)
        return Response(_output(run))


class AnalysisRunResultApi(APIView):
    """The run's result document, byte for byte as stored (canonical JSON)."""

    @extend_schema(
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="The result document."),
            403: OpenApiResponse(description="The version's outcomes are sealed."),
            409: OpenApiResponse(description="The run has no result (not succeeded)."),
        }
    )
    def get(self, request, code: str, label: str, number: int):
        run = get_run_for(user=request.user, code=code, label=label, number=number)
        if run.state != RunState.SUCCEEDED:
            raise NoResult(f"Analysis run {run.number} has no result (state {run.state}).")
        if run_is_sealed(run):
            raise PermissionDenied("The version's outcomes are sealed until the PI unseals them.")
        return HttpResponse(result_bytes(run), content_type="application/json")
