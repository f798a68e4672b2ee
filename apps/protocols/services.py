"""Writes of protocols and versions: create, edit a draft, freeze, amend, withdraw, members.

Services check state, not roles: who may call which one is decided by the views and APIs through
``apps.protocols.access`` (PI: freeze, amend, withdraw, members; PI and editor: edit drafts).
Every refusal is a ``ValidationError`` naming what is wrong; a refusal caused by the version's
state (frozen, set aside, withdrawn) is a ``VersionStateError``, which the API answers with 409.
"""

import copy
from collections.abc import Mapping
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Membership, Role, User
from apps.accounts.services import membership_grant
from apps.core.canonical import sha256_hex
from apps.core.rows import full_clean_save
from apps.deviations.models import EntryKind
from apps.deviations.services import deviation_append, version_log_append
from apps.protocols.components import Problem, registered_components
from apps.protocols.decision_table import decision_table_errors
from apps.protocols.documents import version_document_bytes
from apps.protocols.gate import version_gate
from apps.protocols.models import (
    SECTION_FIELDS,
    AnalysisParameter,
    Blob,
    Deposit,
    ParameterKind,
    Protocol,
    ProtocolVersion,
    VersionState,
    Withdrawal,
)
from apps.protocols.parameters import clean_value, schema_problem, value_error
from apps.protocols.plans import (
    PLAN_TEMPLATES,
    declared_pipelines,
    pipeline_declaration,
    plan_template,
    plan_template_choices,
)
from apps.protocols.refs import version_ref

# Codes that would collide with a page of their own under /protocols/.
_RESERVED_CODES = frozenset({"new"})


class VersionStateError(ValidationError):
    """The version's state does not allow this (it is frozen, set aside or withdrawn)."""


class FreezeRefused(ValidationError):
    """The freeze gate found problems; ``problems`` holds every one of them."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__([f"{p.code}: {p.message}" for p in problems])


def _normalise_text(text: str) -> str:
    # Browsers send a textarea's line breaks as CRLF; the API usually sends LF. The same words
    # must give the same frozen document whichever way they came in.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _locked(version: ProtocolVersion) -> ProtocolVersion:
    # of=("self",): PostgreSQL cannot lock the nullable side of the outer join to `supersedes`.
    return (
        ProtocolVersion.objects.select_for_update(of=("self",))
        .select_related("protocol", "supersedes")
        .get(pk=version.pk)
    )


def version_require_editable(version: ProtocolVersion) -> None:
    """Raise VersionStateError (a ValidationError) unless ``version`` is a draft that may still
    change: not frozen, not set aside for a newer version, not deposited from elsewhere. Every
    app's draft-only edit (design, roster, rubric, scorers) asks this one question."""
    if version.is_deposited:
        raise VersionStateError(
            f"{version} was frozen elsewhere and is deposited here as history: it never passes "
            "this registry's freeze gate and never changes; amend it to make a new draft."
        )
    if not version.is_draft:
        raise VersionStateError(
            f"{version} is frozen and cannot change; amend it to make a new draft."
        )
    if version.is_set_aside:
        raise VersionStateError(
            f"{version} was set aside for v{version.successor.label} and is kept as it is."
        )


def _draft_create(
    *, protocol: Protocol, label: str, user: User, supersedes: ProtocolVersion | None = None
) -> ProtocolVersion:
    version = ProtocolVersion(
        protocol=protocol, label=label, supersedes=supersedes, created_by=user
    )
    version.full_clean()
    version._history_user = user
    version.save()
    return version


