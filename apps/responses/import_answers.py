"""How the file-import endpoints answer (responses, machine scores): one shape for a refused
file and for an outcome, so a client reads every import the same way (docs/import-formats.md).
"""

from typing import Any

from rest_framework import status
from rest_framework.response import Response

from apps.protocols.import_frame import ImportRejected


def refused_import_answer(rejected: ImportRejected) -> Response:
    """400 with ``detail``, ``errors`` (each problem's row, field and message, at most the first
    hundred) and ``error_count`` (all of them): nothing was written."""
    return Response(
        {
            "detail": f"Nothing was imported: {rejected.total} problem(s).",
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
