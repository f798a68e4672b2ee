"""The design's API under ``/api/v1/protocols/<code>/versions/<label>/design``: one APIView per
action, thin, calling the same services as the pages. Cross-references are by natural key.

The level scale, families, conditions, factors and items share one create, update and delete
endpoint each, made from their ``apps.items.parts`` declaration by ``part_endpoints``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, cast

from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
    extend_schema_view,
)
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Role, User
from apps.core.apis import validated
from apps.items import services
from apps.items.access import (
    DESIGN_WRITERS,
    get_cell_for,
    get_design_version_for,
    get_harm_review_for,
    get_item_for,
    get_level_for,
)
from apps.items.component import design_document
from apps.items.models import Cell, HarmVerdict, Item, Level
from apps.items.parts import CONDITION, FACTOR, FAMILY, ITEM, LEVEL, DesignPart, LevelSerializer
from apps.items.selectors import (
    HARM_CRITERIA,
    HarmState,
    design_problems,
    harm_review_task,
    harm_reviews_pending_for,
    item_harm_states,
    items_of,
)
from apps.items.services.transfer import FORMATS, import_format_for
from apps.protocols.models import ProtocolVersion


def _user(request: Request) -> User:
    # Every endpoint here requires a signed-in user (DRF's IsAuthenticated, the default).
    return cast(User, request.user)


def _reader(request: Request, protocol_code: str, label: str) -> ProtocolVersion:
    return get_design_version_for(user=_user(request), protocol_code=protocol_code, label=label)


def _writer(
    request: Request, protocol_code: str, label: str, roles: Iterable[str] = DESIGN_WRITERS
) -> ProtocolVersion:
    return get_design_version_for(
        user=_user(request), protocol_code=protocol_code, label=label, roles=roles
    )


def _cell_place(
    request: Request, protocol_code: str, label: str, item_code: str, level_code: str
) -> tuple[Item, Level]:
    """The item and level a cell route names, on a version the user may write the design of."""
    version = _writer(request, protocol_code, label)
    item = get_item_for(version=version, code=item_code)
    return item, get_level_for(version=version, code=level_code)


def _valid(input_class: type[serializers.Serializer[Any]], request: Request) -> dict[str, Any]:
    return dict(validated(input_class, request.data))


class DesignProblemSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    message = serializers.CharField()
    url = serializers.CharField()


class DesignKeyUnitSerializer(serializers.Serializer[Any]):
    text = serializers.CharField(trim_whitespace=False)
    executable = serializers.BooleanField(default=False)


# The whole design and what blocks its freeze


class DesignDetailApi(APIView):
    """The version's design as it will appear in the frozen document (natural keys only)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, protocol_code: str, label: str) -> Response:
        version = _reader(request, protocol_code, label)
        return Response(design_document(version))


class DesignProblemsApi(APIView):
    """What in the design blocks the freeze, each problem with the page where it is fixed."""

    @extend_schema(responses=DesignProblemSerializer(many=True))
    def get(self, request: Request, protocol_code: str, label: str) -> Response:
        version = _reader(request, protocol_code, label)
        return Response([p.as_dict() for p in design_problems(version)])


# The design's parts: one create, update and delete endpoint each (``part_endpoints``). An
# update's input is checked after its part is found: an unknown part is a 404 whatever is posted.


class _PartCreateApi(APIView):
    part: ClassVar[DesignPart[Any]]

    def post(self, request: Request, protocol_code: str, label: str) -> Response:
        part = self.part
        version = _writer(request, protocol_code, label)
        data = part.refs(version, _valid(part.create_input, request), None)
        created = part.create(version=version, **data)
        return Response(part.output_of(created), status=status.HTTP_201_CREATED)


class _PartUpdateApi(APIView):
    part: ClassVar[DesignPart[Any]]

    def post(self, request: Request, protocol_code: str, label: str, **url: str) -> Response:
        part = self.part
        version = _writer(request, protocol_code, label)
        updated = part.get(version=version, code=url[part.key])
        data = part.refs(version, _valid(part.update_input, request), updated)
        return Response(part.output_of(part.update(**{part.noun: updated}, **data)))


