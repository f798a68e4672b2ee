"""The project's own documentation (``docs/*.md``), served by the app as pages, so that a page
saying "see the import formats" links to something a user can open.

Only files in ``docs/`` are served (a slug is letters, digits and dashes; anything else is 404),
and their Markdown goes through the same sanitiser as protocol text, except that images in
``docs/img/`` are kept (they are the project's own screenshots, served from this site).
"""

import re
from pathlib import Path

import markdown as _markdown
import nh3
from django.conf import settings
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

# Names are checked before any file-system call, and are short: a name longer than the file
# system allows (255 bytes) made ``is_file`` raise ENAMETOOLONG, a 500 (issue #33).
_SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,99}")
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.png")
_TAGS = set(nh3.ALLOWED_TAGS) | {"img"}


def docs_dir() -> Path:
    return Path(settings.BASE_DIR) / "docs"


def _rewrite(html: str) -> str:
    # Links between the docs (``import-formats.md#x``) and their images (``img/a.png``) become
    # the app's own addresses.
    html = re.sub(
        r'href="(?:\./|docs/)?([a-z0-9-]+)\.md(#[^"]*)?"',
        lambda m: f'href="{reverse("docs-page", args=[m.group(1)])}{m.group(2) or ""}"',
        html,
    )
    return re.sub(
        r'src="(?:\./|docs/)?img/([^"]+)"',
        lambda m: f'src="{reverse("docs-image", args=[m.group(1)])}"',
        html,
    )


def _existing(folder: Path, name: str, pattern: re.Pattern[str], suffix: str = "") -> Path | None:
    if not pattern.fullmatch(name):
        return None
    path = folder / f"{name}{suffix}"
    try:
        return path if path.is_file() else None
    except OSError:  # whatever else the file system refuses to look up is not a page either
        return None


def docs_page(request: HttpRequest, slug: str) -> HttpResponse:
    """``docs/<slug>.md`` as a page; 404 for anything else."""
    path = _existing(docs_dir(), slug, _SLUG, ".md")
    if path is None:
        raise Http404("No such documentation page.")
    text = path.read_text(encoding="utf-8")
    html = _markdown.markdown(text, extensions=["tables", "fenced_code", "sane_lists", "toc"])
    html = nh3.clean(
        _rewrite(html),
        tags=_TAGS,
        attributes={**nh3.ALLOWED_ATTRIBUTES, "img": {"src", "alt"}, "h2": {"id"}, "h3": {"id"}},
        url_schemes={"http", "https", "mailto"},
    )
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), slug)
    return render(request, "core/docs_page.html", {"html": html, "title": title, "slug": slug})


def docs_image(request: HttpRequest, name: str) -> FileResponse:
    """A screenshot from ``docs/img/``."""
    path = _existing(docs_dir() / "img", name, _IMAGE)
    if path is None:
        raise Http404("No such image.")
    return FileResponse(path.open("rb"), content_type="image/png")
