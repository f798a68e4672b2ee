"""OPB-01, declared once: its pipeline, report, plots, design checks and demo."""

from apps.analysis.pipelines import Pipeline, ReportTemplate, register_pipeline
from apps.items.design_checks import register_design_check
from apps.studies.opb import pipeline
from apps.studies.opb.disclosure import disclosure_problems
from apps.studies.opb.plots import PLOTS

KIND = register_pipeline(
    Pipeline(
        kind=pipeline.KIND,
        title="OPB-01 analysis plan",
        collect=pipeline.collect,
        compute=pipeline.compute,
        tidy=pipeline.tidy,
        templates=("opb",),
        declaration=pipeline.DECLARATION,
        assemble=pipeline.assemble,
        estimates_of=pipeline.estimates_of,
        warnings_of=pipeline.decision_contradictions,
        deviations_of=pipeline.reliability_deviations,
        report=(ReportTemplate("studies/opb/report.html"),),
        plots=PLOTS,
        demo="load_demo",
    )
)
# OPB-01 §5: a disclosure item names its base item; a sham matches its inscription.
register_design_check("opb_disclosure", disclosure_problems)