class _PartDeleteApi(APIView):
    part: ClassVar[DesignPart[Any]]

    def post(self, request: Request, protocol_code: str, label: str, **url: str) -> Response:
        part = self.part
        version = _writer(request, protocol_code, label)
        part.delete(**{part.noun: part.get(version=version, code=url[part.key])})
        return Response(status=status.HTTP_204_NO_CONTENT)


def part_endpoints(part: DesignPart[Any]) -> tuple[type[APIView], type[APIView], type[APIView]]:
    """The create, update and delete endpoints of one kind of design part, named after it
    (``FamilyCreateApi``, …) and documented with its own input and output."""

    def endpoint(base: type[APIView], action: str, schema: Any) -> type[APIView]:
        view = type(f"{part.title}{action}Api", (base,), {"part": part})
        return extend_schema_view(post=schema)(view)

    return (
        endpoint(
            _PartCreateApi,
            "Create",
            extend_schema(request=part.create_input, responses={201: part.output}),
        ),
        endpoint(
            _PartUpdateApi,
            "Update",
            extend_schema(request=part.update_input, responses=part.output),
        ),
        endpoint(_PartDeleteApi, "Delete", extend_schema(request=None, responses={204: None})),
    )


LevelCreateApi, LevelUpdateApi, LevelDeleteApi = part_endpoints(LEVEL)
FamilyCreateApi, FamilyUpdateApi, FamilyDeleteApi = part_endpoints(FAMILY)
ConditionCreateApi, ConditionUpdateApi, ConditionDeleteApi = part_endpoints(CONDITION)
FactorCreateApi, FactorUpdateApi, FactorDeleteApi = part_endpoints(FACTOR)
ItemCreateApi, ItemUpdateApi, ItemDeleteApi = part_endpoints(ITEM)


class LevelScaleDefaultApi(APIView):
    """Give the version OPB-01 §2's level scale, L0 description … L5 execution."""

    @extend_schema(request=None, responses={201: LevelSerializer(many=True)})
    def post(self, request: Request, protocol_code: str, label: str) -> Response:
        levels = services.level_scale_default_create(version=_writer(request, protocol_code, label))
        return Response(
            [LEVEL.output_of(level) for level in levels], status=status.HTTP_201_CREATED
        )


# Cells


class CellSaveApi(APIView):
    """Write an item's cell at a level (create or replace) with its scoring key in order.
    A cell above the family's binding stopping rule is refused with the rule named."""

    @extend_schema_serializer(component_name="CellSaveInput")
    class InputSerializer(serializers.Serializer[Any]):
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
        expected_kind = serializers.ChoiceField(
            choices=["", "text", "json"],
            required=False,
            allow_null=True,
            default=None,
            help_text="The expected output's kind, which an oracle scorer compares responses "
            'with: "text", "json", or "" for none; omitted: the expected output is kept as it '
            "was.",
        )
        expected_output = serializers.JSONField(
            required=False,
            allow_null=True,
            default=None,
            help_text="The expected output: a string for text, any JSON value for json.",
        )

    @extend_schema_serializer(component_name="CellSaveOutput")
    class OutputSerializer(serializers.Serializer[Any]):
        item = serializers.CharField()
        level = serializers.CharField()
        prompt = serializers.CharField()
        absent = serializers.BooleanField()
        absent_reason = serializers.CharField()
        key = DesignKeyUnitSerializer(many=True)
        requires_tools = serializers.ListField(child=serializers.CharField())
        expected_kind = serializers.CharField()
        expected_output = serializers.JSONField(allow_null=True)
        expected_sha256 = serializers.CharField(
            allow_null=True, help_text="The hash the frozen version records (None: none)."
        )

    @extend_schema(request=InputSerializer, responses=OutputSerializer)
    def post(
        self, request: Request, protocol_code: str, label: str, item_code: str, level_code: str
    ) -> Response:
        item, level = _cell_place(request, protocol_code, label, item_code, level_code)
        values = _valid(self.InputSerializer, request)
        expected_kind, expected_output = values["expected_kind"], values["expected_output"]
        if expected_kind is None:  # omitted: kept as it was
            if expected_output is not None:
                raise ValidationError({"expected_kind": "Say whether the output is text or JSON."})
            kept = Cell.objects.filter(item=item, level=level).first()
            if kept is not None:
                expected_kind, expected_output = kept.expected_kind, kept.expected_output
        cell = services.cell_save(
            expected_kind=expected_kind or "",
            expected_output=expected_output,
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
                "expected_kind": cell.expected_kind,
                "expected_output": cell.expected_output,
                "expected_sha256": cell.expected_sha256,
            }
        )


