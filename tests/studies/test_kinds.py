"""The built-in study kinds, as registered from apps/studies/: each is complete, and the shared
report page and plots know none of them by name."""

from pathlib import Path

import pytest
from django.core.management import get_commands
from django.template.loader import get_template

from apps.analysis.pipelines import get_pipeline, pipeline_kinds
from apps.analysis.plots import plot_specs, render_svg
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
