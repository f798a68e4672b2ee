"""The API twin of the responses pages: one APIView per action."""

from django.core.exceptions import ValidationError
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.access import first_or_404
from apps.core.apis import JSONField, validated
from apps.protocols.models import ProtocolVersion
from apps.responses import access, selectors, services
from apps.responses.import_answers import (
    FileImportInput,
    file_import_answer,
    file_import_input,
)
from apps.responses.models import (
    IDENTITY_FIELDS,
    ControlResult,
    FreshSession,
    RosterEntry,
    SessionGuarantee,
)
from apps.responses.sessions import SESSION_FIELDS
from apps.responses.surfaces import session_guarantee_record


def _version(request, code: str, label: str, roles) -> ProtocolVersion:
    # The version the route names, for a user holding one of ``roles`` (404 otherwise).
    return access.get_responses_version_for(user=request.user, code=code, label=label, roles=roles)


class EvaluandOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    label = serializers.CharField()  # type: ignore[assignment]
    identity_sha256 = serializers.CharField()
    identity = serializers.SerializerMethodField()
    derived_from = serializers.IntegerField(source="derived_from_id", allow_null=True)
    created_at = serializers.DateTimeField()

    fresh_session = serializers.SerializerMethodField(
        help_text="OPB-01 §6.3: the surface's fresh-session guarantee (yes, no or unknown, with "
        "a note), or null when none is recorded (read as unknown)."
    )

    def get_identity(self, evaluand) -> dict:
        return evaluand.identity()

    def get_fresh_session(self, evaluand) -> dict | None:
        record = getattr(evaluand, "session_guarantee", None)
        return None if record is None else _guarantee_out(record)


def _guarantee_out(record: SessionGuarantee) -> dict:
    return {
        "fresh_session": record.fresh_session,
        "note": record.note,
        "recorded_by": None if record.recorded_by is None else record.recorded_by.get_username(),
        "recorded_at": record.recorded_at.isoformat(),
    }


class EvaluandInputSerializer(serializers.Serializer):
    label = serializers.CharField(max_length=200)  # type: ignore[assignment]
    model = serializers.CharField(max_length=200)
    provider = serializers.CharField(max_length=200, required=False, allow_blank=True)
    safeguards = JSONField(required=False)
    inference_settings = JSONField(required=False)
    harness_version = serializers.CharField(
        max_length=200, required=False, allow_blank=True, trim_whitespace=False
    )
    system_prompt = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    observation_projection = serializers.CharField(
        required=False, allow_blank=True, trim_whitespace=False
    )
    toolkit = JSONField(required=False)
    memory_policy = serializers.CharField(
        max_length=200, required=False, allow_blank=True, trim_whitespace=False
    )
    budgets = JSONField(required=False)
    retry_policy = serializers.CharField(
        max_length=200, required=False, allow_blank=True, trim_whitespace=False
    )


class EvaluandListApi(APIView):
    """The evaluands the caller registered or can see through a sighted role."""

    @extend_schema(responses=EvaluandOutputSerializer(many=True))
    def get(self, request):
        access.require_evaluand_author(user=request.user)
        evaluands = selectors.evaluands_visible_to(user=request.user)
        return Response(EvaluandOutputSerializer(evaluands, many=True).data)


