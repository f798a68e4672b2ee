"""The public registry's API under ``/api/v1/registry/…`` (read-only, anonymous, throttled)
and the PI's writes (publish, end an embargo, view-only links).

Public reads answer 404 for anything unpublished exactly as for unknown things. Immutable
answers (a public version's DataCite metadata, a published run) carry their hash as ``ETag``
and a year-long ``Cache-Control``; the rest a short one.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView

from apps.accounts.access import signed_in_user
from apps.analysis.selectors import result_document
from apps.core.apis import validated
from apps.deviations.checkpoints import public_keys
from apps.protocols.models import ProtocolVersion
from apps.registry import access, citation, selectors, services
from apps.registry.forms import IndexSearchForm
from apps.registry.models import Publication
from apps.registry.views import IMMUTABLE_CACHE, SHORT_CACHE, citable


class PublicApi(APIView):
    """Anonymous (no authentication is even read), read-only, throttled per address (the
    ``anon`` rate, ``API_THROTTLE_ANON``)."""

    permission_classes = [AllowAny]
    authentication_classes: list = []
    throttle_classes = [AnonRateThrottle]

    @staticmethod
    def cached(response: Response, *, etag: str | None = None, immutable: bool = False):
        if etag:
            response["ETag"] = f'"{etag}"'
        response["Cache-Control"] = IMMUTABLE_CACHE if immutable else SHORT_CACHE
        return response

    @staticmethod
    def not_modified(request: Request, etag: str) -> bool:
        tags = {
            t.strip().removeprefix("W/")
            for t in request.headers.get("If-None-Match", "").split(",")
        }
        return f'"{etag}"' in tags


def _version_data(request: Request, version: ProtocolVersion) -> dict[str, Any]:
    code, label = version.protocol.code, version.label
    publication: Publication = version.publication
    withdrawal = getattr(version, "withdrawal", None)
    successor = selectors.is_superseded_publicly(version)
    unsealing = getattr(version, "unsealing", None)
    return {
        "code": code,
        "title": version.protocol.title,
        "label": label,
        "status": "withdrawn" if withdrawal else ("superseded" if successor else "frozen"),
        "sha256": version.sha256,
        "frozen_at": version.frozen_at,
        "public_since": publication.public_since,
        "authors": publication.authors,
        "url": request.build_absolute_uri(reverse("registry:version", args=[code, label])),
        "document_url": None
        if withdrawal
        else request.build_absolute_uri(reverse("protocols-api:blob", args=[version.sha256])),
        "superseded_by": successor.label if successor else None,
        "withdrawn_at": withdrawal.withdrawn_at if withdrawal else None,
        "withdrawal_reason": withdrawal.reason if withdrawal else None,
        "outcomes_first_unsealed_at": unsealing.unsealed_at if unsealing else None,
    }


@extend_schema_serializer(component_name="PublicVersion")
class PublicVersionSerializer(serializers.Serializer):
    code = serializers.CharField()
    title = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    status = serializers.ChoiceField(choices=["frozen", "superseded", "withdrawn"])
    sha256 = serializers.CharField()
    frozen_at = serializers.DateTimeField()
    public_since = serializers.DateTimeField()
    authors = serializers.CharField()
    url = serializers.URLField(help_text="The stable URL: the version's identifier.")
    document_url = serializers.URLField(allow_null=True, help_text="Null for a tombstone.")
    superseded_by = serializers.CharField(allow_null=True)
    withdrawn_at = serializers.DateTimeField(allow_null=True)
    withdrawal_reason = serializers.CharField(allow_null=True)
    outcomes_first_unsealed_at = serializers.DateTimeField(
        allow_null=True, help_text="Null: outcomes not yet seen."
    )


class PublicProtocolListApi(PublicApi):
    """Every public protocol, most recently published first; searchable and paged."""

    @extend_schema_serializer(component_name="PublicProtocolSummary")
    class OutputSerializer(serializers.Serializer):
        code = serializers.CharField()
        title = serializers.CharField()
        template = serializers.CharField()
        last_public_since = serializers.DateTimeField()
        url = serializers.URLField()

    @extend_schema(
        parameters=[
            OpenApiParameter("q", str, description="text in the code or title"),
            OpenApiParameter("template", str, description="plan template"),
            OpenApiParameter("published_from", OpenApiTypes.DATE),
            OpenApiParameter("published_to", OpenApiTypes.DATE),
            OpenApiParameter("page", int),
        ],
        responses=OutputSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        form = IndexSearchForm(request.query_params)
        if not form.is_valid():
            raise ValidationError(form.errors.get_json_data())
        page = Paginator(
            selectors.registry_index(query=form.query()), selectors.INDEX_PAGE_SIZE
        ).get_page(request.query_params.get("page"))
        rows = [
            {
                "code": p.code,
                "title": p.title,
                "template": p.template,
                "last_public_since": getattr(p, "last_public_since", None),
                "url": request.build_absolute_uri(reverse("registry:protocol", args=[p.code])),
            }
            for p in page
        ]
        response = Response(self.OutputSerializer(rows, many=True).data)
        response["X-Total-Count"] = str(page.paginator.count)
        return self.cached(response)


class PublicProtocolApi(PublicApi):
    """A public protocol and every one of its public versions (tombstones included)."""

    @extend_schema_serializer(component_name="PublicProtocol")
    class OutputSerializer(serializers.Serializer):
        code = serializers.CharField()
        title = serializers.CharField()
        authors = serializers.CharField()
        versions = PublicVersionSerializer(many=True)

    @extend_schema(responses=OutputSerializer)
    def get(self, request: Request, code: str) -> Response:
        protocol = access.get_public_protocol(code=code)
        versions = selectors.protocol_public_versions(protocol=protocol)
        data = {
            "code": protocol.code,
            "title": protocol.title,
            "authors": selectors.protocol_authors(protocol=protocol),
            "versions": [_version_data(request, v) for v in versions],
        }
        return self.cached(Response(self.OutputSerializer(data).data))


class PublicVersionApi(PublicApi):
    """One public version: hash, freeze, seal, publication, tombstone."""

    @extend_schema(responses=PublicVersionSerializer)
    def get(self, request: Request, code: str, label: str) -> Response:
        version = access.get_public_version(code=code, label=label)
        return self.cached(Response(PublicVersionSerializer(_version_data(request, version)).data))


class PublicDataciteApi(PublicApi):
    """The version's DataCite metadata (schema 4.5 JSON, the REST API's ``attributes``)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, code: str, label: str) -> Response:
        version = access.get_public_version(code=code, label=label)
        if self.not_modified(request, version.sha256):
            return self.cached(Response(status=304), etag=version.sha256, immutable=True)
        data = citation.datacite_metadata(citable(request, version))
        return self.cached(Response(data), etag=version.sha256, immutable=True)


