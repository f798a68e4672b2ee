"""The protocols API under /api/v1/: protocols, members, versions, drafts, the freeze gate, freeze,
amend, withdraw, diffs and blobs. One APIView per action; access through ``apps.protocols.access``
(a reviewer or a stranger gets 404 everywhere here). A refusal caused by a version's state is 409.
"""

from collections.abc import Callable
from typing import Any, cast

from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, NotFound
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Membership, Role
from apps.accounts.selectors import memberships_of
from apps.core.access import first_or_404
from apps.core.apis import JSONField, JSONParser, validated
from apps.core.words import counted
from apps.protocols import services
from apps.protocols.access import (
    EDIT_ROLES,
    PI_ROLES,
    READ_ROLES,
    get_protocol_for,
    get_version_by_label_for,
)
from apps.protocols.addressing import version_links
from apps.protocols.blobs import AmbiguousBlobPrefix, blob_for
from apps.protocols.diffs import version_diff
from apps.protocols.forms import deposit_text_read
from apps.protocols.gate import version_gate, version_gate_notes
from apps.protocols.integrity import version_integrity_verify
from apps.protocols.models import SECTION_FIELDS, Deposit, Protocol, ProtocolVersion
from apps.protocols.parameters import decimal_text
from apps.protocols.plans import (
    declared_pipelines,
    pipeline_declaration,
    plan_template_choices,
    version_pipeline,
)
from apps.protocols.selectors import (
    BLOB_PREFIX_MIN,
    protocol_versions,
    protocols_for,
    version_with_content,
)
from apps.protocols.vocabulary import vocabulary

BLOB_CACHE_CONTROL = "private, max-age=31536000, immutable"


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The version's state does not allow this."
    default_code = "conflict"


def _version(request, code: str, label: str, roles) -> ProtocolVersion:
    # The version the route names, for a user holding one of ``roles`` (404 otherwise).
    return get_version_by_label_for(user=request.user, code=code, label=label, roles=roles)


def _in_state(service, **kwargs):
    try:
        return service(**kwargs)
    except services.VersionStateError as error:
        raise Conflict(" ".join(error.messages)) from error


# Output shapes shared by several endpoints.


class ProblemSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    url = serializers.CharField(allow_blank=True)


class VersionSummarySerializer(serializers.Serializer):
    # A declared field, not Field.label: DRF's metaclass moves it off the class.
    label = serializers.CharField()  # type: ignore[assignment]
    status = serializers.ChoiceField(choices=["draft", "frozen", "superseded", "withdrawn"])
    supersedes = serializers.CharField(allow_null=True, help_text="The label it supersedes.")
    sha256 = serializers.CharField(allow_null=True)
    frozen_at = serializers.DateTimeField(allow_null=True)
    frozen_by = serializers.CharField(allow_null=True)
    url = serializers.CharField()
    blob_url = serializers.CharField(allow_null=True)
    links = serializers.DictField(
        child=serializers.CharField(),
        help_text="Every address of the version, by protocol code and version label (page, "
        "gate, freeze, rubric, scoring, scoring_open, scorers, machine_scores, seal, unseal, "
        "log, …): a client follows these and never needs a database id.",
    )


class ParameterSerializer(serializers.Serializer):
    name = serializers.CharField()
    # A declared field, not Field.label: DRF's metaclass moves it off the class.
    label = serializers.CharField()  # type: ignore[assignment]
    kind = serializers.CharField()
    unit = serializers.CharField(allow_blank=True)
    value = serializers.CharField(allow_blank=True)
    # A declared field, not Field.required: DRF's metaclass moves it off the class.
    required = serializers.BooleanField()  # type: ignore[assignment]
    choices = serializers.ListField(child=serializers.CharField())
    minimum = serializers.CharField(allow_null=True)
    maximum = serializers.CharField(allow_null=True)
    # A declared field, not Field.help_text: DRF's metaclass moves it off the class.
    help_text = serializers.CharField(allow_blank=True)  # type: ignore[assignment]
    schema = serializers.JSONField(allow_null=True, help_text="A json parameter's JSON Schema.")


def _section_field():
    return serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)


