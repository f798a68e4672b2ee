"""API plumbing shared by every app: the exception handler.

Services raise ``django.core.exceptions.ValidationError`` for bad input and the database guards
raise ``preregistry:`` errors for refused writes; both become clear 4xx answers, never a 500.
"""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError
from rest_framework import exceptions, parsers, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from apps.core.dbguards import is_guard_refusal


def validation_error_detail(error: DjangoValidationError) -> dict | list:
    """The JSON shape of a Django ValidationError: ``{field: [messages]}`` or ``[messages]``."""
    if hasattr(error, "error_dict"):
        return {
            field: [m for e in errs for m in e.messages] for field, errs in error.error_dict.items()
        }
    return {"detail": error.messages}


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(validation_error_detail(exc))
    elif isinstance(exc, DatabaseError) and is_guard_refusal(exc):
        message = str(exc).split("preregistry:", 1)[1].splitlines()[0].strip()
        return Response({"detail": message}, status=status.HTTP_409_CONFLICT)
    return drf_exception_handler(exc, context)


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, also answering 400 (not 500) to JSON nested deeper than Python reads."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - nested too deeply") from None


class JSONField(serializers.JSONField):
    """DRF's JSONField, also refusing (not crashing on) a form value holding JSON nested deeper
    than Python reads."""

    def to_internal_value(self, data):
        try:
            return super().to_internal_value(data)
        except RecursionError:
            self.fail("invalid")
