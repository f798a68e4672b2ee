"""What a pipeline is, the registry of pipelines, and the typed reading of a run's parameters.

A pipeline has two halves:

- ``collect(version) -> inputs``: reads the database (through ``apps/analysis/inputs.py``
  only) and returns plain data — the tidy rows and everything else the analysis needs. Its
  canonical JSON is the run's input document; its SHA-256 the run's ``input_sha256``.
- ``compute(inputs, *, parameters, seed, progress) -> estimates``: pure (no ORM, no clock, no
  unseeded randomness), so the same inputs, parameters and seed give the same estimates and,
  once encoded canonically, the same bytes.

``tidy(inputs) -> (header, rows)`` gives the CSV download's table from the inputs.

A pipeline also declares itself as data (``declaration``, a
``apps.protocols.plans.PipelineDeclaration``): the plan parameters it reads, the named
estimates it produces and its report sections. ``collect`` is ``assemble(read_raw(version))``:
``assemble`` shapes the raw reads of ``apps/analysis/inputs.py`` (design, observations, rubric
fields, decision table) into the pipeline's inputs, so that the freeze gate can hand it
synthetic observations of a draft instead (``apps/analysis/computability.py``).
``estimates_of(result) -> {name: EstimateValue}`` reads the named estimates back out of a
result, so the gate can tell which of them could be computed and why not.
``warnings_of(result) -> [message]`` (optional) reads what the PI should be warned of in a
result computed on synthetic data — OPB's exclusive decision-table rules that match together,
for one — which the gate shows as notes, never as refusals.

A pipeline is also the one place its study kind hangs everything that varies by kind (STYLE.md,
"Plug-ins: one place for each kind"): its ``report`` (the templates of its report's sections,
included by the shared report page in order), its ``plots`` (the SVGs a result offers), its
``components`` (gate checks, frozen-document parts and import checks, registered with the
pipeline and withdrawn with it), the ``record_terms`` it reads out of each attempt's raw record,
and its ``demo`` (the management command that loads it). The built-in kinds live in
``apps/studies/<kind>/`` and register from ``apps.studies``' ``ready()``; docs/architecture.md,
"Add a study kind".
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol, TypeVar, overload

from apps.analysis.diagnosis.world import WorldModel
from apps.core.inputs import whole_number
from apps.protocols.components import (
    VersionComponent,
    register_component,
    unregister_component,
)
from apps.protocols.plans import (
    PipelineDeclaration,
    declare_pipeline,
    withdraw_pipeline_declaration,
)

RESULT_DOCUMENT_TYPE = "preregistry/analysis-result/1"
INPUT_DOCUMENT_TYPE = "preregistry/analysis-inputs/1"

# The libraries whose versions can change the numbers; recorded in every result document, since
# byte-identity of a rerun holds within one environment (same versions, same platform).
NUMERIC_LIBRARIES = ("numpy", "scipy", "statsmodels", "pandas", "krippendorff")


class Progress(Protocol):
    def __call__(self, percent: int, message: str) -> None: ...


def no_progress(percent: int, message: str) -> None:
    """A progress callback that reports nowhere (pure use, tests, benchmarks)."""


class PlanInputError(ValueError):
    """The plan's data cannot be analysed as the plan says, for a reason the PI can fix.

    ``where`` names the input (``parameter epsilon``, ``cell I03 × L2``, ``rubric field
    label``); the message is a plain sentence shown to the PI as the run's error.
    """

    def __init__(self, message: str, *, where: str = ""):
        super().__init__(message)
        self.where = where


@dataclass(frozen=True)
class EstimateValue:
    """One named estimate as a result holds it: its value (None when it could not be computed)
    and, when None, why — in the PI's terms — and on which surface."""

    value: float | str | None
    reason: str = ""
    surface: str = ""


@dataclass(frozen=True)
class ReportTemplate:
    """The template of one or more of a kind's report sections (the declaration's
    ``sections`` name and describe them; this renders them).

    ``template`` is a template name Django's loaders find (the built-in kinds':
    ``studies/<kind>/….html``); the shared report page (``analysis/run_report.html``) includes it
    with the page's context: ``run``, ``version``, ``document`` (the result document),
    ``estimates`` (its estimates) and ``plots`` (its ``PlotSpec``s). ``context(document)``, when
    given, adds what the section needs beyond those (a dict merged into the page's context).
    """

    template: str
    context: Callable[[dict[str, Any]], dict[str, Any]] | None = None


