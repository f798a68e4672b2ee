"""CRUCIBLE's battery manifest, by API."""

import json
from typing import cast

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Role, User
from apps.analysis.access import get_analysis_version_for
from apps.studies.crucible.manifest import crucible_manifest_bytes, is_crucible


class CrucibleManifestApi(APIView):
    """A CRUCIBLE version's battery manifest (seed 001 §3–§5) with its SHA-256 and blob URL."""

    @extend_schema(responses={200: OpenApiResponse(OpenApiTypes.OBJECT)})
    def get(self, request: Request, code: str, label: str) -> Response:
        version = get_analysis_version_for(
            user=cast(User, request.user),  # IsAuthenticated: the API's default
            code=code,
            label=label,
            roles={Role.PI, Role.EDITOR, Role.AUDITOR},
        )
        if not is_crucible(version):
            raise Http404("This version's plan is not a CRUCIBLE study.")
        content, digest = crucible_manifest_bytes(version)
        return Response(
            {
                "sha256": digest,
                "blob": f"/api/v1/blob/{digest}" if version.state != "draft" else None,
                "manifest": json.loads(content),
            }
        )
