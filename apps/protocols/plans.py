"""Analysis plans as data: pipeline declarations, typed parameters, and presets over pipelines.

A pipeline (``apps/analysis/pipelines``) declares, as a ``PipelineDeclaration`` registered
here, the plan parameters it reads (``ParameterSpec``: typed, required or not, with a default),
the named estimates it produces (``EstimateSpec``: the only names decision-table rules may use)
and its report sections. This app reads the declarations — the freeze gate, the draft page's
catalogue panel, the API — without importing the analysis.

A plan template is a preset over a pipeline (``PlanTemplate``): the pipeline's name, which of
its parameters a new draft starts with (and their defaults), the operational parameters other
steps read (k, δ, the reservation time, repetitions), the sections a freeze requires with their
outlines, and a default decision table. A new protocol's draft 1.0 is seeded from its template
(``protocol_create``); amendments copy the version they amend, not the template. A PI may add
further parameters to a draft (``version_parameter_add``), declared by the pipeline or the
plan's own.

``generic``, a study whose PI names the pipeline on the draft page, is the one preset defined
here; every other (``opb``, OPB-01 §7 with §8's decision table; ``xstest``; ``crucible``; …) is
its study kind's, registered from its package with ``register_plan_template``
(``apps/studies/<kind>/pipeline.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from apps.protocols.models import SECTION_FIELDS, ParameterKind

SECTION_TITLES = {
    "background": "Background",
    "hypotheses": "Hypotheses",
    "design": "Design",
    "exclusions": "Exclusions",
    "stopping_rules": "Stopping rules",
    "analysis": "Analysis",
}
assert tuple(SECTION_TITLES) == SECTION_FIELDS


@dataclass(frozen=True)
class ParameterSpec:
    """One typed plan parameter, as a pipeline declares it or a PI adds it.

    ``kind`` is a ``ParameterKind``: number (with ``minimum``/``maximum``), integer, choice (from
    ``choices``), interval_method, boolean, text, list (of texts; ``choices`` narrow the items)
    or json (validated by the JSON Schema ``schema``, Draft 2020-12). ``required``: the freeze
    needs a value. ``default``: the text a preset seeds the parameter with, and what the pipeline
    reads while the plan leaves it unset. ``seed_template``: when the default is a seed's own
    value (seed 002's endpoints, say), the code of that seed's preset: the default applies
    only under it (issue #32 §3), and a plan of another template must set the parameter.
    """

    name: str
    label: str
    kind: str
    unit: str = ""
    required: bool = True
    choices: tuple[str, ...] = ()
    minimum: str | None = None
    maximum: str | None = None
    default: str = ""
    help_text: str = ""
    schema: dict[str, Any] | None = None
    seed_template: str = ""

    def default_under(self, template: str) -> str:
        """The default a plan of preset ``template`` gets: none outside the seed's preset."""
        return self.default if not self.seed_template or template == self.seed_template else ""

    def _described(self) -> dict[str, Any]:
        """What the spec is and which values it takes: the part a seeded row and the catalogue
        say alike."""
        return {
            "name": self.name,
            "label": self.label,
            "kind": self.kind,
            "unit": self.unit,
            "required": self.required,
            "choices": list(self.choices),
        }

    def model_fields(self, position: int) -> dict[str, Any]:
        """Field values for an ``AnalysisParameter`` row seeded from this spec."""
        return {
            **self._described(),
            "minimum": None if self.minimum is None else Decimal(self.minimum),
            "maximum": None if self.maximum is None else Decimal(self.maximum),
            "value": self.default,
            "help_text": self.help_text,
            "position": position,
            "schema": copy.deepcopy(self.schema),
        }

    def catalogue(self) -> dict[str, Any]:
        """The spec as the catalogue shows it (page, API, docs)."""
        return {
            **self._described(),
            "minimum": self.minimum,
            "maximum": self.maximum,
            "default": self.default,
            "meaning": self.help_text,
            "schema": self.schema,
            "seed_template": self.seed_template,
        }


ESTIMATE_KINDS = ("coefficient", "contrast", "rate", "count", "verdict")


@dataclass(frozen=True)
class EstimateSpec:
    """One named estimate a pipeline produces: the vocabulary of decision-table rules.

    ``kind`` is one of ``ESTIMATE_KINDS``; ``interval`` says whether it carries an interval;
    ``meaning`` is one line for the PI; ``primary`` estimates must be computable for the plan to
    freeze even when no rule names them; ``needs`` says what of the design it needs, if anything
    (shown in the catalogue and in the computability gate's refusals).
    """

    name: str
    kind: str
    interval: bool
    meaning: str
    primary: bool = False
    needs: str = ""

    def catalogue(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "interval": self.interval,
            "meaning": self.meaning,
            "primary": self.primary,
            "needs": self.needs,
        }


@dataclass(frozen=True)
class ReportSection:
    """One section of a pipeline's report: its key in the result document and what it shows."""

    name: str
    title: str
    meaning: str = ""

    def catalogue(self) -> dict[str, str]:
        return {"name": self.name, "title": self.title, "meaning": self.meaning}


@dataclass(frozen=True)
class PipelineDeclaration:
    """What a pipeline reads and produces, as data: the catalogue of a plan that names it.

    ``decision_table``: whether the pipeline evaluates the plan's decision table (rules may
    then name its estimates). The analysis app builds one per pipeline and registers it here
    with the pipeline
    (``apps.analysis.pipelines.base.register_pipeline``), so that this app's freeze gate, draft
    page and API can read the vocabulary without importing the analysis.
    """

    kind: str
    title: str
    summary: str
    parameters: tuple[ParameterSpec, ...]
    estimates: tuple[EstimateSpec, ...]
    sections: tuple[ReportSection, ...] = ()
    decision_table: bool = True
    # A pipeline whose estimate names follow the plan (seed 002's ``<sub-study>_<factor>``)
    # gives them per version here; ``estimates`` is then the catalogue's example vocabulary.
    estimates_for: Callable[[Any], tuple[EstimateSpec, ...]] | None = None
    # The kind's words for the generic design's parts, where they differ (CRUCIBLE's autonomy
    # rungs, scenario families, …): ``vocabulary`` for the version's API representation
    # (``apps.protocols.vocabulary``), ``terms`` for the design pages
    # (``apps.items.templatetags.design_terms``). Empty: the generic words.
    vocabulary: Mapping[str, str] = field(default_factory=dict)
    terms: Mapping[str, str] = field(default_factory=dict)

    def parameter(self, name: str) -> ParameterSpec | None:
        return next((p for p in self.parameters if p.name == name), None)

    def estimate(self, name: str) -> EstimateSpec | None:
        return next((e for e in self.estimates if e.name == name), None)

    def version_estimates(self, version: Any) -> tuple[EstimateSpec, ...]:
        """The estimates a plan of ``version`` produces: ``estimates_for(version)`` when the
        pipeline derives them from the plan, else the declared ``estimates``."""
        if self.estimates_for is None:
            return self.estimates
        return self.estimates_for(version)

    def version_estimate(self, version: Any, name: str) -> EstimateSpec | None:
        return next((e for e in self.version_estimates(version) if e.name == name), None)

    def catalogue(self) -> dict[str, Any]:
        return {
            "pipeline": self.kind,
            "title": self.title,
            "summary": self.summary,
            "parameters": [p.catalogue() for p in self.parameters],
            "estimates": [e.catalogue() for e in self.estimates],
            "sections": [s.catalogue() for s in self.sections],
            "decision_table": self.decision_table,
        }


_declarations: dict[str, PipelineDeclaration] = {}


def declare_pipeline(declaration: PipelineDeclaration) -> PipelineDeclaration:
    """Register (or replace) ``declaration`` under its kind; checks its own consistency.

    Raises ValueError when two parameters or two estimates share a name or an estimate's kind
    is not one of ``ESTIMATE_KINDS``.
    """
    for label, names in (
        ("parameter", [p.name for p in declaration.parameters]),
        ("estimate", [e.name for e in declaration.estimates]),
    ):
        doubles = sorted({n for n in names if names.count(n) > 1})
        if doubles:
            raise ValueError(f"pipeline {declaration.kind}: {label} names used twice: {doubles}")
    for estimate in declaration.estimates:
        if estimate.kind not in ESTIMATE_KINDS:
            raise ValueError(
                f"pipeline {declaration.kind}: estimate {estimate.name} has kind "
                f"{estimate.kind!r}, not one of {', '.join(ESTIMATE_KINDS)}"
            )
    _declarations[declaration.kind] = declaration
    return declaration


def withdraw_pipeline_declaration(kind: str) -> None:
    """Remove a declaration (tests register throwaway pipelines)."""
    _declarations.pop(kind, None)


def pipeline_declaration(kind: str) -> PipelineDeclaration | None:
    """The declaration of pipeline ``kind``, or None when no pipeline of that name exists."""
    return _declarations.get(kind)


def declared_pipelines() -> list[PipelineDeclaration]:
    """Every declared pipeline, by kind (throwaway test kinds starting with ``_`` left out)."""
    return [_declarations[k] for k in sorted(_declarations) if not k.startswith("_")]


# Parameters several templates share: the operational ones the rating and analysis steps read.
SEED = ParameterSpec(
    "seed",
    "random seed",
    ParameterKind.INTEGER,
    minimum="0",
    maximum="4294967295",
    help_text="Seeds the administration order and the bootstrap, so a rerun is byte-identical.",
)
SCORES_PER_RESPONSE = ParameterSpec(
    "scores_per_response",
    "scores per response k",
    ParameterKind.INTEGER,
    unit="reviewers",
    minimum="1",
    maximum="10",
    default="2",
    help_text="How many independent reviewers score each response.",
)
RESERVATION_MINUTES = ParameterSpec(
    "reservation_minutes",
    "reservation time",
    ParameterKind.INTEGER,
    unit="minutes",
    minimum="1",
    maximum="1440",
    default="30",
    help_text="How long a scoring task stays reserved for the reviewer who opened it.",
)
# The human audit of machine scores (apps/raters/services/machine.py): how many machine-scored
# responses reviewers also score. Either one, or neither.
AUDIT_COUNT = ParameterSpec(
    "audit_count",
    "human audit sample (count)",
    ParameterKind.INTEGER,
    unit="responses",
    required=False,
    minimum="0",
    help_text="How many machine-scored responses blind reviewers also score, drawn with the "
    "seed when scoring opens. Leave empty when giving a fraction, or for no audit.",
)
AUDIT_FRACTION = ParameterSpec(
    "audit_fraction",
    "human audit sample (fraction)",
    ParameterKind.NUMBER,
    unit="proportion",
    required=False,
    minimum="0",
    maximum="1",
    help_text="The share of machine-scored responses blind reviewers also score (rounded up), "
    "drawn with the seed when scoring opens.",
)
# A stratified audit (issue 34 §6; apps/raters/audit_strata.py): the strata and the fraction of
# each the reviewers audit, frozen with the plan so the draw is fixed by the seed and the
# analysis can weight each audited response by its inverse inclusion probability.
AUDIT_STRATA_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "by": {"enum": ["value", "confidence", "condition"]},
        "field": {"type": "string", "minLength": 1, "maxLength": 64},
        "bands": {
            "type": "array",
            "minItems": 1,
            "items": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        },
        "fractions": {
            "type": "object",
            "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "default_fraction": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["by", "fractions"],
    "additionalProperties": False,
}
AUDIT_STRATA = ParameterSpec(
    "audit_strata",
    "human audit sample (strata)",
    ParameterKind.JSON,
    required=False,
    schema=AUDIT_STRATA_SCHEMA,
    help_text="A stratified audit, as JSON: by the machine's value of a field, its confidence "
    "band or the condition, with the fraction of each stratum reviewers audit, e.g. "
    '{"by": "confidence", "field": "label", "bands": [0.5, 0.8], "fractions": {"0-0.5": 1, '
    '"0.5-0.8": 0.5, "0.8-1": 0.1}}. Unnamed strata take default_fraction (else '
    "audit_fraction). The analysis weights each audited response by its inverse inclusion "
    "probability (docs/machine-scores.md).",
)
INTERVAL_METHOD = ParameterSpec(
    "interval_method",
    "interval method",
    ParameterKind.INTERVAL_METHOD,
    choices=("bootstrap", "analytic"),
    help_text="bootstrap: cluster bootstrap resampling items (or families) as the aggregation "
    "says — studentised (bootstrap-t) intervals for means, Hesterberg's expanded percentile "
    "for model slopes; analytic: Wald intervals with cluster-robust (sandwich) standard errors "
    "clustered by item and t(K − 1) critical values. Rates get a Korn–Graubard "
    "(Clopper–Pearson on the design-effect effective n) interval either way. The calibration "
    "in docs/analysis.md gives each method's coverage.",
)
# The floors are what the calibration suite shows each interval method supports
# (docs/analysis.md): 6 items for analytic slopes (beta_bootstrap SLOPE_MIN_CLUSTERS_FLOOR)
# and Korn–Graubard rates (proportions RATE_MIN_CLUSTERS_FLOOR), 10 for bootstrap-t means
# and bootstrapped slopes (bootstrap.MIN_CLUSTERS_FLOOR, BOOTSTRAP_SLOPE_MIN_CLUSTERS_FLOOR).
# A plan's value raises every floor to it, never lowers one.
MIN_CLUSTERS = ParameterSpec(
    "min_clusters",
    "minimum number of clusters",
    ParameterKind.INTEGER,
    unit="clusters",
    minimum="6",
    maximum="100000",
    default="6",
    help_text="Fewer contributing clusters (items or families) than this and an interval is "
    "reported as unavailable, with the reason, never approximated. Each method also has its "
    "own calibrated floor, which this cannot lower: 6 items for β's analytic interval and for "
    "rates (Korn–Graubard), 10 for cell means and β's bootstrap; see docs/analysis.md.",
)
INTERVAL_COVERAGE = ParameterSpec(
    "interval_coverage",
    "interval coverage",
    ParameterKind.NUMBER,
    unit="proportion",
    minimum="0.5",
    maximum="0.999",
    help_text="For example 0.95 for 95% intervals.",
)
BOOTSTRAP_REPLICATES = ParameterSpec(
    "bootstrap_replicates",
    "bootstrap replicates",
    ParameterKind.INTEGER,
    minimum="100",
    maximum="1000000",
    help_text="Resamples drawn for every bootstrap interval.",
)
REPETITIONS = ParameterSpec(
    "repetitions",
    "repetitions per cell and evaluand",
    ParameterKind.INTEGER,
    minimum="1",
    maximum="1000",
    help_text="How many times each cell is administered to each evaluand.",
)


EXCLUSION_REASONS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_]*$", "maxLength": 64},
            "label": {"type": "string", "minLength": 1, "maxLength": 300},
        },
        "required": ["code", "label"],
        "additionalProperties": False,
    },
}
EXCLUSION_REASONS = ParameterSpec(
    "exclusion_reasons",
    "exclusion reasons",
    ParameterKind.JSON,
    required=False,
    schema=EXCLUSION_REASONS_SCHEMA,
    help_text="The plan's own exclusion reason codes, each with a label, as JSON: "
    '[{"code": "harness_parse_failure", "label": "The harness could not parse the reply"}]. '
    "Exclusions may then give these codes as well as the evidence-integrity ones.",
)


