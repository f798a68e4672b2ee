"""The design's words as its study uses them (issue #14): a CRUCIBLE study's pages say autonomy
rungs, scenario families and seed variants where the generic design says levels, families and
items (seed 001 §3–§5), on the design grid, level and family pages and the item and cell pages.
Only labels change; the model underneath is the generic design."""

from django import template

from apps.protocols.plans import version_pipeline

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
CRUCIBLE = {
    "level": "autonomy rung",
    "levels": "autonomy rungs",
    "level_scale": "Autonomy rungs",
    "family": "scenario family",
    "families": "Scenario families",
    "item": "Seed variant",
    "items": "Seed variants",
    "Level": "Autonomy rung",
    "Family": "Scenario family",
    "an_item": "the seed variant",
    "at_level": "autonomy rung ",
}


@register.simple_tag
def term(version, key: str) -> str:
    """The word for ``key`` (a key of ``GENERIC``) on ``version``'s pages."""
    words = CRUCIBLE if version is not None and version_pipeline(version) == "crucible" else GENERIC
    return words[key]
