"""``{% analysis_link version %}``: the way from a version's page to its analysis runs.

Rendered only for those who may read runs (the PI and auditors) and only for frozen versions,
so other apps' pages can include it without knowing the analysis app's access rule.
"""

from django import template

from apps.analysis.access import READ_ROLES
from apps.protocols.version_links import version_button

register = template.Library()


@register.simple_tag(takes_context=True)
def analysis_link(context, version) -> str:
    return version_button(
        context, version, roles=READ_ROLES, url_name="analysis:runs", text="Analysis"
    )
