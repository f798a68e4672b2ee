"""API plumbing shared by every app: the exception handler.

Services raise ``django.core.exceptions.ValidationError`` for bad input, ``apps.core.errors``
``NotFound`` for what the user may not know exists, and the database guards raise
``preregistry:`` errors for refused writes; all become clear 4xx answers, never a 500.
"""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError
from rest_framework import exceptions, parsers, serializers, status
from rest_framework.response import Response
from rest_framework.utils.serializer_helpers import BindingDict
from rest_framework.views import exception_handler as drf_exception_handler

from apps.core.dbguards import is_guard_refusal
from apps.core.errors import NotFound


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
    elif isinstance(exc, NotFound):
        exc = exceptions.NotFound(str(exc))
    elif isinstance(exc, DatabaseError) and is_guard_refusal(exc):
        message = str(exc).split("preregistry:", 1)[1].splitlines()[0].strip()
        return Response({"detail": message}, status=status.HTTP_409_CONFLICT)
    return drf_exception_handler(exc, context)


def _text_problem(text: str) -> str | None:
    """What makes a string unstorable, or None: a NUL character (PostgreSQL cannot store it) or
    a lone surrogate such as ``\\ud800`` (valid JSON escape, but no character: not UTF-8)."""
    if "\x00" in text:
        return "text may not contain a NUL character (U+0000)"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            return (
                f"text may not contain a lone surrogate (U+{ord(text[error.start]):04X}): "
                "send a whole character"
            )
    return None


def _bad_text(value, path: str = "") -> tuple[str, str] | None:
    """``(path, problem)`` of the first string (key or value) in parsed JSON that cannot be
    stored (``_text_problem``), or None."""
    if isinstance(value, str):
        problem = _text_problem(value)
        return None if problem is None else (path or "body", problem)
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if (problem := _text_problem(str(key))) is not None:
                return where.encode("utf-8", "backslashreplace").decode(), problem
            if found := _bad_text(item, where):
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            if found := _bad_text(item, f"{path}[{index}]"):
                return found
    return None


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, also answering 400 (not 500) to JSON nested deeper than Python reads
    and to text that cannot be stored: a NUL character (U+0000), which PostgreSQL refuses, or a
    lone surrogate escape (``"\\ud800"``), which is not a character."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - nested too deeply") from None
        try:
            found = _bad_text(data)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - nested too deeply") from None
        if found is not None:
            where, problem = found
            raise exceptions.ParseError(f"{where}: {problem}")
        return data


class JSONField(serializers.JSONField):
    """DRF's JSONField, also refusing (not crashing on) a form value holding JSON nested deeper
    than Python reads."""

    def to_internal_value(self, data):
        try:
            return super().to_internal_value(data)
        except RecursionError:
            self.fail("invalid")


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
