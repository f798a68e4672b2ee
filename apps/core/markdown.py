"""Markdown as safe HTML: Python-Markdown renders, nh3 keeps only harmless tags.

Protocol text is written by PIs and read by editors and auditors; it may contain anything, so the
rendered HTML is sanitised: no scripts, no event handlers, no styles, and no images (a remote
image would tell its server who read the protocol, and when).
"""

import markdown as _markdown
import nh3

_EXTENSIONS = ["tables", "fenced_code", "sane_lists"]
_TAGS = set(nh3.ALLOWED_TAGS) - {"img", "area", "map"}


def render_markdown(text: str) -> str:
    """``text`` (Markdown) as sanitised HTML."""
    html = _markdown.markdown(text or "", extensions=_EXTENSIONS, output_format="html")
    return nh3.clean(html, tags=_TAGS)
