"""The one registry through which other apps take part in a version's life.

A protocol version contains more than this app knows about: the design and scoring keys (items),
the evaluand roster and administration schedule (responses), the rubric (raters). Each of those
apps registers a ``VersionComponent`` from its ``AppConfig.ready()``; this app then

- asks every component's ``checks`` for problems that block a freeze (the freeze gate), and
  its ``final_checks`` once nothing else blocks it,
- runs every component's ``on_freeze`` inside the freeze transaction, before the document is
  built (e.g. generating the administration schedule from the plan's seed),
- puts every component's ``document`` under its ``name`` in the canonical frozen document,
- asks every component to ``copy`` its rows into a new draft when a version is amended,
- tells every component, inside the same transaction, that a version was withdrawn
  (``on_withdraw``) or that a person lost a role on a protocol (``on_role_removed``), so work
  that the version or the role allowed (a reviewer's reservations) ends at once.

Components run in registration order, which follows ``INSTALLED_APPS``, so a later app may rely
on what an earlier app's ``on_freeze`` wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from apps.accounts.models import User
    from apps.protocols.models import ProtocolVersion


@dataclass(frozen=True)
class Problem:
    """One thing that blocks a freeze: ``param_missing: the equivalence margin ε has no value``.

    ``code`` is a stable machine-readable slug, ``message`` a sentence for the PI and ``url`` the
    page where it is fixed (may be empty). ``progress`` (0–100) marks a problem that resolves by
    itself — a check still running in a worker, which the draft page polls — else None.
    """

    code: str
    message: str
    url: str = ""
    progress: int | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message, "url": self.url}
        if self.progress is not None:
            out["progress"] = self.progress
        return out


@dataclass(frozen=True)
class VersionComponent:
    name: str
    checks: Callable[[ProtocolVersion], Iterable[Problem]] | None = None
    on_freeze: Callable[[ProtocolVersion], None] | None = None
    document: Callable[[ProtocolVersion], Any] | None = None
    copy: Callable[[ProtocolVersion, ProtocolVersion], None] | None = None
    on_withdraw: Callable[[ProtocolVersion], None] | None = None
    # (protocol_id, user, role): called after the role was taken away.
    on_role_removed: Callable[[int, User, str], None] | None = None
    # Amending a version in scoring (issue #37 §7): how many of its tasks are still open, and
    # ``close_work(version, user, reason)``, called by ``version_amend`` when the PI closes them.
    open_work: Callable[[ProtocolVersion], int] | None = None
    close_work: Callable[[ProtocolVersion, User, str], None] | None = None
    # Checks that only mean something once every other check passes (they run the plan).
    final_checks: Callable[[ProtocolVersion], Iterable[Problem]] | None = None
    # What the PI should know about a passing gate (e.g. "checked on a sample").
    notes: Callable[[ProtocolVersion], Iterable[str]] | None = None
    # A check on every response import into the version (apps.responses.importing.RecordCheck:
    # ``add`` per planned attempt as the file streams, ``finish`` once), or None when the
    # version is not the component's concern.
    import_check: Callable[[ProtocolVersion], Any] | None = None
    # The frozen document's revision 2 (apps/protocols/documents.py): ``revise(version, value)``
    # returns the component's part with what revision 1 left out added; ``document`` itself
    # stays revision 1's builder, so documents frozen as revision 1 rebuild byte for byte.
    revise: Callable[[ProtocolVersion, Any], Any] | None = None
    # When ``document`` returns None, leave the component's key out of the frozen document (so
    # a component that concerns some plans only does not change every other document's bytes).
    omit_empty_document: bool = False


_components: dict[str, VersionComponent] = {}


def open_work(version: ProtocolVersion) -> int:
    """How many tasks of ``version`` are still open (not done) across the components: what an
    amendment would leave flowing unless the PI closes them (issue #37 §7)."""
    return sum(c.open_work(version) for c in _components.values() if c.open_work is not None)


# The frozen document's own top-level keys (apps/protocols/documents.py); a component's document
# sits beside them under the component's name, so it may not take one of these.
RESERVED_NAMES = frozenset(
    {
        "document",
        "protocol",
        "version",
        "sections",
        "parameters",
        "decision_table",
        "supersedes",
        "amendment_rationale",
        "pipeline",
    }
)


def register_component(component: VersionComponent) -> VersionComponent:
    """Register (or, on a repeated ``ready()``, replace) a component by its name.

    Raises ValueError when the name is one of the frozen document's own keys.
    """
    if component.name in RESERVED_NAMES:
        raise ValueError(f"component name {component.name!r} is reserved by the frozen document")
    _components[component.name] = component
    return component


def unregister_component(name: str) -> None:
    """Remove the component ``name`` (a pipeline withdrawn with its kind's components)."""
    _components.pop(name, None)


def registered_components() -> list[VersionComponent]:
    return list(_components.values())
