"""Template filters shared by every app's pages."""

from django import template
from django.utils.safestring import mark_safe

from apps.core.markdown import render_markdown

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str) -> str:
    """Render Markdown to sanitised HTML (``{{ version.design|markdown }}``)."""
    return mark_safe(render_markdown(text))
