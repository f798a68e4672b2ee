"""Where a log entry's references lead: a small registry from a ref's ``type`` to a URL.

A ref is ``{"type": "version", "id": 3, "label": "OPB-01 v1.1"}``. The log page links each one
to the page of what it concerns; a type nobody has registered, or whose page does not exist yet,
is shown as its label in plain text. An app registers its types from its ``AppConfig.ready()``::

    from apps.deviations.refs import register_ref_type, url_for_name

    register_ref_type("item", url_for_name("items:item", "pk"))

Resolvers take the ref (a dict) and return a URL or None; they must not query the database (a
log page resolves every ref on it).
"""

from collections.abc import Callable, Mapping
from typing import Any

from django.urls import NoReverseMatch, reverse

RefResolver = Callable[[Mapping[str, Any]], str | None]

_resolvers: dict[str, RefResolver] = {}


def register_ref_type(ref_type: str, resolver: RefResolver) -> None:
    """Make refs of ``ref_type`` link through ``resolver`` (replacing an earlier registration)."""
    _resolvers[ref_type] = resolver


def url_for_name(url_name: str, kwarg: str = "pk") -> RefResolver:
    """A resolver that reverses ``url_name`` with the ref's id as ``kwarg``; None if it can't."""

    def resolve(ref: Mapping[str, Any]) -> str | None:
        try:
            return reverse(url_name, kwargs={kwarg: ref["id"]})
        except NoReverseMatch:
            return None

    return resolve


def ref_url(ref: Mapping[str, Any]) -> str | None:
    """The URL of the page a ref concerns, or None (shown as plain text)."""
    resolver = _resolvers.get(str(ref.get("type", "")))
    if resolver is None:
        return None
    try:
        return resolver(ref)
    except (KeyError, TypeError, ValueError):
        return None


def ref_label(ref: Mapping[str, Any]) -> str:
    """What a ref is called on a page: its label, else ``type id``."""
    return str(ref.get("label") or f"{ref.get('type', '?')} {ref.get('id', '?')}")


def resolved_refs(refs: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``refs`` with ``url`` (or None) and ``text`` added to each, for templates."""
    return [{**ref, "url": ref_url(ref), "text": ref_label(ref)} for ref in refs]


def _version_url(ref: Mapping[str, Any]) -> str | None:
    # A version's page is addressed by protocol code and label, which its ref's label carries
    # ("OPB-01 v1.1", written by version_ref in protocols and here); no database lookup.
    code, separator, label = str(ref.get("label", "")).rpartition(" v")
    if not separator or not code or not label:
        return None
    try:
        return reverse("protocols:version", kwargs={"code": code, "label": label})
    except NoReverseMatch:
        return None


# The types the study's apps write. A ref whose page does not exist (yet) degrades to plain
# text; an app that names its page differently registers its own resolver in ready().
_DEFAULTS = {
    "version": _version_url,
    "blob": url_for_name("protocols-api:blob", "digest"),
    "item": url_for_name("items:item", "pk"),
    "response": url_for_name("responses:response", "pk"),
    "exclusion": url_for_name("responses:exclusion", "pk"),
    "run": url_for_name("analysis:run", "pk"),
}
for _type, _resolver in _DEFAULTS.items():
    register_ref_type(_type, _resolver)
