"""Writes of a draft version's rubric: apply a template, create one from fields, edit fields."""

import copy
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.core.rows import full_clean_save
from apps.protocols.models import ProtocolVersion
from apps.protocols.parameters import decimal_text
from apps.protocols.services import version_require_editable
from apps.raters.judged import judged_signals_or_none
from apps.raters.models import (
    Derivation,
    Disagreement,
    FieldKind,
    FinalValue,
    Rubric,
    RubricField,
    RubricText,
    ScoredBy,
)
from apps.raters.rubric_templates import rubric_template, rubric_template_codes
from apps.raters.selectors import rubric_document

FIELD_ATTRIBUTES = (
    "name",
    "label",
    "kind",
    "choices",
    "required",
    "minimum",
    "maximum",
    "group",
    "help_text",
    "derivation",
    "derived_from",
    "disagreement",
    "scored_by",
    "scorer_role",
    "final_value",
    "default",
)

# Keyed by a field's derivation, a plain string on the model (Derivation's members are strings).
_DERIVATION_SOURCE: dict[str, FieldKind] = {
    Derivation.PER_100_WORDS: FieldKind.COUNT,
    Derivation.ATTENUATION: FieldKind.CHECKLIST,
    Derivation.EXECUTABLE_ATTENUATION: FieldKind.CHECKLIST,
    Derivation.FIDELITY: FieldKind.SIGNALS,
    Derivation.LOSS1: FieldKind.SIGNALS,
    Derivation.DRIFT_FLAG: FieldKind.SIGNALS,
    Derivation.AXIS_PASS: FieldKind.SIGNALS,
}
# The kind of a derived field: a number, except seed 003's verdicts, which are true or false.
_DERIVED_KIND: dict[str, FieldKind] = {
    Derivation.FIDELITY: FieldKind.BINARY,
    Derivation.DRIFT_FLAG: FieldKind.BINARY,
    Derivation.AXIS_PASS: FieldKind.BINARY,
}


def _derived_kind_problems(field: RubricField, where: str) -> list[str]:
    problems = []
    wanted_kind = _DERIVED_KIND.get(field.derivation, FieldKind.NUMBER)
    if field.kind != wanted_kind:
        problems.append(f"{where}: a {field.derivation} field is of kind {wanted_kind}")
    rules = judged_signals_or_none()
    axes = rules.axes if rules is not None else ()
    if field.derivation == Derivation.AXIS_PASS and field.group not in axes:
        problems.append(f"{where}: an axis_pass field's group names its axis, A1–A5")
    return problems


def rubric_field_problems(field: RubricField, fields: Iterable[RubricField]) -> list[str]:
    """What is wrong with one field of a rubric (``fields`` are all its fields), as sentences.

    Used by the freeze gate (``rubric_field_invalid``) and by every write below.
    """
    problems = []
    where = f"field {field.name!r}"
    choices = field.choices or []
    if field.kind in (FieldKind.CATEGORICAL, FieldKind.ORDINAL):
        values = [c.get("value") if isinstance(c, dict) else None for c in choices]
        if len(values) < 2:
            problems.append(f"{where}: a {field.kind} field needs at least two choices")
        if any(not isinstance(v, str) or not v.strip() for v in values):
            problems.append(f"{where}: every choice needs a non-empty text value")
        elif len(set(values)) != len(values):
            problems.append(f"{where}: choice values must be distinct")
        if any(not isinstance(c, dict) or not str(c.get("label", "")).strip() for c in choices):
            problems.append(f"{where}: every choice needs a label")
    elif choices:
        problems.append(f"{where}: only categorical and ordinal fields have choices")
    if field.kind not in (FieldKind.COUNT, FieldKind.NUMBER) and (
        field.minimum is not None or field.maximum is not None
    ):
        problems.append(f"{where}: only count and number fields have a minimum or maximum")
    if field.minimum is not None and field.maximum is not None and field.minimum > field.maximum:
        problems.append(f"{where}: the minimum is above the maximum")
    problems += _default_problems(field, where)
    by_name = {f.name: f for f in fields}
    if field.derivation:
        problems += _derived_kind_problems(field, where)
        source = by_name.get(field.derived_from)
        wanted = _DERIVATION_SOURCE.get(field.derivation)
        if source is None:
            problems.append(f"{where}: derived from {field.derived_from!r}, which is not a field")
        elif wanted and source.kind != wanted:
            problems.append(f"{where}: {field.derivation} is derived from a {wanted} field")
    elif field.derived_from:
        problems.append(f"{where}: names a source field but no derivation")
    if field.disagreement == Disagreement.DELTA and field.kind not in (
        FieldKind.COUNT,
        FieldKind.NUMBER,
    ):
        problems.append(f"{where}: only count and number fields compare within δ")
    if field.disagreement and field.kind in (
        FieldKind.QUOTE,
        FieldKind.CHECKLIST,
        FieldKind.SIGNALS,
    ):
        problems.append(f"{where}: {field.kind} fields are not compared for disagreement")
    problems += _machine_problems(field, by_name, where)
    return problems