class EvaluandCreateApi(APIView):
    """Register an evaluand (get-or-create by identity hash): 201 when new, 200 when known."""

    @extend_schema(request=EvaluandInputSerializer, responses=EvaluandOutputSerializer)
    def post(self, request):
        access.require_evaluand_writer(user=request.user)
        data = validated(EvaluandInputSerializer, request.data)
        values = dict(data)
        evaluand, created = services.evaluand_register(
            user=request.user, label=values.pop("label"), **values
        )
        return Response(
            EvaluandOutputSerializer(evaluand).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class EvaluandDetailApi(APIView):
    @extend_schema(responses=EvaluandOutputSerializer)
    def get(self, request, pk: int):
        return Response(
            EvaluandOutputSerializer(access.get_evaluand_for(user=request.user, pk=pk)).data
        )


class EvaluandReviseApi(APIView):
    """A new evaluand derived from this one with the given identity elements changed."""

    @extend_schema_serializer(component_name="EvaluandRevise")
    class InputSerializer(EvaluandInputSerializer):
        label = serializers.CharField(max_length=200, required=False)
        model = serializers.CharField(max_length=200, required=False)

    @extend_schema(request=InputSerializer, responses=EvaluandOutputSerializer)
    def post(self, request, pk: int):
        evaluand = access.get_evaluand_for(user=request.user, pk=pk)
        access.require_evaluand_writer(user=request.user)
        data = validated(self.InputSerializer, request.data)
        changes = {k: v for k, v in data.items() if k in IDENTITY_FIELDS}
        revised = services.evaluand_revise(
            evaluand=evaluand,
            user=request.user,
            label=data.get("label"),
            **changes,
        )
        return Response(EvaluandOutputSerializer(revised).data, status=status.HTTP_201_CREATED)


class SessionGuaranteeRecordApi(APIView):
    """Record an evaluand's fresh-session guarantee (OPB-01 §6.3): ``fresh_session`` yes, no or
    unknown, with a ``note``. Once per evaluand (append-only): a second record is refused (400
    naming ``fresh_session``). Returns the evaluand with its record."""

    @extend_schema_serializer(component_name="SessionGuarantee")
    class InputSerializer(serializers.Serializer):
        fresh_session = serializers.ChoiceField(choices=FreshSession.choices)
        note = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=InputSerializer, responses={201: EvaluandOutputSerializer})
    def post(self, request, pk: int):
        evaluand = access.get_evaluand_for(user=request.user, pk=pk)
        access.require_evaluand_writer(user=request.user)
        data = validated(self.InputSerializer, request.data)
        session_guarantee_record(evaluand=evaluand, user=request.user, **data)
        evaluand = access.get_evaluand_for(user=request.user, pk=pk)
        return Response(EvaluandOutputSerializer(evaluand).data, status=status.HTTP_201_CREATED)


class RosterEntrySerializer(serializers.Serializer):
    code = serializers.CharField()
    position = serializers.IntegerField()
    evaluand = EvaluandOutputSerializer()


class RosterListApi(APIView):
    @extend_schema(responses=RosterEntrySerializer(many=True))
    def get(self, request, code: str, label: str):
        version = _version(request, code, label, access.READ_ROLES)
        return Response(RosterEntrySerializer(selectors.roster_of(version), many=True).data)


class RosterEnrollApi(APIView):
    @extend_schema_serializer(component_name="RosterEnroll")
    class InputSerializer(serializers.Serializer):
        evaluand = serializers.IntegerField()
        code = serializers.CharField(max_length=64)

    @extend_schema(request=InputSerializer, responses=RosterEntrySerializer)
    def post(self, request, code: str, label: str):
        version = _version(request, code, label, access.WRITE_ROLES)
        data = validated(self.InputSerializer, request.data)
        evaluand = access.get_evaluand_for(user=request.user, pk=data["evaluand"])
        entry = services.roster_enroll(
            version=version, evaluand=evaluand, code=data["code"], user=request.user
        )
        return Response(RosterEntrySerializer(entry).data, status=status.HTTP_201_CREATED)


