from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.selectors import user_roles


class MeApi(APIView):
    """Who the caller is and which roles they hold on any protocol."""

    @extend_schema_serializer(component_name="Me")
    class OutputSerializer(serializers.Serializer):
        username = serializers.CharField()
        roles = serializers.ListField(child=serializers.CharField())

    @extend_schema(responses=OutputSerializer)
    def get(self, request):
        data = {
            "username": request.user.get_username(),
            "roles": sorted(user_roles(user=request.user)),
        }
        return Response(self.OutputSerializer(data).data)
