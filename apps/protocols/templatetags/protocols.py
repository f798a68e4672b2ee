"""Template filters for protocol pages."""

from django import template

from apps.protocols.decision_table import condition_text as _condition_text

register = template.Library()


@register.filter
def condition_text(condition) -> str:
    """A decision-table condition as one readable line."""
    return _condition_text(condition)
