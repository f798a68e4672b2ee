"""How the roster and the administration schedule take part in a version's life.

Registered as the ``responses`` ``VersionComponent`` from ``ResponsesConfig.ready()``:

- ``checks``: the roster must not be empty when the version has something to administer, and
  the plan must say how many repetitions and which seed the schedule uses;
- ``on_freeze``: generate the schedule from the plan's seed with the design app's generator
  (``apps.items.schedule.administration_schedule``) and store it as ``Administration`` rows, in
  order — it runs while the version is still a draft, inside the freeze transaction;
- ``document``: the roster (codes, identity hashes, full identity tuples) and the schedule, with
  the schedule's SHA-256 so that anyone can regenerate it from the seed and compare;
- ``copy``: an amendment's draft gets the roster; its schedule is generated at its own freeze.
"""

import math
from collections.abc import Iterator
from typing import Any

from django.core.exceptions import ValidationError
from django.urls import reverse

from apps.core.rows import row_copy
from apps.items.models import Cell, Factor, FactorRole
from apps.items.schedule import ScheduleEntry, administration_schedule, schedule_sha256
from apps.items.selectors import design_schedule_inputs
from apps.protocols.components import Problem, VersionComponent
from apps.protocols.models import AnalysisParameter, ProtocolVersion
from apps.responses.models import Administration, RosterEntry

# Plan templates whose protocols may have nothing to administer (the design app makes the same
# exception for their design). Such a version needs a roster only once it has cells.
ROSTER_OPTIONAL_TEMPLATES = frozenset({"generic"})

SCHEDULE_PARAMETERS = {
    "repetitions": "how many times each cell is given to each evaluand",
    "seed": "the random seed the administration schedule is generated from",
}


def _parameter(version: ProtocolVersion, name: str) -> AnalysisParameter | None:
    return AnalysisParameter.objects.filter(version=version, name=name).first()


def plan_integer(version: ProtocolVersion, name: str) -> int | None:
    """The integer value of the plan parameter ``name``, or None when absent, empty or not one."""
    parameter = _parameter(version, name)
    if parameter is None:
        return None
    try:
        return int(parameter.value.strip())
    except ValueError:
        return None


def _schedule_problems(version: ProtocolVersion, url: str) -> Iterator[Problem]:
    for name, meaning in SCHEDULE_PARAMETERS.items():
        parameter = _parameter(version, name)
        value = parameter.value.strip() if parameter else ""
        if parameter is not None and not value and parameter.required:
            # An empty required parameter is already reported by the plan's own check.
            continue
        if not value:
            yield Problem(
                f"{name}_missing",
                f"the analysis plan has no value for “{name}” ({meaning}); the schedule needs it",
                url,
            )
            continue
        try:
            number = int(value)
        except ValueError:
            number = None
        minimum = 1 if name == "repetitions" else 0
        if number is None or number < minimum:
            yield Problem(
                f"{name}_invalid",
                f"the plan's “{name}” is {value!r}; it must be a whole number ≥ {minimum}",
                url,
            )
    repetitions = plan_integer(version, "repetitions")
    design = Factor.objects.filter(version=version, role=FactorRole.DESIGN)
    combinations = math.prod(len(factor.levels) for factor in design)
    if repetitions and combinations > 1 and repetitions % combinations:
        yield Problem(
            "repetitions_invalid",
            f"the design factors cross into {combinations} combinations and each task block "
            f"gives each once, so repetitions must be a multiple of {combinations}, "
            f"not {repetitions}",
            url,
        )


def roster_checks(version: ProtocolVersion) -> Iterator[Problem]:
    """What the roster and the schedule's parameters still lack before a freeze.

    ``roster_empty`` blocks every template that administers cells (OPB-01, XSTest), and a
    generic protocol as soon as its design has a cell: with no evaluand, no schedule exists and
    no response could ever attach to the frozen version.
    """
    url = reverse("responses:roster", args=[version.protocol.code, version.label])
    has_roster = RosterEntry.objects.filter(version=version).exists()
    needs_roster = (
        version.protocol.template not in ROSTER_OPTIONAL_TEMPLATES
        or Cell.objects.filter(version=version, absent=False).exists()
    )
    if needs_roster and not has_roster:
        yield Problem(
            "roster_empty",
            "no evaluand is enrolled: enrol at least one, or nothing can be administered",
            url,
        )
    if needs_roster or has_roster:
        yield from _schedule_problems(version, url)
    if has_roster:
        from apps.responses.surfaces import l5_tool_problems

        yield from l5_tool_problems(version, url)


