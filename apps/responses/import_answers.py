"""How the file-import endpoints ask and answer (responses, machine scores): one input (the
file, its mapping as JSON, a note, ``?dry_run``), one shape for a refused file and for an outcome,
so a client reads every import the same way (docs/import-formats.md).
"""

from collections.abc import Callable
from typing import Any

from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.core.apis import validated
from apps.core.inputs import json_loads
from apps.protocols.import_frame import ImportOutcome, ImportRejected
from apps.responses.forms import upload_size_problem


class FileImportInput(serializers.Serializer):
    """The multipart fields every file import takes; an endpoint's own input adds to them."""

    file = serializers.FileField()
    mapping = serializers.CharField(required=False, allow_blank=True)
    note = serializers.CharField(required=False, allow_blank=True, max_length=500)

    def validate_mapping(self, value: str) -> dict | None:
        if not value:
            return None
        try:
            mapping = json_loads(value)
        except (ValueError, RecursionError) as error:
            raise serializers.ValidationError("The mapping is not JSON.") from error
        if not isinstance(mapping, dict):
            raise serializers.ValidationError("The mapping is a JSON object.")
        return mapping


def dry_run_asked(request: Request) -> bool:
    """Whether ``?dry_run`` asks to check and preview only (1, true or yes)."""
    return request.query_params.get("dry_run", "").lower() in ("1", "true", "yes")


def file_import_input(
    request: Request, input_class: type[FileImportInput]
) -> tuple[Any, dict[str, Any], bool]:
    """The upload, the validated fields and whether it is a dry run; raises DRF's
    ValidationError (400) for bad fields or a file over the upload limit."""
    data = validated(input_class, request.data)
    upload = data["file"]
    if problem := upload_size_problem(upload):
        raise serializers.ValidationError({"file": [problem]})
    return upload, data, dry_run_asked(request)


def file_import_answer(
    run: Callable[[], ImportOutcome[Any]], described: Callable[[Any], dict[str, Any]]
) -> Response:
    """Run the import and answer: 400 with every problem (``refused_import_answer``), else the
    outcome (``import_outcome_body``) and, when there is an import record, ``described(record)``
    (201 when imported now, 200 for a dry run or a file imported before)."""
    try:
        outcome = run()
    except ImportRejected as rejected:
        return refused_import_answer(rejected)
    body = import_outcome_body(outcome)
    if outcome.record is not None:
        body.update(described(outcome.record))
    return import_answer(body)


def refused_import_answer(rejected: ImportRejected) -> Response:
    """400 with ``detail``, ``errors`` (each problem's row, field and message, at most the first
    hundred) and ``error_count`` (all of them): nothing was written."""
    return Response(
        {
            "detail": f"{rejected.nothing_imported}.",
            "errors": [problem.as_dict() for problem in rejected.problems],
            "error_count": rejected.total,
        },
        status=status.HTTP_400_BAD_REQUEST,
    )


def import_outcome_body(outcome: Any) -> dict[str, Any]:
    """``status`` (imported, duplicate or dry_run), ``message``, ``counts``, and for a dry run
    its ``preview``; the caller adds what its import records."""
    body: dict[str, Any] = {
        "status": outcome.status,
        "message": outcome.message,
        "counts": outcome.counts,
    }
    if outcome.status == "dry_run":
        body["preview"] = outcome.preview
    return body


def import_answer(body: dict[str, Any]) -> Response:
    """201 when the file was imported now, 200 for a dry run or a file imported before."""
    created = body["status"] == "imported"
    return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
