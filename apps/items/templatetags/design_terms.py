"""The design's words as its study uses them (issue #14): a study kind may declare its own
(``PipelineDeclaration.terms``: a CRUCIBLE study's pages say autonomy rungs, scenario families
and seed variants where the generic design says levels, families and items, seed 001 §3–§5), on
the design grid, level and family pages and the item and cell pages. Only labels change; the
model underneath is the generic design."""

from django import template

from apps.protocols.plans import pipeline_declaration, version_pipeline

register = template.Library()

GENERIC = {
    "level": "level",
    "levels": "levels",
    "level_scale": "Level scale",
    "family": "family",
    "families": "Families",
    "item": "Item",
    "items": "Items",
    "Level": "Level",
    "Family": "Family",
    "an_item": "the item",
    "at_level": "",
}


@register.simple_tag
def term(version, key: str) -> str:
    """The word for ``key`` (a key of ``GENERIC``) on ``version``'s pages."""
    declaration = (
        pipeline_declaration(version_pipeline(version) or "") if version is not None else None
    )
    words = declaration.terms if declaration is not None else {}
    return words.get(key, GENERIC[key])
