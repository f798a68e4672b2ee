"""``{% scoring_link version %}``: the way from a version's page to its scoring dashboard.

Rendered only for the protocol's PI (who opens scoring and watches it) and only for frozen
versions, so other apps' pages can include it without knowing the raters app's access rule.
"""

from django import template
from django.urls import reverse
from django.utils.html import format_html

from apps.accounts.selectors import roles_for
from apps.raters.access import SCORING_MANAGERS

register = template.Library()


@register.simple_tag(takes_context=True)
def scoring_link(context, version) -> str:
    request = context.get("request")
    if request is None or version.is_draft:
        return ""
    if not roles_for(user=request.user, protocol_id=version.protocol_id) & set(SCORING_MANAGERS):
        return ""
    url = reverse("raters:scoring", args=[version.protocol.code, version.label])
    return format_html('<a class="button secondary" href="{}">Scoring</a>', url)