@transaction.atomic
def protocol_create(*, user: User, code: str, title: str, template: str = "opb") -> Protocol:
    """Create a protocol whose PI is ``user``, with draft 1.0 seeded from the plan template.

    The draft has the template's section outlines, decision table and parameters (with the
    template's defaults; empty where the protocol must instantiate a value). Raises
    ValidationError naming the field when the code is malformed or taken or the template unknown.
    """
    if template not in PLAN_TEMPLATES:
        codes = [code for code, _ in plan_template_choices()]
        raise ValidationError(
            {"template": f"{template!r} is not a plan template; use one of {codes}"}
        )
    code = code.strip()
    if code.lower() in _RESERVED_CODES:
        raise ValidationError({"code": f"{code!r} is reserved; choose another code."})
    protocol = Protocol(code=code, title=title.strip(), template=template, created_by=user)
    full_clean_save(protocol)
    _grant_logged(
        protocol=protocol,
        user=user,
        role=Role.PI,
        actor=user,
        reason="the protocol's creator is its first PI",
    )

    plan = plan_template(template)
    version = ProtocolVersion(
        protocol=protocol,
        label="1.0",
        created_by=user,
        pipeline=plan.pipeline or "",
        decision_table=copy.deepcopy(list(plan.decision_table)),
        **{section: plan.outline(section) for section in SECTION_FIELDS},
    )
    version.full_clean()
    version._history_user = user
    version.save()
    for position, spec in enumerate(plan.parameter_specs(), start=1):
        parameter = AnalysisParameter(version=version, **spec.model_fields(position))
        parameter.full_clean()
        parameter._history_user = user
        parameter.save()
    return protocol


@transaction.atomic
def version_update(
    *,
    version: ProtocolVersion,
    user: User,
    sections: Mapping[str, str] | None = None,
    parameters: Mapping[str, str] | None = None,
    amendment_rationale: str | None = None,
    decision_table: list[Any] | None = None,
    pipeline: str | None = None,
    new_parameters: list[Mapping[str, Any]] | None = None,
) -> ProtocolVersion:
    """Change a draft: any of its sections, parameter values (by name), amendment rationale,
    decision table, the pipeline its plan names, and parameters added beyond the preset. Only
    what is given changes; nothing is saved unless all of it is valid.

    Parameter values are stored as typed (whitespace trimmed) after the kind's check.
    ``new_parameters`` are mappings of ``ParameterSpec`` fields (``name`` and ``kind`` at
    least; a parameter the plan's pipeline declares needs only its ``name`` and takes the
    declared type, bounds and schema) plus an optional ``value``. Raises VersionStateError when
    the version is not an open draft, ValidationError keyed by field path (``hypotheses``,
    ``parameters.epsilon``, ``new_parameters[0].schema``, ``pipeline``, ``decision_table``…)
    otherwise. Returns the saved version.
    """
    given, version = version, _locked(version)
    version_require_editable(version)
    errors: dict[str, list[str]] = {}
    row_changes: dict[str, object] = {}
    planned_pipeline = version.pipeline

    for name, text in (sections or {}).items():
        if name not in SECTION_FIELDS:
            errors.setdefault("sections", []).append(
                f"{name!r} is not a section; sections are {', '.join(SECTION_FIELDS)}"
            )
        elif not isinstance(text, str):
            errors[name] = [f"the {name} section must be text"]
        elif _normalise_text(text) != getattr(version, name):
            row_changes[name] = _normalise_text(text)

    if amendment_rationale is not None:
        rationale = _normalise_text(amendment_rationale)
        if rationale.strip() and not version.supersedes_id:
            errors["amendment_rationale"] = [
                f"{version} amends nothing, so it has no amendment rationale"
            ]
        elif rationale != version.amendment_rationale:
            row_changes["amendment_rationale"] = rationale

    if pipeline is not None:
        pipeline = pipeline.strip()
        if pipeline and pipeline_declaration(pipeline) is None:
            known = ", ".join(d.kind for d in declared_pipelines())
            errors["pipeline"] = [f"{pipeline!r} is not an analysis pipeline; use one of {known}"]
        elif pipeline != version.pipeline:
            row_changes["pipeline"] = planned_pipeline = pipeline

    existing = {p.name: p for p in version.parameters.all()}
    additions = _new_parameters(
        version=version,
        given=new_parameters or [],
        existing=existing,
        pipeline=planned_pipeline or None,
        errors=errors,
    )
    parameter_changes: list[tuple[AnalysisParameter, str]] = []
    for name, raw in (parameters or {}).items():
        parameter = existing.get(name)
        if parameter is None:
            errors[f"parameters.{name}"] = [
                f"the plan has no parameter {name!r}; add it first (new_parameters)"
            ]
            continue
        value = clean_value(raw if isinstance(raw, str) else str(raw))
        error = value_error(parameter, value)
        if error:
            errors[f"parameters.{name}"] = [error]
        elif value != parameter.value:
            parameter_changes.append((parameter, value))

    if decision_table is not None:
        kinds = {p.name: p.kind for p in existing.values()}
        kinds.update({p.name: p.kind for p in additions})
        table_errors = decision_table_errors(decision_table, kinds)
        if table_errors:
            errors["decision_table"] = table_errors
        elif decision_table != version.decision_table:
            row_changes["decision_table"] = copy.deepcopy(decision_table)

    if errors:
        raise ValidationError(errors)
    if row_changes:
        for field, change in row_changes.items():
            setattr(version, field, change)
        version.full_clean()
        version._history_user = user
        version.save()
    for parameter, value in parameter_changes:
        parameter.value = value
        parameter.full_clean()
        parameter._history_user = user
        parameter.save(update_fields=["value"])
    for parameter in additions:
        parameter._history_user = user
        parameter.save()
    given.refresh_from_db()
    return version


