"""The analysis pipelines, by kind. Importing this package registers the built-in ones."""

from apps.analysis.pipelines import crucible, opb, paired_blocks, xstest  # noqa: F401  (registers them)
from apps.analysis.pipelines.base import (
    Pipeline,
    get_pipeline,
    kind_for_template,
    pipeline_kinds,
    register_pipeline,
    unregister_pipeline,
)

__all__ = [
    "Pipeline",
    "get_pipeline",
    "kind_for_template",
    "pipeline_kinds",
    "register_pipeline",
    "unregister_pipeline",
]

# Seed 003's pipeline registers itself (and its plan template) on import.
from apps.analysis.pipelines import fidelity  # noqa: F401
