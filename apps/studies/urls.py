"""The study kinds' own pages and endpoints (``apps/studies/<kind>/urls.py``, where a kind has
any), mounted like every app's: pages at the root, endpoints under ``/api/v1/``."""

from importlib import import_module
from importlib.util import find_spec

from django.urls import URLPattern

from apps.studies.apps import KINDS

app_name = "studies"

_modules = [
    import_module(f"apps.studies.{kind}.urls")
    for kind in KINDS
    if find_spec(f"apps.studies.{kind}.urls") is not None
]

urlpatterns: list[URLPattern] = [p for m in _modules for p in getattr(m, "urlpatterns", [])]
api_urlpatterns: list[URLPattern] = [p for m in _modules for p in getattr(m, "api_urlpatterns", [])]
