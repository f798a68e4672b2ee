"""Fixtures the demo's tests share with the apps whose content the demo builds."""

from tests.items.conftest import blind_reviewers, draft

__all__ = ["blind_reviewers", "draft"]