def agreement_parameters(
    choices: tuple[str, ...], help_text: str
) -> tuple[ParameterSpec, ParameterSpec]:
    """The inter-rater statistic (one of ``choices``) and its minimum."""
    return (
        ParameterSpec(
            "agreement_statistic",
            "inter-rater statistic",
            ParameterKind.CHOICE,
            choices=choices,
            help_text=help_text,
        ),
        ParameterSpec(
            "agreement_minimum",
            "agreement threshold",
            ParameterKind.NUMBER,
            minimum="-1",
            maximum="1",
            help_text="The inter-rater statistic's minimum: below it, scores are not analysed "
            "and the rubric or the reviewers are revisited first.",
        ),
    )


@dataclass(frozen=True)
class PlanTemplate:
    """A preset over a pipeline: what a new protocol of this kind starts with.

    ``pipeline`` names the pipeline the plan runs (None: the PI names one before the freeze).
    ``parameters`` lists, in the draft's order, either a parameter's name — the pipeline's own
    declared spec — or a ``ParameterSpec`` the preset holds itself (what other steps read: k,
    δ, the reservation time, repetitions). ``defaults`` overrides a declared spec's default.
    ``reviewer_scored``: blind reviewers score the plan's responses whatever k says, so the freeze
    gate wants a rubric (the raters' gate check); otherwise a rubric is wanted once k > 0.
    A preset's ``pipeline`` never changes once published: a frozen document that does not name
    its pipeline names it through its template (``apps.protocols.documents``).
    """

    code: str
    title: str
    pipeline: str | None
    parameters: tuple[str | ParameterSpec, ...]
    defaults: dict[str, str] = field(default_factory=dict)
    required_sections: tuple[str, ...] = ("hypotheses", "design", "analysis")
    outlines: dict[str, str] = field(default_factory=dict)
    decision_table: tuple[dict[str, Any], ...] = ()
    reviewer_scored: bool = False

    def outline(self, section: str) -> str:
        return self.outlines.get(section, "")

    def parameter_specs(self) -> tuple[ParameterSpec, ...]:
        """The draft's parameters, in order, with this preset's defaults.

        Raises LookupError when a named parameter is not declared by the preset's pipeline.
        """
        declaration = pipeline_declaration(self.pipeline) if self.pipeline else None
        out = []
        for entry in self.parameters:
            if isinstance(entry, ParameterSpec):
                out.append(entry)
                continue
            spec = declaration.parameter(entry) if declaration is not None else None
            if spec is None:
                raise LookupError(
                    f"plan template {self.code}: pipeline {self.pipeline} declares no "
                    f"parameter {entry!r}"
                )
            if entry in self.defaults:
                spec = replace(spec, default=self.defaults[entry])
            out.append(spec)
        return tuple(out)


