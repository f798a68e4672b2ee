"""Machine scorers: their frozen identity and the version's scorer roster.

A scorer is hashed as an evaluand is (``apps.responses.models.identity_sha256_of``): the SHA-256
of the canonical JSON of ``SCORER_IDENTITY_FIELDS``. Registering the same identity twice returns
the first scorer; a changed element (a new judge prompt, a new temperature) is a new scorer.

Who may change a version's scorer roster (its PI or an editor) is checked before these are
called (``apps.raters.access.RUBRIC_EDITORS``); they check that the version is a draft.
"""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.accounts.models import User
from apps.core.canonical import canonical_json, sha256_hex
from apps.core.rows import full_clean_save, identified_get_or_create, row_copy
from apps.protocols.models import ProtocolVersion
from apps.protocols.services import version_require_editable
from apps.raters.epochs import epochs_problem
from apps.raters.models import (
    SCORER_IDENTITY_FIELDS,
    SCORER_IDENTITY_OPTIONAL,
    Comparison,
    Scorer,
    ScorerKind,
    ScorerRosterEntry,
    prompt_sha256_of,
)

_CODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_ROLE = re.compile(r"^[-a-zA-Z0-9_]+$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def scorer_identity_sha256(identity: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a scorer's identity (every ``SCORER_IDENTITY_FIELDS``;
    an optional element, ``params``, only when given, so older identities keep their hash)."""
    return sha256_hex(
        canonical_json(
            {
                name: identity[name]
                for name in SCORER_IDENTITY_FIELDS
                if name not in SCORER_IDENTITY_OPTIONAL or identity.get(name)
            }
        )
    )


def _typed_identity(identity: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name in SCORER_IDENTITY_FIELDS:
        value = identity.get(name)
        if name in ("inference_settings", "params"):
            value = {} if value is None else value
            if not isinstance(value, dict):
                errors[name] = "must be a JSON object."
        else:
            value = "" if value is None else value
            if not isinstance(value, str):
                errors[name] = "must be text."
            elif name != "prompt":  # a prompt is kept exactly as given
                value = value.strip()
        values[name] = value
    return values, errors


def _kind_problems(values: dict[str, Any]) -> dict[str, str]:
    errors: dict[str, str] = {}
    kind = values["kind"]
    if kind not in ScorerKind.values:
        errors["kind"] = f"one of {', '.join(ScorerKind.values)}."
    if not values["name"]:
        errors["name"] = "Name the scorer."
    if not values["version"]:
        errors["version"] = "Give the scorer's version (or commit)."
    if values["prompt_sha256"] and not _SHA256.match(values["prompt_sha256"]):
        errors["prompt_sha256"] = "a SHA-256: 64 lowercase hex digits (a rubric blob's hash)."
    elif values["prompt"] and values["prompt_sha256"]:
        # Both given: one prompt, so one hash (what import files are checked against).
        computed = prompt_sha256_of(values["prompt"])
        if computed != values["prompt_sha256"]:
            errors["prompt_sha256"] = (
                f"{values['prompt_sha256']!r} is not the SHA-256 of the prompt given "
                f"({computed!r}, of its UTF-8 text exactly as given): give the prompt, its "
                "hash, or both agreeing."
            )
    if kind == ScorerKind.LLM_JUDGE:
        required = {
            "model": "An LLM judge names its model (identifier and snapshot).",
            "provider": "An LLM judge names its provider.",
        }
        errors.update({name: text for name, text in required.items() if not values[name]})
        if not values["prompt"] and not values["prompt_sha256"]:
            errors["prompt"] = "An LLM judge gives its prompt, or the hash of its rubric blob."
    if values["comparison"] not in Comparison.values:
        errors["comparison"] = f"one of {', '.join(v for v in Comparison.values if v)}."
    elif (kind == ScorerKind.ORACLE) != bool(values["comparison"]):
        errors["comparison"] = (
            "An oracle declares its comparison."
            if kind == ScorerKind.ORACLE
            else "Only an oracle has a comparison."
        )
    return errors


def _identity_values(identity: dict[str, Any]) -> dict[str, Any]:
    unknown = set(identity) - set(SCORER_IDENTITY_FIELDS)
    if unknown:
        raise ValidationError(f"Not part of a scorer's identity: {', '.join(sorted(unknown))}.")
    values, errors = _typed_identity(identity)
    if errors:
        raise ValidationError(errors)
    errors = _kind_problems(values)
    if errors:
        raise ValidationError(errors)
    return values


@transaction.atomic
def scorer_register(*, user: User | None, label: str, **identity: Any) -> tuple[Scorer, bool]:
    """The scorer with this identity, created if new: ``(scorer, created)``.

    ``identity`` holds ``kind`` (harness_grader, oracle, llm_judge, script), ``name``,
    ``version`` and, as they apply, ``model``, ``provider``, ``inference_settings`` (object),
    ``prompt`` or ``prompt_sha256`` (an LLM judge's), ``comparison`` (an oracle's: exact,
    normalised, json_equal, items), ``params`` (an Inspect scorer's parameters as its logs
    record them, its ``model`` and ``template`` apart: those are ``model`` and the prompt).
    Raises ValidationError naming each bad element.
    """
    values = _identity_values(identity)
    digest = scorer_identity_sha256(values)
    return identified_get_or_create(
        Scorer(
            label=(label or values["name"]).strip(),
            created_by=user,
            identity_sha256=digest,
            **values,
        )
    )


@transaction.atomic
def scorer_roster_enroll(
    *,
    version: ProtocolVersion,
    scorer: Scorer,
    code: str,
    role: str,
    user: User,
    epochs: str = "each",
) -> ScorerRosterEntry:
    """Register ``scorer`` on the draft ``version``'s scorer roster under ``code`` in ``role``
    (the role rubric fields name in ``scorer_role``), its values over a cell's repetitions
    (Inspect's epochs) combined by ``epochs`` (``apps.raters.epochs``: each, mean, mode, max,
    at_least:<k>)."""
    version_require_editable(version)
    code, role, epochs = code.strip(), role.strip(), (epochs or "each").strip()
    errors = {}
    if problem := epochs_problem(epochs):
        errors["epochs"] = problem
    if not _CODE.match(code):
        errors["code"] = "Use letters, digits, '.', '_' and '-', starting with a letter or digit."
    if not _ROLE.match(role):
        errors["role"] = "A role is a slug: letters, digits, '-' and '_'."
    roster = ScorerRosterEntry.objects.filter(version=version)
    if roster.filter(code=code).exists():
        errors["code"] = f"The code {code!r} is already on this scorer roster."
    if roster.filter(scorer=scorer).exists():
        errors["scorer"] = f"{scorer} is already on this scorer roster."
    if errors:
        raise ValidationError(errors)
    last = roster.order_by("-position").values_list("position", flat=True).first()
    entry = ScorerRosterEntry(
        version=version,
        scorer=scorer,
        code=code,
        role=role,
        epochs=epochs,
        position=0 if last is None else last + 1,
    )
    return full_clean_save(entry)


@transaction.atomic
def scorer_roster_remove(*, entry: ScorerRosterEntry, user: User) -> None:
    """Take a scorer off a draft version's roster."""
    version_require_editable(entry.version)
    entry.delete()


def scorers_copy(source: ProtocolVersion, target: ProtocolVersion) -> None:
    """An amendment's draft gets the same scorer roster."""
    ScorerRosterEntry.objects.bulk_create(
        row_copy(entry, ("scorer_id", "code", "role", "position", "epochs"), version=target)
        for entry in ScorerRosterEntry.objects.filter(version=source)
    )
