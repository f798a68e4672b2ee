from django import template

register = template.Library()


@register.filter
def value_of(values, name):
    """``values[name]`` for a dict of submitted values, or None."""
    if isinstance(values, dict):
        return values.get(name)
    return None


@register.filter
def signal_turn(signals, number):
    """Seed 003: user turn ``number`` (1-based) of a signals object (``{"turns": [...]}``, as
    ``apps.raters.views.signals_from_post`` builds it), or ``{}`` when there is none; how the
    judging form keeps what the reviewer entered when a submission is refused."""
    turns = signals.get("turns") if isinstance(signals, dict) else None
    try:
        index = int(number) - 1
    except (TypeError, ValueError):
        return {}
    if not isinstance(turns, list) or not 0 <= index < len(turns):
        return {}
    turn = turns[index]
    return turn if isinstance(turn, dict) else {}


@register.filter
def hours_text(hours):
    """A duration in hours as a reader says it: ``"40 min"``, ``"2 h 10 min"``, ``"31 h"``."""
    try:
        minutes = round(float(hours) * 60)
    except (TypeError, ValueError):
        return ""
    if minutes < 60:
        return f"{max(minutes, 1)} min"
    whole, rest = divmod(minutes, 60)
    if whole >= 10 or rest == 0:
        return f"{round(minutes / 60)} h"
    return f"{whole} h {rest} min"