class SectionsSerializer(serializers.Serializer):
    """The six Markdown sections; on PATCH, give only those that change."""

    background = _section_field()
    hypotheses = _section_field()
    design = _section_field()
    exclusions = _section_field()
    stopping_rules = _section_field()
    analysis = _section_field()

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(SECTION_FIELDS))
            if unknown:
                raise serializers.ValidationError(
                    f"unknown sections {', '.join(unknown)}; "
                    f"sections are {', '.join(SECTION_FIELDS)}"
                )
        return super().to_internal_value(data)


class WithdrawalSerializer(serializers.Serializer):
    reason = serializers.CharField()
    withdrawn_at = serializers.DateTimeField()
    withdrawn_by = serializers.CharField()


class IntegritySerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    checked = serializers.BooleanField()
    stored_sha256 = serializers.CharField(allow_null=True)
    recomputed_sha256 = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_blank=True)


class VersionSerializer(VersionSummarySerializer):
    protocol = serializers.CharField()
    pipeline = serializers.CharField(
        allow_null=True, help_text="The analysis pipeline the plan names (null: none yet)."
    )
    vocabulary = serializers.DictField(
        child=serializers.CharField(),
        help_text="The study's words for the generic design's parts (level, family, item, "
        "cell, administration, number_field, binary_field): a CRUCIBLE study says autonomy "
        "rung, scenario family, seed variant, …, episode, graded axis, hard-fail channel. "
        "Field names stay generic.",
    )
    sections = SectionsSerializer()
    parameters = ParameterSerializer(many=True)
    decision_table = serializers.ListField(child=serializers.DictField())
    amendment_rationale = serializers.CharField(allow_blank=True)
    withdrawal = WithdrawalSerializer(allow_null=True)
    integrity = IntegritySerializer(
        required=False,
        help_text="A frozen version's rows rebuilt and hashed again: ok, or an integrity alarm.",
    )


def _summary(version: ProtocolVersion) -> dict:
    code = version.protocol.code
    return {
        "label": version.label,
        "status": version.status,
        "supersedes": version.supersedes.label if version.supersedes is not None else None,
        "sha256": version.sha256 or None,
        "frozen_at": version.frozen_at,
        "frozen_by": version.frozen_by.get_username() if version.frozen_by is not None else None,
        "url": reverse("protocols-api:version", args=[code, version.label]),
        "blob_url": (
            reverse("protocols-api:blob", args=[version.sha256]) if version.sha256 else None
        ),
        "links": version_links(version),
    }


def _full(version: ProtocolVersion) -> dict:
    version = version_with_content(version=version)
    withdrawal = getattr(version, "withdrawal", None)
    return {
        **_summary(version),
        "protocol": version.protocol.code,
        "pipeline": version_pipeline(version),
        "vocabulary": vocabulary(version),
        "sections": {name: getattr(version, name) for name in SECTION_FIELDS},
        "parameters": [
            {
                "name": p.name,
                "label": p.label,
                "kind": p.kind,
                "unit": p.unit,
                "value": p.value,
                "required": p.required,
                "choices": list(p.choices),
                "minimum": decimal_text(p.minimum),
                "maximum": decimal_text(p.maximum),
                "help_text": p.help_text,
                "schema": p.schema,
            }
            for p in version.parameters.all()
        ],
        "decision_table": version.decision_table,
        "amendment_rationale": version.amendment_rationale,
        "withdrawal": (
            None
            if withdrawal is None
            else {
                "reason": withdrawal.reason,
                "withdrawn_at": withdrawal.withdrawn_at,
                "withdrawn_by": withdrawal.withdrawn_by.get_username(),
            }
        ),
    }


class ProtocolSerializer(serializers.Serializer):
    code = serializers.CharField()
    title = serializers.CharField()
    template = serializers.CharField()
    url = serializers.CharField()


def _protocol(protocol: Protocol) -> dict:
    return {
        "code": protocol.code,
        "title": protocol.title,
        "template": protocol.template,
        "url": reverse("protocols-api:protocol", args=[protocol.code]),
    }