_NEW_PARAMETER_FIELDS = frozenset(
    {
        "name",
        "label",
        "kind",
        "unit",
        "required",
        "choices",
        "minimum",
        "maximum",
        "help_text",
        "schema",
        "value",
    }
)


def _new_parameters(
    *,
    version: ProtocolVersion,
    given: list[Mapping[str, Any]],
    existing: Mapping[str, AnalysisParameter],
    pipeline: str | None,
    errors: dict[str, list[str]],
) -> list[AnalysisParameter]:
    """The parameters ``given`` as unsaved, checked rows; problems go into ``errors`` by path."""
    declaration = pipeline_declaration(pipeline) if pipeline else None
    position = max((p.position for p in existing.values()), default=0)
    out: list[AnalysisParameter] = []
    seen: set[str] = set()
    for index, raw in enumerate(given):
        where = f"new_parameters[{index}]"
        if not isinstance(raw, Mapping):
            errors[where] = ["a new parameter is an object with name, kind and label"]
            continue
        unknown = sorted(set(raw) - _NEW_PARAMETER_FIELDS)
        if unknown:
            errors[where] = [
                f"unknown fields {', '.join(unknown)}; a parameter has "
                f"{', '.join(sorted(_NEW_PARAMETER_FIELDS))}"
            ]
            continue
        name = raw.get("name")
        if not isinstance(name, str) or not name.strip():
            errors[f"{where}.name"] = ["give the parameter a name such as min_families"]
            continue
        name = name.strip()
        if name in existing or name in seen:
            errors[f"{where}.name"] = [f"the plan already has a parameter {name!r}"]
            continue
        seen.add(name)
        declared = declaration.parameter(name) if declaration is not None else None
        fields: dict[str, Any] = (
            declared.model_fields(0) if declared is not None else {"name": name, "value": ""}
        )
        if declared is not None:  # a seed's default only under that seed's preset (#32)
            fields["value"] = declared.default_under(version.protocol.template)
        for key in _NEW_PARAMETER_FIELDS - {"name", "value"}:
            if key in raw and raw[key] is not None:
                if declared is not None and raw[key] != fields.get(key):
                    if key in ("label", "help_text", "unit"):
                        fields[key] = raw[key]
                        continue
                    errors[f"{where}.{key}"] = [
                        f"{name} is declared by the {pipeline} pipeline with {key} "
                        f"{fields.get(key)!r}; leave it out or give the same"
                    ]
                    continue
                fields[key] = raw[key]
        fields.setdefault("label", name.replace("_", " "))
        fields["position"] = position = position + 1
        if "value" in raw and raw["value"] is not None:
            if not isinstance(raw["value"], str):
                errors[f"{where}.value"] = ["a value is text (JSON as text for json and list)"]
                continue
            fields["value"] = clean_value(raw["value"])
        problem = _parameter_fields_error(fields)
        if problem is not None:
            key, message = problem
            errors[f"{where}.{key}"] = [message]
            continue
        for bound in ("minimum", "maximum"):
            if fields.get(bound) is not None:
                fields[bound] = Decimal(str(fields[bound]))
        parameter = AnalysisParameter(version=version, **fields)
        try:
            parameter.full_clean(exclude=["version"])
        except ValidationError as error:
            for key, messages in error.message_dict.items():
                errors[f"{where}.{key}"] = messages
            continue
        value_problem = value_error(parameter, parameter.value)
        if value_problem:
            errors[f"{where}.value"] = [value_problem]
            continue
        out.append(parameter)
    return out


