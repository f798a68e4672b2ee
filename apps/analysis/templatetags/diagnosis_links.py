"""``{% design_diagnosis version %}``: a version's design diagnosis on its page (issue #35 §5).

On a draft: the way to its diagnosis page and the latest result's headline numbers; on a frozen
version: the diagnosis its frozen document names, or "no design diagnosis". The version page is
read by the protocol's sighted members only, who may read its diagnoses too; the public page
includes it with ``public=True`` (no links into the app).
"""

from typing import Any

from django import template

from apps.analysis.diagnosis.selectors import diagnosis_document, latest_diagnosis

register = template.Library()


@register.inclusion_tag("analysis/_diagnosis_summary.html")
def design_diagnosis(version: Any, public: bool = False) -> dict[str, Any]:
    from apps.analysis.diagnosis.views import diagnosis_context

    diagnosis = latest_diagnosis(version)
    document = diagnosis_document(diagnosis) if diagnosis is not None else None
    return {
        "version": version,
        "public": public,
        "summary": document is not None,
        **diagnosis_context(diagnosis),
    }
