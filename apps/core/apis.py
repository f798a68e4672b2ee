"""API plumbing shared by every app: the exception handler.

Services raise ``django.core.exceptions.ValidationError`` for bad input, ``apps.core.errors``
``NotFound`` for what the user may not know exists, and the database guards raise
``preregistry:`` errors for refused writes; all become clear 4xx answers, never a 500.
"""

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError
from rest_framework import exceptions, parsers, serializers, status
from rest_framework.response import Response
from rest_framework.utils.serializer_helpers import BindingDict
from rest_framework.views import exception_handler as drf_exception_handler

from apps.core.dbguards import is_guard_refusal, unique_violation_message
from apps.core.errors import NotFound, StateConflict
from apps.core.inputs import JSON_MAX_DEPTH, json_problem


def validation_error_detail(error: DjangoValidationError) -> dict | list:
    """The JSON shape of a Django ValidationError: ``{field: [messages]}`` or ``[messages]``."""
    if hasattr(error, "error_dict"):
        return {
            field: [m for e in errs for m in e.messages] for field, errs in error.error_dict.items()
        }
    return {"detail": error.messages}


def validated(serializer_class: type[serializers.Serializer], data: Any) -> Any:
    """``data`` (a request's body or query) as ``serializer_class`` validates it; a
    ValidationError (answered 400, naming each field) when it does not."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(validation_error_detail(exc))
    elif isinstance(exc, NotFound):
        exc = exceptions.NotFound(str(exc))
    elif isinstance(exc, StateConflict):
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    elif isinstance(exc, DatabaseError) and is_guard_refusal(exc):
        message = str(exc).split("preregistry:", 1)[1].splitlines()[0].strip()
        return Response({"detail": message}, status=status.HTTP_409_CONFLICT)
    elif isinstance(exc, DatabaseError) and (message := unique_violation_message(exc)):
        return Response({"detail": message}, status=status.HTTP_409_CONFLICT)
    return drf_exception_handler(exc, context)


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, also answering 400 (not 500) to JSON nested deeper or holding more
    values than ``apps.core.inputs`` allows (Python's reader raises RecursionError far below a
    100,000-deep body), and to text that cannot be stored: a NUL character (U+0000), which
    PostgreSQL refuses, or a lone surrogate escape (``"\\ud800"``), which is not a character. The
    one JSON parser of every API view (settings ``DEFAULT_PARSER_CLASSES``; a view that names its
    own parsers names this one)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError(
                f"JSON parse error - nested deeper than {JSON_MAX_DEPTH} levels"
            ) from None
        found = json_problem(data)
        if found is not None:
            where, problem = found
            raise exceptions.ParseError(f"{where}: {problem}")
        return data


class JSONField(serializers.JSONField):
    """DRF's JSONField, also refusing (not crashing on) a value nested deeper or larger than
    ``apps.core.inputs`` allows, or holding text that cannot be stored; the error names the
    path inside the field."""

    def to_internal_value(self, data):
        try:
            value = super().to_internal_value(data)
        except RecursionError:
            self.fail("invalid")
        found = json_problem(value)
        if found is not None:
            where, problem = found
            raise serializers.ValidationError(f"{where}: {problem}" if where else problem)
        return value


class PreboundSerializer(serializers.Serializer):
    """An input serializer whose fields are built and bound once per class, not per request.

    DRF builds a serializer's fields on every instance (a ``copy.deepcopy`` of the declared
    fields, then binding each): on the reviewer queue's score endpoint that was a tenth of the
    request's CPU (docs/performance.md, "Where a cycle's time goes"). Validation itself is DRF's,
    unchanged (``is_valid``, ``validated_data``, ``errors``, the same messages), because fields
    keep no state of their own between calls. Only for serializers whose fields read nothing from
    the instance — no ``context``, no ``partial``, no ``instance`` — which is what a request body
    checked before a service call is.
    """

    _prebound_fields: BindingDict | None = None  # set on each subclass at its first use

    @property  # type: ignore[override]
    def fields(self) -> BindingDict:
        cls = type(self)
        bound = cls.__dict__.get("_prebound_fields")
        if bound is None:
            template = cls.__new__(cls)
            serializers.Serializer.__init__(template)
            bound = serializers.Serializer.fields.func(template)  # type: ignore[attr-defined]
            cls._prebound_fields = bound
        return bound