class PublicLogApi(PublicApi):
    """A public protocol's whole log (entries as hashed), its signed checkpoints and the public
    key: what the offline verifiers read."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, code: str) -> Response:
        protocol = access.get_public_protocol(code=code)
        data = {
            "protocol": protocol.code,
            "entries": list(selectors.public_log_lines(protocol=protocol)),
            "checkpoints": selectors.public_checkpoints(protocol=protocol),
            "signing_key": public_keys(),
        }
        return self.cached(Response(data))


class PublicRunApi(PublicApi):
    """A published analysis run: its hashes and result document."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, code: str, label: str, number: int) -> Response:
        run = access.get_public_run(code=code, label=label, number=number)
        result_sha256 = run.result_id or ""
        if self.not_modified(request, result_sha256):
            return self.cached(Response(status=304), etag=result_sha256, immutable=True)
        data = {
            "code": code,
            "label": label,
            "number": run.number,
            "kind": run.kind,
            "protocol_sha256": run.protocol_sha256,
            "input_sha256": run.inputs_id,
            "result_sha256": run.result_id,
            "seed": run.seed,
            "parameters": run.parameters,
            "finished_at": run.finished_at,
            "result": result_document(run),
        }
        return self.cached(Response(data), etag=result_sha256, immutable=True)


