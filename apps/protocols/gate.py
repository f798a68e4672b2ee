"""The freeze gate: every problem that blocks freezing a draft, each with where it is fixed.

``version_gate`` is the one place the answer comes from: the draft page's live checklist, the
API's gate endpoint and ``version_freeze`` (which refuses with all of them at once) all call it.
Problems of this app's own content come first, in page order (amendment rationale, sections,
parameters, decision table), then those of every registered ``VersionComponent``.

Codes: ``not_draft``, ``set_aside``, ``rationale_missing``, ``section_empty``, ``param_missing``,
``param_invalid``, ``decision_table_invalid``, and whatever the components use.
"""

from django.urls import reverse

from apps.protocols.components import Problem, registered_components
from apps.protocols.decision_table import decision_table_errors
from apps.protocols.models import ProtocolVersion
from apps.protocols.parameters import value_error
from apps.protocols.plans import SECTION_TITLES, plan_template


def edit_url(version: ProtocolVersion, anchor: str = "") -> str:
    """The draft page of ``version``, at ``#anchor`` when given: where a problem is fixed."""
    url = reverse("protocols:edit", args=[version.protocol.code, version.label])
    return f"{url}#{anchor}" if anchor else url


def _own_problems(version: ProtocolVersion) -> list[Problem]:
    template = plan_template(version.protocol.template)
    problems = []
    if version.supersedes_id and not version.amendment_rationale.strip():
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
    kinds = {p.name: p.kind for p in parameters}
    for error in decision_table_errors(version.decision_table, kinds):
        problems.append(
            Problem("decision_table_invalid", error, edit_url(version, "decision-table"))
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
    return problems