# "Other study": no preset pipeline. Before issue #12 a generic plan froze and could never be
# analysed; now it starts with the operational parameters only and its PI names the pipeline
# on the draft page (the gate refuses the freeze until one is named), after which the
# pipeline's catalogue says which parameters to add.
GENERIC = PlanTemplate(
    code="generic",
    title="Other study (choose its analysis pipeline)",
    pipeline=None,
    parameters=(
        SEED,
        replace(REPETITIONS, default="1"),
        SCORES_PER_RESPONSE,
        RESERVATION_MINUTES,
        INTERVAL_METHOD,
        INTERVAL_COVERAGE,
        AUDIT_COUNT,
        AUDIT_FRACTION,
        AUDIT_STRATA,
    ),
)

# Every preset by code, in the order registered: ``generic`` here, then each study kind's from
# its package (``apps/studies/<kind>/pipeline.py``) as ``apps.studies`` loads the kinds. Read it
# when it is needed, never at import time: the kinds register after this module is imported.
PLAN_TEMPLATES: dict[str, PlanTemplate] = {GENERIC.code: GENERIC}


def register_plan_template(template: PlanTemplate) -> PlanTemplate:
    """Add (or replace) a preset; a study kind registers its own from its package."""
    PLAN_TEMPLATES[template.code] = template
    return template


