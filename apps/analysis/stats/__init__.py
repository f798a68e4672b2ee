"""Pure statistics for preregistered analyses.

Plain functions over numpy arrays and pandas frames: no Django, no settings, no ORM, so every
estimator can be checked against published values in isolation and rerun byte-identically
(see ``apps/core/canonical.py``). Each public function's docstring names its input shapes, units,
estimator, reference and the ``ValueError`` it raises for bad input.
"""
