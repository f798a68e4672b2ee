"""What a real import can carry, as data: the shape of the computability gate's synthetic data
(issue #32 §3).

The gate used to invent whatever a pipeline reads — for seed 002, whole session records — so a
plan could name an endpoint that the gate's data held and no import ever would, pass, freeze,
and fail on its first run. The gate's synthetic data is now generated from the documented
import formats (docs/import-formats.md) only:

- a response import's record fields (``SESSION_ARCHIVE``, a JSON Lines object or an Inspect AI
  sample: the only formats whose records carry a session; a CSV row is flat text and carries
  none), passed through the importer's own extractor (``apps.responses.sessions.
  session_record``) into the typed columns an import stores (``SessionColumns``);
- the scores (the rubric's fields, from reviewers, scorers and the machine-score import).

``endpoint_sources`` says where each endpoint a plan names could come from, and
``unfillable_endpoints`` which ones no import can fill, so the gate refuses them by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class RecordField:
    """One field a session record may carry: its path in the record (JSON Lines key, or the
    Inspect sample's field), the stored column it fills (empty: none), and a synthetic value
    drawn from its documented domain."""

    path: str
    column: str
    meaning: str
    draw: Callable[[np.random.Generator, list[str]], Any]


def _tool_calls(rng: np.random.Generator, tools: list[str]) -> list[dict]:
    if not tools:
        return []
    return [{"function": tools[int(rng.integers(len(tools)))]}]


# docs/import-formats.md, "Session archives": every field below is listed there (a test holds
# the two together). Paths are dotted; ``messages[].tool_calls[].function`` is the tool called.
SESSION_ARCHIVE: tuple[RecordField, ...] = (
    RecordField(
        "messages[].tool_calls[].function",
        "tool_calls",
        "the tool each assistant message called, in order (also operations when "
        "metadata.operations is absent)",
        lambda rng, tools: _tool_calls(rng, tools),
    ),
    RecordField(
        "model_usage.<model>.total_tokens",
        "tokens",
        "tokens per model (else input_tokens + output_tokens), summed",
        lambda rng, tools: int(rng.integers(100, 2000)),
    ),
    RecordField(
        "metadata.operations",
        "operations",
        "operations the session performed",
        lambda rng, tools: int(rng.integers(1, 10)),
    ),
    RecordField(
        "metadata.cost_usd",
        "cost",
        "cost in US dollars",
        lambda rng, tools: round(float(rng.uniform(0, 0.01)), 5),
    ),
    RecordField(
        "metadata.interruptions",
        "interruptions",
        "interruptions the harness actually served",
        lambda rng, tools: int(rng.integers(0, 5)),
    ),
    RecordField(
        "metadata.aborted",
        "aborted",
        "the session was aborted (also an error or limit on the record)",
        lambda rng, tools: bool(rng.random() < 0.05),
    ),
    RecordField(
        "metadata.claimed_complete",
        "claimed_complete",
        "the session's own claim that it is done",
        lambda rng, tools: bool(rng.random() < 0.8),
    ),
    RecordField(
        "metadata.unsupported_blockers",
        "unsupported_blockers",
        "blockers the session cited that were never imposed",
        lambda rng, tools: int(rng.integers(0, 2)),
    ),
    RecordField(
        "metadata.infrastructure_failure",
        "infrastructure_failure",
        "transport, budget or provider; empty for none",
        lambda rng, tools: None,
    ),
    RecordField(
        "metadata.self_report",
        "",
        "the model's own account: kept, never an endpoint",
        lambda rng, tools: "synthetic self report",
    ),
)


def synthetic_session(rng: np.random.Generator, tools: list[str]) -> dict[str, Any]:
    """One session record holding every field of ``SESSION_ARCHIVE`` and nothing else, as a
    JSON Lines import would carry it (``tools``: the tool names the plan's mapping knows)."""
    record: dict[str, Any] = {}
    for spec in SESSION_ARCHIVE:
        value = spec.draw(rng, tools)
        if value is None:
            continue
        if spec.path.startswith("messages[]"):
            record["messages"] = [{"role": "assistant", "content": "", "tool_calls": value}]
        elif spec.path.startswith("model_usage."):
            record["model_usage"] = {"synthetic": {"total_tokens": value}}
        else:
            head, _, name = spec.path.partition(".")
            record.setdefault(head, {})[name] = value
    return record


def session_columns(record: dict[str, Any], terminal_outcome: str) -> dict[str, Any]:
    """The columns an import stores for ``record`` (``SessionColumns``), by the importer's own
    extractor. Raises ``apps.responses.sessions.RecordError`` as the import would."""
    from apps.responses.sessions import session_record

    return session_record(record, terminal_outcome).stored()


def session_columns_filled() -> set[str]:
    """The stored columns some documented record field fills."""
    return {spec.column for spec in SESSION_ARCHIVE if spec.column}


def unfillable_endpoints(endpoints: Iterable[str], sources: dict[str, str]) -> list[str]:
    """The endpoints in ``endpoints`` (in order, once) that no source in ``sources`` (endpoint
    name → where an import fills it) gives."""
    return [e for e in dict.fromkeys(endpoints) if e not in sources]