class RosterRemoveApi(APIView):
    @extend_schema(request=None, responses={204: None})
    def post(self, request, code: str, label: str, entry: str):
        version = _version(request, code, label, access.WRITE_ROLES)
        found = first_or_404(
            RosterEntry.objects.filter(version=version, code=entry), "No such roster entry."
        )
        services.roster_remove(entry=found, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ResponsesSummaryApi(APIView):
    """Counts by evaluand × outcome, platform losses apart, reruns, exclusions, unobserved."""

    @extend_schema(responses=dict)
    def get(self, request, code: str, label: str):
        version = _version(request, code, label, access.READ_ROLES)
        summary = selectors.responses_summary(version)
        return Response(
            {
                "outcomes": summary.outcomes,
                "totals": selectors.outcome_counts(version),
                "by_evaluand": [
                    {
                        "code": row.code,
                        "label": row.label,
                        "administrations": row.administrations,
                        "observed": row.observed,
                        "outcomes": {o: row.outcomes.get(o, 0) for o in summary.outcomes},
                        "platform_losses": row.platform_losses,
                        "reruns": row.reruns,
                        "excluded": row.excluded,
                    }
                    for row in summary.rows
                ],
                "absent_cells": summary.absent_cells,
                "unobserved_count": summary.unobserved_count,
                "unobserved_first": summary.unobserved,
                "imports": summary.imports,
            }
        )


class ImportSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    filename = serializers.CharField()
    sha256 = serializers.CharField()
    format = serializers.CharField()
    mapping = serializers.JSONField()
    note = serializers.CharField()
    counts = serializers.JSONField()
    imported_by = serializers.CharField(source="imported_by.username")
    imported_at = serializers.DateTimeField()


class ResponsesImportApi(APIView):
    """Import a file (multipart ``file``, ``format``, ``mapping`` as JSON, ``note``).

    ``?dry_run=1`` checks and previews without writing. 201 when imported; 200 for a dry run or
    a file already imported (a no-op); 400 with every problem (row, field, message) otherwise.
    """

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema_serializer(component_name="ResponsesImport")
    class InputSerializer(FileImportInput):
        format = serializers.ChoiceField(
            choices=["csv", "jsonl", "inspect"], required=False, allow_blank=True
        )

    @extend_schema(
        request={"multipart/form-data": InputSerializer},
        parameters=[OpenApiParameter("dry_run", bool, description="Check and preview only.")],
        responses=dict,
    )
    def post(self, request, code: str, label: str):
        version = _version(request, code, label, access.WRITE_ROLES)
        upload, fields, dry_run = file_import_input(request, self.InputSerializer)
        return file_import_answer(
            lambda: services.responses_import(
                version=version,
                user=request.user,
                data=upload,
                filename=upload.name,
                format=fields.get("format") or None,
                mapping=fields.get("mapping"),
                note=fields.get("note", ""),
                dry_run=dry_run,
            ),
            lambda record: {"import": ImportSerializer(record).data},
        )


class ImportListApi(APIView):
    @extend_schema(responses=ImportSerializer(many=True))
    def get(self, request, code: str, label: str):
        version = _version(request, code, label, access.READ_ROLES)
        return Response(ImportSerializer(selectors.imports_of(version), many=True).data)


def _attempt_data(attempt, codes: dict[int, str], *, raw: bool = False) -> dict:
    administration = attempt.administration
    cell = administration.cell
    exclusion = next(iter(attempt.exclusions.all()), None)
    response = getattr(attempt, "response", None)
    data = {
        "id": attempt.pk,
        "number": attempt.number,
        "administration": {
            "position": administration.position,
            "cell": f"{cell.item.code}@{cell.level.code}",
            "evaluand": codes.get(administration.evaluand_id),
            "repetition": administration.repetition,
        },
        "terminal_outcome": attempt.terminal_outcome,
        "started_at": attempt.started_at,
        "ended_at": attempt.ended_at,
        "response": response.text if response is not None else None,
        "excluded": (
            {"reason_code": exclusion.reason_code, "decided_at": exclusion.decided_at}
            if exclusion
            else None
        ),
        "source": {"import": attempt.source_id, "row": attempt.source_row},
    }
    if raw:
        data["raw"] = attempt.raw
        columns = getattr(attempt, "session_columns", None)
        # The typed session columns stored at import (seed 002), or null for an attempt of a
        # version whose plan reads no sessions; the self report apart, never an endpoint.
        data["session_columns"] = (
            None
            if columns is None
            else {name: getattr(columns, name) for name in SESSION_FIELDS if name != "self_report"}
        )
        data["self_report"] = None if columns is None else columns.self_report
    return data


_MAX_OFFSET = 2**62


class AttemptListApi(APIView):
    """Attempts in schedule order; ``?limit=`` (≤ 1000, default 100) and ``?offset=``."""

    @extend_schema(
        operation_id="v1_attempts_list",
        parameters=[OpenApiParameter("limit", int), OpenApiParameter("offset", int)],
        responses=dict,
    )
    def get(self, request, code: str, label: str):
        version = _version(request, code, label, access.READ_ROLES)
        try:
            limit = min(max(int(request.query_params.get("limit", 100)), 1), 1000)
            # Past every table and short of PostgreSQL's bigint, which OFFSET must fit.
            offset = min(max(int(request.query_params.get("offset", 0)), 0), _MAX_OFFSET)
        except ValueError as error:
            raise ValidationError("limit and offset are whole numbers.") from error
        attempts = selectors.attempts_of(version)
        codes = {entry.evaluand_id: entry.code for entry in selectors.roster_of(version)}
        return Response(
            {
                "count": attempts.count(),
                "results": [_attempt_data(a, codes) for a in attempts[offset : offset + limit]],
            }
        )


class AttemptDetailApi(APIView):
    """One attempt, with the raw record as received."""

    @extend_schema(operation_id="v1_attempt_retrieve", responses=dict)
    def get(self, request, code: str, label: str, position: int, number: int):
        attempt = access.get_attempt_for(
            user=request.user, code=code, label=label, position=position, number=number
        )
        codes = {attempt.administration.evaluand_id: selectors.roster_code(attempt.administration)}
        return Response(_attempt_data(attempt, codes, raw=True))


class ExclusionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    attempt = serializers.IntegerField(source="attempt_id")
    reason_code = serializers.CharField()
    rationale = serializers.CharField()
    decided_by = serializers.CharField(source="decided_by.username")
    decided_at = serializers.DateTimeField()
    outcome_visible = serializers.BooleanField()


class ExclusionCreateApi(APIView):
    """Exclude an attempt (PI only). ``outcome_visible`` is set from the seal, not accepted."""

    @extend_schema_serializer(component_name="ExclusionCreate")
    class InputSerializer(serializers.Serializer):
        reason_code = serializers.CharField(max_length=64)
        rationale = serializers.CharField()

    @extend_schema(request=InputSerializer, responses=ExclusionSerializer)
    def post(self, request, code: str, label: str, position: int, number: int):
        attempt = access.get_attempt_for(
            user=request.user,
            code=code,
            label=label,
            position=position,
            number=number,
            roles=access.PI_ROLES,
        )
        data = validated(self.InputSerializer, request.data)
        exclusion = services.exclusion_record(attempt=attempt, user=request.user, **data)
        return Response(ExclusionSerializer(exclusion).data, status=status.HTTP_201_CREATED)


class ExclusionListApi(APIView):
    @extend_schema(responses=ExclusionSerializer(many=True))
    def get(self, request, code: str, label: str):
        version = _version(request, code, label, access.READ_ROLES)
        return Response(ExclusionSerializer(selectors.exclusions_of(version), many=True).data)


class ControlValidationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    environment = serializers.CharField()
    result = serializers.CharField()
    rationale = serializers.CharField()
    recorded_by = serializers.CharField()
    recorded_at = serializers.DateTimeField()
    # The latest record of its environment is the one the analysis reads; only a latest pass
    # counts as a pass (an inconclusive control never does, CRUCIBLE §7).
    is_latest = serializers.BooleanField()
    counts_as_pass = serializers.BooleanField()


class ControlValidationListApi(APIView):
    """The version's control validations, newest first (PI, editors, auditors; reviewers 404)."""

    @extend_schema(responses=ControlValidationSerializer(many=True))
    def get(self, request, code: str, label: str):
        version = _version(request, code, label, access.READ_ROLES)
        return Response(
            ControlValidationSerializer(selectors.control_validations_of(version), many=True).data
        )


class ControlValidationRecordApi(APIView):
    """Record an execution environment's control validation on a frozen version (PI only):
    pass, fail or inconclusive; append-only and logged."""

    @extend_schema_serializer(component_name="ControlValidationRecord")
    class InputSerializer(serializers.Serializer):
        environment = serializers.CharField(max_length=200)
        result = serializers.ChoiceField(choices=ControlResult.choices)
        rationale = serializers.CharField()

    @extend_schema(request=InputSerializer, responses=ControlValidationSerializer)
    def post(self, request, code: str, label: str):
        version = _version(request, code, label, access.PI_ROLES)
        data = validated(self.InputSerializer, request.data)
        record = services.control_validation_record(version=version, user=request.user, **data)
        latest = next(r for r in selectors.control_validations_of(version) if r.id == record.pk)
        return Response(ControlValidationSerializer(latest).data, status=status.HTTP_201_CREATED)
