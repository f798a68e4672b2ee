"""The API of machine scoring (PI and editors; 404 for blind reviewers and strangers)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.apis import validated
from apps.raters.access import get_rubric_version_for
from apps.raters.final import machine_dashboard, scorer_roster
from apps.raters.machine_import import with_scorer
from apps.raters.models import Comparison, OracleRun, ScorerKind
from apps.raters.services.machine import machine_scores_import, oracle_run_request
from apps.raters.services.scorers import scorer_register, scorer_roster_enroll
from apps.responses.import_answers import (
    FileImportInput,
    file_import_answer,
    file_import_input,
)


class ScorerRosterApi(APIView):
    """The version's scorer roster, each scorer's identity and its number of machine scores."""

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def get(self, request, version_id: int):
        version = get_rubric_version_for(user=request.user, pk=version_id)
        return Response(scorer_roster(version))


class ScorerEnrollApi(APIView):
    """Register a scorer's identity (or find it by its hash) and put it on the draft's roster."""

    @extend_schema_serializer(component_name="ScorerEnroll")
    class InputSerializer(serializers.Serializer):
        code = serializers.CharField(max_length=64)
        role = serializers.SlugField(max_length=64)
        label = serializers.CharField(  # type: ignore[assignment]
            max_length=200, required=False, allow_blank=True
        )
        kind = serializers.ChoiceField(choices=ScorerKind.choices)
        name = serializers.CharField(max_length=200)
        version = serializers.CharField(max_length=100)
        model = serializers.CharField(max_length=200, required=False, allow_blank=True)
        provider = serializers.CharField(max_length=200, required=False, allow_blank=True)
        inference_settings = serializers.DictField(required=False)
        prompt = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
        prompt_sha256 = serializers.CharField(max_length=64, required=False, allow_blank=True)
        comparison = serializers.ChoiceField(
            choices=Comparison.choices, required=False, allow_blank=True
        )
        params = serializers.DictField(required=False)
        epochs = serializers.CharField(max_length=32, required=False, default="each")

    @extend_schema(request=InputSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request, version_id: int):
        version = get_rubric_version_for(user=request.user, pk=version_id)
        data = validated(self.InputSerializer, request.data)
        values = dict(data)
        code, role, label = values.pop("code"), values.pop("role"), values.pop("label", "")
        epochs = values.pop("epochs", "each")
        scorer, created = scorer_register(user=request.user, label=label, **values)
        scorer_roster_enroll(
            version=version, scorer=scorer, code=code, role=role, user=request.user, epochs=epochs
        )
        return Response(
            {
                "code": code,
                "role": role,
                "epochs": epochs,
                "identity_sha256": scorer.identity_sha256,
                "scorer_created": created,
            },
            status=status.HTTP_201_CREATED,
        )


class MachineScoresImportApi(APIView):
    """Import a file of machine scores (multipart ``file``, ``format``, ``scorer``, ``mapping``
    as JSON, ``note``). ``?dry_run=1`` checks and previews. 201 when imported; 200 for a dry run
    or a file already imported (a no-op, which says so); 400 with every problem (row, field)."""

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema_serializer(component_name="MachineScoresImport")
    class InputSerializer(FileImportInput):
        # Plain text (csv, jsonl or inspect): the importer names a wrong one as a problem.
        format = serializers.CharField(max_length=16, required=False, allow_blank=True)
        scorer = serializers.CharField(max_length=64, required=False, allow_blank=True)

    @extend_schema(
        request={"multipart/form-data": InputSerializer},
        parameters=[OpenApiParameter("dry_run", bool, description="Check and preview only.")],
        responses=OpenApiTypes.OBJECT,
    )
    def post(self, request, version_id: int):
        version = get_rubric_version_for(user=request.user, pk=version_id)
        upload, fields, dry_run = file_import_input(request, self.InputSerializer)
        return file_import_answer(
            lambda: machine_scores_import(
                version=version,
                user=request.user,
                data=upload.read(),
                filename=upload.name,
                format=fields.get("format") or None,
                mapping=with_scorer(fields.get("mapping"), fields.get("scorer") or None),
                note=fields.get("note", ""),
                dry_run=dry_run,
            ),
            lambda record: {"sha256": record.sha256},
        )


class OracleRunApi(APIView):
    """POST queues an oracle run of the roster's oracle ``code`` (202); GET ``?run=<id>``
    reads a run's state and progress."""

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request, version_id: int, code: str):
        version = get_rubric_version_for(user=request.user, pk=version_id)
        run = oracle_run_request(version=version, scorer_code=code, user=request.user)
        return Response({"id": run.pk, "state": run.state}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def get(self, request, version_id: int, code: str):
        version = get_rubric_version_for(user=request.user, pk=version_id)
        runs = OracleRun.objects.filter(
            version=version, scorer__rosters__version=version, scorer__rosters__code=code
        )
        return Response(
            [
                {
                    "id": run.pk,
                    "state": run.state,
                    "progress": run.progress,
                    "message": run.message,
                    "counts": run.counts,
                }
                for run in runs
            ]
        )


class MachineDashboardApi(APIView):
    """Scorers, imports, oracle runs, the audit sample and (once unsealed) the agreement."""

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def get(self, request, version_id: int):
        version = get_rubric_version_for(user=request.user, pk=version_id)
        return Response(machine_dashboard(version))