def _entries(version: ProtocolVersion, codes: list[str]) -> tuple[list[ScheduleEntry], dict]:
    inputs = design_schedule_inputs(version)
    if not inputs.cells or not codes:
        return [], inputs.cell_ids
    repetitions = plan_integer(version, "repetitions")
    seed = plan_integer(version, "seed")
    if repetitions is None or seed is None:
        # The freeze gate refuses this before on_freeze runs; this guards a direct call.
        raise ValidationError("The schedule needs the plan's repetitions and seed.")
    try:
        entries = administration_schedule(
            cells=inputs.cells,
            evaluands=codes,
            repetitions=repetitions,
            seed=seed,
            factors=inputs.factors,
            strata=inputs.strata,
        )
    except ValueError as error:
        raise ValidationError(f"The schedule cannot be generated: {error}.") from error
    return entries, inputs.cell_ids


def schedule_on_freeze(version: ProtocolVersion) -> None:
    """Generate the administration schedule from the plan's seed and store it in order."""
    roster = list(RosterEntry.objects.filter(version=version))
    entries, cell_ids = _entries(version, [entry.code for entry in roster])
    evaluands = {entry.code: entry.evaluand_id for entry in roster}
    Administration.objects.filter(version=version).delete()
    Administration.objects.bulk_create(
        [
            Administration(
                version=version,
                position=entry.position,
                cell_id=cell_ids[entry.cell],
                evaluand_id=evaluands[entry.evaluand],
                repetition=entry.repetition,
                block=entry.block,
                assignment=dict(entry.assignment),
            )
            for entry in entries
        ],
        batch_size=2000,
    )


def _stored_entries(version: ProtocolVersion) -> list[ScheduleEntry]:
    codes = dict(RosterEntry.objects.filter(version=version).values_list("evaluand_id", "code"))
    rows = (
        Administration.objects.filter(version=version)
        .order_by("position")
        .values_list(
            "position",
            "block",
            "cell__item__code",
            "cell__level__code",
            "evaluand_id",
            "repetition",
            "assignment",
        )
    )
    return [
        ScheduleEntry(
            position=position,
            block=block,
            cell=(item, level),
            evaluand=codes[evaluand_id],
            repetition=repetition,
            assignment=assignment,
        )
        for position, block, item, level, evaluand_id, repetition, assignment in rows
    ]


def responses_document(version: ProtocolVersion) -> dict[str, Any]:
    """The roster with full identity tuples, and the ordered schedule with its SHA-256."""
    roster = RosterEntry.objects.filter(version=version).select_related("evaluand")
    entries = _stored_entries(version)
    return {
        "roster": [
            {
                "code": entry.code,
                "label": entry.evaluand.label,
                "identity_sha256": entry.evaluand.identity_sha256,
                "identity": entry.evaluand.identity(),
            }
            for entry in roster
        ],
        "schedule": [entry.as_dict() for entry in entries],
        "schedule_sha256": schedule_sha256(entries) if entries else None,
    }


def roster_copy(source: ProtocolVersion, target: ProtocolVersion) -> None:
    """Give an amendment's new draft the same roster; the schedule is regenerated at its freeze."""
    RosterEntry.objects.bulk_create(
        row_copy(entry, ("evaluand_id", "code", "position"), version=target)
        for entry in RosterEntry.objects.filter(version=source)
    )


RESPONSES_COMPONENT = VersionComponent(
    name="responses",
    checks=roster_checks,
    on_freeze=schedule_on_freeze,
    document=responses_document,
    copy=roster_copy,
)
