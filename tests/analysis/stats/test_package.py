import ast
from pathlib import Path

import apps.analysis.stats as stats_package


def test_statistics_package_imports_no_django():
    # The statistics layer must run without settings or an ORM (STYLE.md, "Statistics").
    package_dir = Path(stats_package.__file__).parent
    offenders = []
    for path in package_dir.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [
                f"{path.name}: {n}"
                for n in names
                if n.split(".")[0] in {"django", "rest_framework", "celery"}
            ]
    assert offenders == []
