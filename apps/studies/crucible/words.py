"""CRUCIBLE's words for the generic design's parts (seed 001 §3–§5, issue #14): autonomy rung,
scenario family, seed variant, seed variant × rung, episode. The model and the API's field
names stay generic; the version's API representation carries ``VOCABULARY`` as ``vocabulary``
(``apps.protocols.vocabulary``) and the design pages relabel with ``PAGE_TERMS``
(``apps.items.templatetags.design_terms``)."""

VOCABULARY = {
    "level": "autonomy rung",
    "family": "scenario family",
    "item": "seed variant",
    "cell": "seed variant at an autonomy rung",
    "administration": "episode",
    "number_field": "graded axis",
    "binary_field": "hard-fail channel",
}
PAGE_TERMS = {
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
