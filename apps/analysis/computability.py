"""The computability gate (issue #12 §5): before a freeze, run the plan on synthetic data.

OPB-01 v1.0 froze with a primary measure that could not be computed over the range its primary
comparison needed. This check catches that class of fault before the freeze: from the draft's
own design it builds synthetic observations —

- one response for every administration the schedule would hold (present, reviewed cells ×
  enrolled evaluands × the plan's repetitions); absent cells stay absent and nothing is
  authored above a family's stopping level (``max_level``);
- scores drawn from each rubric field's own domain (checklist: a subset of the cell's key
  units; binary; count; categorical and ordinal: one of the choices; number: within its
  bounds; quote: a text), derived fields computed as submission computes them
  (``apps.raters.values.score_values_clean``), with a fixed seed;

— hands them to the plan's own pipeline (``assemble`` then ``compute``, exactly the path of a
real run, in memory), reads the named estimates back (``estimates_of``) and refuses the freeze
when one the plan needs cannot be computed: the pipeline's primary estimates and every estimate
a decision-table rule names. Each refusal says which estimate, which rule, and why, in the
pipeline's own words.

Nothing from the synthetic run is stored except the verdict, cached under the SHA-256 of the
draft's canonical document (so the draft page's live checklist does not rerun an unchanged
plan). Bootstrap intervals are drawn with ``GATE_REPLICATES`` replicates at most: the gate asks
whether an interval can be computed, not what it is. A design of more than
``SAMPLE_ADMINISTRATIONS`` administrations is checked on a sample taken by its own structure —
every family, whole task blocks, whole items, never below the plan's cluster floors
(``apps.analysis.gate_sample``) — and the gate's messages say so. Above ``ASYNC_ABOVE`` planned
administrations the gate runs as a Celery task with progress (``computability_verdict``): the
draft's checklist polls it and the freeze waits for its verdict (issue #32 §2).

The synthetic data have the shape of a real import (issue #32 §3): the rubric's scores, and for
a pipeline that reads sessions only the documented record fields (``apps.analysis.
import_shapes``, through the pipeline's ``synthetic`` hook).

A plan that passes may still carry warnings: what the pipeline's ``warnings_of`` reads in the
synthetic result (for OPB, exclusive decision-table rules that match together there, issue #19).
They are notes on the draft page's checklist and in the gate API's ``notes``, never refusals.

A new pipeline takes part by declaring ``assemble`` and ``estimates_of`` (and, optionally,
``warnings_of``); this module does not change.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from itertools import product
from typing import Any

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError

from apps.analysis import inputs as data
from apps.analysis.gate_sample import (
    SAMPLE_ADMINISTRATIONS,
    Structure,
    block_size,
    cluster_floor,
    named_items,
    structural_sample,
)
from apps.analysis.headline import report_headline
from apps.analysis.pipelines import get_pipeline
from apps.analysis.pipelines.base import PlanInputError, Progress, no_progress, seed_from
from apps.core.canonical import canonical_json
from apps.core.inputs import whole_number
from apps.protocols.components import Problem
from apps.protocols.documents import version_document_bytes
from apps.protocols.models import ProtocolVersion
from apps.protocols.plans import pipeline_declaration, version_pipeline

logger = logging.getLogger(__name__)

GATE_VERSION = "computability/2"  # /2: verdicts carry warnings
SYNTHETIC_SEED = 12  # fixed: the same draft always gets the same synthetic data
GATE_REPLICATES = 50
SYNTHETIC_RATERS = ("synthetic-reviewer-1", "synthetic-reviewer-2")
SYNTHETIC_EVALUAND = "synthetic-evaluand"  # the gate's stand-in while the roster is empty
CACHE_SECONDS = 7 * 24 * 3600
# Above this many planned administrations the gate runs as a Celery task with progress (issue
# #32 §2): the draft page polls it, and the freeze waits for its verdict.
ASYNC_ABOVE = 2_000
PENDING_SECONDS = 15 * 60  # a task not heard of for this long is queued again


@dataclass
class Verdict:
    """What the gate concluded: the problems (empty: computable) and what it ran on."""

    problems: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    administrations: int = 0
    planned: int = 0
    note: str = ""

    @property
    def sampled(self) -> bool:
        return self.administrations < self.planned


@dataclass
class _Synthetic:
    raw: dict[str, Any]
    administrations: int
    planned: int
    note: str


def _plan_int(parameters: dict[str, str], name: str, default: int) -> int:
    text = (parameters.get(name) or "").strip()
    number = whole_number(text, signed=True)
    return default if number is None else number


def _field_value(spec: Any, rng: np.random.Generator, units: list[dict]) -> Any:
    kind = spec.kind
    if kind == "checklist":
        share = rng.random()
        return sorted(u["position"] for u in units if rng.random() < share)
    if kind == "binary":
        return bool(rng.random() < 0.3)
    if kind == "count":
        high = int(spec.maximum) if spec.maximum is not None else 10
        low = int(spec.minimum) if spec.minimum is not None else 0
        return int(rng.integers(low, max(low, high) + 1))
    if kind in ("categorical", "ordinal"):
        choices = [c["value"] if isinstance(c, dict) else c for c in spec.choices or []]
        return choices[int(rng.integers(len(choices)))] if choices else None
    if kind == "number":
        bottom = float(spec.minimum) if spec.minimum is not None else 0.0
        top = float(spec.maximum) if spec.maximum is not None else 1.0
        return round(float(rng.uniform(bottom, top)), 3)
    if kind == "quote":
        return "synthetic quote"
    return None


def _fidelity_cards(version: ProtocolVersion) -> dict[tuple[str, int], Any]:
    from apps.items.models import Cell
    from apps.raters.judged import judged_signals

    rules = judged_signals()
    cards = {}
    for item, level, card in Cell.objects.filter(version=version, absent=False).values_list(
        "item__code", "level__ordinal", "expected_output"
    ):
        try:
            cards[(item, level)] = rules.card(card)
        except rules.error as error:
            raise PlanInputError(
                f"cell {item} at level {level}: its PolicyCard (the expected output) is not "
                f"readable: {error}",
                where=f"cell {item}@{level}",
            ) from None
    return cards


def _synthetic_signals(card: Any, rng: np.random.Generator) -> dict | None:
    from apps.raters.judged import judged_signals

    return None if card is None else judged_signals().synthetic(card, rng.random)


def gate_evaluands(version: ProtocolVersion) -> list[str]:
    """The roster's evaluand codes in roster order, or the one stand-in
    ``SYNTHETIC_EVALUAND`` when the roster is empty: whom the gate's synthetic data are for."""
    from apps.responses.models import RosterEntry

    return list(
        RosterEntry.objects.filter(version=version)
        .order_by("position")
        .values_list("code", flat=True)
    ) or [SYNTHETIC_EVALUAND]