class ProtocolListCreateApi(APIView):
    """The protocols the caller may read; POST starts one (the caller becomes its PI)."""

    @extend_schema_serializer(component_name="ProtocolCreate")
    class InputSerializer(serializers.Serializer):
        code = serializers.CharField(max_length=32)
        title = serializers.CharField(max_length=300)
        template = serializers.ChoiceField(choices=(), default="opb")

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # Read per request, not at import: the study kinds register their presets when
            # the apps are ready, after this module may have been imported.
            template = cast(serializers.ChoiceField, self.fields["template"])
            template.choices = [code for code, _ in plan_template_choices()]

    @extend_schema(responses=ProtocolSerializer(many=True))
    def get(self, request):
        protocols = protocols_for(user=request.user)
        return Response(ProtocolSerializer([_protocol(p) for p in protocols], many=True).data)

    @extend_schema(request=InputSerializer, responses={201: ProtocolSerializer})
    def post(self, request):
        data = validated(self.InputSerializer, request.data)
        protocol = services.protocol_create(user=request.user, **data)
        return Response(ProtocolSerializer(_protocol(protocol)).data, status=201)


class MemberSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.ChoiceField(choices=Role.choices)


class ProtocolDetailApi(APIView):
    """One protocol: its versions in lineage order and its members."""

    @extend_schema_serializer(component_name="ProtocolDetail")
    class OutputSerializer(ProtocolSerializer):
        versions = VersionSummarySerializer(many=True)
        members = MemberSerializer(many=True)

    @extend_schema(responses=OutputSerializer)
    def get(self, request, code: str):
        protocol = get_protocol_for(user=request.user, pk=code, roles=READ_ROLES)
        data = {
            **_protocol(protocol),
            "versions": [_summary(v) for v in protocol_versions(protocol=protocol)],
            "members": [
                {"username": m.user.get_username(), "role": m.role}
                for m in memberships_of(protocol_id=protocol.pk)
            ],
        }
        return Response(self.OutputSerializer(data).data)


class MemberListCreateApi(APIView):
    """The protocol's members (PI only); POST grants a role to an existing user."""

    @extend_schema(responses=MemberSerializer(many=True))
    def get(self, request, code: str):
        protocol = get_protocol_for(user=request.user, pk=code, roles=PI_ROLES)
        members = [
            {"username": m.user.get_username(), "role": m.role}
            for m in memberships_of(protocol_id=protocol.pk)
        ]
        return Response(MemberSerializer(members, many=True).data)

    @extend_schema_serializer(component_name="MemberGrantInput")
    class InputSerializer(MemberSerializer):
        reason = serializers.CharField(
            max_length=2000, required=False, allow_blank=True, default=""
        )

    @extend_schema(request=InputSerializer, responses={201: MemberSerializer})
    def post(self, request, code: str):
        protocol = get_protocol_for(user=request.user, pk=code, roles=PI_ROLES)
        given = validated(self.InputSerializer, request.data)
        membership = services.protocol_member_add(protocol=protocol, actor=request.user, **given)
        data = {"username": membership.user.get_username(), "role": membership.role}
        return Response(MemberSerializer(data).data, status=201)


class MemberRemoveApi(APIView):
    """Take a role away from a member (PI only), saying why: the removal is written to the
    deviation log, and a removed reviewer's reservations end at once."""

    @extend_schema_serializer(component_name="MemberRemoveInput")
    class InputSerializer(MemberSerializer):
        reason = serializers.CharField(max_length=2000)

    @extend_schema(request=InputSerializer, responses={204: None})
    def post(self, request, code: str):
        protocol = get_protocol_for(user=request.user, pk=code, roles=PI_ROLES)
        data = validated(self.InputSerializer, request.data)
        members = Membership.objects.select_related("user", "protocol").filter(protocol=protocol)
        membership = first_or_404(
            members.filter(user__username=data["username"].strip(), role=data["role"]),
            "No such member with that role.",
        )
        services.protocol_member_remove(
            membership=membership, actor=request.user, reason=data["reason"]
        )
        return Response(status=204)


class VersionListApi(APIView):
    """Every version of a protocol, in lineage order (1.0 → 1.1 → …)."""

    @extend_schema(responses=VersionSummarySerializer(many=True))
    def get(self, request, code: str):
        protocol = get_protocol_for(user=request.user, pk=code, roles=READ_ROLES)
        versions = [_summary(v) for v in protocol_versions(protocol=protocol)]
        return Response(VersionSummarySerializer(versions, many=True).data)


