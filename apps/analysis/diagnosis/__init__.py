"""Design diagnosis before the freeze (issue #35): a declared model of the world, simulated
through the plan's own pipeline, summarised as diagnosands with Monte Carlo standard errors.

``diagnosands`` is pure (numbers in, numbers out); ``world`` holds the per-kind hook a study
kind registers (``Pipeline.world``) and the shared helpers for worlds; ``engine`` runs a draft's
pipeline on the world's simulated data.
"""
