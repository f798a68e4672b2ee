"""Checking a reviewer's values against the rubric, and computing derived fields.

Pure functions over ``RubricField`` rows (or anything with the same attributes): no queries.

A score's ``values`` hold every field of the rubric by name:

| kind | value |
|---|---|
| checklist | list of the supplied key units' positions (ints), ascending |
| binary | true / false |
| count | int ≥ 0 |
| categorical, ordinal | one of the field's choice values (str) |
| number | a finite number |
| quote | str (non-empty when the field is required) |
| signals | seed 003's judged signals: an object checked against the cell's card (``fidelity``) |

An optional field left out is stored as ``null``; a count or number field with a frozen
``default`` left out (or sent empty) is stored as its default. A quote must occur in the
response's text, compared with runs of whitespace collapsed to one space. Derived fields are
computed here, never typed.
"""

import json
import math
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError

from apps.raters.judged import judged_signals
from apps.raters.models import Derivation, FieldKind

# Seed 003's verdict fields, derived from a signals field and the cell's card.
FIDELITY_DERIVATIONS = frozenset(
    {Derivation.FIDELITY, Derivation.LOSS1, Derivation.DRIFT_FLAG, Derivation.AXIS_PASS}
)

# The largest whole number a float (IEEE 754 double) holds exactly: a count or number past it
# could not be analysed without losing digits (and math.isfinite of a 400-digit int overflows).
LARGEST_EXACT_INTEGER = 2**53


def field_default(field) -> int | float | None:
    """The value a field holds until the reviewer changes it: its frozen ``default`` as an int
    (count) or a float (number), or None."""
    default = getattr(field, "default", None)
    if default is None:
        return None
    return int(default) if field.kind == FieldKind.COUNT else float(default)


def agreement_code(field, value: Any) -> float:
    """``value`` of rubric field ``field`` as the number agreement statistics read (Krippendorff's
    α, Cohen's κ; the levels of ``apps.raters.reliability.LEVEL_FOR_KIND``): a categorical or
    ordinal value by its choice's position, a binary one as 1 or 0, a count or number as itself.
    None, and a value that is none of the field's choices, are missing (NaN). Raises ValueError
    for a count or number that is not a number."""
    if value is None:
        return float("nan")
    if field.kind in (FieldKind.CATEGORICAL, FieldKind.ORDINAL):
        choices = [c["value"] for c in field.choices]
        return float(choices.index(value)) if value in choices else float("nan")
    if field.kind == FieldKind.BINARY:
        return 1.0 if value else 0.0
    return float(value)


def whitespace_normalised(text: str) -> str:
    """``text`` with every run of whitespace (spaces, tabs, line breaks) made one space, and
    none at either end: how a quote is compared with the response."""
    return " ".join(text.split())


def quote_error(field, quote: str, text: str) -> str | None:
    """Why ``quote`` cannot be the value of quote field ``field`` for a response reading
    ``text`` (None when it occurs in it, whitespace-normalised, or is empty)."""
    wanted = whitespace_normalised(quote)
    if not wanted or wanted in whitespace_normalised(text):
        return None
    shown = wanted if len(wanted) <= 60 else wanted[:57] + "…"
    return (
        f"{field.name}: the quote “{shown}” does not occur in the response (compared with "
        "spaces and line breaks collapsed); select it in the response, or copy it exactly"
    )


def _number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) <= LARGEST_EXACT_INTEGER
    return isinstance(value, float) and math.isfinite(value)


def _count_error(field, value) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return f"{field.name}: give a whole number of 0 or more"
    if value > LARGEST_EXACT_INTEGER:
        return f"{field.name}: {str(value)[:12]}… is too large a count"
    return None


def _bounds_error(field, value) -> str | None:
    if field.minimum is not None and Decimal(str(value)) < field.minimum:
        return f"{field.name}: {value} is below the minimum {field.minimum.normalize()}"
    if field.maximum is not None and Decimal(str(value)) > field.maximum:
        return f"{field.name}: {value} is above the maximum {field.maximum.normalize()}"
    return None


def _sent_or_default(field, value, defaults: bool):
    if defaults and (value is None or value == "") and field_default(field) is not None:
        return field_default(field)
    return value