def synthetic_raw(version: ProtocolVersion, *, budget: int | None = None) -> _Synthetic:
    """The raw reads a pipeline's ``assemble`` takes, with synthetic observations of the draft,
    on a structural sample of at most ``budget`` administrations (default
    ``SAMPLE_ADMINISTRATIONS``; the design diagnosis asks for the whole design).

    Raises PlanInputError naming the rubric field when a synthetic score drawn from the field's
    domain is refused by the rubric's own check (the rubric could not be scored either).
    """
    from apps.items.selectors import design_schedule_inputs
    from apps.raters.models import RubricField
    from apps.raters.values import score_values_clean

    design = data.design(version)
    parameters = data.plan_parameters(version)
    families = {f["code"]: f for f in design["families"]}
    items = {i["code"]: i for i in design["items"]}
    levels = {lv["code"]: lv["ordinal"] for lv in design["levels"]}
    cells = {(c["item"], c["level"]): c for c in design["cells"]}

    schedule = design_schedule_inputs(version)
    keys = []
    for item_code, level_code in schedule.cells:
        ordinal = levels[level_code]
        cell = cells.get((item_code, ordinal))
        family = families[items[item_code]["family"]]
        if cell is None or cell["absent"]:
            continue  # absent cells stay absent
        if family["max_level"] is not None and ordinal > family["max_level"]:
            continue  # nothing above a family's stopping level
        keys.append((item_code, ordinal))
    evaluands = gate_evaluands(version)
    repetitions = max(1, _plan_int(parameters, "repetitions", 1))
    planned = len(keys) * len(evaluands) * repetitions
    structure = Structure(
        cells=keys,
        family_of={code: item["family"] for code, item in items.items()},
        linked={code: item["base_item"] for code, item in items.items() if "base_item" in item},
        evaluands=evaluands,
        repetitions=repetitions,
        block=block_size(schedule.factors),
        floor=cluster_floor(pipeline_declaration(version_pipeline(version) or ""), parameters),
        named=named_items(parameters, set(items)),
    )
    sample = structural_sample(
        structure, budget=SAMPLE_ADMINISTRATIONS if budget is None else budget
    )
    keys, evaluands, repetitions, note = (
        sample.cells,
        sample.evaluands,
        sample.repetitions,
        sample.note,
    )

    fields = list(RubricField.objects.filter(version=version).order_by("position"))
    typed = [f for f in fields if not f.derivation]
    rng = np.random.default_rng(SYNTHETIC_SEED)
    # Seed 003's signals are judged against each cell's PolicyCard (its expected output).
    judged = [f for f in typed if f.kind == "signals"]
    cards = _fidelity_cards(version) if judged else {}
    drift_epsilon = parameters.get("drift_epsilon") or None
    administrations = []
    order = product(evaluands, range(1, repetitions + 1), keys)
    for position, (evaluand, repetition, (item_code, ordinal)) in enumerate(order, start=1):
        units = cells[(item_code, ordinal)]["key_units"]
        word_count = int(rng.integers(20, 400))
        values = {f.name: _field_value(f, rng, units) for f in typed}
        card = cards.get((item_code, ordinal))
        for judged_field in judged:
            values[judged_field.name] = _synthetic_signals(card, rng)
        values = {k: v for k, v in values.items() if v is not None}
        try:
            final = score_values_clean(
                fields=fields,
                values=values,
                word_count=word_count,
                units=[(u["position"], u["executable"]) for u in units],
                card=card,
                drift_epsilon=drift_epsilon,
            )
        except ValidationError as error:
            name, messages = next(iter(error.message_dict.items()))
            raise PlanInputError(
                f"a score drawn from the rubric field {name}'s own domain is refused: "
                f"{'; '.join(messages)}",
                where=f"rubric field {name}",
            ) from error
        administrations.append(
            {
                "position": position,
                "item": item_code,
                "level": ordinal,
                "evaluand": evaluand,
                "repetition": repetition,
                "status": "scored",
                "attempt": 1,
                "terminal_outcome": "completed",
                "word_count": word_count,
                "final": final,
                "final_method": "agreed",
                "scores": [{"rater": rater, "values": dict(final)} for rater in SYNTHETIC_RATERS],
            }
        )
    counts = {
        "administrations": len(administrations),
        "no_response": 0,
        "excluded": 0,
        "unscored": 0,
        "scored": len(administrations),
        "superseded_responses": 0,
        "platform_loss_attempts": 0,
    }
    raw = {
        "design": design,
        "observations": {"administrations": administrations, "counts": counts},
        "rubric_fields": data.rubric_fields(version),
        "decision_table": list(version.decision_table or []),
    }
    return _Synthetic(raw, len(administrations), planned, note)


