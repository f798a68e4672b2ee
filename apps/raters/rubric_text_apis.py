"""The rubric text's API, keyed by protocol code and version label: set a draft version's
rubric text, publish it once frozen. The text itself is read at ``/api/v1/blob/<sha256>``.

Any rubric may have a text (``apps.raters.services.rubric_text``); seed 003's injection-fidelity
rubric was the first to need one, whence the module's old name, ``fidelity_apis``.
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Role
from apps.core.apis import validated
from apps.protocols.access import get_version_by_label_for
from apps.raters.models import RubricPublication, RubricText
from apps.raters.services.rubric_text import (
    MAX_RUBRIC_TEXT_BYTES,
    rubric_text_publish,
    rubric_text_set,
)


def _address(sha256: str) -> dict:
    return {
        "sha256": sha256,
        "url": f"/api/v1/blob/{sha256}",
        "short_url": f"/api/v1/blob/{sha256[:16]}",
    }


def _status(version) -> dict:
    text = RubricText.objects.filter(version=version).first()
    if text is None:
        return {"sha256": None, "published": False}
    published = RubricPublication.objects.filter(sha256=text.sha256).exists()
    return {**_address(text.sha256), "published": published}


class RubricTextApi(APIView):
    """GET: the version's rubric text address and whether it is public (PI, editor, auditor).
    PUT ``{"text": …}``: store the draft version's rubric text as its own blob (PI, editor)."""

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def get(self, request, code: str, label: str):
        version = get_version_by_label_for(
            user=request.user, code=code, label=label, roles=(Role.PI, Role.EDITOR, Role.AUDITOR)
        )
        return Response(_status(version))

    @extend_schema_serializer(component_name="RubricTextInput")
    class InputSerializer(serializers.Serializer):
        text = serializers.CharField(max_length=MAX_RUBRIC_TEXT_BYTES, trim_whitespace=False)

    @extend_schema(request=InputSerializer, responses=OpenApiTypes.OBJECT)
    def put(self, request, code: str, label: str):
        version = get_version_by_label_for(
            user=request.user, code=code, label=label, roles=(Role.PI, Role.EDITOR)
        )
        data = validated(self.InputSerializer, request.data)
        row = rubric_text_set(version=version, text=data["text"])
        return Response(_address(row.sha256))


class RubricTextPublishApi(APIView):
    """GET: whether the rubric text is public (PI, editor, auditor). POST: make the frozen
    version's rubric text public at its content address (PI only)."""

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def get(self, request, code: str, label: str):
        version = get_version_by_label_for(
            user=request.user, code=code, label=label, roles=(Role.PI, Role.EDITOR, Role.AUDITOR)
        )
        return Response(_status(version))

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request, code: str, label: str):
        version = get_version_by_label_for(
            user=request.user, code=code, label=label, roles=(Role.PI,)
        )
        publication = rubric_text_publish(version=version, user=request.user)
        return Response(
            {**_address(publication.sha256), "published_at": publication.published_at},
            status=status.HTTP_201_CREATED,
        )
