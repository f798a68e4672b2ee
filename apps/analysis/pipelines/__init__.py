"""The analysis pipelines' registry (``base``) and their shared readings (``common``).

The study kinds that ship with Preregistry register their pipelines from ``apps/studies/``
(one package per kind); this package imports none of them.
"""

from apps.analysis.pipelines.base import (
    KindPlots,
    Pipeline,
    PlotSpec,
    RecordTerms,
    ReportTemplate,
    SharedReport,
    get_pipeline,
    kind_for_template,
    pipeline_kinds,
    register_pipeline,
    register_shared_report,
    register_study_kind,
    registered_pipelines,
    shared_reports,
    unregister_pipeline,
)

__all__ = [
    "KindPlots",
    "Pipeline",
    "PlotSpec",
    "RecordTerms",
    "ReportTemplate",
    "SharedReport",
    "get_pipeline",
    "kind_for_template",
    "pipeline_kinds",
    "register_pipeline",
    "register_shared_report",
    "register_study_kind",
    "registered_pipelines",
    "shared_reports",
    "unregister_pipeline",
]
