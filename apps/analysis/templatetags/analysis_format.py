"""Number formatting for analysis reports: estimates, intervals and percentages."""

from django import template

register = template.Library()


@register.filter
def num(value, digits: int = 3) -> str:
    """A number with ``digits`` decimals; an em dash for a missing value."""
    if value is None or value == "":
        return "—"
    try:
        return f"{float(value):.{int(digits)}f}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def pct(value, digits: int = 1) -> str:
    """A proportion as a percentage, ``0.216`` → ``21.6 %``."""
    if value is None or value == "":
        return "—"
    return f"{100 * float(value):.{int(digits)}f} %"


@register.filter
def ci(pair, digits: int = 3) -> str:
    """An interval as ``[lo, hi]``; an em dash when unavailable."""
    if not pair:
        return "—"
    return f"[{num(pair[0], digits)}, {num(pair[1], digits)}]"


@register.filter
def pct_ci(pair, digits: int = 1) -> str:
    if not pair:
        return "—"
    return f"[{100 * float(pair[0]):.{int(digits)}f}, {100 * float(pair[1]):.{int(digits)}f}] %"


@register.filter
def get(mapping, key):
    """``mapping[key]`` in a template, None when absent."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def stage_beta(stage) -> dict | None:
    """The slope a report stage carries: β_B, β_A or β_force."""
    for key in ("beta_B", "beta_A", "beta_force"):
        if key in stage:
            return stage[key]
    return None
