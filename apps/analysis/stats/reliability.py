"""Krippendorff's α for the analysis: the raters app's implementation, one for the whole product.

``apps.raters.reliability`` holds it (pure functions over numpy arrays and pandas frames, no
Django imports); the pipelines import it from here like every other statistic.
"""

from apps.raters.reliability import (
    LEVELS,
    AlphaResult,
    Level,
    ReliabilityMatrix,
    krippendorff_alpha,
    reliability_matrix,
)

__all__ = [
    "LEVELS",
    "AlphaResult",
    "Level",
    "ReliabilityMatrix",
    "krippendorff_alpha",
    "reliability_matrix",
]
