"""How the roster and the administration schedule take part in a version's life.

Registered as the ``responses`` ``VersionComponent`` from ``ResponsesConfig.ready()``:

- ``checks``: the roster must not be empty (except for templates that administer nothing), and
  the plan must say how many repetitions and which seed the schedule uses;
- ``on_freeze``: generate the schedule from the plan's seed and store it as ``Administration``
  rows, in order — it runs while the version is still a draft, inside the freeze transaction;
- ``document``: the roster (codes, identity hashes, full identity tuples) and the schedule;
- ``copy``: an amendment's draft gets the roster; its schedule is generated at its own freeze.
"""

from collections.abc import Iterator
from typing import Any

from django.urls import reverse

from apps.items.models import Cell
from apps.protocols.components import Problem, VersionComponent
from apps.protocols.models import AnalysisParameter, ProtocolVersion
from apps.responses.models import Administration, RosterEntry

# The standin until apps/items/schedule.py lands on main (see apps/responses/standins.py).
from apps.responses.standins import administration_schedule, cell_key, design_schedule_inputs

# Plan templates whose protocols administer nothing to a model (seed 003: a judging rubric
# served immutably); every other template needs at least one evaluand to freeze.
ROSTER_OPTIONAL_TEMPLATES = frozenset({"rubric"})

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
                f"The analysis plan has no value for “{name}” ({meaning}); the schedule needs it.",
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
                f"The plan's “{name}” is {value!r}; it must be a whole number ≥ {minimum}.",
                url,
            )


def roster_checks(version: ProtocolVersion) -> Iterator[Problem]:
    """What the roster and the schedule's parameters still lack before a freeze."""
    url = reverse("responses:roster", args=[version.pk])
    has_roster = RosterEntry.objects.filter(version=version).exists()
    needs_roster = version.protocol.template not in ROSTER_OPTIONAL_TEMPLATES
    if needs_roster and not has_roster:
        yield Problem(
            "roster_empty",
            "No evaluand is enrolled: enrol at least one before freezing, or nothing can be "
            "administered.",
            url,
        )
    if needs_roster or has_roster:
        yield from _schedule_problems(version, url)


def schedule_on_freeze(version: ProtocolVersion) -> None:
    """Generate the administration schedule from the plan's seed and store it in order."""
    roster = list(RosterEntry.objects.filter(version=version).select_related("evaluand"))
    if not roster:
        return
    repetitions = plan_integer(version, "repetitions")
    seed = plan_integer(version, "seed")
    if repetitions is None or seed is None:
        # The freeze gate refuses this before on_freeze runs; this guards a direct call.
        raise ValueError("the schedule needs the plan's repetitions and seed")
    inputs = design_schedule_inputs(version)
    entries = administration_schedule(
        cells=inputs["cells"],
        factors=inputs["factors"],
        evaluands=[entry.code for entry in roster],
        repetitions=repetitions,
        seed=seed,
    )
    cells = {
        cell_key(item_code, level_code): pk
        for pk, item_code, level_code in Cell.objects.filter(version=version).values_list(
            "pk", "item__code", "level__code"
        )
    }
    evaluands = {entry.code: entry.evaluand_id for entry in roster}
    Administration.objects.filter(version=version).delete()
    Administration.objects.bulk_create(
        [
            Administration(
                version=version,
                position=position,
                cell_id=cells[entry["cell"]],
                evaluand_id=evaluands[entry["evaluand"]],
                repetition=entry["repetition"],
                block=entry.get("block", 0),
                assignment=entry.get("assignment", {}),
            )
            for position, entry in enumerate(entries, start=1)
        ],
        batch_size=2000,
    )


def responses_document(version: ProtocolVersion) -> dict[str, Any]:
    """The roster with full identity tuples, and the ordered schedule, for the frozen document."""
    roster = RosterEntry.objects.filter(version=version).select_related("evaluand")
    codes = {entry.evaluand_id: entry.code for entry in roster}
    schedule = (
        Administration.objects.filter(version=version)
        .order_by("position")
        .values_list(
            "position",
            "cell__item__code",
            "cell__level__code",
            "evaluand_id",
            "repetition",
            "block",
            "assignment",
        )
    )
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
        "schedule": [
            {
                "position": position,
                "cell": cell_key(item_code, level_code),
                "evaluand": codes[evaluand_id],
                "repetition": repetition,
                "block": block,
                "assignment": assignment,
            }
            for position, item_code, level_code, evaluand_id, repetition, block, assignment in (
                schedule
            )
        ],
    }


def roster_copy(source: ProtocolVersion, target: ProtocolVersion) -> None:
    """Give an amendment's new draft the same roster; the schedule is regenerated at its freeze."""
    RosterEntry.objects.bulk_create(
        [
            RosterEntry(
                version=target,
                evaluand_id=entry.evaluand_id,
                code=entry.code,
                position=entry.position,
            )
            for entry in RosterEntry.objects.filter(version=source)
        ]
    )


RESPONSES_COMPONENT = VersionComponent(
    name="responses",
    checks=roster_checks,
    on_freeze=schedule_on_freeze,
    document=responses_document,
    copy=roster_copy,
)