class VersionDetailApi(APIView):
    """One version with everything it holds; PATCH edits a draft (PI or editor)."""

    @extend_schema_serializer(component_name="DraftUpdate")
    class InputSerializer(serializers.Serializer):
        sections = SectionsSerializer(required=False)
        parameters = serializers.DictField(
            child=serializers.CharField(allow_blank=True, trim_whitespace=False),
            required=False,
            help_text="Values by parameter name, as text (an empty text clears a value).",
        )
        amendment_rationale = serializers.CharField(
            required=False, allow_blank=True, trim_whitespace=False
        )
        decision_table = serializers.ListField(child=serializers.DictField(), required=False)
        pipeline = serializers.CharField(
            required=False,
            allow_blank=True,
            help_text="The analysis pipeline the plan names (see /api/v1/pipelines).",
        )
        new_parameters = serializers.ListField(
            child=serializers.DictField(),
            required=False,
            help_text="Parameters to add to the plan: name, kind (number, integer, choice, "
            "interval_method, boolean, text, list, json), label, unit, required, choices, "
            "minimum, maximum, help_text, schema (JSON Schema, json only) and value (text). "
            "A parameter the pipeline declares needs only its name.",
        )

    @extend_schema(responses=VersionSerializer)
    def get(self, request, code: str, label: str):
        version = _version(request, code, label, READ_ROLES)
        integrity = version_integrity_verify(version=version, use_cache=True)
        return Response(
            VersionSerializer({**_full(version), "integrity": integrity.as_dict()}).data
        )

    @extend_schema(
        request=InputSerializer,
        responses={200: VersionSerializer, 409: OpenApiResponse(description="not a draft")},
    )
    def patch(self, request, code: str, label: str):
        version = _version(request, code, label, EDIT_ROLES)
        data = validated(self.InputSerializer, request.data)
        version = _in_state(services.version_update, version=version, user=request.user, **data)
        return Response(VersionSerializer(_full(version)).data)


class GateSerializer(serializers.Serializer):
    version = serializers.CharField()
    ready = serializers.BooleanField(help_text="True when nothing blocks the freeze.")
    problems = ProblemSerializer(many=True)
    notes = serializers.ListField(
        child=serializers.CharField(),
        help_text="What the gate says of a plan nothing blocks (e.g. checked on a sample).",
    )


class VersionGateApi(APIView):
    """The freeze gate: every problem that blocks freezing this version, each with where it
    is fixed."""

    @extend_schema(responses=GateSerializer)
    def get(self, request, code: str, label: str):
        version = _version(request, code, label, READ_ROLES)
        found = version_gate(version=version)
        problems = [p.as_dict() for p in found]
        notes = version_gate_notes(version=version, problems=found)
        data = {
            "version": version.label,
            "ready": not problems,
            "problems": problems,
            "notes": notes,
        }
        return Response(GateSerializer(data).data)


class RefusalSerializer(serializers.Serializer):
    detail = serializers.CharField()
    problems = ProblemSerializer(many=True)


class VersionFreezeApi(APIView):
    """Freeze a draft (PI): 400 with every problem when the gate refuses, 409 when it is not an
    open draft."""

    @extend_schema(
        request=None,
        responses={
            200: VersionSerializer,
            400: RefusalSerializer,
            409: OpenApiResponse(description="not an open draft"),
        },
    )
    def post(self, request, code: str, label: str):
        version = _version(request, code, label, PI_ROLES)
        try:
            version = _in_state(services.version_freeze, version=version, user=request.user)
        except services.FreezeRefused as refusal:
            n = len(refusal.problems)
            data = {
                "detail": f"{counted(n, 'problem')} {'blocks' if n == 1 else 'block'} the freeze.",
                "problems": [p.as_dict() for p in refusal.problems],
            }
            return Response(RefusalSerializer(data).data, status=400)
        return Response(VersionSerializer(_full(version)).data)


class VersionAmendApi(APIView):
    """Open the next version as a draft copying this one (PI). On a draft that was never
    frozen, the draft is set aside (kept as it is, closed). ``close_scoring`` (default true,
    as on the page) closes the version's scoring, so its open tasks leave reviewers' queues."""

    @extend_schema_serializer(component_name="Amend")
    class InputSerializer(serializers.Serializer):
        close_scoring = serializers.BooleanField(required=False, default=True)

    @extend_schema(
        request=InputSerializer,
        responses={201: VersionSerializer, 409: OpenApiResponse(description="has a successor")},
    )
    def post(self, request, code: str, label: str):
        version = _version(request, code, label, PI_ROLES)
        params = validated(self.InputSerializer, request.data)
        new = _in_state(
            services.version_amend,
            version=version,
            user=request.user,
            close_work=params["close_scoring"],
        )
        return Response(VersionSerializer(_full(new)).data, status=201)


