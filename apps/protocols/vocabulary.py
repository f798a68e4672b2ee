"""A study's words for the generic design's parts (issue #14 Deliver 1).

The generic design says level, family, item, cell, administration; a study kind may declare its
own words (``PipelineDeclaration.vocabulary``: a CRUCIBLE study, seed 001 §3–§5, says autonomy
rung, scenario family, seed variant, seed variant × rung, episode). The model and the API's
field names stay generic; pages relabel through ``apps.items.templatetags.design_terms`` and the
version's API representation carries this block as ``vocabulary``, so a client can show the
study's words.
"""

from __future__ import annotations

from apps.protocols.plans import pipeline_declaration, version_pipeline

GENERIC = {
    "level": "level",
    "family": "family",
    "item": "item",
    "cell": "cell",
    "administration": "administration",
    "number_field": "rubric number field",
    "binary_field": "rubric binary field",
}


def vocabulary(version) -> dict[str, str]:
    """The generic part's name → the word ``version``'s study uses for it."""
    declaration = pipeline_declaration(version_pipeline(version) or "")
    return {**GENERIC, **(declaration.vocabulary if declaration is not None else {})}