def _parameter_fields_error(fields: Mapping[str, Any]) -> tuple[str, str] | None:
    kind = fields.get("kind")
    kinds = [k.value for k in ParameterKind]
    if kind not in kinds:
        return "kind", f"{kind!r} is not a parameter kind; use one of {', '.join(kinds)}"
    if not isinstance(fields.get("required", True), bool):
        return "required", "required is true or false"
    choices = fields.get("choices", [])
    if not isinstance(choices, list) or not all(isinstance(c, str) and c for c in choices):
        return "choices", "choices is a list of non-empty texts"
    if kind == ParameterKind.CHOICE and not choices:
        return "choices", "a choice parameter needs its choices"
    for bound in ("minimum", "maximum"):
        value = fields.get(bound)
        if value is None or isinstance(value, Decimal):
            continue
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return bound, f"{bound} is a number"
        try:
            number = Decimal(str(value))
        except InvalidOperation:
            return bound, f"{bound} is a number, not {value!r}"
        if not number.is_finite():
            return bound, f"{bound} is a finite number"
        if kind not in (ParameterKind.NUMBER, ParameterKind.INTEGER):
            return bound, f"only number and integer parameters have a {bound}"
    schema = fields.get("schema")
    if kind == ParameterKind.JSON:
        if schema is None:
            return "schema", "a json parameter needs a JSON Schema for its value"
        problem = schema_problem(schema)
        if problem:
            return "schema", problem
    elif schema is not None:
        return "schema", "only a json parameter has a JSON Schema"
    return None


def blob_store(*, content: bytes, media_type: str = "application/json") -> Blob:
    """Store ``content`` as a content-addressed blob (its SHA-256) and return it; idempotent.

    The one way blobs are written: frozen versions' documents here, analysis inputs and results
    in the analysis app. Storing the same bytes again returns the stored blob. Raises
    RuntimeError when a blob of that hash holds other bytes (a collision or a corrupted store).
    """
    digest = sha256_hex(content)
    blob = Blob.objects.filter(sha256=digest).first()
    if blob is not None:
        if bytes(blob.content) != content:
            raise RuntimeError(f"blob {digest} exists with different content")
        return blob
    blob = Blob(sha256=digest, content=content, size=len(content), media_type=media_type)
    blob.full_clean()
    blob.save(force_insert=True)
    return blob


