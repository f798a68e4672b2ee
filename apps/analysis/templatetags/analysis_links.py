"""``{% analysis_link version %}``: the way from a version's page to its analysis runs.

Rendered only for those who may read runs (the PI and auditors) and only for frozen versions,
so other apps' pages can include it without knowing the analysis app's access rule.
"""

from django import template
from django.urls import reverse
from django.utils.html import format_html

from apps.accounts.selectors import roles_for
from apps.analysis.access import READ_ROLES

register = template.Library()


@register.simple_tag(takes_context=True)
def analysis_link(context, version) -> str:
    request = context.get("request")
    if request is None or version.is_draft:
        return ""
    if not roles_for(user=request.user, protocol_id=version.protocol_id) & READ_ROLES:
        return ""
    url = reverse("analysis:runs", kwargs={"code": version.protocol.code, "label": version.label})
    return format_html('<a class="button secondary" href="{}">Analysis</a>', url)
