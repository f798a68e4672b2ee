"""Every template compiles on its own: an included template must load the tag libraries it uses
(an include does not inherit its parent's ``{% load %}``), and a page that reaches it only
through a rare branch would otherwise be a 500 found by a user (the CRUCIBLE report's
percentile note was, until its include loaded ``analysis_format``)."""

from pathlib import Path

import pytest
from django.conf import settings
from django.template import engines


def _templates() -> list[str]:
    roots = [Path(d) for d in settings.TEMPLATES[0]["DIRS"]]
    return sorted(str(p.relative_to(root)) for root in roots for p in root.rglob("*.html"))


def test_there_are_templates_to_compile():
    assert len(_templates()) > 50


@pytest.mark.parametrize("name", _templates())
def test_the_template_compiles(name):
    engines["django"].engine.get_template(name)