@transaction.atomic
def version_freeze(*, version: ProtocolVersion, user: User) -> ProtocolVersion:
    """Freeze a draft: gate, components' ``on_freeze``, canonical document, blob, log entry.

    Holds the version's row lock throughout, so two freezes of one draft cannot both pass.
    Raises FreezeRefused with every problem the gate finds, VersionStateError when the version
    is not an open draft. Writes a ``freeze`` entry, or an ``amendment`` entry (with the
    rationale) when the version supersedes another. Returns the frozen version.
    """
    given, version = version, _locked(version)
    version_require_editable(version)
    predecessor = version.supersedes
    if predecessor is not None:
        predecessor = _locked(predecessor)
    problems = version_gate(version=version)
    if problems:
        raise FreezeRefused(problems)
    for component in registered_components():
        if component.on_freeze is not None:
            component.on_freeze(version)

    content, digest = version_document_bytes(version=version)
    blob_store(content=content)
    version.state = VersionState.FROZEN
    version.frozen_by = user
    version.frozen_at = timezone.now()
    version.sha256 = digest
    version.full_clean()
    version._history_user = user
    version.save()

    if predecessor is None:
        kind = EntryKind.FREEZE
        rationale = f"Froze {version}; its canonical document has SHA-256 {digest}."
        refs: list[dict[str, Any]] = []
    else:
        kind = EntryKind.AMENDMENT
        rationale = (
            f"v{version.label} supersedes v{predecessor.label}: "
            f"{version.amendment_rationale.strip()}"
        )
        refs = [version_ref(predecessor)]
    # chained: the integrity check trusts a frozen version's hash only through this entry
    # (apps.protocols.integrity), so it is in the chain before the freeze commits.
    version_log_append(version, kind=kind, rationale=rationale, actor=user, refs=refs, chained=True)
    given.refresh_from_db()
    return version


def _next_label(version: ProtocolVersion) -> str:
    parts = version.label.split(".")
    taken = set(version.protocol.versions.values_list("label", flat=True))
    while True:
        parts[-1] = str(int(parts[-1]) + 1)
        label = ".".join(parts)
        if label not in taken:
            return label


@transaction.atomic
def version_amend(
    *, version: ProtocolVersion, user: User, close_work: bool = False
) -> ProtocolVersion:
    """Open the next version (1.0 → 1.1) as a draft that copies everything ``version`` holds.

    The new draft supersedes ``version``: its sections, parameters, decision table and every
    component's rows (``copy``) are copied; its freeze will require an amendment rationale.
    ``version`` is usually frozen. When it is a draft (never frozen, for example refused at the
    gate), it is set aside: kept exactly as it is, closed to edits, and read as superseded.
    ``close_work`` closes what ``version`` still has open (the raters component: its scoring,
    so its open tasks leave reviewers' queues; scores given stay), logged in the same
    transaction (issue #37 §7); otherwise it stays open beside the new version's.
    Raises VersionStateError when ``version`` already has a successor.
    """
    given, version = version, _locked(version)
    successor = getattr(version, "successor", None)
    if successor is not None:
        raise VersionStateError(f"{version} already has a successor, v{successor.label}.")
    new = ProtocolVersion(
        protocol=version.protocol,
        label=_next_label(version),
        supersedes=version,
        created_by=user,
        pipeline=version.pipeline,
        decision_table=copy.deepcopy(version.decision_table),
        **{section: getattr(version, section) for section in SECTION_FIELDS},
    )
    new.full_clean()
    new._history_user = user
    new.save()
    for parameter in version.parameters.all():
        clone = AnalysisParameter(
            version=new,
            **{
                field: getattr(parameter, field)
                for field in sorted(_NEW_PARAMETER_FIELDS | {"position"})
            },
        )
        clone.full_clean()
        clone._history_user = user
        clone.save()
    for component in registered_components():
        if component.copy is not None:
            component.copy(version, new)
        if close_work and component.close_work is not None:
            component.close_work(version, user, f"v{new.label} amends it")
    given.refresh_from_db()
    return new