class VersionWithdrawApi(APIView):
    """Withdraw a frozen version (PI), with a reason kept on its tombstone."""

    @extend_schema_serializer(component_name="Withdraw")
    class InputSerializer(serializers.Serializer):
        reason = serializers.CharField()

    @extend_schema(
        request=InputSerializer,
        responses={200: VersionSerializer, 409: OpenApiResponse(description="not withdrawable")},
    )
    def post(self, request, code: str, label: str):
        version = _version(request, code, label, PI_ROLES)
        data = validated(self.InputSerializer, request.data)
        _in_state(
            services.version_withdraw,
            version=version,
            user=request.user,
            **data,
        )
        return Response(VersionSerializer(_full(version)).data)


class DepositSerializer(serializers.Serializer):
    version = serializers.CharField()
    sha256 = serializers.CharField(help_text="The deposited text's SHA-256 (its blob).")
    blob_url = serializers.CharField()
    size = serializers.IntegerField(help_text="Bytes.")
    media_type = serializers.CharField()
    frozen_where = serializers.CharField()
    frozen_on = serializers.DateField(allow_null=True)
    note = serializers.CharField(allow_blank=True, help_text="Why it was superseded.")
    recorded_by = serializers.CharField(allow_null=True)
    recorded_at = serializers.DateTimeField()


def _deposit_out(deposit: Deposit) -> dict:
    return {
        "version": deposit.version.label,
        "sha256": deposit.blob_id,
        "blob_url": reverse("protocols-api:blob", args=[deposit.blob_id]),
        "size": deposit.blob.size,
        "media_type": deposit.blob.media_type,
        "frozen_where": deposit.frozen_where,
        "frozen_on": deposit.frozen_on,
        "note": deposit.note,
        "recorded_by": (
            deposit.recorded_by.get_username() if deposit.recorded_by is not None else None
        ),
        "recorded_at": deposit.recorded_at,
    }


class VersionDepositApi(APIView):
    """A version frozen elsewhere, recorded as history (issue #17). GET reads the deposit (PI,
    editors, auditors; 404 when the version has none). POST deposits a draft (PI): the text as
    JSON ``text`` or a multipart ``file``, kept byte for byte with its SHA-256; ``frozen_where``,
    ``frozen_on`` (YYYY-MM-DD, optional) and ``note`` (why it was superseded). 409 for a version
    frozen here or already deposited. A deposited version never passes the gate nor runs an
    analysis."""

    parser_classes = [JSONParser, MultiPartParser, FormParser]

    @extend_schema_serializer(component_name="Deposit")
    class InputSerializer(serializers.Serializer):
        text = serializers.CharField(
            required=False, allow_blank=True, trim_whitespace=False, default=""
        )
        file = serializers.FileField(required=False, allow_null=True, default=None)
        frozen_where = serializers.CharField(max_length=500)
        frozen_on = serializers.DateField(required=False, allow_null=True, default=None)
        note = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(responses={200: DepositSerializer, 404: OpenApiResponse(description="none")})
    def get(self, request, code: str, label: str):
        version = _version(request, code, label, READ_ROLES)
        deposit = Deposit.objects.filter(version=version).select_related("blob", "version").first()
        if deposit is None:
            raise NotFound(f"v{version.label} is not a deposited version.")
        return Response(_deposit_out(deposit))

    @extend_schema(
        request=InputSerializer,
        responses={
            201: DepositSerializer,
            409: OpenApiResponse(description="frozen here or already deposited"),
        },
    )
    def post(self, request, code: str, label: str):
        version = _version(request, code, label, PI_ROLES)
        data = validated(self.InputSerializer, request.data)
        content, media_type = deposit_text_read(pasted=data["text"], upload=data["file"])
        deposit = _in_state(
            services.version_deposit,
            version=version,
            user=request.user,
            text=content,
            media_type=media_type,
            frozen_where=data["frozen_where"],
            frozen_on=data["frozen_on"],
            note=data["note"],
        )
        return Response(_deposit_out(deposit), status=201)


