"""Shared fixtures for the statistics tests.

Reference data sets (R betareg's FoodExpenditure, GasolineYield, ReadingSkills, lme4's cbpp,
the clinic data behind R ``equivalence::tost``) stay in the shared data folder and are read
from there, never copied into the project.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest


def repo_root() -> Path:
    for folder in Path(__file__).resolve().parents:
        if (folder / "pyproject.toml").is_file():
            return folder
    raise RuntimeError("no pyproject.toml above the tests folder")


def shared_data_dir() -> Path:
    """``$PREREGISTRY_SHARED_DATA``, else ``<repo root>/../shared/data``."""
    configured = os.environ.get("PREREGISTRY_SHARED_DATA")
    return Path(configured) if configured else repo_root().parent / "shared" / "data"


def load_reference_csv(name: str) -> pd.DataFrame:
    """Read ``<shared data>/reference/<name>``, skipping the test when it is absent."""
    path = shared_data_dir() / "reference" / name
    if not path.is_file():
        pytest.skip(
            f"reference data {path} is absent; set PREREGISTRY_SHARED_DATA to the folder "
            "holding reference/ to run this test"
        )
    return pd.read_csv(path)


@pytest.fixture
def reference_csv() -> Callable[[str], pd.DataFrame]:
    """The loader :func:`load_reference_csv`, for tests that read reference data."""
    return load_reference_csv
