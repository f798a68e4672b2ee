"""What the queue reads of a frozen version, read once per process and kept by the version's hash.

A frozen version cannot change (the ``frozen_with_version`` triggers refuse every write to its
parameters, rubric and rubric fields), so its rating plan and rubric, once read, stay true for as
long as the version exists. The queue used to read them again on every request (the plan twice
and the rubric fields three times per next + score cycle); here they are read once per process
and kept under ``(version id, SHA-256 of its frozen document)``. The id is part of the key
because two versions may share a hash (the same document frozen twice) while their rows differ.

A draft has no hash and is never cached: its plan and rubric are read afresh on each call.
"""

import threading
from dataclasses import dataclass
from typing import Any

from apps.protocols.models import ProtocolVersion
from apps.raters.models import FieldKind, Rubric, RubricField
from apps.raters.plan import RatingPlan, rating_plan
from apps.raters.values import FIDELITY_DERIVATIONS, field_default

# Frozen versions a process keeps; far above any real site's number of versions open at once.
_MAX_ENTRIES = 512


@dataclass(frozen=True)
class FrozenRating:
    """A version's rating plan and rubric, as the queue uses them.

    ``fields`` are all rubric fields in position order (derived ones included: the values check
    computes them); ``shown_fields`` is the reviewer-facing description of the typed fields, in
    the shape ``selectors.task_content`` returns; ``has_checklist`` says whether the cell's key
    units are needed to check or show a score; ``has_quote`` whether the response's text is
    needed to check one (a quote must occur in it); ``hidden_from_reviewer`` names the fields a
    reviewer is never shown of their own score (``values.reviewer_values``).
    """

    plan: RatingPlan
    fields: tuple[RubricField, ...]
    instructions: str
    shown_fields: tuple[dict[str, Any], ...]
    has_checklist: bool
    has_quote: bool
    hidden_from_reviewer: frozenset[str]


_cache: dict[tuple[int, str], FrozenRating] = {}
# The same entries by version id: a frozen version's hash never changes (the database refuses
# it), so a caller that has only the id of a version known to be frozen may use them.
_by_id: dict[int, FrozenRating] = {}
_lock = threading.Lock()


def shown_field(field: RubricField) -> dict[str, Any]:
    """A rubric field as a reviewer's task page and API describe it."""
    return {
        "name": field.name,
        "label": field.label,
        "kind": field.kind,
        "choices": [
            {"value": c["value"], "label": c["label"], "description": c.get("description", "")}
            for c in field.choices
        ],
        "required": field.required,
        "minimum": None if field.minimum is None else float(field.minimum),
        "maximum": None if field.maximum is None else float(field.maximum),
        "group": field.group,
        "help_text": field.help_text,
        "default": field_default(field),
    }


def _load(version: ProtocolVersion) -> FrozenRating:
    fields = tuple(RubricField.objects.filter(version_id=version.pk).order_by("position"))
    instructions = (
        Rubric.objects.filter(version_id=version.pk).values_list("instructions", flat=True).first()
        or ""
    )
    typed = [f for f in fields if not f.derivation]
    return FrozenRating(
        plan=rating_plan(version),
        fields=fields,
        instructions=instructions,
        has_quote=any(f.kind == FieldKind.QUOTE for f in typed),
        shown_fields=tuple(shown_field(f) for f in typed),
        has_checklist=any(f.kind == FieldKind.CHECKLIST for f in typed),
        hidden_from_reviewer=frozenset(
            f.name for f in fields if f.derivation in FIDELITY_DERIVATIONS
        ),
    )


def frozen_rating(
    *, version_id: int, sha256: str = "", version: ProtocolVersion | None = None
) -> FrozenRating:
    """The rating plan and rubric of version ``version_id``; read from the database the first
    time a process asks for a frozen version (``sha256`` given), from memory afterwards (also
    when asked by id alone, once the version has been read frozen).

    ``version`` may be passed when the caller has the row already; otherwise it is read.
    Raises ``ProtocolVersion.DoesNotExist`` for an unknown id.
    """
    key = (version_id, sha256)
    found = _cache.get(key) if sha256 else _by_id.get(version_id)
    if found is not None:
        return found
    if version is None:
        version = ProtocolVersion.objects.only("pk", "sha256", "state").get(pk=version_id)
    rating = _load(version)
    # Cache only what is frozen: a hash read from the row (and equal to the one passed in,
    # when one was), never merely passed in.
    if version.sha256 and version.sha256 == (sha256 or version.sha256) and not version.is_draft:
        key = (version_id, version.sha256)
        with _lock:
            if len(_cache) >= _MAX_ENTRIES:
                _cache.clear()
                _by_id.clear()
            _cache[key] = rating
            _by_id[version_id] = rating
    return rating


def frozen_rating_clear() -> None:
    """Forget every cached version (tests, whose rolled-back rows may reuse an id)."""
    with _lock:
        _cache.clear()
        _by_id.clear()
