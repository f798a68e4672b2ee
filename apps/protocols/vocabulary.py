"""A study's words for the generic design's parts (issue #14 Deliver 1).

The generic design says level, family, item, cell, administration; a CRUCIBLE study (seed 001
§3–§5, a version whose plan runs the ``crucible`` pipeline) says autonomy rung, scenario
family, seed variant, seed variant × rung, episode. The model and the API's field names stay
generic; pages relabel through ``apps.items.templatetags.design_terms`` and the version's API
representation carries this block as ``vocabulary``, so a client can show the study's words.
"""

from __future__ import annotations

from apps.protocols.plans import version_pipeline

GENERIC = {
    "level": "level",
    "family": "family",
    "item": "item",
    "cell": "cell",
    "administration": "administration",
    "number_field": "rubric number field",
    "binary_field": "rubric binary field",
}
CRUCIBLE = {
    "level": "autonomy rung",
    "family": "scenario family",
    "item": "seed variant",
    "cell": "seed variant at an autonomy rung",
    "administration": "episode",
    "number_field": "graded axis",
    "binary_field": "hard-fail channel",
}


def vocabulary(version) -> dict[str, str]:
    """The generic part's name → the word ``version``'s study uses for it."""
    return dict(CRUCIBLE if version_pipeline(version) == "crucible" else GENERIC)