# -- the PI's writes --------------------------------------------------------------------------


@extend_schema_serializer(component_name="Publication")
class PublicationSerializer(serializers.Serializer):
    version = serializers.CharField(source="version.label")
    published_at = serializers.DateTimeField()
    embargo_until = serializers.DateField(allow_null=True)
    public_since = serializers.DateTimeField(allow_null=True)
    authors = serializers.CharField()


class PublishApi(APIView):
    """Publish a frozen version (PI): now, or under an embargo up to four years ahead."""

    @extend_schema_serializer(component_name="PublishInput")
    class InputSerializer(serializers.Serializer):
        embargo_until = serializers.DateField(
            required=False, allow_null=True, help_text="UTC day the embargo ends; omit: now."
        )
        authors = serializers.CharField(required=False, allow_blank=True, max_length=300)

    @extend_schema(request=InputSerializer, responses={201: PublicationSerializer})
    def post(self, request: Request, code: str, label: str) -> Response:
        version = access.get_version_to_publish_for(
            user=signed_in_user(request), code=code, label=label
        )
        data = validated(self.InputSerializer, request.data)
        publication = services.version_publish(
            version=version,
            user=signed_in_user(request),
            embargo_until=data.get("embargo_until"),
            authors=data.get("authors", ""),
        )
        return Response(PublicationSerializer(publication).data, status=201)


class EmbargoEndApi(APIView):
    """End a version's embargo now (PI)."""

    @extend_schema(request=None, responses=PublicationSerializer)
    def post(self, request: Request, code: str, label: str) -> Response:
        version = access.get_version_to_publish_for(
            user=signed_in_user(request), code=code, label=label
        )
        publication = Publication.objects.filter(version=version).first()
        if publication is None:
            raise NotFound("This version is not published.")
        publication = services.embargo_end(publication=publication, user=signed_in_user(request))
        return Response(PublicationSerializer(publication).data)


@extend_schema_serializer(component_name="ViewLink")
class ViewLinkSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    version = serializers.CharField(source="version.label")
    anonymised = serializers.BooleanField()
    note = serializers.CharField()
    created_at = serializers.DateTimeField()
    first_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)
    url = serializers.SerializerMethodField()

    def get_url(self, link) -> str:
        return self.context["request"].build_absolute_uri(
            reverse("registry:view-link", args=[link.token])
        )


class ViewLinkCreateApi(APIView):
    """Create a view-only link to one of this protocol's frozen versions (PI)."""

    @extend_schema_serializer(component_name="ViewLinkInput")
    class InputSerializer(serializers.Serializer):
        version = serializers.CharField(help_text="The version's label, e.g. 1.0.")
        anonymised = serializers.BooleanField(default=False)
        note = serializers.CharField(required=False, allow_blank=True, max_length=200)

    @extend_schema(request=InputSerializer, responses={201: ViewLinkSerializer})
    def post(self, request: Request, code: str) -> Response:
        access.get_protocol_to_publish_for(user=signed_in_user(request), code=code)
        data = validated(self.InputSerializer, request.data)
        version = access.get_version_to_publish_for(
            user=signed_in_user(request), code=code, label=data["version"]
        )
        link = services.view_link_create(
            version=version,
            user=signed_in_user(request),
            anonymised=data["anonymised"],
            note=data.get("note", ""),
        )
        return Response(ViewLinkSerializer(link, context={"request": request}).data, status=201)


class ViewLinkRevokeApi(APIView):
    """Revoke a view-only link (PI); it answers 404 from then on."""

    @extend_schema(request=None, responses=ViewLinkSerializer)
    def post(self, request: Request, code: str, pk: int) -> Response:
        link = access.get_view_link_for(user=signed_in_user(request), code=code, pk=pk)
        link = services.view_link_revoke(link=link, user=signed_in_user(request))
        return Response(ViewLinkSerializer(link, context={"request": request}).data)