def _default_problems(field: RubricField, where: str) -> list[str]:
    default = field.default
    if default is None:
        return []
    if field.kind not in (FieldKind.COUNT, FieldKind.NUMBER) or field.derivation:
        return [f"{where}: only typed count and number fields have a default"]
    if field.kind == FieldKind.COUNT and (default < 0 or default != default.to_integral_value()):
        return [f"{where}: a count's default is a whole number of 0 or more"]
    if field.minimum is not None and default < field.minimum:
        return [f"{where}: the default {decimal_text(default)} is below the minimum"]
    if field.maximum is not None and default > field.maximum:
        return [f"{where}: the default {decimal_text(default)} is above the maximum"]
    return []


def _machine_problems(field: RubricField, by_name: dict[str, RubricField], where: str) -> list[str]:
    problems = []
    if field.scored_by not in ScoredBy.values:
        return [f"{where}: scored_by is one of {', '.join(ScoredBy.values)}"]
    if field.final_value not in FinalValue.values:
        return [f"{where}: final_value is one of {', '.join(v for v in FinalValue.values if v)}"]
    if field.scored_by == ScoredBy.REVIEWERS:
        if field.scorer_role:
            problems.append(f"{where}: names a scorer role but is scored by reviewers only")
    elif not field.scorer_role:
        problems.append(f"{where}: scored by a scorer, but names no scorer role")
    rule = field.final_value
    if rule == FinalValue.REVIEWERS and field.scored_by == ScoredBy.SCORER:
        problems.append(f"{where}: the reviewers' value is final, but only a scorer scores it")
    if rule in (FinalValue.SCORER, FinalValue.REVIEWERS_ELSE_SCORER) and (
        field.scored_by == ScoredBy.REVIEWERS
    ):
        problems.append(f"{where}: the scorer's value is final, but no scorer scores it")
    source = by_name.get(field.derived_from) if field.derivation else None
    if source is not None and (source.scored_by, source.scorer_role) != (
        field.scored_by,
        field.scorer_role,
    ):
        problems.append(f"{where}: a derived field is scored by whoever scores its source")
    return problems


def _require_draft(version: ProtocolVersion) -> None:
    version_require_editable(version)


def _decimal_or_none(value: object, name: str) -> Decimal | None:
    if value in (None, ""):
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        raise ValidationError({name: [f"{name}: {value!r} is not a number"]}) from None


def _default_from_spec(spec: dict[str, Any]) -> Decimal | None:
    """A field's default: the spec's ``default`` (``null`` for none); without one, 0 for a count
    that reviewers type (counting nothing is the common answer: OPB-01's hedges) and none
    otherwise (a field only a scorer fills is not prefilled for an audit)."""
    if "default" in spec:
        return _decimal_or_none(spec["default"], "default")
    typed_by_reviewers = not spec.get("derivation") and spec.get("scored_by") != ScoredBy.SCORER
    if spec.get("kind") == FieldKind.COUNT and typed_by_reviewers:
        return Decimal(0)
    return None


