"""The design's API under ``/api/v1/protocols/<code>/versions/<label>/design``: one APIView per
action, thin, calling the same services as the pages. Cross-references are by natural key."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Role
from apps.items import services
from apps.items.access import (
    DESIGN_WRITERS,
    get_design_version_for,
    get_harm_review_for,
    get_item_for,
    get_level_for,
)
from apps.items.component import design_document
from apps.items.models import (
    Condition,
    Factor,
    FactorRole,
    Family,
    FamilyRole,
    HarmVerdict,
    Item,
    Level,
)
from apps.items.selectors import (
    HARM_CRITERIA,
    HarmState,
    design_problems,
    harm_review_task,
    harm_reviews_pending_for,
    item_harm_states,
)
from apps.items.services.transfer import FORMATS, import_format_for
from apps.protocols.models import ProtocolVersion


def _reader(request, protocol_code: str, label: str) -> ProtocolVersion:
    return get_design_version_for(user=request.user, protocol_code=protocol_code, label=label)


def _writer(request, protocol_code: str, label: str) -> ProtocolVersion:
    return get_design_version_for(
        user=request.user, protocol_code=protocol_code, label=label, roles=DESIGN_WRITERS
    )


def _level_code(level_ordinal: int | None, version: ProtocolVersion) -> str | None:
    if level_ordinal is None:
        return None
    return (
        Level.objects.filter(version=version, ordinal=level_ordinal)
        .values_list("code", flat=True)
        .first()
    )


def _get(model, version: ProtocolVersion, what: str, **lookup):
    obj = model.objects.filter(version=version, **lookup).first()
    if obj is None:
        raise Http404(f"No such {what} in this version.")
    return obj


def _by_code(model, version: ProtocolVersion, code: str | None, field: str):
    if not code:
        return None
    obj = model.objects.filter(version=version, code=code).first()
    if obj is None:
        raise ValidationError({field: f"There is no {field} {code!r} in this version."})
    return obj


class DesignProblemSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    url = serializers.CharField()


class DesignKeyUnitSerializer(serializers.Serializer):
    text = serializers.CharField(trim_whitespace=False)
    executable = serializers.BooleanField(default=False)


# The whole design and what blocks its freeze


class DesignDetailApi(APIView):
    """The version's design as it will appear in the frozen document (natural keys only)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, protocol_code: str, label: str):
        version = _reader(request, protocol_code, label)
        return Response(design_document(version))


class DesignProblemsApi(APIView):
    """What in the design blocks the freeze, each problem with the page where it is fixed."""

    @extend_schema(responses=DesignProblemSerializer(many=True))
    def get(self, request, protocol_code: str, label: str):
        version = _reader(request, protocol_code, label)
        return Response([p.as_dict() for p in design_problems(version)])


# Level scale


class LevelSerializer(serializers.Serializer):
    ordinal = serializers.IntegerField(min_value=0)
    code = serializers.CharField()
    name = serializers.CharField()
    form = serializers.CharField(allow_blank=True)


def _level_out(level: Level) -> dict:
    return {"ordinal": level.ordinal, "code": level.code, "name": level.name, "form": level.form}


class LevelScaleDefaultApi(APIView):
    """Give the version OPB-01 §2's level scale, L0 description … L5 execution."""

    @extend_schema(request=None, responses={201: LevelSerializer(many=True)})
    def post(self, request, protocol_code: str, label: str):
        levels = services.level_scale_default_create(version=_writer(request, protocol_code, label))
        return Response([_level_out(level) for level in levels], status=status.HTTP_201_CREATED)


class LevelCreateApi(APIView):
    class InputSerializer(serializers.Serializer):
        ordinal = serializers.IntegerField(min_value=0, max_value=99)
        code = serializers.CharField(max_length=16)
        name = serializers.CharField(max_length=100)
        form = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=InputSerializer, responses={201: LevelSerializer})
    def post(self, request, protocol_code: str, label: str):
        version = _writer(request, protocol_code, label)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        level = services.level_create(version=version, **data.validated_data)
        return Response(_level_out(level), status=status.HTTP_201_CREATED)


class LevelUpdateApi(APIView):
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=100)
        form = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=InputSerializer, responses=LevelSerializer)
    def post(self, request, protocol_code: str, label: str, code: str):
        version = _writer(request, protocol_code, label)
        level = get_level_for(version=version, code=code)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(_level_out(services.level_update(level=level, **data.validated_data)))


class LevelDeleteApi(APIView):
    @extend_schema(request=None, responses={204: None})
    def post(self, request, protocol_code: str, label: str, code: str):
        version = _writer(request, protocol_code, label)
        services.level_delete(level=get_level_for(version=version, code=code))
        return Response(status=status.HTTP_204_NO_CONTENT)


