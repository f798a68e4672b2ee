"""The freeze gate: every problem that blocks freezing a draft, each with where it is fixed.

``version_gate`` is the one place the answer comes from: the draft page's live checklist, the
API's gate endpoint and ``version_freeze`` (which refuses with all of them at once) all call it.
Problems of this app's own content come first, in page order (amendment rationale, sections,
parameters, decision table), then those of every registered ``VersionComponent``.

Codes: ``not_draft``, ``set_aside``, ``rationale_missing``, ``section_empty``, ``param_missing``,
``param_invalid``, ``param_kind_mismatch``, ``param_seed_default`` (a seed's default outside
its template), ``pipeline_missing``, ``pipeline_unknown``,
``decision_table_invalid``, ``rule_unknown_estimate``, and whatever the components use.
Components' ``final_checks`` (the analysis app's computability gate, which runs the plan) are
asked only when nothing else blocks the freeze: running a plan that is not yet complete tells
the PI nothing new. The computability gate of a large design answers ``computability_pending``
(a problem with ``progress``) while its Celery task runs; the draft page polls it.
"""

from typing import Any

from django.urls import reverse

from apps.protocols.components import Problem, registered_components
from apps.protocols.decision_table import decision_table_errors, rule_estimates
from apps.protocols.models import ProtocolVersion
from apps.protocols.parameters import value_error
from apps.protocols.plans import (
    SECTION_TITLES,
    declared_pipelines,
    pipeline_declaration,
    plan_template,
    unset_parameters,
    version_pipeline,
)


def edit_url(version: ProtocolVersion, anchor: str = "") -> str:
    """The draft page of ``version``, at ``#anchor`` when given: where a problem is fixed."""
    url = reverse("protocols:edit", args=[version.protocol.code, version.label])
    return f"{url}#{anchor}" if anchor else url


def _own_problems(version: ProtocolVersion) -> list[Problem]:
    template = plan_template(version.protocol.template)
    problems = []
    # The rationale first: the superseded version is loaded only when its label is needed.
    if not version.amendment_rationale.strip() and version.supersedes is not None:
        problems.append(
            Problem(
                "rationale_missing",
                f"an amendment needs a rationale: say why v{version.supersedes.label} is "
                "superseded",
                edit_url(version, "amendment-rationale"),
            )
        )
    for section in template.required_sections:
        text = getattr(version, section).strip()
        title = SECTION_TITLES[section]
        if not text:
            message = f"the {title.lower()} section is empty"
        elif text == template.outline(section).strip():
            message = f"the {title.lower()} section holds only the template's outline"
        else:
            continue
        problems.append(Problem("section_empty", message, edit_url(version, f"section-{section}")))
    parameters = list(version.parameters.all())
    for parameter in parameters:
        anchor = edit_url(version, f"param-{parameter.name}")
        if not parameter.value.strip():
            if parameter.required:
                message = f"the {parameter.label} has no value"
                problems.append(Problem("param_missing", message, anchor))
            continue
        error = value_error(parameter, parameter.value)
        if error:
            problems.append(Problem("param_invalid", error, anchor))
    problems += _pipeline_problems(version)
    problems += _kind_problems(version, parameters)
    problems += _seed_default_problems(version)
    kinds = {p.name: p.kind for p in parameters}
    table_errors = decision_table_errors(version.decision_table, kinds)
    for error in table_errors:
        problems.append(
            Problem("decision_table_invalid", error, edit_url(version, "decision-table"))
        )
    if not table_errors:
        problems += _rule_vocabulary_problems(version)
    return problems


def _pipeline_problems(version: ProtocolVersion) -> list[Problem]:
    kind = version_pipeline(version)
    known = ", ".join(d.kind for d in declared_pipelines())
    url = edit_url(version, "plan-pipeline")
    if not kind:
        return [
            Problem(
                "pipeline_missing",
                f"the plan names no analysis pipeline, so it could never be analysed: choose "
                f"one of {known}",
                url,
            )
        ]
    if pipeline_declaration(kind) is None:
        return [
            Problem(
                "pipeline_unknown",
                f"the plan names the pipeline {kind!r}, which does not exist; choose one of "
                f"{known}",
                url,
            )
        ]
    return []


