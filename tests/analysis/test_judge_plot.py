"""The judge-validation plot and its place on the report: its series are drawn by the name of
the statistic they show, and the report finds its plot by whose it is, not by its position among
the page's plots (``apps.analysis.judge``)."""

import pytest

from apps.analysis import judge
from apps.analysis.pipelines import base
from apps.analysis.pipelines.base import KindPlots, PlotSpec, SharedReport, register_shared_report

ROW = {
    "field": "label",
    "scorer": "judge",
    "final": {
        "alpha": 0.2,
        "alpha_interval": [0.1, 0.3],
        "kappa": 0.8,
        "kappa_interval": [0.7, 0.9],
    },
}
DOCUMENT = {"kind": "no-such-kind", "estimates": {"judge_validation": [ROW]}}


@pytest.fixture
def another_part():
    """A shared report part registered after judge validation, with a plot of its own."""
    part = register_shared_report(
        SharedReport(
            "another",
            judge.REPORT,
            KindPlots(
                specs=lambda document: [PlotSpec(0, "Another part's plot", "")],
                figure=lambda document, index: None,
            ),
        )
    )
    yield part
    base._shared_reports.pop("another")


def test_the_report_finds_the_judge_plot_whatever_is_registered_after_it(another_part):
    from apps.analysis.plots import plot_specs

    titles = [spec.title for spec in plot_specs(DOCUMENT)]
    assert titles[-1] == "Another part's plot"
    plot = judge.section_context(DOCUMENT)["judge_plot"]
    assert plot.title.startswith("Judge validation")
    assert titles[plot.index] == plot.title


def test_each_series_is_labelled_as_the_statistic_it_draws():
    figure = judge.figure(DOCUMENT, 0)
    [ax] = figure.axes
    drawn = {
        container.get_label(): container.lines[0].get_xdata()[0] for container in ax.containers
    }
    assert drawn == {"α": 0.2, "κ": 0.8}
    markers = {c.get_label(): c.lines[0].get_marker() for c in ax.containers}
    assert markers == {"α": "o", "κ": "s"}