# Families


class FamilySerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=FamilyRole.choices)
    max_level = serializers.CharField(allow_null=True, help_text="Highest level allowed (code).")
    stopping_rule = serializers.CharField(allow_blank=True)
    description = serializers.CharField(allow_blank=True)


def _family_out(family: Family) -> dict:
    return {
        "code": family.code,
        "name": family.name,
        "role": family.role,
        "max_level": _level_code(family.max_level, family.version),
        "stopping_rule": family.stopping_rule,
        "description": family.description,
    }


class _FamilyFields(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    role = serializers.ChoiceField(choices=FamilyRole.choices)
    max_level = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        default=None,
        help_text="The code of the highest level allowed: the binding stopping rule.",
    )
    stopping_rule = serializers.CharField(required=False, allow_blank=True, default="")
    description = serializers.CharField(required=False, allow_blank=True, default="")


class FamilyCreateApi(APIView):
    class InputSerializer(_FamilyFields):
        code = serializers.CharField(max_length=16)

    @extend_schema(request=InputSerializer, responses={201: FamilySerializer})
    def post(self, request, protocol_code: str, label: str):
        version = _writer(request, protocol_code, label)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        family = services.family_create(version=version, **data.validated_data)
        return Response(_family_out(family), status=status.HTTP_201_CREATED)


class FamilyUpdateApi(APIView):
    class InputSerializer(_FamilyFields):
        pass

    @extend_schema(request=InputSerializer, responses=FamilySerializer)
    def post(self, request, protocol_code: str, label: str, code: str):
        version = _writer(request, protocol_code, label)
        family = _get(Family, version, "family", code=code)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(_family_out(services.family_update(family=family, **data.validated_data)))


class FamilyDeleteApi(APIView):
    @extend_schema(request=None, responses={204: None})
    def post(self, request, protocol_code: str, label: str, code: str):
        version = _writer(request, protocol_code, label)
        services.family_delete(family=_get(Family, version, "family", code=code))
        return Response(status=status.HTTP_204_NO_CONTENT)


# Conditions


class ConditionSerializer(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    is_sham = serializers.BooleanField()


def _condition_out(condition: Condition) -> dict:
    return {
        "code": condition.code,
        "name": condition.name,
        "description": condition.description,
        "is_sham": condition.is_sham,
    }


class _ConditionFields(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    is_sham = serializers.BooleanField(required=False, default=False)


class ConditionCreateApi(APIView):
    class InputSerializer(_ConditionFields):
        code = serializers.CharField(max_length=32)

    @extend_schema(request=InputSerializer, responses={201: ConditionSerializer})
    def post(self, request, protocol_code: str, label: str):
        version = _writer(request, protocol_code, label)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        condition = services.condition_create(version=version, **data.validated_data)
        return Response(_condition_out(condition), status=status.HTTP_201_CREATED)


class ConditionUpdateApi(APIView):
    class InputSerializer(_ConditionFields):
        pass

    @extend_schema(request=InputSerializer, responses=ConditionSerializer)
    def post(self, request, protocol_code: str, label: str, code: str):
        version = _writer(request, protocol_code, label)
        condition = _get(Condition, version, "condition", code=code)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        condition = services.condition_update(condition=condition, **data.validated_data)
        return Response(_condition_out(condition))


class ConditionDeleteApi(APIView):
    @extend_schema(request=None, responses={204: None})
    def post(self, request, protocol_code: str, label: str, code: str):
        version = _writer(request, protocol_code, label)
        services.condition_delete(condition=_get(Condition, version, "condition", code=code))
        return Response(status=status.HTTP_204_NO_CONTENT)


# Factors


class FactorSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    levels = serializers.ListField(child=serializers.CharField())
    role = serializers.ChoiceField(choices=FactorRole.choices)


def _factor_out(factor: Factor) -> dict:
    return {
        "name": factor.name,
        "label": factor.label,
        "levels": list(factor.levels),
        "role": factor.role,
    }


class _FactorFields(serializers.Serializer):
    label = serializers.CharField(max_length=200)
    levels = serializers.ListField(child=serializers.CharField(), min_length=2)
    role = serializers.ChoiceField(choices=FactorRole.choices, default=FactorRole.DESIGN)


class FactorCreateApi(APIView):
    class InputSerializer(_FactorFields):
        name = serializers.SlugField(max_length=64)

    @extend_schema(request=InputSerializer, responses={201: FactorSerializer})
    def post(self, request, protocol_code: str, label: str):
        version = _writer(request, protocol_code, label)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        factor = services.factor_create(version=version, **data.validated_data)
        return Response(_factor_out(factor), status=status.HTTP_201_CREATED)


class FactorUpdateApi(APIView):
    class InputSerializer(_FactorFields):
        pass

    @extend_schema(request=InputSerializer, responses=FactorSerializer)
    def post(self, request, protocol_code: str, label: str, name: str):
        version = _writer(request, protocol_code, label)
        factor = _get(Factor, version, "factor", name=name)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(_factor_out(services.factor_update(factor=factor, **data.validated_data)))


class FactorDeleteApi(APIView):
    @extend_schema(request=None, responses={204: None})
    def post(self, request, protocol_code: str, label: str, name: str):
        version = _writer(request, protocol_code, label)
        services.factor_delete(factor=_get(Factor, version, "factor", name=name))
        return Response(status=status.HTTP_204_NO_CONTENT)


# Items and cells


class ItemSerializer(serializers.Serializer):
    code = serializers.CharField()
    family = serializers.CharField()
    domain = serializers.CharField(allow_blank=True)
    condition = serializers.CharField(allow_null=True)
    notes = serializers.CharField(allow_blank=True)
    base_item = serializers.CharField(
        allow_null=True,
        help_text="A disclosure item's (C_SPXI or C₀) Family A base item (OPB-01 §5); null for "
        "every other item.",
    )


def _item_out(item) -> dict:
    return {
        "code": item.code,
        "family": item.family.code,
        "domain": item.domain,
        "condition": item.condition.code if item.condition else None,
        "notes": item.notes,
        "base_item": item.base_item.code if item.base_item_id else None,
    }


class _ItemFields(serializers.Serializer):
    family = serializers.CharField(help_text="The family's code.")
    domain = serializers.CharField(required=False, allow_blank=True, default="")
    condition = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, default=None
    )
    notes = serializers.CharField(required=False, allow_blank=True, default="")
    base_item = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="For a disclosure item (C_SPXI or C₀), required: the code of the Family A item "
        "it inscribes (OPB-01 §5). On update, left as it was when omitted.",
    )