def plan_template(code: str) -> PlanTemplate:
    """The template ``code``; an unknown code (a template since removed) reads as ``generic``."""
    return PLAN_TEMPLATES.get(code, GENERIC)


def plan_template_choices() -> list[tuple[str, str]]:
    """``(code, title)`` of every preset, as a dropdown lists them: the presets that run a
    pipeline in the order their kinds register (``apps.studies.apps.KINDS``: OPB first), then
    those whose PI names the pipeline (``generic``) last."""
    ordered = sorted(PLAN_TEMPLATES.values(), key=lambda t: t.pipeline is None)
    return [(t.code, t.title) for t in ordered]


def template_pipeline(code: str) -> str | None:
    """The pipeline the preset ``code`` names (None for ``generic`` and unknown codes)."""
    template = PLAN_TEMPLATES.get(code)
    return None if template is None else template.pipeline


def version_pipeline(version: Any) -> str | None:
    """The pipeline ``version``'s plan names: its own, else its template's (versions frozen
    before plans named one), else None (a generic plan that has not named one yet)."""
    return version.pipeline or template_pipeline(version.protocol.template)


@dataclass(frozen=True)
class UnsetParameter:
    """A parameter the plan's pipeline reads that the plan leaves unset (not held, or held
    empty): the default the pipeline takes, or why it takes none here."""

    name: str
    default: str
    seed_template: str
    applies: bool

    @property
    def text(self) -> str:
        if self.applies:
            return f"default: {self.default}" if self.default else "default: none"
        return (
            f"default: none under this template (the seed's {self.default} applies only under "
            f"the {self.seed_template} template)"
        )


def unset_parameters(version: Any) -> list[UnsetParameter]:
    """Every parameter ``version``'s pipeline declares that the plan leaves unset, in the
    declaration's order, with the default it takes (``ParameterSpec.default_under``). A required
    parameter the plan holds empty takes none: the freeze gate refuses it (``param_missing``)."""
    declaration = pipeline_declaration(version_pipeline(version) or "")
    if declaration is None:
        return []
    parameters = list(version.parameters.all())
    held = {p.name: p.value.strip() for p in parameters}
    missing = {p.name for p in parameters if p.required and not p.value.strip()}
    template = version.protocol.template
    return [
        UnsetParameter(
            spec.name,
            spec.default,
            spec.seed_template,
            not spec.seed_template or spec.seed_template == template,
        )
        for spec in declaration.parameters
        if not held.get(spec.name) and spec.name not in missing
    ]
