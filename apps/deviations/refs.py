"""Where a log entry's references lead: a registry from a ref's ``type`` to a URL.

A ref is ``{"type": "version", "id": 3, "label": "OPB-01 v1.1", ...}``. The log page links each
one to the page of what it concerns. Each app registers the types it writes from its
``AppConfig.ready()``::

    from apps.deviations.refs import register_ref_type

    register_ref_type("item", item_url)

A resolver takes the ref and the entry's version as ``(protocol code, version label)`` (read
off the entry's ``version`` ref, or None when it has none) and returns a URL, or None when this
ref has no page. Resolvers must not query the database: a log page resolves every ref on it.

The types the product writes, and where they lead (``tests/deviations/test_log_links.py``
writes every kind of entry and follows every link):

- ``version`` (every app): the version's page — protocols;
- ``blob`` (analysis): the stored document, by hash — protocols;
- ``item`` (harm review): the item's design page — items;
- ``import`` (response import): the version's list of imports — responses;
- ``machine_score_import`` (machine-score and judge-verdict imports) and ``oracle_run`` (an
  oracle scorer's run): the version's scorers page, which lists both — raters;
- ``attempt`` (exclusion): the attempt's page — responses;
- ``analysis_run`` (analysis): the run's report — analysis;
- plain text, by design (``PLAIN_TEXT_TYPES``): ``exclusion`` (the same entry's ``attempt``
  link leads to the attempt and its exclusion) and ``score`` (a score is seen only by its
  reviewer and the scoring dashboard; the log's readers must not be led to it) and
  ``membership`` (a role granted or removed: the label names the person and the role, and a
  removed role has no page left to lead to) and ``integrity`` (the SHA-256 a frozen version's
  rows gave when an integrity alarm was raised: a hash of no stored document, so no page).
"""

import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.urls import NoReverseMatch

logger = logging.getLogger(__name__)

VersionKey = tuple[str, str]
RefResolver = Callable[[Mapping[str, Any], VersionKey | None], str | None]

# Written by the product and shown as plain text on purpose (see the module docstring).
PLAIN_TEXT_TYPES = frozenset({"exclusion", "score", "membership", "integrity"})

_resolvers: dict[str, RefResolver] = {}


def register_ref_type(ref_type: str, resolver: RefResolver) -> None:
    """Make refs of ``ref_type`` link through ``resolver`` (replacing an earlier registration)."""
    _resolvers[ref_type] = resolver


def registered_ref_types() -> frozenset[str]:
    """The types some app has registered a resolver for."""
    return frozenset(_resolvers)


def _entry_version(refs: list[Mapping[str, Any]]) -> VersionKey | None:
    for ref in refs:
        if ref.get("type") == "version":
            code, separator, label = str(ref.get("label", "")).rpartition(" v")
            if separator and code and label:
                return code, label
    return None


def ref_url(ref: Mapping[str, Any], version: VersionKey | None = None) -> str | None:
    """The URL of the page a ref concerns, or None (shown as plain text).

    A resolver that fails on a malformed ref (a hand-edited import, an old shape) gives plain
    text and a warning in the log, never an error page.
    """
    resolver = _resolvers.get(str(ref.get("type", "")))
    if resolver is None:
        return None
    try:
        return resolver(ref, version)
    except (KeyError, TypeError, ValueError, NoReverseMatch):
        logger.warning("log ref %r has no page", dict(ref), exc_info=True)
        return None


def ref_label(ref: Mapping[str, Any]) -> str:
    """What a ref is called on a page: its label, else ``type id``."""
    return str(ref.get("label") or f"{ref.get('type', '?')} {ref.get('id', '?')}")


def resolved_refs(refs: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``refs`` with ``url`` (or None) and ``text`` added to each, for templates."""
    version = _entry_version(refs)
    return [{**ref, "url": ref_url(ref, version), "text": ref_label(ref)} for ref in refs]