def _gate_parameters(parameters: dict[str, str]) -> dict[str, str]:
    out = dict(parameters)
    replicates = _plan_int(parameters, "bootstrap_replicates", GATE_REPLICATES)
    out["bootstrap_replicates"] = str(min(max(replicates, 1), GATE_REPLICATES))
    return out


def _needed(version: ProtocolVersion, declaration: Any) -> list[tuple[str, str]]:
    """(estimate, why it is needed) for every estimate the plan needs, in catalogue order."""
    from apps.protocols.decision_table import rule_estimates

    rules: dict[str, list[str]] = {}
    for rule, estimate in rule_estimates(version.decision_table):
        rules.setdefault(estimate, []).append(rule)
    out = []
    for spec in declaration.version_estimates(version):
        if spec.name in rules:
            named = ", ".join(rules[spec.name])
            out.append((spec.name, f"decision table rule {named} reads it"))
        elif spec.primary:
            out.append((spec.name, "it is a primary estimate of the plan"))
    return out


def _missing_estimates(
    version: ProtocolVersion, declaration: Any, values: dict, on: str, sample: str = ""
) -> list[dict[str, str]]:
    """A problem for every estimate the plan needs (``_needed``) that ``values`` (a pipeline's
    ``estimates_of``) lacks or leaves without a value; ``on`` names what it was computed on."""
    problems = []
    for name, why in _needed(version, declaration):
        spec = declaration.version_estimate(version, name)
        meaning = spec.meaning.rstrip(".") if spec is not None else name
        found = values.get(name) or []
        missing = [v for v in found if v.value is None]
        if found and not missing:
            continue
        reason = missing[0].reason if missing else "the pipeline produced no value for it"
        problems.append(
            {
                "code": "estimate_not_computable",
                "message": f"{name} ({meaning}) cannot be computed on {on}, and {why}: "
                f"{reason}{sample}",
            }
        )
    return problems


