"""Number formatting for analysis reports: estimates, intervals and percentages.

Every report page goes through these filters, so the rules hold for every pipeline's report:

- a missing value is an em dash that says why, on hover (``title``) and by a footnote mark that
  the report's footnote explains (``MISSING_NOTE``);
- a value too small for the decimals shown is printed with two significant digits
  (``-2.1e-05``), never as ``-0.000``; a value that rounds to zero is never signed.
"""

import math

from django import template
from django.utils.html import format_html

register = template.Library()

MISSING_NOTE = (
    "No value: the analysis did not produce this one — too few items or responses for the "
    "estimate or its interval method, a model that did not converge, or a quantity the plan "
    "does not ask for here. The stage's own note says which."
)


def missing(reason: str = "") -> str:
    """The em dash for a value the analysis did not produce, with its reason on hover."""
    return format_html(
        '<span class="missing" title="{}">—<sup aria-hidden="true">*</sup></span>',
        reason or MISSING_NOTE,
    )


def _fixed(x: float, digits: int) -> str:
    if x != 0 and abs(x) < 0.5 * 10 ** (-digits):
        return f"{x:.2g}"  # too small for the decimals: two significant digits, its sign kept
    text = f"{x:.{digits}f}"
    if text.startswith("-") and float(text) == 0:
        text = text[1:]  # -0.000 would claim a sign the value does not show
    return text


@register.filter
def num(value, digits: int = 3) -> str:
    """A number with ``digits`` decimals (a tiny one with two significant digits); the
    explained em dash for a missing value."""
    if value is None or value == "":
        return missing()
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x):
        return missing()
    return _fixed(x, int(digits))


@register.filter
def pct(value, digits: int = 1) -> str:
    """A proportion as a percentage, ``0.216`` → ``21.6 %``."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return missing()
    if math.isnan(x):
        return missing()
    return f"{_fixed(100 * x, int(digits))} %"


@register.filter
def ci(pair, digits: int = 3) -> str:
    """An interval as ``[lo, hi]``; the explained em dash when unavailable."""
    if not pair:
        return missing()
    return format_html("[{}, {}]", num(pair[0], digits), num(pair[1], digits))


@register.filter
def pct_ci(pair, digits: int = 1) -> str:
    try:
        lo, hi = (float(v) for v in pair)
    except (TypeError, ValueError):  # no interval, or not a pair of numbers
        return missing()
    if math.isnan(lo) or math.isnan(hi):
        return missing()
    return f"[{_fixed(100 * lo, int(digits))}, {_fixed(100 * hi, int(digits))}] %"


@register.filter
def human(value) -> str:
    """A raw label or code as words: ``1_full_compliance`` → ``full compliance``,
    ``scope_reduction`` → ``scope reduction``. Anything else is returned unchanged."""
    if not isinstance(value, str) or " " in value:
        return value
    text = value.split("_", 1)[1] if value[:1].isdigit() and "_" in value else value
    return text.replace("_", " ")


@register.simple_tag
def missing_note() -> str:
    """The footnote that explains the em dashes of a report."""
    return format_html('<p class="help missing-note"><sup>*</sup> — {}</p>', MISSING_NOTE)


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
