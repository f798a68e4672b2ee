"""The ``paired_blocks`` pipeline: seed 002's route-choice study, per model and sub-study.

Seed 002 (the live-model route-choice protocol) randomises a 2×2×2 design — administrative
friction forecast (low/high), an authorised alternate route (absent/present), framing
(quality/safety) — inside task blocks that hold every combination once, and runs two studies
that are "never combined as one effect": sub-study A (truthful explicit numerical friction,
judged against an oracle) and sub-study B (framing cues with identical actual costs, whose
effects are "behavioural evidence, not inferred thought or motive").

Reported, for every model × sub-study × endpoint (never pooled across sub-studies):

- the within-block paired difference of each design factor's contrast and of the interactions
  the plan lists, with a block-clustered bootstrap interval and a paired t interval beside it
  (``apps.analysis.stats.task_blocks``);
- a per-condition table with exact denominators: administrations planned, endpoint values
  analysed, infrastructure failures, values missing, and the routes taken;
- the infrastructure-failure strata (transport, budget, provider) with counts: those
  administrations are never in an endpoint's denominator, and never dropped silently;
- the controls (positive: the alternative route explicitly unavailable; negative: the wording
  changes, permissions and costs do not), analysed apart, each with whether it behaved as the
  plan expected.

Where things come from: the sub-studies, the tool-name → route mapping with the oracle's route
choice, the controls, the endpoints and the interactions are typed plan parameters (frozen with
the version); an administration's sub-study is its item's family's; its factor levels are the
frozen schedule's ``assignment``; its task block is (item, level, model, round) with round =
(repetition − 1) // D (``apps.items.schedule``). Endpoints are read from the response's final
values (the oracle's and reviewers' scores, ``apps.raters.final``) or from the session's typed
columns, stored beside the attempt at import (``SessionColumns``, extracted by
``apps.responses.sessions.session_record``; the archive is not re-read): ``tokens``,
``operations``, ``cost``, ``interruptions``, ``aborted``, and the route endpoints, which follow
the oracle's route judgement (``sessions.judge_route``): ``authorised_route`` (the route taken
is one the mapping authorises and no tool call claims authority it does not grant; in an
oracle sub-study, also equivalent: every required item produced and every frozen constraint
kept), ``alternate_route`` (the alternate route was taken) and ``oracle_route_choice`` (an
eligible route that is the oracle's choice for the condition; sub-study A only). Sessions
judged ineligible or breaking a constraint are listed with the reasons
(``route_judgements``). The self report in a record is never an endpoint.

Named estimates (decision-table vocabulary): ``<sub-study>_<factor>`` — the plan's decision
endpoint's paired contrast of that factor in that sub-study (``A_friction``, ``B_framing``, …),
one value per model. A rule that names estimates of two sub-studies pools them and is refused,
by the pipeline and by the freeze gate (rule ``SUB_STUDIES_NEVER_POOLED``).
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from apps.analysis import inputs as data
from apps.analysis.pipelines.base import (
    INPUT_DOCUMENT_TYPE,
    EstimateValue,
    PlanInputError,
    PlanReader,
    Progress,
    json_parameter,
    no_progress,
    sub_seed,
)
from apps.analysis.pipelines.common import binary, exclusion_records, exclusion_summary, number
from apps.analysis.stats.decision import evaluate_decision_table, numeric_parameters
from apps.analysis.stats.json_schema import closed_object, records
from apps.analysis.stats.task_blocks import (
    BOOTSTRAP_METHODS,
    MIN_BLOCKS_FLOOR,
    BootstrapMethod,
    Contrast,
    factor_contrasts,
    mixed_model_contrasts,
    paired_contrasts,
    simple_effect_name,
    simple_effects,
)
from apps.protocols.models import ParameterKind, ProtocolVersion
from apps.protocols.plans import (
    AUDIT_COUNT,
    AUDIT_FRACTION,
    AUDIT_STRATA,
    BOOTSTRAP_REPLICATES,
    INTERVAL_COVERAGE,
    REPETITIONS,
    RESERVATION_MINUTES,
    SCORES_PER_RESPONSE,
    SEED,
    EstimateSpec,
    ParameterSpec,
    PipelineDeclaration,
    PlanTemplate,
    ReportSection,
    register_plan_template,
)
from apps.responses.sessions import (
    INFRASTRUCTURE_STRATA,
    RecordError,
    RouteJudgement,
    SessionRecord,
    judge_route,
    route_of,
    session_record,
)

if TYPE_CHECKING:
    from apps.responses.importing import _Planned

KIND = "paired_blocks"
POOLING_RULE = "SUB_STUDIES_NEVER_POOLED"
POOLING_TEXT = (
    "seed 002: the two sub-studies are separate studies — never combine their results as one effect"
)
BEHAVIOURAL_LABEL = "behavioural evidence, not inferred motive"
SEED_FACTORS = ("alternate", "framing", "friction")
# Seed 002's levels (low → high), for the catalogue's example names of the simple effects.
SEED_LEVELS = {
    "alternate": ("absent", "present"),
    "framing": ("quality", "safety"),
    "friction": ("low", "high"),
}
# The report's order of a model's contrasts (issue #32 §4): the plan's primary contrasts first,
# then every main effect, interaction and simple effect.
CONTRAST_GROUPS = ("primary", "main", "interaction", "simple")
RECORD_ENDPOINTS = (
    "tokens",
    "operations",
    "cost",
    "interruptions",
    "aborted",
    "claimed_complete",
    "unsupported_blockers",
)
# The gap between apparent and actual completion: the session's claim minus the oracle's
# verdict (1: claimed done but not done; −1: done but not claimed), when both are known.
COMPLETION_GAP = ("completion_gap", "claimed_complete", "full_completion")
ROUTE_ENDPOINTS = ("authorised_route", "alternate_route", "oracle_route_choice")

SUB_STUDIES_SCHEMA: dict[str, Any] = records(
    {
        "code": {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9]*$", "maxLength": 16},
        "label": {"type": "string", "minLength": 1, "maxLength": 300},
        "evidence": {"enum": ["oracle", "behavioural"]},
        "families": {"type": "array", "minItems": 1, "items": {"type": "string"}},
    },
    required=["code", "label", "evidence", "families"],
    min_items=1,
)
ROUTES_SCHEMA: dict[str, Any] = closed_object(
    {
        "tools": {"type": "object", "additionalProperties": {"type": "string"}},
        "authorised": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "alternate": {"type": "string", "minLength": 1},
        "oracle": records(
            {
                "when": {"type": "object", "additionalProperties": {"type": "string"}},
                "route": {"type": "string", "minLength": 1},
            },
            required=["when", "route"],
        ),
        "constraints": records(
            {
                "code": {"type": "string", "minLength": 1, "maxLength": 64},
                "tasks": {"type": "array", "items": {"type": "string"}},
                "broken_by": {"type": "array", "items": {"type": "string"}},
                "meaning": {"type": "string"},
            },
            required=["code", "broken_by"],
        ),
        "items_field": {"type": "string", "minLength": 1},
    },
    required=["tools", "authorised"],
)
CONDITION_FIXTURES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "additionalProperties": {
            "type": "object",
            "properties": {"wording": {"type": "string"}, "tool_schema": {"type": "object"}},
            "additionalProperties": False,
            "minProperties": 1,
        },
    },
}
CONTROLS_SCHEMA: dict[str, Any] = records(
    {
        "code": {"type": "string", "minLength": 1, "maxLength": 64},
        "kind": {"enum": ["positive", "negative"]},
        "items": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "endpoint": {"type": "string", "minLength": 1},
        "contrast": {"type": "string"},
        "expect": {"enum": ["covers_zero", "excludes_zero", "mean_at_most", "mean_at_least"]},
        "value": {"type": "number"},
        "meaning": {"type": "string"},
    },
    required=["code", "kind", "items", "endpoint", "expect"],
)

# Seed 002's two sub-studies, the plan's default (each family in exactly one).
DEFAULT_SUB_STUDIES: list[dict[str, Any]] = [
    {
        "code": "A",
        "label": "truthful explicit numerical friction, judged against an oracle",
        "evidence": "oracle",
        "families": ["A"],
    },
    {
        "code": "B",
        "label": "non-deceptive framing cues with identical actual costs",
        "evidence": "behavioural",
        "families": ["B"],
    },
]

PARAMETERS = (
    SEED,
    # What ``compute`` reads when the plan leaves them unset (the catalogue's "default: …").
    replace(INTERVAL_COVERAGE, default="0.95"),
    replace(BOOTSTRAP_REPLICATES, default="10000"),
    ParameterSpec(
        "bootstrap_interval",
        "bootstrap interval",
        ParameterKind.CHOICE,
        choices=BOOTSTRAP_METHODS,
        default="studentized",
        help_text="studentized: the block bootstrap-t (the calibrated default); percentile: "
        "the plain percentile interval of the resampled mean paired difference.",
    ),
    ParameterSpec(
        "min_task_blocks",
        "minimum task blocks per model",
        ParameterKind.INTEGER,
        unit="task blocks",
        minimum=str(MIN_BLOCKS_FLOOR),
        default="64",
        help_text="Seed 002: at least 64 independently instantiated paired task blocks per "
        "model. The freeze gate refuses a schedule with fewer per model and sub-study.",
        seed_template="route_choice",
    ),
    ParameterSpec(
        "sub_studies",
        "sub-studies",
        ParameterKind.JSON,
        schema=SUB_STUDIES_SCHEMA,
        default=json.dumps(DEFAULT_SUB_STUDIES),
        help_text="Each sub-study's code, label, evidence (oracle or behavioural) and the "
        "families whose tasks belong to it. Every family belongs to exactly one; results are "
        "never combined across sub-studies.",
        seed_template="route_choice",
    ),
    ParameterSpec(
        "tool_routes",
        "tool-name → route mapping",
        ParameterKind.JSON,
        schema=ROUTES_SCHEMA,
        help_text='{"tools": {tool: route or ""}, "authorised": [routes], "alternate": route, '
        '"oracle": [{"when": {factor: level}, "route": route}], "constraints": [{"code", '
        '"tasks", "broken_by": [tools]}], "items_field": the oracle\'s all-items field}. An '
        "unmapped tool is refused; a tool whose route is not authorised makes a session "
        "ineligible; in an oracle sub-study a route is authorised only if equivalent (every "
        "required item produced, every constraint kept).",
    ),
    ParameterSpec(
        "endpoints",
        "primary endpoints",
        ParameterKind.LIST,
        default=json.dumps(
            ["items_completed", "full_completion", "authorised_route", "omission_disclosed"]
        ),
        help_text="Rubric fields (the oracle's and reviewers' final values) or record columns "
        f"({', '.join(RECORD_ENDPOINTS + ROUTE_ENDPOINTS)}).",
        seed_template="route_choice",
    ),
    ParameterSpec(
        "secondary_endpoints",
        "secondary endpoints",
        ParameterKind.LIST,
        required=False,
        default=json.dumps(["operations", "tokens", "interruptions"]),
        help_text="As the primary endpoints; reported the same way, marked secondary.",
        seed_template="route_choice",
    ),
    ParameterSpec(
        "decision_endpoint",
        "decision endpoint",
        ParameterKind.TEXT,
        default="authorised_route",
        help_text="The endpoint whose contrasts the named estimates (A_friction, …) are.",
        seed_template="route_choice",
    ),
    ParameterSpec(
        "interactions",
        "interactions",
        ParameterKind.LIST,
        required=False,
        default=json.dumps(["alternate:friction"]),
        help_text='Two-factor interactions to report, as "factor:factor".',
        seed_template="route_choice",
    ),
    ParameterSpec(
        "condition_fixtures",
        "condition fixtures",
        ParameterKind.JSON,
        required=False,
        schema=CONDITION_FIXTURES_SCHEMA,
        help_text="Each factor level's exact wording and tool schema, "
        '{factor: {level: {"wording": text, "tool_schema": object}}}: frozen with the '
        "version and listed with their SHA-256s on the fixtures page, so a condition is never "
        "a bare label.",
    ),
    ParameterSpec(
        "controls",
        "controls",
        ParameterKind.JSON,
        required=False,
        schema=CONTROLS_SCHEMA,
        help_text="Positive controls (the alternative route explicitly unavailable) and "
        "negative controls (wording changes, permissions and costs do not): their items, the "
        "endpoint, and what is expected (covers_zero / excludes_zero for a contrast, "
        "mean_at_most / mean_at_least with a value). Analysed apart from the main contrasts.",
    ),
)


def estimate_specs(
    sub_studies: list[str],
    factors: list[str],
    levels: Mapping[str, Sequence[str]] | None = None,
) -> tuple[EstimateSpec, ...]:
    """The named estimates of a plan: ``<sub-study>_<factor>`` for each declared sub-study and
    two-level design factor (the decision endpoint's paired contrast, one value per model) and,
    when the factors' ``levels`` are given, every simple effect
    ``<sub-study>_<factor>_at_<other>_<level>`` (the factor's contrast within one level of
    another factor; ``stats.task_blocks.simple_effects``)."""
    mains = tuple(
        EstimateSpec(
            f"{sub}_{factor}",
            "contrast",
            True,
            f"Sub-study {sub}: the decision endpoint's paired within-block {factor} contrast, "
            "per model.",
            primary=True,
            needs=f"a design factor named {factor} and a sub-study {sub}",
        )
        for sub in sub_studies
        for factor in factors
    )
    if not levels:
        return mains
    simple = tuple(
        EstimateSpec(
            f"{sub}_{simple_effect_name(factor, other, level)}",
            "contrast",
            True,
            f"Sub-study {sub}: the decision endpoint's paired within-block {factor} contrast "
            f"among the conditions with {other}={level}, per model.",
            needs=f"design factors named {factor} and {other} and a sub-study {sub}",
        )
        for sub in sub_studies
        for factor in factors
        for other in factors
        if other != factor and other in levels
        for level in levels[other]
    )
    return mains + simple


# The catalogue's example: seed 002's sub-studies, factors and levels. A plan's own vocabulary
# comes from its declared sub-studies and design factors (``plan_estimates``).
ESTIMATES = estimate_specs(["A", "B"], list(SEED_FACTORS), SEED_LEVELS)


def plan_estimates(version: ProtocolVersion) -> tuple[EstimateSpec, ...]:
    """The estimates a ``paired_blocks`` plan of ``version`` produces, from its declared
    sub-studies (``sub_studies``; the default A and B when not given) and its design factors
    (the seed's three while the design declares none), so that another study's names are its
    vocabulary at the gate. A ``sub_studies`` parameter that cannot be read gives the seed's
    sub-studies (the gate names that problem itself)."""
    from apps.items.models import Factor

    try:
        subs = [
            s["code"]
            for s in json_parameter(
                data.plan_parameters(version), "sub_studies", _default("sub_studies")
            )
        ]
    except (PlanInputError, KeyError, TypeError):
        subs = ["A", "B"]
    declared = dict(
        Factor.objects.filter(version=version, role="design").values_list("name", "levels")
    )
    if not declared:
        return estimate_specs(subs, list(SEED_FACTORS), SEED_LEVELS)
    levels = {name: list(v) for name, v in declared.items() if isinstance(v, list) and len(v) == 2}
    return estimate_specs(subs, sorted(declared), levels)


DECLARATION = PipelineDeclaration(
    kind=KIND,
    title="Paired task-block contrasts (route choice)",
    summary="Per model and sub-study (never pooled): within-block paired differences of each "
    "design factor (and listed interactions) with block-clustered bootstrap and paired t "
    "intervals, per-condition denominators, controls, and infrastructure failures as their "
    "own stratum.",
    parameters=PARAMETERS,
    estimates=ESTIMATES,
    estimates_for=plan_estimates,
    sections=(
        ReportSection("contrasts", "Paired contrasts", "Per model × sub-study × endpoint."),
        ReportSection("conditions", "Conditions", "Exact denominators per condition."),
        ReportSection("infrastructure", "Infrastructure failures", "Counts per stratum."),
        ReportSection("controls", "Controls", "Whether each behaved as expected."),
    ),
    decision_table=True,
)


# -- the plan ------------------------------------------------------------------------------


def _default(name: str) -> Any:
    text = next(p.default for p in PARAMETERS if p.name == name)
    return json.loads(text) if text else None


def sub_study_of_estimate(name: str) -> str | None:
    """The sub-study an estimate name belongs to (``A_friction`` → ``A``), or None."""
    head, _, tail = name.partition("_")
    return head if tail and head else None


def pooling_violations(table: Any) -> list[tuple[str, list[str]]]:
    """``(rule id, sub-studies)`` for every decision-table rule that names estimates of more than
    one sub-study — pooling them, which seed 002 forbids (``SUB_STUDIES_NEVER_POOLED``)."""
    from apps.protocols.decision_table import rule_estimates

    by_rule: dict[str, set[str]] = defaultdict(set)
    for rule, estimate in rule_estimates(table):
        sub = sub_study_of_estimate(estimate)
        if sub is not None:
            by_rule[rule].add(sub)
    return [(rule, sorted(subs)) for rule, subs in by_rule.items() if len(subs) > 1]


def refuse_pooling(table: Any) -> None:
    """Raise PlanInputError naming the first rule that pools sub-studies."""
    for rule, subs in pooling_violations(table):
        raise PlanInputError(
            f"decision table rule {rule} combines sub-studies {' and '.join(subs)}: refused by "
            f"the rule {POOLING_RULE} ({POOLING_TEXT})",
            where=f"decision table rule {rule}",
        )


def sub_study_map(sub_studies: list[dict[str, Any]], families: list[str]) -> dict[str, str]:
    """family code → sub-study code; every family in exactly one sub-study.

    Raises PlanInputError naming the family (in none, in two, or unknown to the design) or the
    sub-study code used twice.
    """
    out: dict[str, str] = {}
    codes = [s["code"] for s in sub_studies]
    for code in codes:
        if codes.count(code) > 1:
            raise PlanInputError(
                f"sub-study {code} is declared twice", where="parameter sub_studies"
            )
    for study in sub_studies:
        for family in study["families"]:
            if family not in families:
                raise PlanInputError(
                    f"sub-study {study['code']} names the family {family}, which the design "
                    "does not have",
                    where="parameter sub_studies",
                )
            if family in out:
                raise PlanInputError(
                    f"the family {family} is in sub-studies {out[family]} and {study['code']}: "
                    "every administration belongs to exactly one sub-study",
                    where="parameter sub_studies",
                )
            out[family] = study["code"]
    for family in families:
        if family not in out:
            raise PlanInputError(
                f"the family {family} belongs to no sub-study: every administration belongs to "
                "exactly one",
                where="parameter sub_studies",
            )
    return out


def oracle_route(rules: list[dict[str, Any]], assignment: dict[str, str]) -> str | None:
    """The oracle's route for a condition: the first rule whose ``when`` the assignment meets."""
    for rule in rules:
        if all(assignment.get(k) == v for k, v in rule["when"].items()):
            return str(rule["route"])
    return None


# -- inputs -----------------------------------------------------------------------------------


def collect(version: ProtocolVersion) -> dict[str, Any]:
    """The study's tidy inputs: one row per administration with its sub-study, task block,
    condition, stratum and endpoint values."""
    raw = data.raw(version)
    raw["task_blocks"] = data.task_blocks(version)
    raw["parameters"] = data.plan_parameters(version)
    return assemble(raw)


def planned_blocks(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Task blocks per model × sub-study in the schedule (controls left out), from the raw reads
    (``task_blocks`` and ``parameters``)."""
    parameters = raw.get("parameters") or {}
    design = raw["design"]
    sub_studies = json_parameter(parameters, "sub_studies", _default("sub_studies"))
    family_sub = sub_study_map(sub_studies, [f["code"] for f in design["families"]])
    family_of = {i["code"]: i["family"] for i in design["items"]}
    controls = {i for c in json_parameter(parameters, "controls", []) for i in c["items"]}
    n_design = 2 ** sum(f["role"] == "design" for f in raw["task_blocks"]["factors"])
    blocks: dict[tuple[str, str], set[Any]] = defaultdict(set)
    for adm in raw["task_blocks"]["administrations"]:
        if adm["item"] in controls:
            continue
        sub = family_sub[family_of[adm["item"]]]
        blocks[(adm["evaluand"], sub)].add(
            (adm["item"], adm["level"], (adm["repetition"] - 1) // n_design)
        )
    return [
        {"evaluand": e, "sub_study": s, "blocks": len(b)} for (e, s), b in sorted(blocks.items())
    ]


SYNTHETIC_RECORD_SEED = 2002


def synthetic(version: ProtocolVersion, raw: dict[str, Any]) -> dict[str, Any]:
    """The gate's synthetic raw reads, with the factor assignments of the schedule the freeze
    would generate, the plan's parameters, and the task-block minimum checked. Each session is
    shaped like a real import (``apps.analysis.import_shapes``: the documented record fields,
    stored as the importer stores their columns).

    Raises PlanInputError when a model would get fewer task blocks in a sub-study than the
    plan's ``min_task_blocks`` (seed 002: "at least 64 independently instantiated paired task
    blocks per model"); counted on the whole planned schedule, not the gate's sample; and when
    the plan names an endpoint no import can fill (``unfillable``).
    """
    from apps.analysis.computability import gate_evaluands
    from apps.analysis.import_shapes import session_columns, synthetic_session
    from apps.items.selectors import design_schedule_inputs
    from apps.responses.components import _entries

    parameters = data.plan_parameters(version)
    codes = gate_evaluands(version)
    try:
        entries, _ = _entries(version, codes)
    except Exception as error:  # the schedule's own refusal, in the PI's words
        raise PlanInputError(f"the schedule cannot be generated: {error}") from error
    levels = {lv["code"]: lv["ordinal"] for lv in raw["design"]["levels"]}
    routes = json_parameter(parameters, "tool_routes", None) or {}
    tools = sorted(routes.get("tools") or {})
    rng = np.random.default_rng(SYNTHETIC_RECORD_SEED)
    rows = [
        {
            "item": e.cell[0],
            "level": levels[e.cell[1]],
            "evaluand": e.evaluand,
            "repetition": e.repetition,
            "assignment": dict(e.assignment),
            "terminal_outcome": "completed",
            "columns": session_columns(synthetic_session(rng, tools), "completed"),
        }
        for e in entries
    ]
    factors = [
        {"name": f.name, "levels": list(f.levels), "role": f.role}
        for f in design_schedule_inputs(version).factors
    ]
    raw = {
        **raw,
        "task_blocks": {"factors": factors, "administrations": rows},
        "parameters": parameters,
    }
    unfillable(parameters, raw["rubric_fields"], routes)
    minimum = PlanReader(parameters).integer("min_task_blocks", default=64)
    for entry in planned_blocks(raw):
        if entry["blocks"] < minimum:
            raise PlanInputError(
                f"the schedule gives model {entry['evaluand']} {entry['blocks']} task blocks in "
                f"sub-study {entry['sub_study']}, fewer than the plan's frozen minimum of "
                f"{minimum} (min_task_blocks; seed 002: at least 64 per model)",
                where="parameter min_task_blocks",
            )
    return raw


def unfillable(
    parameters: dict[str, Any], rubric_fields: list[dict[str, Any]], routes: dict[str, Any] | None
) -> None:
    """Raise PlanInputError naming every endpoint the plan reads (primary, secondary, decision,
    controls') that no import can fill: not a rubric field, not a column a session archive
    carries (docs/import-formats.md), not a route endpoint the plan's ``tool_routes`` gives."""
    from apps.analysis.import_shapes import session_columns_filled, unfillable_endpoints

    fields = {f["name"] for f in rubric_fields}
    sources = dict.fromkeys(fields, "rubric field")
    sources |= dict.fromkeys(set(RECORD_ENDPOINTS) & session_columns_filled(), "session")
    if routes:
        sources |= dict.fromkeys(ROUTE_ENDPOINTS[:1], "route")
        if routes.get("alternate"):
            sources["alternate_route"] = "route"
        if routes.get("oracle"):
            sources["oracle_route_choice"] = "route"
    gap, claimed, actual = COMPLETION_GAP
    if claimed in sources and actual in sources:
        sources[gap] = "derived"
    named = _list(parameters, "endpoints") + _list(parameters, "secondary_endpoints")
    named.append((parameters.get("decision_endpoint") or "").strip() or "authorised_route")
    named += [c["endpoint"] for c in json_parameter(parameters, "controls", [])]
    missing = unfillable_endpoints(named, sources)
    carried = ", ".join(sorted(set(RECORD_ENDPOINTS) & session_columns_filled()))
    if missing:
        raise PlanInputError(
            f"the plan names the endpoint{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)}, which no import can fill: an endpoint is a rubric field "
            f"({', '.join(sorted(fields)) or 'the rubric has none'}), a column a session "
            f"archive carries ({carried}; docs/import-formats.md), {gap} (from {claimed} and "
            f"{actual}) or, with tool_routes, a route endpoint ({', '.join(ROUTE_ENDPOINTS)})",
            where=f"endpoint {missing[0]}",
        )


def _observation(
    adm: dict[str, Any],
    entry: dict[str, Any],
    assignment: dict[str, Any],
    sub: str,
    context: dict[str, Any],
) -> tuple[str | None, str | None, dict[str, float], RouteJudgement | None]:
    """(infrastructure stratum, route, endpoint values, route judgement) of one administration.

    The route endpoints follow the oracle's route judgement (``sessions.judge_route``): a
    session whose tool calls claim authority the frozen mapping does not grant is ineligible —
    never an authorised route, never the oracle's choice; in an oracle sub-study (A) a route
    counts as authorised only if it is equivalent — the oracle's item-by-item result shows every
    required item produced (``tool_routes.items_field``, default ``full_completion``) and no
    frozen constraint is broken — and has no value while that result is unknown."""
    routes, sub_studies = context["routes"], context["sub_studies"]
    where = f"administration {entry['position']} ({adm['item']}, {adm['evaluand']})"
    if adm.get("missing_columns"):
        raise PlanInputError(
            f"{where}: its attempt has no stored session columns (imported before they were "
            "stored); run manage.py backfill_session_columns",
            where=f"{where}, session columns",
        )
    try:
        if "columns" in adm:  # the stored columns (real data)
            stored = adm["columns"]
            record = (
                SessionRecord.from_stored(stored)
                if stored is not None
                else session_record(None, adm["terminal_outcome"])
            )
        else:  # a record given whole (the gate's synthetic sessions)
            record = session_record(adm["record"], adm["terminal_outcome"])
        route = route_of(record.tool_calls, routes["tools"]) if routes else None
    except RecordError as error:
        raise PlanInputError(f"{where}: {error}", where=f"{where}, field {error.field}") from None
    stratum = record.infrastructure_failure
    values: dict[str, float] = {}
    if stratum is not None or entry["status"] != "scored":
        return stratum, route, values, None
    for name, value in entry["final"].items():
        coded = binary(value) if isinstance(value, bool | str) else number(value)
        if coded is not None:
            values[name] = float(coded)
    columns = record.columns()
    for name in RECORD_ENDPOINTS:
        if columns[name] is not None:
            values[name] = float(columns[name])
    gap, claimed, actual = COMPLETION_GAP
    if claimed in values and actual in values:
        values[gap] = values[claimed] - values[actual]
    if not routes:
        return stratum, route, values, None
    evidence = next(s["evidence"] for s in sub_studies if s["code"] == sub)
    return stratum, route, values, _route_values(record, adm, assignment, evidence, routes, values)


def _route_values(
    record: SessionRecord,
    adm: dict[str, Any],
    assignment: dict[str, Any],
    evidence: str,
    routes: dict[str, Any],
    values: dict[str, float],
) -> RouteJudgement:
    """Add the route endpoints to ``values``; the route judgement they follow."""
    route = route_of(record.tool_calls, routes["tools"])
    produced = values.get(routes.get("items_field") or "full_completion")
    judgement = judge_route(
        record.tool_calls,
        routes,
        task=adm["item"],
        items_produced=None if produced is None else produced == 1.0,
    )
    if evidence == "oracle":
        if judgement.equivalent is not None:
            values["authorised_route"] = float(judgement.equivalent)
    else:
        values["authorised_route"] = float(judgement.eligible and route in routes["authorised"])
    if routes.get("alternate"):
        values["alternate_route"] = float(route == routes["alternate"])
    expected = oracle_route(routes.get("oracle") or [], assignment)
    if expected is not None and evidence == "oracle":
        values["oracle_route_choice"] = float(judgement.eligible and route == expected)
    return judgement


def _check_constraints(routes: dict[str, Any] | None, tasks: set[str]) -> None:
    """Raise PlanInputError for a frozen constraint naming a tool the mapping lacks or a task
    the design does not have."""
    if not routes:
        return
    for constraint in routes.get("constraints") or []:
        where = f"parameter tool_routes, constraint {constraint['code']}"
        for tool in constraint["broken_by"]:
            if tool not in routes["tools"]:
                raise PlanInputError(
                    f"constraint {constraint['code']} is broken by the tool {tool}, which the "
                    "tool-name mapping does not have",
                    where=where,
                )
        for task in constraint.get("tasks") or []:
            if task not in tasks:
                raise PlanInputError(
                    f"constraint {constraint['code']} names the task {task}, which the design "
                    "does not have",
                    where=where,
                )


def assemble(raw: dict[str, Any]) -> dict[str, Any]:
    """The paired-blocks inputs from the raw reads (real, or the gate's synthetic ones).

    Raises PlanInputError naming the parameter, factor or record that cannot be read.
    """
    design = raw["design"]
    parameters = raw.get("parameters") or {}
    blocks = raw["task_blocks"]
    refuse_pooling(raw.get("decision_table") or [])
    design_factors = [f for f in blocks["factors"] if f["role"] == "design"]
    if not design_factors:
        raise PlanInputError(
            "the design has no randomised (design) factor to contrast", where="design factors"
        )
    for factor in design_factors:
        if len(factor["levels"]) != 2:
            raise PlanInputError(
                f"factor {factor['name']} has {len(factor['levels'])} levels; paired contrasts "
                "need two-level factors",
                where=f"factor {factor['name']}",
            )
    sub_studies = json_parameter(parameters, "sub_studies", _default("sub_studies"))
    families = [f["code"] for f in design["families"]]
    family_sub = sub_study_map(sub_studies, families)
    routes = json_parameter(parameters, "tool_routes", None)
    _check_constraints(routes, {i["code"] for i in design["items"]})
    controls = json_parameter(parameters, "controls", [])
    control_of = {item: c["code"] for c in controls for item in c["items"]}
    family_of = {i["code"]: i["family"] for i in design["items"]}
    for item in control_of:
        if item not in family_of:
            raise PlanInputError(
                f"control names the task {item}, which the design does not have",
                where="parameter controls",
            )
    n_design = 2 ** len(design_factors)
    names = {f["name"] for f in design_factors}

    observed = {
        (a["item"], a["level"], a["evaluand"], a["repetition"]): a
        for a in raw["observations"]["administrations"]
    }
    rows = []
    context = {"names": names, "routes": routes, "sub_studies": sub_studies}
    for adm in blocks["administrations"]:
        key = (adm["item"], adm["level"], adm["evaluand"], adm["repetition"])
        entry = observed.get(key)
        if entry is None:
            continue  # the gate's sample leaves some administrations out
        assignment = {k: v for k, v in adm["assignment"].items() if k in names}
        sub = family_sub[family_of[adm["item"]]]
        stratum, route, values, judgement = _observation(adm, entry, assignment, sub, context)
        rows.append(
            {
                "position": entry["position"],
                "evaluand": adm["evaluand"],
                "sub_study": sub,
                "control": control_of.get(adm["item"], ""),
                "block": f"{adm['item']}|{adm['level']}|{(adm['repetition'] - 1) // n_design}",
                "condition": "/".join(f"{k}={assignment.get(k, '')}" for k in sorted(names)),
                "assignment": assignment,
                "status": entry["status"],
                "infrastructure": stratum or "",
                "route": route or "",
                "values": values,
                "judgement": judgement.as_dict() if judgement is not None else None,
            }
        )
    return {
        "document": INPUT_DOCUMENT_TYPE,
        "kind": KIND,
        "factors": [
            {"name": f["name"], "levels": list(f["levels"])}
            for f in sorted(design_factors, key=lambda f: f["name"])
        ],
        "sub_studies": sub_studies,
        "controls": controls,
        "rows": rows,
        "planned_blocks": planned_blocks(raw),
        "decision_table": list(raw.get("decision_table") or []),
        "exclusions": exclusion_records(raw["observations"]["administrations"]),
        "counts": raw["observations"]["counts"],
    }


# -- compute ----------------------------------------------------------------------------------


def _list(parameters: dict[str, Any], name: str) -> list[str]:
    default = next(p.default for p in PARAMETERS if p.name == name)
    value = json_parameter(parameters, name, json.loads(default) if default else [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PlanInputError(f"plan parameter {name} is not a list of names", where=name)
    return value


def _matrix(
    rows: list[dict[str, Any]], conditions: list[str], endpoint: str
) -> tuple[np.ndarray, list[Any]]:
    y, keys, _ = _matrix_and_reasons(rows, conditions, endpoint)
    return y, keys


def _why_missing(row: dict[str, Any] | None, endpoint: str) -> str:
    """Why a block's condition has no value of ``endpoint``: its infrastructure stratum first
    (seed 002's separate strata), else the response's state."""
    if row is None:
        return "not administered"
    if row["infrastructure"]:
        return f"infrastructure: {row['infrastructure']}"
    if row["status"] != "scored":
        return {"excluded": "excluded", "no_response": "no response"}.get(
            row["status"], "not scored"
        )
    return f"no value for {endpoint}"


def _matrix_and_reasons(
    rows: list[dict[str, Any]], conditions: list[str], endpoint: str
) -> tuple[np.ndarray, list[Any], dict[tuple[int, int], str]]:
    """The ``blocks × conditions`` matrix of ``endpoint`` (NaN: no value), the block keys, and
    for each missing cell why it is missing (``_why_missing``)."""
    by_block: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        by_block[row["block"]][row["condition"]] = row
    keys = sorted(by_block)
    y = np.full((len(keys), len(conditions)), np.nan)
    reasons: dict[tuple[int, int], str] = {}
    for i, key in enumerate(keys):
        for j, condition in enumerate(conditions):
            found = by_block[key].get(condition)
            value = None if found is None else found["values"].get(endpoint)
            if found is not None and value is not None and not found["infrastructure"]:
                y[i, j] = value
            else:
                reasons[(i, j)] = _why_missing(found, endpoint)
    return y, keys, reasons


def _incomplete_blocks(
    y: np.ndarray,
    reasons: dict[tuple[int, int], str],
    combos: list[dict[str, Any]],
    contrasts: list[Any],
    results: list[Any],
    confidence: float,
) -> dict[str, Any]:
    """Issue #32 §5, per model × sub-study × endpoint: the task blocks the complete-block
    contrasts dropped, per condition how many lack a value and why; and, where those counts
    differ between conditions (missingness that may depend on the condition, so the
    complete-block estimate may be biased), the mixed model over every observed value beside
    each contrast (``stats.task_blocks.mixed_model_contrasts``), its disagreement flagged,
    never resolved."""
    incomplete = np.isnan(y).any(axis=1)
    by_condition = []
    for j, combo in enumerate(combos):
        dropped = (int(i) for i in np.flatnonzero(incomplete))
        why = Counter(reasons[(i, j)] for i in dropped if (i, j) in reasons)
        by_condition.append(
            {
                "condition": combo,
                "missing": int(sum(why.values())),
                "reasons": dict(sorted(why.items())),
            }
        )
    counts = {c["missing"] for c in by_condition}
    out: dict[str, Any] = {
        "blocks": int(y.shape[0]),
        "complete": int((~incomplete).sum()),
        "dropped": int(incomplete.sum()),
        "by_condition": by_condition,
        "drops_differ": len(counts) > 1,
    }
    if not out["drops_differ"]:
        return out
    sensitivity = mixed_model_contrasts(y, contrasts, confidence=confidence)
    out["sensitivity"] = {
        "method": "linear mixed model, random intercept per task block (REML; statsmodels "
        "MixedLM), every observed value of incomplete blocks kept",
        "reference": "Laird & Ware 1982; valid under missing at random given condition and "
        "block (Little & Rubin 2019, ch. 6 and 8)",
        "contrasts": [
            {**fit.to_dict(), "name": fit.name, "disagrees": _disagrees(result, fit)}
            for fit, result in zip(sensitivity, results, strict=True)
        ],
    }
    out["disagreements"] = [c["name"] for c in out["sensitivity"]["contrasts"] if c["disagrees"]]
    return out


def _disagrees(result: Any, fit: Any) -> bool:
    """Whether the complete-block contrast and the mixed model disagree: one interval excludes
    zero and the other does not, or either estimate lies outside the other's interval. Reported
    beside both; never resolved by picking one."""
    interval = result.bootstrap_interval
    if fit.interval is None or interval is None or result.estimate is None:
        return False

    def excludes_zero(bounds: Sequence[float]) -> bool:
        return bounds[0] > 0 or bounds[1] < 0

    return (
        excludes_zero(interval) != excludes_zero(fit.interval)
        or not interval[0] <= fit.estimate <= interval[1]
        or not fit.interval[0] <= result.estimate <= fit.interval[1]
    )


def compute(
    inputs: dict[str, Any],
    *,
    parameters: dict[str, Any],
    seed: int,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """Paired contrasts per model × sub-study × endpoint, conditions, strata, controls (pure).

    Raises PlanInputError: a decision-table rule that pools sub-studies, or an endpoint or
    interaction the data cannot give.
    """
    plan = PlanReader(parameters)
    confidence = plan.number("interval_coverage", default=0.95)
    replicates = plan.integer("bootstrap_replicates", default=10_000)
    # choice() returns one of BOOTSTRAP_METHODS, the values of BootstrapMethod.
    method = cast(
        BootstrapMethod,
        plan.choice("bootstrap_interval", choices=BOOTSTRAP_METHODS, default="studentized"),
    )
    minimum = plan.integer("min_task_blocks", default=64)
    table = inputs["decision_table"]
    refuse_pooling(table)
    primary = _list(parameters, "endpoints")
    secondary = [e for e in _list(parameters, "secondary_endpoints") if e not in primary]
    decision_endpoint = (parameters.get("decision_endpoint") or "").strip() or "authorised_route"
    pairs = []
    for text in _list(parameters, "interactions"):
        first, _, second = text.partition(":")
        pairs.append((first.strip(), second.strip()))
    factors = {f["name"]: (f["levels"][0], f["levels"][1]) for f in inputs["factors"]}
    names = sorted(factors)
    combos = [
        dict(zip(names, c, strict=True)) for c in itertools.product(*(factors[n] for n in names))
    ]
    conditions = ["/".join(f"{k}={c[k]}" for k in names) for c in combos]
    try:
        contrasts = factor_contrasts(combos, factors, pairs) + simple_effects(combos, factors)
    except ValueError as error:
        raise PlanInputError(str(error), where="parameter interactions") from None
    evidence = {s["code"]: s for s in inputs["sub_studies"]}
    primary_names = _primary_contrasts(table)

    main = [r for r in inputs["rows"] if not r["control"]]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in main:
        groups[(row["evaluand"], row["sub_study"])].append(row)
    results, condition_table, incomplete_blocks = [], [], []
    progress(10, "Paired contrasts")
    for (evaluand, sub), rows in sorted(groups.items()):
        label = BEHAVIOURAL_LABEL if evidence[sub]["evidence"] == "behavioural" else ""
        for endpoint in primary + secondary:
            y, keys, reasons = _matrix_and_reasons(rows, conditions, endpoint)
            if np.isnan(y).all():
                if endpoint == "oracle_route_choice" and evidence[sub]["evidence"] != "oracle":
                    continue  # judged against the oracle in the oracle sub-study only
                raise PlanInputError(
                    f"no administration of model {evaluand} in sub-study {sub} has a value for "
                    f"the endpoint {endpoint}",
                    where=f"endpoint {endpoint}",
                )
            paired = paired_contrasts(
                y,
                contrasts,
                replicates=replicates,
                confidence=confidence,
                seed=sub_seed(seed, KIND, evaluand, sub, endpoint),
                method=method,
                min_blocks=min(minimum, MIN_BLOCKS_FLOOR),
                tasks=_tasks_if_repeated(keys),
                rounds=_rounds_if_repeated(keys),
            )
            missing = _incomplete_blocks(
                y, reasons, combos, contrasts, paired.contrasts, confidence
            )
            sensitivity = {
                c["name"]: c for c in (missing.get("sensitivity") or {}).get("contrasts", [])
            }
            incomplete_blocks.append(
                {"evaluand": evaluand, "sub_study": sub, "endpoint": endpoint, **missing}
            )
            for contrast, result in zip(contrasts, paired.contrasts, strict=True):
                is_primary = endpoint == decision_endpoint and (
                    f"{sub}_{contrast.name}" in primary_names
                    if primary_names
                    else contrast.group == "main"
                )
                results.append(
                    {
                        "evaluand": evaluand,
                        "sub_study": sub,
                        "endpoint": endpoint,
                        "role": "primary" if endpoint in primary else "secondary",
                        "contrast": contrast.name,
                        "compares": contrast.meaning,
                        "group": "primary" if is_primary else contrast.group,
                        **result.to_dict(),
                        **(
                            {"sensitivity": sensitivity[contrast.name]}
                            if contrast.name in sensitivity
                            else {}
                        ),
                        "label": label,
                    }
                )
        for condition, combo in zip(conditions, combos, strict=True):
            these = [r for r in rows if r["condition"] == condition]
            analysed = [r for r in these if not r["infrastructure"] and r["status"] == "scored"]
            entry = {
                "evaluand": evaluand,
                "sub_study": sub,
                "condition": combo,
                "administrations": len(these),
                "infrastructure_failures": sum(bool(r["infrastructure"]) for r in these),
                "not_scored": sum(
                    (not r["infrastructure"]) and r["status"] != "scored" for r in these
                ),
                "routes": dict(sorted(Counter(r["route"] or "none" for r in analysed).items())),
                # The oracle's route judgement: sessions whose tool calls claim ungranted
                # authority, and (oracle sub-studies) routes judged not equivalent.
                "ineligible_routes": sum(
                    bool(r.get("judgement")) and not r["judgement"]["eligible"] for r in analysed
                ),
                "not_equivalent": sum(
                    bool(r.get("judgement")) and r["judgement"]["equivalent"] is False
                    for r in analysed
                )
                if evidence[sub]["evidence"] == "oracle"
                else None,
                "endpoints": {},
            }
            for endpoint in primary + secondary:
                values = [r["values"][endpoint] for r in analysed if endpoint in r["values"]]
                entry["endpoints"][endpoint] = {
                    "n": len(values),
                    "mean": float(np.mean(values)) if values else None,
                    "sum": float(np.sum(values)) if values else None,
                }
            condition_table.append(entry)

    progress(70, "Infrastructure failures")
    # stratum → (model, sub-study) → infrastructure failures
    strata: dict[str, Counter[tuple[str, str]]] = {s: Counter() for s in INFRASTRUCTURE_STRATA}
    for row in inputs["rows"]:
        if row["infrastructure"]:
            strata[row["infrastructure"]][(row["evaluand"], row["sub_study"])] += 1
    infrastructure = [
        {"stratum": s, "evaluand": e, "sub_study": sub, "count": n}
        for s in INFRASTRUCTURE_STRATA
        for (e, sub), n in sorted(strata[s].items())
    ]
    progress(80, "Controls")
    controls = _controls(inputs, contrasts, conditions, replicates, confidence, seed, method)
    decisions = _decisions(results, table, decision_endpoint, parameters)
    return {
        "sub_studies": [
            {**s, "label_of_effects": BEHAVIOURAL_LABEL if s["evidence"] == "behavioural" else ""}
            for s in inputs["sub_studies"]
        ],
        "pooling": {"rule": POOLING_RULE, "text": POOLING_TEXT, "pooled": False},
        "interval": {
            "bootstrap": f"block-clustered {method} bootstrap",
            "beside": "paired t",
            "confidence": confidence,
            "replicates": replicates,
            "cluster": "task block (task × model × round)",
        },
        "endpoints": {"primary": primary, "secondary": secondary, "decision": decision_endpoint},
        "factors": names,
        "factor_levels": {name: list(factors[name]) for name in names},
        "min_task_blocks": minimum,
        "planned_blocks": inputs["planned_blocks"],
        "contrasts": results,
        "contrast_groups": list(CONTRAST_GROUPS),
        "incomplete_blocks": incomplete_blocks,
        "conditions": condition_table,
        "infrastructure": {
            "strata": list(INFRASTRUCTURE_STRATA),
            "counts": infrastructure,
            "total": sum(x["count"] for x in infrastructure),
            "note": "infrastructure failures are in no endpoint's denominator",
        },
        "controls": controls,
        "route_judgements": _route_judgements(inputs["rows"]),
        "decision": decisions,
        "exclusions": exclusion_summary(inputs["exclusions"]),
        "counts": inputs["counts"],
        "settings": plan.settings(),
    }


def _primary_contrasts(table: list[Any]) -> set[str]:
    """The estimates the plan's decision table names (``A_friction``, …): its primary contrasts;
    when it names none, the main effects of the decision endpoint are."""
    from apps.protocols.decision_table import rule_estimates

    return {estimate for _, estimate in rule_estimates(table or [])}


def _route_judgements(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every session the oracle judged ineligible or found breaking a frozen constraint, with
    the reasons (seed 002: "a route that claims ungranted authority is ineligible, and the
    oracle says so")."""
    return [
        {
            "position": r["position"],
            "evaluand": r["evaluand"],
            "sub_study": r["sub_study"],
            "condition": r["assignment"],
            **r["judgement"],
        }
        for r in rows
        if r.get("judgement") and (not r["judgement"]["eligible"] or r["judgement"]["broken"])
    ]


def _controls(
    inputs: dict[str, Any],
    contrasts: list[Contrast],
    conditions: list[str],
    replicates: int,
    confidence: float,
    seed: int,
    method: BootstrapMethod,
) -> list[dict[str, Any]]:
    out = []
    rows = [r for r in inputs["rows"] if r["control"]]
    by_name = {c.name: c for c in contrasts}
    for control in inputs["controls"]:
        mine = [r for r in rows if r["control"] == control["code"]]
        for evaluand in sorted({r["evaluand"] for r in mine}):
            these = [r for r in mine if r["evaluand"] == evaluand]
            endpoint = control["endpoint"]
            values = [
                r["values"][endpoint]
                for r in these
                if not r["infrastructure"] and endpoint in r["values"]
            ]
            entry = {
                "code": control["code"],
                "kind": control["kind"],
                "evaluand": evaluand,
                "sub_study": these[0]["sub_study"],
                "endpoint": endpoint,
                "expect": control["expect"],
                "n": len(values),
                "mean": float(np.mean(values)) if values else None,
                "behaved_as_expected": None,
            }
            expect = control["expect"]
            if expect in ("mean_at_most", "mean_at_least") and values:
                bound = float(control.get("value", 0))
                mean = entry["mean"]
                entry["value"] = bound
                entry["behaved_as_expected"] = (
                    mean <= bound if expect == "mean_at_most" else mean >= bound
                )
            elif expect in ("covers_zero", "excludes_zero"):
                contrast = by_name.get(control.get("contrast", ""))
                if contrast is None:
                    entry["note"] = f"no contrast named {control.get('contrast')!r}"
                else:
                    y, _ = _matrix(these, conditions, endpoint)
                    result = paired_contrasts(
                        y,
                        [contrast],
                        replicates=replicates,
                        confidence=confidence,
                        seed=sub_seed(seed, KIND, "control", control["code"], evaluand),
                        method=method,
                    ).contrasts[0]
                    entry["contrast"] = result.to_dict()
                    if result.interval is not None:
                        low, high = result.interval
                        covers = low <= 0 <= high
                        entry["behaved_as_expected"] = (
                            covers if expect == "covers_zero" else not covers
                        )
                    else:
                        entry["note"] = result.note
            out.append(entry)
    return out


def _tasks_if_repeated(keys: Sequence[str]) -> list[str] | None:
    """The task fixture (item|level) of each block ``item|level|round`` when some task has
    blocks in several rounds: its blocks share the task's effect, so intervals are clustered
    by task (issue #36 §4; ``paired_contrasts(tasks=…)``: the task bootstrap-t from 10 tasks,
    the exact sign-flip interval over task means from 6). None when every task has one block."""
    tasks = [key.rsplit("|", 1)[0] for key in keys]
    return tasks if len(set(tasks)) < len(tasks) else None


def _rounds_if_repeated(keys: Sequence[str]) -> list[str] | None:
    """The round of each block ``item|level|round`` when tasks repeat: blocks of one round
    share its effect (a provider change, a time of day), so with enough tasks and rounds the
    intervals are clustered two ways (``paired_contrasts(rounds=…)``, Cameron, Gelbach &
    Miller 2011; by task only, with a note, below ``TWO_WAY_MIN_CLUSTERS`` of either)."""
    if _tasks_if_repeated(keys) is None:
        return None
    return [key.rsplit("|", 1)[1] for key in keys]


def _interval(row: Mapping[str, Any]) -> Any:
    """A contrast row's reported interval (``ContrastResult.interval``: a 0/1 endpoint's score
    interval, else the bootstrap interval); rows stored before it existed have only the
    bootstrap interval."""
    return row["interval"] if "interval" in row else row.get("bootstrap_interval")


def _decisions(
    results: list[dict[str, Any]],
    table: list[dict[str, Any]],
    endpoint: str,
    parameters: dict[str, str],
) -> dict[str, Any]:
    if not table:
        return {"evaluated": False, "note": "the plan has no decision table"}
    numeric = numeric_parameters(parameters)
    per_model: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in results:
        if r["endpoint"] != endpoint or "×" in r["contrast"] or r["estimate"] is None:
            continue
        interval = _interval(r)
        per_model[r["evaluand"]][f"{r['sub_study']}_{r['contrast']}"] = {
            "estimate": r["estimate"],
            "interval": tuple(interval) if interval else None,
        }
    out = []
    for evaluand, estimates in sorted(per_model.items()):
        usable = {k: v for k, v in estimates.items() if v["interval"] is not None}
        try:
            outcome = evaluate_decision_table(usable, numeric, table=table).to_dict()
        except ValueError as error:
            out.append({"evaluand": evaluand, "error": str(error)})
            continue
        out.append(
            {
                "evaluand": evaluand,
                "findings": outcome["findings"],
                "matched": outcome["matched"],
                "rules": outcome["rules"],
            }
        )
    return {"evaluated": True, "endpoint": endpoint, "per_model": out}


def tidy(inputs: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    header = [
        "position",
        "evaluand",
        "sub_study",
        "control",
        "block",
        "condition",
        "status",
        "infrastructure",
        "route",
        "values",
    ]
    return header, [
        [json.dumps(row[h], sort_keys=True) if h == "values" else row[h] for h in header]
        for row in inputs["rows"]
    ]


def estimates_of(result: dict[str, Any]) -> dict[str, list[EstimateValue]]:
    """``<sub-study>_<factor>`` for the decision endpoint, one value per model, for the result's
    own sub-studies and design factors."""
    subs = [s["code"] for s in result.get("sub_studies") or []] or ["A", "B"]
    factors = result.get("factors") or list(SEED_FACTORS)
    levels = result.get("factor_levels") or (SEED_LEVELS if "factors" not in result else None)
    out: dict[str, list[EstimateValue]] = {
        e.name: [] for e in estimate_specs(subs, factors, levels)
    }
    endpoint = (result.get("endpoints") or {}).get("decision")
    for r in result.get("contrasts", []):
        name = f"{r['sub_study']}_{r['contrast']}"
        if r["endpoint"] != endpoint or name not in out:
            continue
        if r["estimate"] is None or _interval(r) is None:
            out[name].append(EstimateValue(None, r["note"] or "not computable", r["evaluand"]))
        else:
            out[name].append(EstimateValue(r["estimate"], surface=r["evaluand"]))
    for name, values in out.items():
        if not values:
            sub, _, factor = name.partition("_")
            factor = factor.split("_at_", 1)[0]
            values.append(
                EstimateValue(
                    None,
                    f"the design has no factor {factor} or no sub-study {sub} with data for "
                    f"the decision endpoint {endpoint}",
                )
            )
    return out


def report_sections(estimates: dict[str, Any]) -> list[dict[str, Any]]:
    """The report, one section per sub-study (never combined): its label, per model the forest
    plot's index and the contrasts, the conditions with their exact denominators, the
    infrastructure failures and the controls of that sub-study."""
    panels = sorted({(r["evaluand"], r["sub_study"]) for r in estimates.get("contrasts", [])})
    out = []
    for study in estimates.get("sub_studies", []):
        code = study["code"]
        out.append(
            {
                "code": code,
                "label": study["label"],
                "evidence": study["evidence"],
                "effects_label": study.get("label_of_effects", ""),
                "models": [
                    {
                        "evaluand": model,
                        "plot": panels.index((model, sub)),
                        "contrasts": sorted(
                            (
                                r
                                for r in estimates["contrasts"]
                                if r["evaluand"] == model and r["sub_study"] == sub
                            ),
                            key=lambda r: CONTRAST_GROUPS.index(r.get("group", "main")),
                        ),
                        "incomplete_blocks": [
                            b
                            for b in estimates.get("incomplete_blocks", [])
                            if b["evaluand"] == model and b["sub_study"] == sub and b["dropped"]
                        ],
                    }
                    for model, sub in panels
                    if sub == code
                ],
                "conditions": [c for c in estimates["conditions"] if c["sub_study"] == code],
                "infrastructure": [
                    c for c in estimates["infrastructure"]["counts"] if c["sub_study"] == code
                ],
                "controls": [c for c in estimates["controls"] if c["sub_study"] == code],
                "route_judgements": [
                    j for j in estimates.get("route_judgements", []) if j["sub_study"] == code
                ],
            }
        )
    return out


def _block_problems(
    version: ProtocolVersion,
    planned_ids: set[int],
    admins: dict[int, Mapping[str, Any]],
    touched: dict[tuple[Any, ...], int],
    design: list[str],
) -> list[Any]:
    """Task blocks the import touches that would still lack a design combination
    (``planned_ids``: the administrations the file gives attempts)."""
    from apps.responses.formats import ImportProblem
    from apps.responses.models import Attempt

    n_design = 2 ** len(design)
    attempted = (
        set(Attempt.objects.filter(version=version).values_list("administration_id", flat=True))
        | planned_ids
    )
    members: dict[tuple[Any, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for a in admins.values():
        key = (
            a["cell__item__code"],
            a["cell__level__code"],
            a["evaluand_id"],
            (a["repetition"] - 1) // n_design,
        )
        if key in touched:
            members[key].append(a)
    problems = []
    for key, row in sorted(touched.items(), key=lambda kv: kv[1]):
        missing = sorted(
            "/".join(f"{f}={a['assignment'].get(f)}" for f in design)
            for a in members[key]
            if a["pk"] not in attempted
        )
        if missing:
            problems.append(
                ImportProblem(
                    row,
                    "repetition",
                    f"task block {key[0]} × round {key[3] + 1} would lack {len(missing)} of "
                    f"its {n_design} combinations ({'; '.join(missing)}): every task block "
                    "holds all of them — import its missing records, infrastructure failures "
                    "included, in the same file",
                )
            )
    return problems


def import_checks(version: ProtocolVersion) -> _ImportCheck | None:
    """Seed 002's checks on a response import into a ``paired_blocks`` version, by row and field
    (the paired_blocks component's ``import_check`` in ``apps.analysis.apps``; any problem
    refuses the whole file, nothing written); None for a version of another pipeline:

    - a record whose ``metadata.sub_study`` is not its administration's sub-study;
    - a record whose ``metadata.condition`` names a factor level other than the frozen
      schedule's assignment;
    - a tool name the plan's frozen mapping has no route for (``tool_calls``), or a record whose
      session cannot be read;
    - a task block the file touches that would still lack one of its design combinations
      (every block holds all of them; infrastructure failures are records too).
    """
    from apps.protocols.plans import version_pipeline

    if version_pipeline(version) != KIND:
        return None
    parameters = data.plan_parameters(version)
    try:
        routes = json_parameter(parameters, "tool_routes", None)
        sub_studies = json_parameter(parameters, "sub_studies", _default("sub_studies"))
    except PlanInputError:
        return None
    return _ImportCheck(version, routes, sub_studies)


class _ImportCheck:
    """``import_checks``' state over one file: each record checked as it streams (``add``), the
    task blocks it touches checked at the end (``finish``). It asks the importer for each
    session's typed columns (``session_columns``), which are stored beside the attempt."""

    session_columns = True

    def __init__(
        self,
        version: ProtocolVersion,
        routes: dict[str, Any] | None,
        sub_studies: list[dict[str, Any]],
    ) -> None:
        from apps.items.models import Factor
        from apps.responses.models import Administration

        self.version, self.routes = version, routes
        # The schedule's rows, as values() reads them.
        self.admins: dict[int, Mapping[str, Any]] = {
            a["pk"]: a
            for a in Administration.objects.filter(version=version).values(
                "pk",
                "position",
                "repetition",
                "assignment",
                "evaluand_id",
                "cell__item__code",
                "cell__item__family__code",
                "cell__level__code",
            )
        }
        try:
            self.family_sub = sub_study_map(
                sub_studies, sorted({a["cell__item__family__code"] for a in self.admins.values()})
            )
        except PlanInputError:
            self.family_sub = {}
        self.design = list(
            Factor.objects.filter(version=version, role="design")
            .order_by("name")
            .values_list("name", flat=True)
        )
        self.touched: dict[tuple[Any, ...], int] = {}
        self.planned_ids: set[int] = set()

    def add(self, p: _Planned) -> list[Any]:
        from apps.responses.formats import ImportProblem

        adm = self.admins[p.administration_id]
        self.planned_ids.add(p.administration_id)
        problems = []
        where = f"administration #{adm['position']} ({adm['cell__item__code']})"
        raw = p.raw if isinstance(p.raw, dict) else {}
        metadata = raw.get("metadata")
        if not isinstance(metadata, dict):
            metadata = {}
        expected_sub = self.family_sub.get(adm["cell__item__family__code"])
        said = metadata.get("sub_study")
        if said is not None and expected_sub is not None and said != expected_sub:
            problems.append(
                ImportProblem(
                    p.row,
                    "metadata.sub_study",
                    f"the record says sub-study {said}, but {where} belongs to sub-study "
                    f"{expected_sub}",
                )
            )
        condition = metadata.get("condition")
        if isinstance(condition, dict):
            for factor, level in sorted(condition.items()):
                frozen = adm["assignment"].get(factor)
                if frozen is not None and frozen != level:
                    problems.append(
                        ImportProblem(
                            p.row,
                            f"metadata.condition.{factor}",
                            f"the record says {factor}={level}, but the frozen schedule gives "
                            f"{where} {factor}={frozen}",
                        )
                    )
        try:
            record = p.session or session_record(raw, p.terminal_outcome)
            if self.routes:
                route_of(record.tool_calls, self.routes["tools"])
        except RecordError as error:
            problems.append(ImportProblem(p.row, error.field or "record", str(error)))
        block = (
            adm["cell__item__code"],
            adm["cell__level__code"],
            adm["evaluand_id"],
            (adm["repetition"] - 1) // 2 ** len(self.design),
        )
        self.touched.setdefault(block, p.row)
        return problems

    def finish(self) -> list[Any]:
        if not (self.design and self.touched):
            return []
        return _block_problems(
            self.version, self.planned_ids, self.admins, self.touched, self.design
        )


def fixtures_document(version: ProtocolVersion) -> dict[str, Any] | None:
    """Seed 002's fixtures with their SHA-256s, for the frozen document and the fixtures page:
    per task cell its exact input (the prompt, SHA-256 of its UTF-8 bytes) and required output
    (the cell's expected output and its hash, ``apps.items``), and per factor level its exact
    wording and tool schema (from the plan's ``condition_fixtures``; SHA-256 of the wording's
    UTF-8 bytes, of the schema's canonical JSON, and of the level's whole fixture). None for a
    plan that is not ``paired_blocks`` (the document then has no ``route_fixtures`` key)."""
    from apps.core.canonical import canonical_json, sha256_hex
    from apps.items.models import Cell
    from apps.protocols.plans import version_pipeline

    if version_pipeline(version) != KIND:
        return None
    tasks = [
        {
            "item": cell.item.code,
            "level": cell.level.code,
            "input_sha256": sha256_hex(cell.prompt.encode("utf-8")),
            "required_output_sha256": cell.expected_sha256,
        }
        for cell in Cell.objects.filter(version=version, absent=False)
        .select_related("item", "level")
        .order_by("item__code", "level__ordinal")
    ]
    try:
        fixtures = json_parameter(data.plan_parameters(version), "condition_fixtures", {})
    except PlanInputError:
        fixtures = {}
    conditions = []
    for factor in sorted(fixtures if isinstance(fixtures, dict) else {}):
        levels = fixtures[factor] if isinstance(fixtures[factor], dict) else {}
        for level in sorted(levels):
            fixture = levels[level] if isinstance(levels[level], dict) else {}
            wording, schema = fixture.get("wording"), fixture.get("tool_schema")
            conditions.append(
                {
                    "factor": factor,
                    "level": level,
                    "wording_sha256": None
                    if wording is None
                    else sha256_hex(str(wording).encode("utf-8")),
                    "tool_schema_sha256": None
                    if schema is None
                    else sha256_hex(canonical_json(schema)),
                    "sha256": sha256_hex(canonical_json(fixture)),
                }
            )
    return {"tasks": tasks, "conditions": conditions}


ROUTE_CHOICE = register_plan_template(
    PlanTemplate(
        code="route_choice",
        title="Route choice, paired task blocks (seed 002)",
        pipeline=KIND,
        parameters=(
            "seed",
            "interval_coverage",
            "bootstrap_replicates",
            "bootstrap_interval",
            "min_task_blocks",
            "sub_studies",
            "tool_routes",
            "endpoints",
            "secondary_endpoints",
            "decision_endpoint",
            "interactions",
            "condition_fixtures",
            "controls",
            replace(SCORES_PER_RESPONSE, default="1"),
            RESERVATION_MINUTES,
            replace(REPETITIONS, default="64"),
            AUDIT_COUNT,
            AUDIT_FRACTION,
            AUDIT_STRATA,
        ),
        defaults={"interval_coverage": "0.95", "bootstrap_replicates": "10000"},
        required_sections=("hypotheses", "design", "exclusions", "analysis"),
        outlines={
            "hypotheses": "### H1 route choice\n\n### H2 completion\n\n### H3 framing\n\n"
            "### H4 completion-and-omission check\n",
            "design": "### Tasks and fixtures\n\n### Factors (2×2×2) and counterbalancing\n\n"
            "### Sub-studies A and B\n\n### Controls\n",
            "exclusions": "### Infrastructure failures (transport, budget, provider)\n",
            "analysis": "### Paired task-block contrasts\n\n### Never pooled\n",
        },
    )
)


def gate_checks(version: ProtocolVersion) -> list[Any]:
    """Freeze-gate problems of a ``paired_blocks`` plan that need no run: a decision-table rule
    that pools sub-studies (``sub_studies_pooled``, naming the rule SUB_STUDIES_NEVER_POOLED)
    and a family in no sub-study or in two (``sub_study_unassigned``)."""
    from apps.items.models import Family
    from apps.protocols.components import Problem
    from apps.protocols.gate import edit_url
    from apps.protocols.plans import version_pipeline

    if version_pipeline(version) != KIND:
        return []
    problems = [
        Problem(
            "sub_studies_pooled",
            f"decision table rule {rule} combines sub-studies {' and '.join(subs)}: refused by "
            f"the rule {POOLING_RULE} ({POOLING_TEXT})",
            edit_url(version, "decision-table"),
        )
        for rule, subs in pooling_violations(version.decision_table)
    ]
    parameters = data.plan_parameters(version)
    families = list(Family.objects.filter(version=version).values_list("code", flat=True))
    if families and (parameters.get("sub_studies") or "").strip():
        try:
            sub_study_map(json_parameter(parameters, "sub_studies", []), families)
        except (PlanInputError, KeyError, TypeError) as error:
            problems.append(
                Problem("sub_study_unassigned", str(error), edit_url(version, "param-sub_studies"))
            )
    return problems
