"""``{% scoring_link version %}``: the way from a version's page to its scoring dashboard.

Rendered only for the protocol's PI (who opens scoring and watches it) and only for frozen
versions, so other apps' pages can include it without knowing the raters app's access rule.
"""

from django import template

from apps.protocols.version_links import version_button
from apps.raters.access import SCORING_MANAGERS

register = template.Library()


@register.simple_tag(takes_context=True)
def scoring_link(context, version) -> str:
    return version_button(
        context, version, roles=SCORING_MANAGERS, url_name="raters:scoring", text="Scoring"
    )