def _field_from_spec(rubric: Rubric, spec: dict[str, Any], position: int) -> RubricField:
    unknown = set(spec) - set(FIELD_ATTRIBUTES)
    if unknown:
        raise ValidationError(f"field {spec.get('name')!r}: unknown attribute(s) {sorted(unknown)}")
    return RubricField(
        version=rubric.version,
        rubric=rubric,
        position=position,
        name=spec.get("name", ""),
        label=spec.get("label") or spec.get("name", ""),
        kind=spec.get("kind", ""),
        choices=spec.get("choices") or [],
        required=spec.get("required", True),
        minimum=_decimal_or_none(spec.get("minimum"), "minimum"),
        maximum=_decimal_or_none(spec.get("maximum"), "maximum"),
        group=spec.get("group", ""),
        help_text=spec.get("help_text", ""),
        derivation=spec.get("derivation", ""),
        derived_from=spec.get("derived_from", ""),
        disagreement=spec.get("disagreement", ""),
        scored_by=spec.get("scored_by") or ScoredBy.REVIEWERS,
        scorer_role=spec.get("scorer_role", ""),
        final_value=spec.get("final_value", ""),
        default=_default_from_spec(spec),
    )


def _check_all(rubric: Rubric) -> None:
    fields = list(rubric.fields.all())
    problems = [p for f in fields for p in rubric_field_problems(f, fields)]
    if problems:
        raise ValidationError(problems)


@transaction.atomic
def rubric_create(
    *,
    version: ProtocolVersion,
    name: str,
    fields: list[dict[str, Any]],
    instructions: str = "",
    template: str = "",
) -> Rubric:
    """Give the draft ``version`` a rubric with ``fields`` (dicts of ``FIELD_ATTRIBUTES``) in
    order, replacing any rubric it had.

    Raises ValidationError naming the field when a field is malformed (see
    ``rubric_field_problems``) or when the version is frozen.
    """
    _require_draft(version)
    Rubric.objects.filter(version=version).delete()
    rubric = Rubric(version=version, name=name, template=template, instructions=instructions)
    full_clean_save(rubric)
    names = set()
    for position, spec in enumerate(fields, start=1):
        field = _field_from_spec(rubric, spec, position)
        if field.name in names:
            raise ValidationError(f"field {field.name!r}: the name is used twice")
        names.add(field.name)
        try:
            field.full_clean(exclude=["rubric", "version"])
        except ValidationError as error:
            raise ValidationError(
                {f"{field.name or position}.{k}": v for k, v in error.message_dict.items()}
            ) from None
        field.save()
    _check_all(rubric)
    return rubric


@transaction.atomic
def rubric_apply_template(*, version: ProtocolVersion, template: str) -> Rubric:
    """Replace the draft version's rubric with the preset ``template`` a study kind registers
    (``apps.raters.rubric_templates``: ``opb``, ``xstest``, ``fidelity``, …). Raises
    ValidationError on ``template`` naming the registered codes when none has that code."""
    preset = rubric_template(template)
    if preset is None:
        raise ValidationError(
            {"template": [f"no rubric template {template!r}; use one of {rubric_template_codes()}"]}
        )
    return rubric_create(
        version=version,
        name=preset.name,
        instructions=preset.instructions,
        template=template,
        # A copy: the preset's dicts are shared by every rubric made from it.
        fields=copy.deepcopy(list(preset.fields)),
    )


@transaction.atomic
def rubric_field_update(*, field: RubricField, changes: dict[str, Any]) -> RubricField:
    """Change attributes of one field of a draft rubric (any of ``FIELD_ATTRIBUTES``)."""
    _require_draft(field.version)
    unknown = set(changes) - set(FIELD_ATTRIBUTES)
    if unknown:
        raise ValidationError(f"field {field.name!r}: unknown attribute(s) {sorted(unknown)}")
    for attribute, value in changes.items():
        if attribute in ("minimum", "maximum", "default"):
            value = _decimal_or_none(value, attribute)
        setattr(field, attribute, value)
    field.full_clean(exclude=["rubric", "version"], validate_constraints=False)
    if RubricField.objects.filter(rubric=field.rubric, name=field.name).exclude(pk=field.pk):
        raise ValidationError({"name": [f"field {field.name!r}: the name is used twice"]})
    field.save()
    _check_all(field.rubric)
    return field