class CellDeleteApi(APIView):
    @extend_schema(request=None, responses={204: None})
    def post(
        self, request: Request, protocol_code: str, label: str, item_code: str, level_code: str
    ) -> Response:
        item, level = _cell_place(request, protocol_code, label, item_code, level_code)
        cell = get_cell_for(item=item, level=level)
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

    @extend_schema_serializer(component_name="DesignImportInput")
    class InputSerializer(serializers.Serializer[Any]):
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
    def post(self, request: Request, protocol_code: str, label: str) -> Response:
        version = _writer(request, protocol_code, label)
        data = _valid(self.InputSerializer, request)
        upload = data["file"]
        fmt = import_format_for(upload.name, data.get("format", ""))
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
                actor=_user(request),
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
    def get(self, request: Request, protocol_code: str, label: str, fmt: str) -> HttpResponse:
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
    def get(self, request: Request, protocol_code: str, label: str) -> Response:
        version = _reader(request, protocol_code, label)
        states = item_harm_states(version)
        body = []
        for item in items_of(version):
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

    @extend_schema_serializer(component_name="HarmReviewOpenOutput")
    class OutputSerializer(serializers.Serializer[Any]):
        opened = serializers.ListField(child=serializers.CharField())

    @extend_schema(request=None, responses={201: OutputSerializer})
    def post(self, request: Request, protocol_code: str, label: str) -> Response:
        version = _writer(request, protocol_code, label, roles={Role.PI})
        opened = services.harm_review_open(version=version)
        codes = sorted({review.item.code for review in opened})
        return Response({"opened": codes}, status=status.HTTP_201_CREATED)


class HarmReviewThirdApi(APIView):
    """Give an item's disagreement to a third reviewer who was neither of the first two."""

    @extend_schema(request=None, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, protocol_code: str, label: str, code: str) -> Response:
        version = _writer(request, protocol_code, label, roles={Role.PI})
        review = services.harm_review_third_assign(item=get_item_for(version=version, code=code))
        return Response(
            {"item": code, "round": review.round, "reviewer": review.reviewer.get_username()},
            status=status.HTTP_201_CREATED,
        )


class HarmReviewQueueApi(APIView):
    """The caller's harm-constancy reviews waiting for a verdict, by opaque token only."""

    @extend_schema_serializer(component_name="HarmReviewQueueOutput")
    class OutputSerializer(serializers.Serializer[Any]):
        token = serializers.CharField()

    @extend_schema(responses=OutputSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(
            [{"token": review.token} for review in harm_reviews_pending_for(_user(request))]
        )


class HarmReviewTaskApi(APIView):
    """One review task: the two forms and the criteria — nothing about item, family or study."""

    @extend_schema_serializer(component_name="HarmReviewTaskOutput")
    class OutputSerializer(serializers.Serializer[Any]):
        token = serializers.CharField()
        forms = serializers.ListField(child=serializers.DictField())
        criteria = serializers.ListField(child=serializers.DictField())
        forms_sha256 = serializers.CharField()
        submitted = serializers.BooleanField()

    @extend_schema(responses=OutputSerializer)
    def get(self, request: Request, token: str) -> Response:
        review = get_harm_review_for(user=_user(request), token=token)
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

    @extend_schema_serializer(component_name="HarmReviewSubmitInput")
    class InputSerializer(serializers.Serializer[Any]):
        verdict = serializers.ChoiceField(choices=HarmVerdict.choices)
        criteria = serializers.ListField(
            child=serializers.CharField(), required=False, default=list
        )
        note = serializers.CharField(required=False, allow_blank=True, default="")
        forms_sha256 = serializers.CharField()

    @extend_schema(request=InputSerializer, responses={201: None})
    def post(self, request: Request, token: str) -> Response:
        review = get_harm_review_for(user=_user(request), token=token)
        data = _valid(self.InputSerializer, request)
        services.harm_review_submit(review=review, reviewer=_user(request), **data)
        return Response(status=status.HTTP_201_CREATED)
