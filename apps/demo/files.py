"""The files a demo study imports, written as its harness or its authors would write them."""

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

from apps.accounts.models import User
from apps.items.services import design_import
from apps.protocols.models import ProtocolVersion

# The columns of a design file (apps/items/importing: one row per item × level).
DESIGN_COLUMNS = ["family", "item", "domain", "level", "prompt", "key"]


def csv_bytes(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> bytes:
    """A CSV file's UTF-8 bytes: ``header``, then every row, each line ended by ``\\n`` (the
    same bytes on every platform, so a second import of a demo file is the importer's no-op)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def demo_design_import(
    *, version: ProtocolVersion, user: User, rows: Iterable[Sequence[Any]], filename: str
) -> None:
    """Import a demo's design into the draft ``version`` through the ordinary design importer:
    ``rows`` of ``DESIGN_COLUMNS`` (family, item, domain, level, prompt, key), as the file
    ``filename``. Raises what ``design_import`` raises for a row it refuses."""
    design_import(
        version=version,
        content=csv_bytes(DESIGN_COLUMNS, rows),
        fmt="csv",
        actor=user,
        filename=filename,
    )