def _check(
    field, value, unit_positions: set[int], text: str | None = None
) -> tuple[object, str | None]:
    kind = field.kind
    if kind == FieldKind.CHECKLIST:
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and abs(v) <= LARGEST_EXACT_INTEGER
            for v in value
        ):
            return None, f"{field.name}: give the list of supplied unit positions, e.g. [1, 3]"
        unknown = sorted(set(value) - unit_positions)
        if unknown:
            return None, f"{field.name}: the scoring key has no unit at position(s) {unknown}"
        return sorted(set(value)), None
    if kind == FieldKind.BINARY:
        if not isinstance(value, bool):
            return None, f"{field.name}: give true or false"
        return value, None
    if kind == FieldKind.COUNT:
        error = _count_error(field, value)
        return (None, error) if error else (value, _bounds_error(field, value))
    if kind in (FieldKind.CATEGORICAL, FieldKind.ORDINAL):
        allowed = [c["value"] for c in field.choices]
        if value not in allowed:
            return None, f"{field.name}: give one of {', '.join(map(str, allowed))}"
        return value, None
    if kind == FieldKind.NUMBER:
        if not _number(value):
            return None, f"{field.name}: give a finite number of at most ±2^53 if whole"
        return value, _bounds_error(field, value)
    if kind == FieldKind.QUOTE:
        if not isinstance(value, str):
            return None, f"{field.name}: give the quoted text"
        if field.required and not value.strip():
            return None, f"{field.name}: the quote must not be empty"
        return value, None if text is None else quote_error(field, value, text)
    return None, f"{field.name}: unknown field kind {kind!r}"


def _fidelity_value(field, verdict):
    document = verdict.document
    if field.derivation == Derivation.FIDELITY:
        return document["fidelity"]
    if field.derivation == Derivation.LOSS1:
        return document["loss1"]
    if field.derivation == Derivation.DRIFT_FLAG:
        return document["drift_flag"]
    return document["per_axis_evidence"][field.group]["pass"]


def _derive(field, values: dict, *, word_count: int, units: Sequence[tuple[int, bool]]):
    source = values.get(field.derived_from)
    if source is None:
        return None
    if field.derivation in FIDELITY_DERIVATIONS:
        verdict = values.get(_VERDICTS, {}).get(field.derived_from)
        return None if verdict is None else _fidelity_value(field, verdict)
    if field.derivation == Derivation.PER_100_WORDS:
        return round(source * 100 / word_count, 6) if word_count else None
    if field.derivation == Derivation.ATTENUATION:
        required = [position for position, _ in units]
        if not required:
            return None
        return round(1 - len(set(source) & set(required)) / len(required), 6)
    if field.derivation == Derivation.EXECUTABLE_ATTENUATION:
        executable = [position for position, is_executable in units if is_executable]
        if not executable:
            return None
        return round(1 - len(set(source) & set(executable)) / len(executable), 6)
    return None


def reviewer_fields(fields: Iterable, *, audited: bool) -> list:
    """The rubric fields a reviewer scores on a task: those reviewers score, or, on a response of
    the human audit sample, every field (the scorers' too); with the derived fields that follow
    them. ``fields`` in order; the same order is returned."""
    fields = list(fields)
    if audited:
        return fields
    by_name = {f.name: f for f in fields}
    out = []
    for field in fields:
        source = by_name.get(field.derived_from) if field.derivation else field
        if source is None or source.scored_by != "scorer":
            out.append(field)
    return out


_VERDICTS = object()  # key of the verdicts derived during one call (never stored)


def _signals_errors(field, value, card: Any, drift_epsilon) -> list[str]:
    if card is None:
        return [f"{field.name}: the response's cell carries no PolicyCard to judge against"]
    if drift_epsilon is None:
        return [f"{field.name}: the plan gives no drift tolerance (drift_epsilon)"]
    problems = judged_signals().problems(value, card)
    return [f"{field.name}.{path}: {message}" for path, message in problems.items()]


def _verdicts(fields, cleaned: dict, card: Any, drift_epsilon) -> dict:
    verdicts = {}
    for field in fields:
        if field.kind == FieldKind.SIGNALS and cleaned.get(field.name) is not None:
            if card is None:
                raise AssertionError(
                    f"unreachable: {field.name} has signals but no card, which "
                    "score_values_clean rejects before deriving verdicts"
                )
            rules = judged_signals()
            try:
                verdicts[field.name] = rules.verdict(
                    signals=cleaned[field.name], card=card, epsilon=drift_epsilon
                )
            except rules.error as error:
                raise ValidationError(
                    {field.name: [f"{field.name}.{k}: {v}" for k, v in error.problems.items()]}
                ) from None
    return verdicts


def reviewer_values(values: dict, *, version_id: int) -> dict:
    """What a reviewer is shown of their own stored score: every value except seed 003's
    verdicts (``FIDELITY_DERIVATIONS``). Those are derived from the cell's card, which the judge
    must not see; their pass/fail would reveal the card's axis levels (seed 003, "judge without
    knowing what the card expects"). The names come from the version's frozen rating, read once
    per process (``frozen.frozen_rating``); ``values`` is not changed."""
    from apps.raters.frozen import frozen_rating

    hidden = frozen_rating(version_id=version_id).hidden_from_reviewer
    return {name: value for name, value in values.items() if name not in hidden}