@transaction.atomic
def version_withdraw(*, version: ProtocolVersion, user: User, reason: str) -> Withdrawal:
    """Withdraw a frozen version: a ``Withdrawal`` tombstone with the reason, and a log entry.

    The version and its blob stay as they are (served forever); it reads as withdrawn. Raises
    ValidationError when the reason is empty, VersionStateError when the version is a draft,
    already withdrawn, or superseded (withdraw the version that superseded it instead).
    """
    given, version = version, _locked(version)
    if version.is_draft:
        raise VersionStateError(f"{version} is a draft; only a frozen version is withdrawn.")
    if hasattr(version, "withdrawal"):
        raise VersionStateError(f"{version} is already withdrawn.")
    successor = getattr(version, "successor", None)
    if successor is not None and successor.state == VersionState.FROZEN:
        raise VersionStateError(
            f"{version} is superseded by v{successor.label}; withdraw v{successor.label} instead."
        )
    reason = _normalise_text(reason or "").strip()
    if not reason:
        raise ValidationError({"reason": ["say why the version is withdrawn"]})
    withdrawal = Withdrawal(version=version, reason=reason, withdrawn_by=user)
    full_clean_save(withdrawal)
    # What the version allowed ends with it (the raters component ends its reservations).
    for component in registered_components():
        if component.on_withdraw is not None:
            component.on_withdraw(version)
    version_log_append(
        version,
        kind=EntryKind.WITHDRAWAL,
        rationale=f"Withdrew {version}: {reason}",
        actor=user,
    )
    given.refresh_from_db()
    return withdrawal


def _membership_ref(membership: Membership) -> dict[str, Any]:
    return {
        "type": "membership",
        "id": membership.pk,
        "label": f"{membership.user.get_username()} as {membership.get_role_display()}",
    }


@transaction.atomic
def protocol_member_add(
    *, protocol: Protocol, username: str, role: str, actor: User | None = None, reason: str = ""
) -> Membership:
    """Give the existing user ``username`` the ``role`` on ``protocol`` (idempotent).

    A new grant is written to the protocol's deviation log (kind ``membership``) with who gave
    it (``actor``) and why (``reason``, optional). Raises ValidationError naming ``username`` or
    ``role`` when either is unknown, or when the grant would make a sighted member a reviewer
    (or a reviewer sighted) on this protocol.
    """
    user = User.objects.filter(username=username.strip()).first()
    if user is None:
        raise ValidationError({"username": [f"there is no user named {username.strip()!r}"]})
    return _grant_logged(protocol=protocol, user=user, role=role, actor=actor, reason=reason)


def _grant_logged(
    *, protocol: Protocol, user: User, role: str, actor: User | None, reason: str
) -> Membership:
    # Every grant that creates a role, a person's or an automatic one (the creator's PI role,
    # the demo's people), is written to the log: the log is the history of who could do what.
    held = Membership.objects.filter(user=user, protocol=protocol, role=role).first()
    membership = membership_grant(user=user, protocol_id=protocol.pk, role=role)
    if held is None:
        reason = _normalise_text(reason or "").strip()
        deviation_append(
            protocol=protocol,
            kind=EntryKind.MEMBERSHIP,
            rationale=f"Granted {membership.get_role_display()} to {user.get_username()}"
            + (f": {reason}" if reason else "."),
            actor=actor,
            refs=[_membership_ref(membership)],
        )
    return membership


@transaction.atomic
def protocol_member_invite(
    *, protocol: Protocol, email: str, role: str, actor: User | None = None, reason: str = ""
) -> tuple[Membership, bool]:
    """Give the person with ``email`` the ``role`` on ``protocol``, creating their account when
    nobody has that address: ``(membership, created)``.

    A new account is named by its address and has no usable password until its owner sets one
    through the invitation link (see ``apps/protocols/invitations.py``). The grant is logged as
    ``protocol_member_add`` logs it, saying it came by invitation. Raises ValidationError naming
    ``email`` when the address is not one, or as ``protocol_member_add`` does.
    """
    from django.core.validators import validate_email

    email = (email or "").strip().lower()
    try:
        validate_email(email)
    except ValidationError:
        raise ValidationError({"email": [f"{email!r} is not an e-mail address"]}) from None
    user = User.objects.filter(email__iexact=email).order_by("pk").first()
    created = user is None
    if user is None:
        if User.objects.filter(username=email).exists():
            raise ValidationError({"email": [f"a user is already named {email!r}"]})
        user = User(username=email[:150], email=email)
        user.set_unusable_password()
        full_clean_save(user)
    note = "invited by e-mail" + (f"; {reason.strip()}" if (reason or "").strip() else "")
    membership = protocol_member_add(
        protocol=protocol, username=user.username, role=role, actor=actor, reason=note
    )
    return membership, created