@dataclass(frozen=True)
class PlotSpec:
    """One plot a result document offers: its number (from 0), its title and its alt text."""

    index: int
    title: str
    alt: str


@dataclass(frozen=True)
class KindPlots:
    """A kind's plots: ``specs(document)`` lists them; ``figure(document, index)`` draws one as
    a matplotlib ``Figure`` (``apps.analysis.plots.render_svg`` fixes the SVG's bytes)."""

    specs: Callable[[dict[str, Any]], list[PlotSpec]]
    figure: Callable[[dict[str, Any], int], Any]


_Panel = TypeVar("_Panel")


def panel_plots(
    panels: Callable[[dict[str, Any]], Sequence[_Panel]],
    *,
    describe: Callable[[_Panel], tuple[str, str]],
    draw: Callable[[dict[str, Any], _Panel], Any],
) -> KindPlots:
    """A kind's plots drawn one per panel of a result's estimates.

    ``panels(estimates)`` lists the panels in order (an evaluand, a model × sub-study pair, the
    whole result); plot ``i`` shows panel ``i``, with the title and alt text
    ``describe(panel)`` gives, drawn by ``draw(estimates, panel)`` as a matplotlib ``Figure``
    and laid out here (``tight_layout``), the same for every kind.
    Raises IndexError for a plot number beyond the panels.
    """

    def specs(document: dict[str, Any]) -> list[PlotSpec]:
        shown = panels(document["estimates"])
        return [PlotSpec(i, *describe(panel)) for i, panel in enumerate(shown)]

    def figure(document: dict[str, Any], index: int) -> Any:
        estimates = document["estimates"]
        drawn = draw(estimates, panels(estimates)[index])
        drawn.tight_layout()
        return drawn

    return KindPlots(specs=specs, figure=figure)


@dataclass(frozen=True)
class RecordTerms:
    """What a kind reads out of every attempt's raw record (``Attempt.raw``) into the analysed
    rows: the record's ``fields`` (top-level keys) and ``terms(record) -> {name: value}``, the
    row's entries computed from them (``apps.analysis.inputs.read_raw``)."""

    fields: tuple[str, ...]
    terms: Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Pipeline:
    kind: str
    title: str
    collect: Callable[[Any], dict[str, Any]]
    compute: Callable[..., dict[str, Any]]
    tidy: Callable[[dict[str, Any]], tuple[list[str], list[list[Any]]]]
    templates: tuple[str, ...] = field(default=())
    declaration: PipelineDeclaration | None = None
    assemble: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    estimates_of: Callable[[dict[str, Any]], dict[str, list[EstimateValue]]] | None = None
    warnings_of: Callable[[dict[str, Any]], list[str]] | None = None
    # Optional: (version, synthetic raw) -> raw. Adds what the pipeline's ``assemble`` reads
    # beyond the common raw reads (seed 002's factor assignments and task blocks) to the
    # computability gate's synthetic data; may raise PlanInputError to refuse the plan.
    synthetic: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None
    # What a computed result records as deviations from the plan's expectations (OPB: the
    # agreement minimum binding); each becomes a deviation-log entry when the run completes.
    deviations_of: Callable[[dict[str, Any]], list[str]] | None = None
    # The report page's own sections, in order (none: the page shows the shared parts only).
    report: tuple[ReportTemplate, ...] = ()
    plots: KindPlots | None = None
    # The kind's part in a version's life: gate checks, frozen-document parts, import checks.
    components: tuple[VersionComponent, ...] = ()
    record_terms: RecordTerms | None = None
    # The management command that loads the kind's demo (demo is a later layer: named, not
    # imported); empty for a kind without one.
    demo: str = ""
    # The kind's model of the world for the design diagnosis (issue #35;
    # ``apps.analysis.diagnosis.world.WorldModel``), or None: no diagnosis for this kind.
    world: WorldModel | None = None


_pipelines: dict[str, Pipeline] = {}


def register_pipeline(pipeline: Pipeline) -> Pipeline:
    """Register (or replace) a pipeline under its ``kind``, with its declaration and its
    components (``apps.protocols.components``, in the order given).

    Raises ValueError when the declaration names another kind.
    """
    if pipeline.declaration is not None:
        if pipeline.declaration.kind != pipeline.kind:
            raise ValueError(
                f"pipeline {pipeline.kind} carries the declaration of {pipeline.declaration.kind}"
            )
        declare_pipeline(pipeline.declaration)
    previous = _pipelines.get(pipeline.kind)
    if previous is not None:
        for component in previous.components:
            unregister_component(component.name)
    for component in pipeline.components:
        register_component(component)
    _pipelines[pipeline.kind] = pipeline
    return pipeline