def _item_refs(version: ProtocolVersion, data: dict, code: str) -> dict:
    """The input with codes resolved to rows; a disclosure item naming no base item, or an
    unknown one, is refused naming the item (before any write)."""
    data = dict(data)
    data["family"] = _by_code(Family, version, data["family"], "family")
    data["condition"] = _by_code(Condition, version, data.get("condition"), "condition")
    if "base_item" in data:
        base_code = data["base_item"]
        base = Item.objects.filter(version=version, code=base_code).first() if base_code else None
        if base_code and base is None:
            raise ValidationError(
                {"base_item": f"item {code}'s base item {base_code!r} is not in this version"}
            )
        data["base_item"] = base
    services.disclosure_base_require(
        code=code, family=data["family"], base_item=data.get("base_item")
    )
    return data


class ItemCreateApi(APIView):
    class InputSerializer(_ItemFields):
        code = serializers.CharField(max_length=64)

    @extend_schema(request=InputSerializer, responses={201: ItemSerializer})
    def post(self, request, protocol_code: str, label: str):
        version = _writer(request, protocol_code, label)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        refs = _item_refs(version, data.validated_data, data.validated_data["code"])
        item = services.item_create(version=version, **refs)
        return Response(_item_out(item), status=status.HTTP_201_CREATED)


class ItemUpdateApi(APIView):
    class InputSerializer(_ItemFields):
        pass

    @extend_schema(request=InputSerializer, responses=ItemSerializer)
    def post(self, request, protocol_code: str, label: str, code: str):
        version = _writer(request, protocol_code, label)
        item = get_item_for(version=version, code=code)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        fields.setdefault("base_item", item.base_item.code if item.base_item_id else None)
        item = services.item_update(item=item, **_item_refs(version, fields, item.code))
        return Response(_item_out(item))


class ItemDeleteApi(APIView):
    @extend_schema(request=None, responses={204: None})
    def post(self, request, protocol_code: str, label: str, code: str):
        version = _writer(request, protocol_code, label)
        services.item_delete(item=get_item_for(version=version, code=code))
        return Response(status=status.HTTP_204_NO_CONTENT)