@transaction.atomic
def protocol_member_remove(*, membership: Membership, actor: User | None, reason: str) -> None:
    """Take one role away, say why, and end what the role allowed at once.

    The removal is written to the deviation log (kind ``membership``) with ``actor`` and
    ``reason``; every component's ``on_role_removed`` runs in the same transaction (the raters
    component ends a removed reviewer's reservations, so their pending score is refused).
    Raises ValidationError naming ``reason`` when it is blank, ``role`` when it is the
    protocol's last PI role.
    """
    reason = _normalise_text(reason or "").strip()
    if not reason:
        raise ValidationError({"reason": ["say why the role is taken away"]})
    # Lock every PI role of the protocol, so two PIs removing each other cannot both succeed.
    pis = list(
        Membership.objects.select_for_update()
        .filter(protocol_id=membership.protocol_id, role=Role.PI)
        .values_list("pk", flat=True)
    )
    if membership.role == Role.PI and pis == [membership.pk]:
        raise ValidationError({"role": ["a protocol keeps at least one PI"]})
    ref = _membership_ref(membership)
    if not Membership.objects.filter(pk=membership.pk).delete()[0]:
        return  # removed meanwhile by someone else, who logged it
    deviation_append(
        protocol=membership.protocol,
        kind=EntryKind.MEMBERSHIP,
        rationale=f"Removed {membership.user.get_username()} as "
        f"{membership.get_role_display()}: {reason}",
        actor=actor,
        refs=[ref],
    )
    for component in registered_components():
        if component.on_role_removed is not None:
            component.on_role_removed(membership.protocol_id, membership.user, membership.role)


@transaction.atomic
def version_deposit(
    *,
    version: ProtocolVersion,
    user: User,
    text: bytes,
    frozen_where: str,
    frozen_on: date | None = None,
    note: str = "",
    media_type: str = "text/plain; charset=utf-8",
) -> Deposit:
    """Record that ``version`` was frozen elsewhere: its text exactly as published (a blob, so
    its SHA-256), where and when (issue #17: OPB-01 v1.0 "is retained unaltered").

    The version must be a draft here (never frozen by this registry). From then on it is kept
    as it is: it never passes the freeze gate, is never edited and never analysed. Writes an
    ``import`` log entry naming the text's SHA-256. Raises ValidationError naming the field for
    an empty text or place, VersionStateError when the version is frozen or already deposited.
    """
    version = _locked(version)
    if version.is_deposited:
        raise VersionStateError(f"{version} is already deposited.")
    if not version.is_draft:
        raise VersionStateError(
            f"{version} was frozen by this registry; only a version frozen elsewhere is deposited."
        )
    if not text:
        raise ValidationError({"text": "the deposited text is empty"})
    if not frozen_where.strip():
        raise ValidationError({"frozen_where": "say where the version was frozen"})
    blob = blob_store(content=bytes(text), media_type=media_type)
    deposit = Deposit(
        version=version,
        blob=blob,
        frozen_where=frozen_where.strip(),
        frozen_on=frozen_on,
        note=note.strip(),
        recorded_by=user,
    )
    full_clean_save(deposit)
    version_log_append(
        version,
        kind=EntryKind.IMPORT,
        actor=user,
        rationale=f"{version} deposited as history: frozen at {deposit.frozen_where}"
        + (f" on {deposit.frozen_on.isoformat()}" if deposit.frozen_on else " (day not given)")
        + f", text SHA-256 {blob.sha256}. It never passes this registry's freeze gate and is "
        "never analysed.",
        refs=[{"type": "blob", "id": blob.sha256, "label": "deposited text"}],
    )
    return deposit