class DiffOpSerializer(serializers.Serializer):
    op = serializers.CharField(help_text="equal, delete, insert or replace")
    old = serializers.CharField(allow_blank=True, trim_whitespace=False)
    new = serializers.CharField(allow_blank=True, trim_whitespace=False)


class DiffSideSerializer(serializers.Serializer):
    version = serializers.CharField()
    status = serializers.CharField()
    sha256 = serializers.CharField(allow_blank=True)


class TextChangeSerializer(serializers.Serializer):
    status = serializers.CharField(help_text="unchanged, added, removed or changed")
    ops = DiffOpSerializer(many=True, required=False)
    words_removed = serializers.IntegerField(required=False)
    words_added = serializers.IntegerField(required=False)


class SectionChangeSerializer(TextChangeSerializer):
    name = serializers.CharField()
    title = serializers.CharField()


# A change's two sides as ``from`` and ``to`` fields, each made by ``side``: they are Python
# keywords, so no class body can declare them. (A comment, not a docstring: drf-spectacular
# would give every subclass's schema component the base's docstring as its description.)
class _FromAndTo(serializers.Serializer):
    side: Callable[[], serializers.Field]

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = self.side()
        fields["to"] = self.side()
        return fields


class ParameterChangeSerializer(_FromAndTo):
    side = staticmethod(lambda: serializers.CharField(allow_null=True, allow_blank=True))
    name = serializers.CharField()
    # A declared field, not Field.label: DRF's metaclass moves it off the class.
    label = serializers.CharField()  # type: ignore[assignment]
    status = serializers.CharField(
        help_text="instantiated, changed, cleared, added, removed or unchanged"
    )
    unit = serializers.CharField(allow_blank=True)
    changes = serializers.DictField(
        child=serializers.ListField(child=JSONField()),
        help_text="Other attributes that changed: name → [old, new].",
    )


class RuleChangeSerializer(_FromAndTo):
    side = staticmethod(lambda: serializers.DictField(allow_null=True))
    id = serializers.CharField(allow_null=True)
    status = serializers.CharField(help_text="added, removed or changed")


class TableChangeSerializer(serializers.Serializer):
    status = serializers.CharField(help_text="unchanged or changed")
    rows = RuleChangeSerializer(many=True)


class ComponentChangeSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.CharField(help_text="unchanged or changed")
    summary = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="One line per changed part (apps/protocols/diffs.py structure_summary): "
        "a list counted (from, to, added, removed, changed), any other value from → to; "
        "each with a readable text.",
    )
    unified = serializers.ListField(child=serializers.CharField(), required=False)


class PipelineChangeSerializer(_FromAndTo):
    side = staticmethod(lambda: serializers.CharField(allow_null=True))
    status = serializers.CharField(help_text="unchanged or changed")


class DiffSerializer(_FromAndTo):
    side = DiffSideSerializer
    protocol = serializers.CharField()
    sections = SectionChangeSerializer(many=True)
    parameters = ParameterChangeSerializer(many=True)
    pipeline = PipelineChangeSerializer()
    amendment_rationale = TextChangeSerializer()
    decision_table = TableChangeSerializer()
    components = ComponentChangeSerializer(many=True)


class VersionDiffApi(APIView):
    """What changed between two versions: section by section (word-level edit script),
    parameter by parameter (old → new), the amendment rationale, the decision table and every
    component's document."""

    @extend_schema(
        parameters=[
            OpenApiParameter("from", str, description="The older version's label, e.g. 1.0"),
            OpenApiParameter("to", str, description="The newer version's label, e.g. 1.1"),
        ],
        responses=DiffSerializer,
    )
    def get(self, request, code: str):
        get_protocol_for(user=request.user, pk=code, roles=READ_ROLES)
        labels = {key: request.query_params.get(key, "").strip() for key in ("from", "to")}
        missing = [key for key, value in labels.items() if not value]
        if missing:
            raise ValidationError({key: ["give a version label, e.g. 1.0"] for key in missing})
        old, new = (
            get_version_by_label_for(
                user=request.user, code=code, label=labels[key], roles=READ_ROLES
            )
            for key in ("from", "to")
        )
        return Response(DiffSerializer(version_diff(old=old, new=new)).data)