class KindModule(Protocol):
    """What a study kind's ``pipeline`` module defines (docs/architecture.md, "Add a study
    kind", step 1); a module matches it by its names alone."""

    __name__: str
    KIND: str
    DECLARATION: PipelineDeclaration

    def collect(self, version: Any) -> dict[str, Any]: ...
    def compute(
        self, inputs: dict[str, Any], *, parameters: dict[str, Any], seed: int, progress: Progress
    ) -> dict[str, Any]: ...
    def tidy(self, inputs: dict[str, Any]) -> tuple[list[str], list[list[Any]]]: ...
    def assemble(self, raw: dict[str, Any]) -> dict[str, Any]: ...
    def estimates_of(self, result: dict[str, Any]) -> dict[str, list[EstimateValue]]: ...


def register_study_kind(
    module: KindModule,
    *,
    template: str,
    report_context: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    **options: Any,
) -> Pipeline:
    """Register the built-in study kind whose pipeline is ``module``
    (``apps.studies.<package>.pipeline``) and return its ``Pipeline``.

    The module gives the kind's name, declaration (and its title), ``collect``, ``compute``,
    ``tidy``, ``assemble`` and ``estimates_of``; ``template`` is the plan template it runs; its
    report is the one section template ``studies/<package>/report.html``, with
    ``report_context(document)`` added to the page's context when given. ``options`` are the
    rest of the ``Pipeline``'s fields (``plots``, ``components``, ``demo``, …).

    Raises TypeError for an option ``Pipeline`` does not have; ValueError as
    ``register_pipeline`` does.
    """
    package = module.__name__.rsplit(".", 2)[-2]
    return register_pipeline(
        Pipeline(
            kind=module.KIND,
            title=module.DECLARATION.title,
            collect=module.collect,
            compute=module.compute,
            tidy=module.tidy,
            templates=(template,),
            declaration=module.DECLARATION,
            assemble=module.assemble,
            estimates_of=module.estimates_of,
            report=(ReportTemplate(f"studies/{package}/report.html", report_context),),
            **options,
        )
    )


@dataclass(frozen=True)
class SharedReport:
    """A report part every kind's result may show (judge validation, ``apps.analysis.judge``):
    its section, included after the kind's own, and its plots, numbered after the kind's. Each
    answers for what the result holds (no section content, no plot, when it holds nothing of
    it), so the shared report page asks no ``if kind ==``."""

    name: str
    report: ReportTemplate
    plots: KindPlots | None = None


_shared_reports: dict[str, SharedReport] = {}


def register_shared_report(part: SharedReport) -> SharedReport:
    """Register (or replace) a shared report part under its ``name``."""
    _shared_reports[part.name] = part
    return part


def shared_reports() -> list[SharedReport]:
    """The shared report parts, in registration order."""
    return list(_shared_reports.values())


def unregister_pipeline(kind: str) -> None:
    """Remove a pipeline and its components (tests register throwaway kinds)."""
    pipeline = _pipelines.pop(kind, None)
    if pipeline is not None:
        for component in pipeline.components:
            unregister_component(component.name)
    withdraw_pipeline_declaration(kind)


def get_pipeline(kind: str) -> Pipeline:
    """The pipeline ``kind``; KeyError when none is registered under that name."""
    return _pipelines[kind]


def pipeline_kinds() -> list[str]:
    return sorted(_pipelines)


def registered_pipelines() -> list[Pipeline]:
    """Every registered pipeline, in registration order."""
    return list(_pipelines.values())


def kind_for_template(template: str) -> str | None:
    """The pipeline a plan template runs (``opb`` for ``opb``, …), or None."""
    for pipeline in _pipelines.values():
        if template in pipeline.templates:
            return pipeline.kind
    return None


def software_versions() -> dict[str, str]:
    """Python's and the numeric libraries' versions, as recorded in result documents."""
    out = {"python": platform.python_version()}
    for name in NUMERIC_LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out


def sub_seed(seed: int, *labels: object) -> int:
    """A seed for one sub-analysis, derived from the run's seed and the sub-analysis' name.

    Each bootstrap gets its own stream, fixed by the run's seed and its place in the document
    (e.g. ``sub_seed(seed, "opb", "model-1", "B", "F_att", 2)``), so adding an analysis does
    not shift the others' draws.
    """
    text = ":".join([str(seed), *map(str, labels)]).encode("utf-8")
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big") >> 1