def _run(version: ProtocolVersion, progress: Progress = no_progress) -> Verdict:
    kind = version_pipeline(version)
    declaration = pipeline_declaration(kind or "")
    if declaration is None:
        return Verdict()
    pipeline = get_pipeline(declaration.kind)
    if pipeline.assemble is None or pipeline.estimates_of is None:
        return Verdict(note=f"the {kind} pipeline cannot be run on synthetic data")
    try:
        progress(2, "Synthetic data shaped like the design")
        synthetic = synthetic_raw(version)
        if pipeline.synthetic is not None:
            synthetic.raw = pipeline.synthetic(version, synthetic.raw)
    except PlanInputError as error:
        return Verdict(
            problems=[{"code": "plan_not_computable", "message": f"{error}", "where": error.where}]
        )
    verdict = Verdict(administrations=synthetic.administrations, planned=synthetic.planned)
    sample = (
        f" (checked on a sample of {synthetic.administrations} of {synthetic.planned} "
        f"administrations: {synthetic.note})"
        if synthetic.note
        else ""
    )
    verdict.note = synthetic.note
    if not synthetic.administrations:
        verdict.problems.append(
            {
                "code": "plan_not_computable",
                "message": "the schedule would hold no administration (no present cell, or no "
                "evaluand), so no estimate of the plan could ever be computed",
            }
        )
        return verdict
    parameters = _gate_parameters(data.plan_parameters(version))
    try:
        seed, _ = seed_from(parameters, "0" * 64)
        inputs = json.loads(canonical_json(pipeline.assemble(synthetic.raw)))
        progress(10, "The plan's pipeline on the synthetic data")

        def scaled(percent: int, message: str) -> None:  # the pipeline's 0–100 in 10–95
            progress(10 + int(percent * 0.85), message)

        result = pipeline.compute(inputs, parameters=parameters, seed=seed, progress=scaled)
        canonical_json(result)
    except PlanInputError as error:
        verdict.problems.append(
            {"code": "plan_not_computable", "message": f"{error}{sample}", "where": error.where}
        )
        return verdict
    except Exception as error:  # the pipeline's own failure: the PI sees why, the log the rest
        logger.exception("computability gate: the %s pipeline failed on synthetic data", kind)
        verdict.problems.append(
            {
                "code": "plan_not_computable",
                "message": f"the {kind} pipeline fails on synthetic data shaped like this "
                f"design: {error}{sample}",
            }
        )
        return verdict
    verdict.problems.extend(
        _missing_estimates(
            version, declaration, pipeline.estimates_of(result), "this design", sample
        )
    )
    if pipeline.warnings_of is not None:
        try:
            verdict.warnings = [f"{w}{sample}" for w in pipeline.warnings_of(result)]
        except Exception:  # a warning must never block nor break the gate
            logger.exception("computability gate: the %s pipeline's warnings failed", kind)
    return verdict


def _verdict_key(version: ProtocolVersion) -> str:
    _, digest = version_document_bytes(version=version)
    key = hashlib.sha256(
        f"{GATE_VERSION}:{version_pipeline(version)}:{digest}".encode()
    ).hexdigest()
    return f"computability:{key}"


def _store(key: str, verdict: Verdict) -> None:
    cache.set(
        key,
        {
            "problems": verdict.problems,
            "warnings": verdict.warnings,
            "administrations": verdict.administrations,
            "planned": verdict.planned,
            "note": verdict.note,
        },
        CACHE_SECONDS,
    )


