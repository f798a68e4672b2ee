"""Route choice's fixtures, by API."""

from typing import cast

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import User
from apps.analysis.access import READ_ROLES, get_analysis_version_for
from apps.studies.paired_blocks.pipeline import fixtures_document


class RouteFixturesApi(APIView):
    """Seed 002's fixtures with their SHA-256s (the frozen document's ``route_fixtures``): each
    task's input and required output, each factor level's wording and tool schema. PI and
    auditors; 404 for a plan that is not ``paired_blocks``."""

    @extend_schema(responses={200: OpenApiResponse(OpenApiTypes.OBJECT)})
    def get(self, request: Request, code: str, label: str) -> Response:
        # IsAuthenticated, the API's default: never anonymous here.
        user = cast(User, request.user)
        version = get_analysis_version_for(user=user, code=code, label=label, roles=READ_ROLES)
        document = fixtures_document(version)
        if document is None:
            raise Http404("This plan has no route-choice fixtures.")
        return Response(document)