def _kind_problems(version: ProtocolVersion, parameters: list[Any]) -> list[Problem]:
    """A parameter the plan's pipeline declares must be held with the declared kind (issue
    #12): the pipeline reads it as that kind. Parameters it does not declare are the plan's own.

    Only drafts meet the gate: a frozen plan that holds, say, ``exclusion_reasons`` as text (the
    format before parameters were typed) keeps being read as it was frozen.
    """
    declaration = pipeline_declaration(version_pipeline(version) or "")
    if declaration is None:
        return []
    problems = []
    for parameter in parameters:
        declared = declaration.parameter(parameter.name)
        if declared is None or declared.kind == parameter.kind:
            continue
        problems.append(
            Problem(
                "param_kind_mismatch",
                f"the parameter {parameter.name} is held as {parameter.kind}, but the "
                f"{declaration.kind} pipeline declares it as {declared.kind}: give it as "
                f"{declared.kind}",
                edit_url(version, f"param-{parameter.name}"),
            )
        )
    return problems


def _seed_default_problems(version: ProtocolVersion) -> list[Problem]:
    """A parameter left unset whose default is a seed's own value, under another template
    (issue #32 §3): the pipeline would silently analyse this study with the seed's choice (a
    generic plan on ``paired_blocks`` took seed 002's secondary endpoints and could not be
    analysed). The PI sets the plan's own value."""
    template = version.protocol.template
    return [
        Problem(
            "param_seed_default",
            f"the plan leaves {unset.name} unset, and its default ({unset.default}) is the "
            f"seed's, which applies only under the {unset.seed_template} template, not "
            f"{template}: set this plan's own value",
            edit_url(version, f"param-{unset.name}" if unset.name in held else "plan-catalogue"),
        )
        for held in [{p.name: p.required for p in version.parameters.all()}]
        for unset in unset_parameters(version)
        if not unset.applies and not held.get(unset.name)  # param_missing names a held one
    ]


def _rule_vocabulary_problems(version: ProtocolVersion) -> list[Problem]:
    """Rules may name only estimates the plan's pipeline produces (issue #12 §4)."""
    declaration = pipeline_declaration(version_pipeline(version) or "")
    table = version.decision_table
    if declaration is None or not table:
        return []
    url = edit_url(version, "decision-table")
    if not declaration.decision_table:
        return [
            Problem(
                "rule_unknown_estimate",
                f"the {declaration.kind} pipeline evaluates no decision table, so its "
                f"{len(table)} rule(s) would never be read: remove them or choose a pipeline "
                "that does",
                url,
            )
        ]
    names = [e.name for e in declaration.version_estimates(version)]
    problems = []
    for rule, estimate in rule_estimates(table):
        if estimate not in names:
            problems.append(
                Problem(
                    "rule_unknown_estimate",
                    f"decision table rule {rule} names the estimate {estimate!r}, which the "
                    f"{declaration.kind} pipeline does not produce; its estimates are "
                    f"{', '.join(names)}",
                    url,
                )
            )
    return problems


def version_gate(*, version: ProtocolVersion) -> list[Problem]:
    """Every problem that blocks freezing ``version``; an empty list means it may be frozen.

    A version that is not an open draft has one problem (``not_draft`` or ``set_aside``) and no
    others: there is nothing left to fix in it.
    """
    if not version.is_draft:
        return [Problem("not_draft", f"v{version.label} is already frozen; amend it to change it")]
    if version.is_set_aside:
        return [
            Problem(
                "set_aside",
                f"v{version.label} was set aside for v{version.successor.label} and is kept "
                "as it is",
                reverse("protocols:version", args=[version.protocol.code, version.successor.label]),
            )
        ]
    return version_content_problems(version=version)


def version_content_problems(*, version: ProtocolVersion) -> list[Problem]:
    """The gate's problems with what ``version`` holds, whatever its state: for a draft set
    aside without being frozen, what the gate found in it (it is kept as it was)."""
    problems = _own_problems(version)
    for component in registered_components():
        if component.checks is not None:
            problems.extend(component.checks(version))
    if not problems:
        for component in registered_components():
            if component.final_checks is not None:
                problems.extend(component.final_checks(version))
    return problems


def version_gate_notes(*, version: ProtocolVersion, problems: list[Problem]) -> list[str]:
    """What the components say about a draft that nothing blocks (the computability gate's
    sampling, for one); empty while ``problems`` (the gate's answer) block the freeze."""
    if problems or not version.is_editable:
        return []
    notes: list[str] = []
    for component in registered_components():
        if component.notes is not None:
            notes.extend(component.notes(version))
    # What the pipeline reads that the PI has not set (issue #32 §3).
    notes += [
        f"The plan leaves {unset.name} unset: {unset.text}."
        for unset in unset_parameters(version)
        if unset.default
    ]
    return notes
