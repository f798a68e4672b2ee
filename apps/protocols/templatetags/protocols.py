"""Template filters for protocol pages."""

from django import template

from apps.protocols.decision_table import condition_text as _condition_text
from apps.protocols.plans import version_pipeline

register = template.Library()


@register.filter
def condition_text(condition) -> str:
    """A decision-table condition as one readable line."""
    return _condition_text(condition)


@register.filter
def plan_pipeline(version) -> str:
    """The pipeline the version's plan names, or "" when it names none."""
    return version_pipeline(version) or ""