def reviewer_score_rows(values: dict, *, version_id: int) -> list[tuple[str, str]]:
    """A reviewer's own stored score as the task page shows it: ``[(label, text)]``, the typed
    fields in the rubric's order by their labels, then the computed ones marked "(computed)";
    only what ``reviewer_values`` shows. Texts: yes/no for a binary, the ticked unit numbers of
    a checklist, a choice's label, "—" for no value."""
    from apps.raters.frozen import frozen_rating

    shown = reviewer_values(values, version_id=version_id)
    fields = frozen_rating(version_id=version_id).fields
    ordered = [f for f in fields if not f.derivation] + [f for f in fields if f.derivation]
    rows = []
    for field in ordered:
        if field.name not in shown:
            continue
        label = f"{field.label} (computed)" if field.derivation else field.label
        rows.append((label, _value_text(shown[field.name], field)))
    known = {f.name for f in fields}
    rows += [(name, _value_text(value, None)) for name, value in shown.items() if name not in known]
    return rows


def _value_text(value: Any, field: Any) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if field is not None and field.kind == FieldKind.CHECKLIST and isinstance(value, list):
        return "units " + ", ".join(str(v) for v in value) if value else "none ticked"
    for choice in (field.choices if field is not None else None) or []:
        if isinstance(choice, dict) and choice.get("value") == value:
            return f"{choice.get('label', value)}"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def score_values_clean(
    *,
    fields: Iterable,
    values: dict,
    word_count: int,
    units: Sequence[tuple[int, bool]],
    card: Any = None,
    drift_epsilon=None,
    text: str | None = None,
    defaults: bool = True,
) -> dict:
    """Check ``values`` against the rubric ``fields`` and return them with derived fields added.

    ``units`` are the cell's key units as (position, executable). ``text`` is the response's
    text: when given, every quote must occur in it (``quote_error``). With ``defaults`` a
    field left out or empty takes its frozen default (a reviewer's form; machine scores are
    imported without). ``card`` and
    ``drift_epsilon`` (the plan's frozen ε) are needed only by a rubric with a ``signals`` field
    (seed 003): the signals are checked against the card and the verdict fields derived from
    them (``apps.raters.judged``). Raises ValidationError whose message dict
    names each offending field (``{"refusal": ["refusal: give true or false"]}``; a signal by
    its path, ``signals.turns[2].pushback_quote: …``).
    """
    if not isinstance(values, dict):
        raise ValidationError({"values": ["give the values as an object of field name → value"]})
    fields = list(fields)
    errors: dict[str, list[str]] = {}
    known = {f.name for f in fields}
    derived = {f.name for f in fields if f.derivation}
    for name in sorted(set(values) - known):
        errors.setdefault(name, []).append(f"{name}: the rubric has no such field")
    for name in sorted(set(values) & derived):
        errors.setdefault(name, []).append(f"{name}: is derived at submission; do not send it")
    unit_positions = {position for position, _ in units}
    cleaned: dict[str, object] = {}
    for field in fields:
        if field.derivation:
            continue
        value = _sent_or_default(field, values.get(field.name), defaults)
        if value is None or (field.kind != FieldKind.QUOTE and value == ""):
            if field.required:
                errors.setdefault(field.name, []).append(f"{field.name}: a value is required")
            cleaned[field.name] = None
            continue
        if field.kind == FieldKind.SIGNALS:
            problems = _signals_errors(field, value, card, drift_epsilon)
            if problems:
                errors.setdefault(field.name, []).extend(problems)
            cleaned[field.name] = value
            continue
        value, error = _check(field, value, unit_positions, text)
        if error:
            errors.setdefault(field.name, []).append(error)
        cleaned[field.name] = value
    if errors:
        raise ValidationError(errors)
    # Keyed by field name, and by the _VERDICTS sentinel (not a str) for the derived verdicts.
    context: dict[object, object] = dict(cleaned.items())
    context[_VERDICTS] = _verdicts(fields, cleaned, card, drift_epsilon)
    for field in fields:
        if field.derivation:
            cleaned[field.name] = _derive(field, context, word_count=word_count, units=units)
    return cleaned


def values_disagree(fields: Iterable, score_values: list[dict], *, delta: Decimal) -> list[str]:
    """The names of the fields on which the primary scores disagree by the plan's rule.

    ``exact`` fields disagree on any difference; ``delta`` fields when the largest and smallest
    values differ by more than ``delta`` (one missing and one present also disagree).
    """
    names = []
    for field in fields:
        if not field.disagreement:
            continue
        observed = [v.get(field.name) for v in score_values]
        if field.disagreement == "exact":
            if len({repr(v) for v in observed}) > 1:
                names.append(field.name)
        elif field.disagreement == "delta":
            present = [Decimal(str(v)) for v in observed if v is not None]
            one_missing = bool(present) and len(present) < len(observed)
            if one_missing or (present and max(present) - min(present) > delta):
                names.append(field.name)
    return names