@transaction.atomic
def rubric_field_add(*, rubric: Rubric, spec: dict[str, Any]) -> RubricField:
    """Append a field to a draft rubric."""
    _require_draft(rubric.version)
    last = rubric.fields.order_by("-position").values_list("position", flat=True).first() or 0
    field = _field_from_spec(rubric, spec, last + 1)
    if rubric.fields.filter(name=field.name).exists():
        raise ValidationError({"name": [f"field {field.name!r}: the name is used twice"]})
    field.full_clean(exclude=["rubric", "version"])
    field.save()
    _check_all(rubric)
    return field


def rubric_field_check(*, version: ProtocolVersion, spec: dict[str, Any]) -> list[str]:
    """What ``rubric_field_add`` would refuse about a field ``spec`` appended to the version's
    rubric, as sentences naming the field — without writing anything (the editor's live
    preview). Empty when it would be accepted."""
    rubric = Rubric.objects.filter(version=version).first() or Rubric(version=version)
    existing = list(rubric.fields.all()) if rubric.pk else []
    try:
        field = _field_from_spec(rubric, spec, len(existing) + 1)
    except ValidationError as error:
        return list(error.messages)
    where = f"field {field.name!r}"
    problems = []
    try:
        field.full_clean(exclude=["rubric", "version"], validate_unique=False)
    except ValidationError as error:
        problems += [
            f"{where} · {key}: {message}"
            for key, messages in error.message_dict.items()
            for message in messages
        ]
    if any(f.name == field.name for f in existing):
        problems.append(f"{where}: the name is used twice")
    if not problems:
        problems = rubric_field_problems(field, [*existing, field])
    return problems


@transaction.atomic
def rubric_field_move(*, field: RubricField, offset: int) -> RubricField:
    """Move a field of a draft rubric ``offset`` places (−1 up, +1 down) by swapping positions
    with the field there; at either end nothing moves. Returns the field."""
    _require_draft(field.version)
    fields = list(field.rubric.fields.order_by("position"))
    index = next(i for i, f in enumerate(fields) if f.pk == field.pk)
    target = index + offset
    if offset == 0 or not 0 <= target < len(fields):
        return field
    other = fields[target]
    mine, theirs = field.position, other.position
    # Positions are unique per rubric: park one field past the end while the other moves.
    parked = max(f.position for f in fields) + 1
    RubricField.objects.filter(pk=field.pk).update(position=parked)
    RubricField.objects.filter(pk=other.pk).update(position=mine)
    RubricField.objects.filter(pk=field.pk).update(position=theirs)
    field.position = theirs
    return field


@transaction.atomic
def rubric_ensure(*, version: ProtocolVersion) -> Rubric:
    """The draft version's rubric, created empty (named after the protocol) when it has none,
    so that fields can be added one by one without applying a template first."""
    _require_draft(version)
    rubric = Rubric.objects.filter(version=version).first()
    if rubric is not None:
        return rubric
    return rubric_create(version=version, name=f"Rubric of {version.protocol.code}", fields=[])


@transaction.atomic
def rubric_field_delete(*, field: RubricField) -> None:
    """Remove a field from a draft rubric (refused while another field derives from it)."""
    _require_draft(field.version)
    if field.rubric.fields.filter(derived_from=field.name).exclude(pk=field.pk).exists():
        raise ValidationError(f"field {field.name!r}: another field is derived from it")
    field.delete()


def rubric_copy(source: ProtocolVersion, target: ProtocolVersion) -> None:
    """Copy the rubric of ``source`` into the new draft ``target`` (amendments)."""
    document = rubric_document(source)
    if document is None:
        return
    for spec in document["fields"]:
        for bound in ("minimum", "maximum"):
            if spec[bound] is None:
                spec.pop(bound)
        # A faithful copy: a field frozen without a default keeps none (not the new count's 0).
        spec.setdefault("default", None)
    rubric_create(
        version=target,
        name=document["name"],
        instructions=document["instructions"],
        template=document["template"],
        fields=document["fields"],
    )
    text = RubricText.objects.filter(version=source).first()
    if text is not None:
        RubricText.objects.create(version=target, sha256=text.sha256, media_type=text.media_type)