# -- reading the plan's parameters ---------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One parameter as the pipeline used it: its value, where it came from, and its text."""

    name: str
    value: Any
    source: str  # "plan" or "default"
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source, "text": self.text}


_Choice = TypeVar("_Choice", bound=str)
_Value = TypeVar("_Value")


def _finite_number(text: str) -> float:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError("a number") from None
    if not value.is_finite():
        raise ValueError("a finite number")
    return float(value)


def _integer(text: str) -> int:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError("an integer") from None
    if value != value.to_integral_value():
        raise ValueError("an integer")
    return int(value)


class PlanReader:
    """Typed reads of a run's parameter snapshot (name → text), with documented defaults.

    Every read is recorded, so the result document can say which values came from the plan and
    which from a default. A value present but unreadable is an error naming the parameter,
    never silently replaced by the default.
    """

    def __init__(self, parameters: Mapping[str, str]):
        self._parameters = {k: (v or "").strip() for k, v in parameters.items()}
        self.used: dict[str, Setting] = {}

    def _raw(self, names: tuple[str, ...]) -> tuple[str, str] | None:
        for name in names:
            if self._parameters.get(name):
                return name, self._parameters[name]
        return None

    def _record(self, key: str, value: _Value, source: str, text: str) -> _Value:
        self.used[key] = Setting(key, value, source, text)
        return value

    # With a number for ``default`` the read is a number; only ``default=None`` can give None.
    @overload
    def number(self, key: str, *names: str, default: float) -> float: ...
    @overload
    def number(self, key: str, *names: str, default: None) -> float | None: ...
    def number(self, key: str, *names: str, default: float | None) -> float | None:
        return self._read(key, names, default, _finite_number)

    @overload
    def integer(self, key: str, *names: str, default: int) -> int: ...
    @overload
    def integer(self, key: str, *names: str, default: None) -> int | None: ...
    def integer(self, key: str, *names: str, default: int | None) -> int | None:
        return self._read(key, names, default, _integer)

    # The value is one of ``choices``: a caller that reads into a Literal type gets that type.
    def choice(
        self, key: str, *names: str, choices: tuple[_Choice, ...], default: _Choice
    ) -> _Choice:
        def one_of(text: str) -> _Choice:
            if text not in choices:
                raise ValueError(f"one of {', '.join(choices)}")
            return choices[choices.index(text)]  # typed as a choice

        return self._read(key, names, default, one_of)

    def _read(
        self, key: str, names: tuple[str, ...], default: _Value, parse: Callable[[str], _Value]
    ) -> _Value:
        """The first of ``names`` (or ``key``) the plan gives, read by ``parse``, else
        ``default``; recorded under ``key``. ``parse`` raises ValueError saying what the text
        should be, which becomes an error naming the parameter."""
        found = self._raw(names or (key,))
        if found is None:
            return self._record(key, default, "default", "")
        name, text = found
        try:
            value = parse(text)
        except ValueError as error:
            raise ValueError(f"plan parameter {name!r} = {text!r} is not {error}") from None
        return self._record(key, value, "plan", text)

    def settings(self) -> dict[str, dict[str, Any]]:
        return {key: setting.as_dict() for key, setting in sorted(self.used.items())}


def json_parameter(parameters: Mapping[str, Any], name: str, default: Any) -> Any:
    """The plan parameter ``name`` (JSON text, ``ParameterKind.JSON``) read as JSON, or
    ``default`` when it is absent or blank.

    Raises PlanInputError naming the parameter when its text is not JSON (the freeze validates
    a JSON parameter against its schema, so a frozen plan meets this only through a snapshot
    edited by hand).
    """
    text = (parameters.get(name) or "").strip()
    if not text:
        return default
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise PlanInputError(
            f"plan parameter {name!r} is not JSON: {error}", where=f"parameter {name}"
        ) from None


def seed_from(parameters: Mapping[str, str], protocol_sha256: str) -> tuple[int, str]:
    """The run's seed: the plan's ``seed`` parameter, else one derived from the version's hash.

    Returns ``(seed, source)`` with source ``"plan"`` or ``"protocol_sha256"``.
    Raises ValueError when the plan's seed is present but not a non-negative integer.
    """
    text = (parameters.get("seed") or "").strip()
    if text:
        seed = whole_number(text)
        if seed is None or seed >= 2**63:
            raise ValueError(
                f"plan parameter 'seed' = {text!r} is not an integer from 0 to 2^63 - 1"
            )
        return seed, "plan"
    return int(protocol_sha256[:15] or "0", 16), "protocol_sha256"
