"""The apps' one-way dependencies (docs/architecture.md), checked over the source.

    python tests/import_direction.py      # prints each import against the direction; exit 1 if any

An app may import an earlier app, never a later one. The deviation log sits right after protocols,
because that is all it imports (core, accounts, protocols); every later app imports it directly
(the outcome seal is ``apps.deviations.selectors.outcomes_visible``). One exception remains:
protocols writes to the log (a freeze, an amendment) and registers its ref types, so protocols
(and no other app before the log) may import ``apps.deviations.services`` (``deviation_append``),
``apps.deviations.models`` (``EntryKind``) and ``apps.deviations.refs`` (``register_ref_type`` in
``ready()``). Imports inside
functions count as much as the ones at the top. Migrations are left out (Django writes their
dependencies).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

# Earlier first. core is below everything; demo composes every app. A list, so that a new layer
# (a study-kind package between analysis and demo, say) is one inserted line.
LAYERS = [
    "core",
    "accounts",
    "protocols",
    "deviations",
    "items",
    "responses",
    "raters",
    "analysis",
    # The study kinds (apps/studies/<kind>/): they plug into the core apps above, never the reverse.
    "studies",
    # The public registry reads the log's chain and checkpoints and the analysis' reports.
    "registry",
    "demo",
]
# The deviation-log writes protocols makes (and the ref registry its ready() uses): the one app
# before the log that writes to it.
LOG_WRITES = ("apps.deviations.services", "apps.deviations.models", "apps.deviations.refs")
LOG_WRITERS = ("protocols",)

ROOT = Path(__file__).resolve().parent.parent / "apps"


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def violations(root: Path = ROOT) -> list[str]:
    """Every ``path:line: apps.X imports apps.Y`` where Y is a later app than X (protocols'
    log writes apart). Raises ValueError for an app that ``LAYERS`` does not place."""
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if len(parts) < 2 or "migrations" in parts:
            continue
        app = parts[0]
        if app not in LAYERS:
            raise ValueError(f"apps/{app} is not placed in tests/import_direction.py LAYERS")
        for line, module in _imported_modules(ast.parse(path.read_text(), str(path))):
            names = module.split(".")
            if names[0] != "apps" or len(names) < 2 or names[1] == app:
                continue
            if app in LOG_WRITERS and module.startswith(LOG_WRITES):
                continue
            if LAYERS.index(names[1]) > LAYERS.index(app):
                rel = Path("apps", *parts)
                found.append(f"{rel}:{line}: apps.{app} imports {module} (a later app)")
    return found


if __name__ == "__main__":
    problems = violations()
    print("\n".join(problems) or "every import points down the layers")
    sys.exit(1 if problems else 0)
