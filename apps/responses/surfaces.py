"""OPB-01 §6.3 and the L5 capability invariant: what a surface (evaluand) can and cannot do.

- ``session_guarantee_record``: a surface's fresh-session guarantee (yes, no or unknown, with a
  note), recorded once, shown beside the surface's results in the OPB report.
- ``l5_tool_problems``: the freeze gate's check of §2's binding invariant — "L5 never means
  external tool use or connector-mediated action". An evaluand's toolkit lists a tool as
  external when its entry is an object with ``"external": true`` (or ``"kind": "connector"``),
  e.g. ``{"name": "web_search", "external": true}``. An L5 cell declares the tools and
  connectors its key requires (``Cell.requires_tools``, a list of names); one that requires a
  tool an enrolled evaluand lists as external is refused, naming the cell, the tool and the
  evaluand. Names are compared exactly: the declaration, not the key's wording, is checked.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from apps.accounts.models import User
from apps.items.models import Cell
from apps.protocols.components import Problem
from apps.protocols.models import ProtocolVersion
from apps.responses.models import Evaluand, FreshSession, RosterEntry, SessionGuarantee

L5 = 5


@transaction.atomic
def session_guarantee_record(
    *, evaluand: Evaluand, user: User | None, fresh_session: str, note: str = ""
) -> SessionGuarantee:
    """Record whether ``evaluand`` guarantees a fresh session (§6.3); once per evaluand.

    Raises ValidationError naming the field for a value other than yes, no or unknown, or when
    the evaluand already has its record (it is kept, like the evaluand itself).
    """
    if fresh_session not in FreshSession.values:
        raise ValidationError(
            {"fresh_session": f"{fresh_session!r} is not one of {', '.join(FreshSession.values)}"}
        )
    if SessionGuarantee.objects.filter(evaluand=evaluand).exists():
        raise ValidationError(
            {"fresh_session": f"evaluand {evaluand.label} already has its fresh-session record"}
        )
    record = SessionGuarantee(
        evaluand=evaluand, fresh_session=fresh_session, note=note.strip(), recorded_by=user
    )
    record.full_clean()
    try:
        # Two submits at once both pass the check above; the second insert then meets the
        # first's row (a unique evaluand) and is refused like a second record, not a 500. The
        # savepoint keeps the caller's transaction usable.
        with transaction.atomic():
            record.save()
    except IntegrityError:
        raise ValidationError(
            {"fresh_session": f"evaluand {evaluand.label} already has its fresh-session record"}
        ) from None
    return record


def external_tools(toolkit) -> list[str]:
    """The names a toolkit lists as external tools or connectors."""
    out = []
    for entry in toolkit if isinstance(toolkit, list) else []:
        named = isinstance(entry, dict) and isinstance(entry.get("name"), str)
        if named and (entry.get("external") is True or entry.get("kind") == "connector"):
            out.append(entry["name"])
    return out


def l5_tool_problems(version: ProtocolVersion, url: str) -> Iterator[Problem]:
    """``l5_requires_external_tool`` for every L5 cell that declares it requires a tool an
    enrolled evaluand's toolkit lists as external (module docstring)."""
    tools: dict[str, list[str]] = {}
    for entry in RosterEntry.objects.filter(version=version).select_related("evaluand"):
        for tool in external_tools(entry.evaluand.toolkit):
            tools.setdefault(tool, []).append(entry.code)
    if not tools:
        return
    cells = (
        Cell.objects.filter(version=version, absent=False, level__ordinal=L5)
        .select_related("item", "level")
        .order_by("item__code")
    )
    for cell in cells:
        for tool in sorted(set(cell.requires_tools) & tools.keys()):
            yield Problem(
                "l5_requires_external_tool",
                f"item {cell.item.code} at {cell.level.code} requires {tool}, which the "
                f"toolkit of evaluand {', '.join(tools[tool])} lists as external: L5 never "
                "means external tool use or connector-mediated action (OPB-01 §2)",
                url,
            )