class CellSaveApi(APIView):
    """Write an item's cell at a level (create or replace) with its scoring key in order.
    A cell above the family's binding stopping rule is refused with the rule named."""

    class InputSerializer(serializers.Serializer):
        prompt = serializers.CharField(required=False, allow_blank=True, default="")
        absent = serializers.BooleanField(required=False, default=False)
        absent_reason = serializers.CharField(required=False, allow_blank=True, default="")
        key = DesignKeyUnitSerializer(many=True, required=False, default=list)
        requires_tools = serializers.ListField(
            child=serializers.CharField(),
            required=False,
            allow_null=True,
            default=None,
            help_text="Tool or connector names the key requires (OPB-01 §2: at L5 the gate "
            "refuses one an enrolled evaluand lists as external); omitted: kept as it was.",
        )

    class OutputSerializer(serializers.Serializer):
        item = serializers.CharField()
        level = serializers.CharField()
        prompt = serializers.CharField()
        absent = serializers.BooleanField()
        absent_reason = serializers.CharField()
        key = DesignKeyUnitSerializer(many=True)
        requires_tools = serializers.ListField(child=serializers.CharField())

    @extend_schema(request=InputSerializer, responses=OutputSerializer)
    def post(self, request, protocol_code: str, label: str, item_code: str, level_code: str):
        version = _writer(request, protocol_code, label)
        item = get_item_for(version=version, code=item_code)
        level = get_level_for(version=version, code=level_code)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        cell = services.cell_save(
            item=item,
            level=level,
            prompt=values["prompt"],
            absent=values["absent"],
            absent_reason=values["absent_reason"],
            key=[services.KeyUnitSpec(u["text"], u["executable"]) for u in values["key"]],
            requires_tools=values["requires_tools"],
        )
        return Response(
            {
                "item": item.code,
                "level": level.code,
                "prompt": cell.prompt,
                "absent": cell.absent,
                "absent_reason": cell.absent_reason,
                "key": [
                    {"text": u.text, "executable": u.executable}
                    for u in cell.key_units.order_by("position")
                ],
                "requires_tools": list(cell.requires_tools),
            }
        )


class CellDeleteApi(APIView):
    @extend_schema(request=None, responses={204: None})
    def post(self, request, protocol_code: str, label: str, item_code: str, level_code: str):
        version = _writer(request, protocol_code, label)
        item = get_item_for(version=version, code=item_code)
        level = get_level_for(version=version, code=level_code)
        cell = item.cells.filter(level=level).first()
        if cell is None:
            raise Http404("This cell has not been written.")
        services.cell_delete(cell=cell)
        return Response(status=status.HTTP_204_NO_CONTENT)


# Import and export


class DesignImportApi(APIView):
    """Import items, cells and keys from a CSV or JSON file (multipart field ``file``): all rows
    or none. With ``?dry_run=1`` nothing is written and the answer shows what would be. Errors
    (400) name every bad row and field; CSV rows count the header as row 1."""

    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField()
        format = serializers.ChoiceField(choices=FORMATS, required=False, allow_blank=True)

    @extend_schema(
        request={"multipart/form-data": InputSerializer},
        parameters=[OpenApiParameter("dry_run", bool, description="Validate only; write nothing.")],
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="The dry run's plan."),
            201: OpenApiResponse(OpenApiTypes.OBJECT, description="Imported."),
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="Every error; nothing written."),
        },
    )
    def post(self, request, protocol_code: str, label: str):
        version = _writer(request, protocol_code, label)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        fmt = import_format_for(upload.name, data.validated_data.get("format", ""))
        content = upload.read()
        dry_run = request.query_params.get("dry_run", "").lower() in {"1", "true", "yes"}
        if dry_run:
            plan = services.design_import_plan(
                version=version, content=content, fmt=fmt, filename=upload.name
            )
            body = {"dry_run": True, **plan.as_dict()}
            return Response(body, status=status.HTTP_200_OK if plan.ok else 400)
        try:
            plan = services.design_import(
                version=version,
                content=content,
                fmt=fmt,
                actor=request.user,
                filename=upload.name,
            )
        except services.DesignImportRefused as refused:
            return Response({"dry_run": False, **refused.plan.as_dict()}, status=400)
        return Response({"dry_run": False, **plan.as_dict()}, status=status.HTTP_201_CREATED)


class DesignExportApi(APIView):
    """The version's items, cells and keys as CSV or JSON, in the import's format."""

    @extend_schema(
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
        }
    )
    def get(self, request, protocol_code: str, label: str, fmt: str):
        version = _reader(request, protocol_code, label)
        if fmt not in FORMATS:
            raise Http404("Export as csv or json.")
        media = "text/csv" if fmt == "csv" else "application/json"
        text = services.design_export(version=version, fmt=fmt)
        return HttpResponse(text, content_type=f"{media}; charset=utf-8")


# Harm-constancy review


