"""The built-in study kinds, as registered from apps/studies/: each is complete, and the shared
report page and plots know none of them by name."""

from dataclasses import fields
from pathlib import Path

import pytest
from django.core.management import get_commands
from django.template.loader import get_template

from apps.analysis.pipelines import get_pipeline, pipeline_kinds
from apps.analysis.plots import plot_specs, render_svg
from apps.protocols.plans import BOOTSTRAP_REPLICATES, INTERVAL_COVERAGE
from apps.studies.apps import KINDS

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize("kind", KINDS)
def test_each_built_in_kind_registers_its_report_plots_and_demo(kind):
    pipeline = get_pipeline(kind)
    assert pipeline.declaration is not None and pipeline.declaration.kind == kind
    assert pipeline.report and pipeline.plots is not None
    for part in pipeline.report:
        assert get_template(part.template).template.name == part.template
    assert pipeline.demo in get_commands(), f"{kind}'s demo command {pipeline.demo!r}"


def test_the_built_in_kinds_are_the_registered_ones():
    assert set(KINDS) <= set(pipeline_kinds())


def test_the_shared_report_and_plots_name_no_kind():
    report = (ROOT / "templates/analysis/run_report.html").read_text()
    plots = (ROOT / "apps/analysis/plots.py").read_text()
    assert "kind ==" not in report and 'kind"] ==' not in plots
    for kind in KINDS:
        assert f'"{kind}"' not in report and f'"{kind}"' not in plots


def test_a_result_of_a_kind_no_longer_registered_offers_no_plot():
    document = {"kind": "_gone", "estimates": {}}
    assert plot_specs(document) == []
    with pytest.raises(IndexError):
        render_svg(document, 0)


def test_crucible_takes_label_kind_unit_and_bounds_of_its_specs_from_the_shared_ones():
    # Its own default, seed template and help; the rest is the shared spec's (one place).
    declaration = get_pipeline("crucible").declaration
    assert declaration is not None
    coverage = declaration.parameter("interval_coverage")
    replicates = declaration.parameter("bootstrap_replicates")
    assert coverage is not None and replicates is not None
    own = {"default", "seed_template", "help_text"}
    for spec, shared in ((coverage, INTERVAL_COVERAGE), (replicates, BOOTSTRAP_REPLICATES)):
        differs = {f.name for f in fields(spec) if getattr(spec, f.name) != getattr(shared, f.name)}
        assert differs <= own
    assert (coverage.kind, coverage.unit, coverage.minimum, coverage.maximum, coverage.default) == (
        "number",
        "proportion",
        "0.5",
        "0.999",
        "0.95",
    )
    assert (replicates.label, replicates.minimum, replicates.maximum, replicates.default) == (
        "bootstrap replicates",
        "100",
        "1000000",
        "10000",
    )
