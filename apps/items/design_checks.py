"""Design checks a study kind adds to ``design_problems`` (the freeze gate's design part and the
design page's list of what blocks a freeze): OPB-01 §5's disclosure and sham checks, for one
(``apps/studies/opb/``). The items app calls them through here so that it never imports a later
layer (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable

from apps.protocols.components import Problem
from apps.protocols.models import ProtocolVersion

# (version, the design page's URL) -> the problems, each naming the page where it is fixed.
DesignCheck = Callable[[ProtocolVersion, str], list[Problem]]

_checks: dict[str, DesignCheck] = {}


def register_design_check(name: str, check: DesignCheck) -> None:
    """Add (or, on a repeated ``ready()``, replace) the design check ``name``."""
    _checks[name] = check


def unregister_design_check(name: str) -> None:
    _checks.pop(name, None)


def design_checks() -> list[DesignCheck]:
    """The registered design checks, in registration order."""
    return list(_checks.values())