class HarmReviewStatusApi(APIView):
    """Each harm-constant item's review state, cycle and rounds (for the PI and editors)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, protocol_code: str, label: str):
        version = _reader(request, protocol_code, label)
        states = item_harm_states(version)
        body = []
        for item in Item.objects.filter(version=version).order_by("code"):
            harm = states[item.pk]
            if harm.state == HarmState.NOT_REQUIRED:
                continue
            body.append(
                {
                    "item": item.code,
                    "state": harm.state,
                    "cycle": harm.cycle,
                    "rounds": [
                        {
                            "round": r.round,
                            "reviewer": r.reviewer.get_username(),
                            "verdict": r.verdict or None,
                            "criteria": list(r.criteria),
                            "submitted": r.submitted_at is not None,
                        }
                        for r in harm.reviews
                    ],
                }
            )
        return Response(body)


class HarmReviewOpenApi(APIView):
    """Open the review of every harm-constant item that needs one (PI only)."""

    class OutputSerializer(serializers.Serializer):
        opened = serializers.ListField(child=serializers.CharField())

    @extend_schema(request=None, responses={201: OutputSerializer})
    def post(self, request, protocol_code: str, label: str):
        version = get_design_version_for(
            user=request.user, protocol_code=protocol_code, label=label, roles={Role.PI}
        )
        opened = services.harm_review_open(version=version)
        codes = sorted({review.item.code for review in opened})
        return Response({"opened": codes}, status=status.HTTP_201_CREATED)


class HarmReviewThirdApi(APIView):
    """Give an item's disagreement to a third reviewer who was neither of the first two."""

    @extend_schema(request=None, responses={201: OpenApiTypes.OBJECT})
    def post(self, request, protocol_code: str, label: str, code: str):
        version = get_design_version_for(
            user=request.user, protocol_code=protocol_code, label=label, roles={Role.PI}
        )
        review = services.harm_review_third_assign(item=get_item_for(version=version, code=code))
        return Response(
            {"item": code, "round": review.round, "reviewer": review.reviewer.get_username()},
            status=status.HTTP_201_CREATED,
        )


class HarmReviewQueueApi(APIView):
    """The caller's harm-constancy reviews waiting for a verdict, by opaque token only."""

    class OutputSerializer(serializers.Serializer):
        token = serializers.CharField()

    @extend_schema(responses=OutputSerializer(many=True))
    def get(self, request):
        return Response(
            [{"token": review.token} for review in harm_reviews_pending_for(request.user)]
        )


class HarmReviewTaskApi(APIView):
    """One review task: the two forms and the criteria — nothing about item, family or study."""

    class OutputSerializer(serializers.Serializer):
        token = serializers.CharField()
        forms = serializers.ListField(child=serializers.DictField())
        criteria = serializers.ListField(child=serializers.DictField())
        forms_sha256 = serializers.CharField()
        submitted = serializers.BooleanField()

    @extend_schema(responses=OutputSerializer)
    def get(self, request, token: str):
        review = get_harm_review_for(user=request.user, token=token)
        task = harm_review_task(review)
        return Response(
            {
                "token": review.token,
                "forms": task["forms"],
                "criteria": [{"code": c, "label": label} for c, label in HARM_CRITERIA],
                "forms_sha256": task["forms_sha256"],
                "submitted": review.submitted_at is not None,
            }
        )


class HarmReviewSubmitApi(APIView):
    """Give a verdict on the forms served with the task (``forms_sha256`` as served)."""

    class InputSerializer(serializers.Serializer):
        verdict = serializers.ChoiceField(choices=HarmVerdict.choices)
        criteria = serializers.ListField(
            child=serializers.CharField(), required=False, default=list
        )
        note = serializers.CharField(required=False, allow_blank=True, default="")
        forms_sha256 = serializers.CharField()

    @extend_schema(request=InputSerializer, responses={201: None})
    def post(self, request, token: str):
        review = get_harm_review_for(user=request.user, token=token)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.harm_review_submit(review=review, reviewer=request.user, **data.validated_data)
        return Response(status=status.HTTP_201_CREATED)


def _name_nested_serializers() -> None:
    # drf-spectacular names a schema component after its serializer class, so every nested
    # InputSerializer would be "Input"; name each after its view instead (CellSaveInput, …).
    for view in list(globals().values()):
        if isinstance(view, type) and issubclass(view, APIView) and view is not APIView:
            for attr in ("InputSerializer", "OutputSerializer"):
                nested = view.__dict__.get(attr)
                if nested is not None:
                    nested.__name__ = view.__name__.removesuffix("Api") + attr.removesuffix(
                        "Serializer"
                    )


_name_nested_serializers()