def _planned(version: ProtocolVersion) -> int:
    """Administrations the schedule would hold at most (present cells × roster × repetitions;
    items the harm-constancy review excludes are counted too), read with three counts: whether
    the gate runs in the request or in a worker."""
    from apps.items.models import Cell
    from apps.responses.models import RosterEntry

    cells = Cell.objects.filter(version=version, absent=False).count()
    evaluands = RosterEntry.objects.filter(version=version).count() or 1
    repetitions = max(1, _plan_int(data.plan_parameters(version), "repetitions", 1))
    return cells * evaluands * repetitions


def _runs_apart(version: ProtocolVersion) -> bool:
    """Whether the gate runs as a Celery task: a design above ``ASYNC_ABOVE`` administrations,
    where a worker's verdict reaches the web process (a shared cache, or eager tasks)."""
    if _planned(version) <= ASYNC_ABOVE:
        return False
    shared = "locmem" not in settings.CACHES["default"]["BACKEND"].lower()
    return shared or bool(getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False))


def version_computability(*, version: ProtocolVersion) -> Verdict:
    """The computability gate's verdict on ``version`` (see the module docstring), computed
    here, in this process; cached by the SHA-256 of the draft's canonical document and the
    pipeline."""
    key = _verdict_key(version)
    cached = cache.get(key)
    if cached is not None:
        return Verdict(**cached)
    verdict = _run(version)
    _store(key, verdict)
    return verdict


@dataclass(frozen=True)
class Pending:
    """The gate is running in a worker: how far it is (0–100) and at what."""

    percent: int
    message: str


def computability_verdict(*, version: ProtocolVersion) -> Verdict | Pending:
    """The verdict on ``version`` when it is known (cached) or quick to compute; for a design
    above ``ASYNC_ABOVE`` administrations, a Celery task computes it (queued once per document
    hash) and this answers ``Pending`` with the task's progress until its verdict is cached.
    The freeze gate asks this: a freeze waits for the verdict of the document it freezes."""
    key = _verdict_key(version)
    cached = cache.get(key)
    if cached is not None:
        return Verdict(**cached)
    if not _runs_apart(version):
        return version_computability(version=version)
    if cache.add(f"{key}:queued", True, PENDING_SECONDS):
        cache.set(f"{key}:progress", {"percent": 0, "message": "queued"}, PENDING_SECONDS)
        from apps.analysis.tasks import computability_check

        # Not on commit: a freeze refused for want of the verdict rolls its transaction back,
        # which would drop the task. The worker hashes what it reads; see computability_perform.
        try:
            computability_check.delay(version.pk, key)
        except Exception:  # no broker: the gate answers in the request, as for a small design
            logger.exception("computability gate: the task could not be queued")
            cache.delete(f"{key}:queued")
            return version_computability(version=version)
        cached = cache.get(key)  # an eager task has already answered
        if cached is not None:
            return Verdict(**cached)
    state = cache.get(f"{key}:progress") or {"percent": 0, "message": "queued"}
    return Pending(int(state["percent"]), str(state["message"]))


def computability_perform(*, version_id: int, key: str) -> str:
    """The Celery task's work: compute and cache the verdict on version ``version_id``,
    reporting progress under ``key`` (the document hash the requester saw). When the version
    changed since (another hash), the requester's queue mark is cleared so that its next look
    queues the gate again."""
    version = ProtocolVersion.objects.select_related("protocol").filter(pk=version_id).first()
    if version is None:
        cache.delete(f"{key}:queued")
        return "gone"
    own = _verdict_key(version)
    if own != key:
        cache.delete(f"{key}:queued")
    if cache.get(own) is not None:
        return "cached"
    last = [-1]

    def progress(percent: int, message: str) -> None:
        if percent != last[0]:
            last[0] = percent
            cache.set(f"{own}:progress", {"percent": percent, "message": message}, PENDING_SECONDS)

    verdict = _run(version, progress)
    _store(own, verdict)
    cache.delete(f"{own}:progress")
    return "refused" if verdict.problems else "computable"