class BlobApi(APIView):
    """A frozen document, byte for byte, by its SHA-256 or a unique prefix of at least 16 hex
    characters. Immutable: an ETag equal to the hash and a year-long cache; 304 on a matching
    If-None-Match. Readable by the PI, editors and auditors of the protocol it belongs to;
    anyone else gets 404, as for an unknown hash. An ambiguous prefix is 409. A blob declared
    public (a published rubric, ``apps.protocols.blobs.register_public_blob``) is served to
    anyone, signed in or not; so anonymous callers are let through to get 404 otherwise."""

    permission_classes = [AllowAny]

    @extend_schema(
        responses={
            (200, "application/json"): OpenApiTypes.OBJECT,
            304: OpenApiResponse(description="not modified"),
            404: OpenApiResponse(description="unknown, or not yours to read"),
            409: OpenApiResponse(description="the prefix matches more than one blob"),
        }
    )
    def get(self, request, digest: str):
        digest = digest.lower()
        if not (
            BLOB_PREFIX_MIN <= len(digest) <= 64 and all(c in "0123456789abcdef" for c in digest)
        ):
            raise NotFound("A blob is named by its SHA-256 or 16 or more of its first hex digits.")
        try:
            blob = blob_for(user=request.user, digest=digest)
        except AmbiguousBlobPrefix:
            raise Conflict(
                "This prefix matches more than one blob; give more of the hash."
            ) from None
        if blob is None:  # unknown, or not this caller's to read: one answer, one cost
            raise NotFound("No such blob.")
        etag = f'"{blob.sha256}"'
        headers = {
            "ETag": etag,
            "Cache-Control": BLOB_CACHE_CONTROL,
            "Vary": "Cookie, Authorization",
        }
        if_none_match = request.headers.get("If-None-Match", "")
        tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
        if etag in tags or "*" in tags:
            return HttpResponse(status=304, headers=headers)
        return HttpResponse(
            bytes(blob.content),
            content_type=f"{blob.media_type}; charset=utf-8",
            headers={**headers, "Content-Length": str(blob.size)},
        )


class CatalogueSerializer(serializers.Serializer):
    pipeline = serializers.CharField()
    title = serializers.CharField()
    summary = serializers.CharField()
    decision_table = serializers.BooleanField(
        help_text="Whether the pipeline evaluates the plan's decision table."
    )
    parameters = serializers.ListField(child=serializers.DictField())
    estimates = serializers.ListField(
        child=serializers.DictField(),
        help_text="name, kind (coefficient, contrast, rate, count, verdict), interval, "
        "meaning, primary, needs: the names decision-table rules may use.",
    )
    sections = serializers.ListField(child=serializers.DictField())


class PipelineListApi(APIView):
    """Every analysis pipeline's catalogue: the parameters it reads, the estimates it
    produces (the decision table's vocabulary) and its report sections."""

    @extend_schema(responses=CatalogueSerializer(many=True))
    def get(self, request):
        data = [d.catalogue() for d in declared_pipelines()]
        return Response(CatalogueSerializer(data, many=True).data)


class VersionCatalogueApi(APIView):
    """The catalogue of the pipeline this version's plan names, with which of its parameters
    the plan holds. 404 when the plan names no pipeline yet."""

    @extend_schema_serializer(component_name="VersionCatalogue")
    class OutputSerializer(CatalogueSerializer):
        version = serializers.CharField()
        held = serializers.ListField(
            child=serializers.CharField(), help_text="Parameters the plan holds."
        )

    @extend_schema(responses=OutputSerializer)
    def get(self, request, code: str, label: str):
        version = _version(request, code, label, READ_ROLES)
        declaration = pipeline_declaration(version_pipeline(version) or "")
        if declaration is None:
            raise NotFound(f"The plan of v{version.label} names no analysis pipeline yet.")
        data = {
            **declaration.catalogue(),
            # The estimates this plan will produce, in its own names (issue #32 §3).
            "estimates": [e.catalogue() for e in declaration.version_estimates(version)],
            "version": version.label,
            "held": sorted(version.parameters.values_list("name", flat=True)),
        }
        return Response(self.OutputSerializer(data).data)
