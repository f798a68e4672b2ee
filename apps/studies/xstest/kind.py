"""XSTest, declared once: its pipeline, report, plot and demo."""

from apps.analysis.pipelines import Pipeline, ReportTemplate, register_pipeline
from apps.studies.xstest import pipeline
from apps.studies.xstest.plots import PLOTS

KIND = register_pipeline(
    Pipeline(
        kind=pipeline.KIND,
        title="XSTest refusal rates",
        collect=pipeline.collect,
        compute=pipeline.compute,
        tidy=pipeline.tidy,
        templates=("xstest",),
        declaration=pipeline.DECLARATION,
        assemble=pipeline.assemble,
        estimates_of=pipeline.estimates_of,
        report=(ReportTemplate("studies/xstest/report.html"),),
        plots=PLOTS,
        demo="demo_xstest",
    )
)