def computability_checks(version: ProtocolVersion) -> list[Problem]:
    """The computability gate as freeze-gate problems (asked only once nothing else blocks)."""
    from apps.protocols.gate import edit_url

    verdict = computability_verdict(version=version)
    if isinstance(verdict, Pending):
        return [
            Problem(
                "computability_pending",
                f"the computability gate is running the plan on synthetic data of this design "
                f"in the background ({verdict.percent} %: {verdict.message}); the freeze waits "
                "for its verdict",
                edit_url(version, "freeze-checklist"),
                progress=verdict.percent,
            )
        ]
    return [
        Problem(p["code"], p["message"], edit_url(version, "plan-catalogue"))
        for p in verdict.problems
    ]


def computability_notes(version: ProtocolVersion) -> list[str]:
    """The gate's word on a passing plan: that it was checked on a sample (issue #12 §5), and
    its warnings (issue #19), e.g. "On the computability gate's synthetic data, evaluand M1:
    contradictory: rules OPB01-8.1 and OPB01-8.3 both hold"."""
    from apps.raters.final import unresolvable_rules

    # Read from the rubric and roster, not the synthetic run: said whatever the run answers.
    rules = [f"Unresolved responses: {sentence}." for sentence in unresolvable_rules(version)]
    verdict = computability_verdict(version=version)
    if isinstance(verdict, Pending) or verdict.problems:
        return rules
    notes = rules
    if verdict.sampled:
        notes.append(
            f"The computability gate ran the plan on a sample of {verdict.administrations} of "
            f"{verdict.planned} administrations, taken by the design's structure ("
            f"{verdict.note}): every family whole, task blocks and items whole."
        )
    notes += [f"On the computability gate's synthetic data, {w}" for w in verdict.warnings]
    return notes


@dataclass
class Shortfall:
    """How far a frozen version's data fall short of its plan's minimum (``data_shortfall``):
    ``missing`` says what cannot be computed yet (empty: the plan's minimum is met);
    ``scored`` and ``administrations`` count the schedule's administrations with a final score
    and in all."""

    missing: list[str]
    scored: int
    administrations: int


def data_shortfall(*, version: ProtocolVersion) -> Shortfall:
    """Whether the data as they stand meet the plan's minimum: the gate's own declared needs
    (the primary estimates and every estimate a decision-table rule reads, ``_needed``) checked
    on the version's real observations instead of synthetic ones, with the gate's bootstrap
    size (``GATE_REPLICATES``: the question is whether an estimate can be computed, not what
    it is). Nothing is stored. A pipeline that refuses the data says why, in its own words; one
    that fails otherwise is reported as not checked, never raised (the run itself would say)."""
    kind = version_pipeline(version)
    declaration = pipeline_declaration(kind or "")
    raw = data.raw(version)
    counts = raw["observations"]["counts"]
    shortfall = Shortfall(
        missing=[], scored=counts["scored"], administrations=counts["administrations"]
    )
    if declaration is None:
        return shortfall
    pipeline = get_pipeline(declaration.kind)
    if pipeline.assemble is None or pipeline.estimates_of is None:
        return shortfall
    if not counts["scored"]:
        shortfall.missing.append("no administration has a final score yet")
        return shortfall
    parameters = _gate_parameters(data.plan_parameters(version))
    try:
        seed, _ = seed_from(parameters, "0" * 64)
        inputs = json.loads(canonical_json(pipeline.assemble(raw)))
        result = pipeline.compute(inputs, parameters=parameters, seed=seed, progress=no_progress)
        values = pipeline.estimates_of(result)
    except PlanInputError as error:
        shortfall.missing.append(f"the {kind} pipeline refuses the data as they stand: {error}")
        return shortfall
    except Exception as error:  # the run would fail the same way and say so in full
        logger.exception("data shortfall: the %s pipeline failed on the version's data", kind)
        shortfall.missing.append(f"the {kind} pipeline fails on the data as they stand: {error}")
        return shortfall
    shortfall.missing = [
        problem["message"]
        for problem in _missing_estimates(version, declaration, values, "the data as they stand")
    ]
    # What the report would lead with: a stage the data leave not evaluable is short too.
    headline = report_headline({"kind": declaration.kind, "estimates": result}, version)
    for entry in headline["entries"]:
        if not entry["evaluated"]:
            where = f"{entry['where']}: " if entry["where"] else ""
            shortfall.missing.append(f"{where}not evaluable: {entry['why']}")
    return shortfall
