"""The study kinds that ship with Preregistry, one package each (``apps/studies/<kind>/``).

A kind's package holds what only that kind needs: its pipeline (``pipeline.py``: collect,
compute, and its plan template, registered with ``register_plan_template``), its rubric preset
(``rubric.py``, if reviewers score with one of its own), its plots (``plots.py``), and the code
that is not generic (OPB's disclosure and panel, CRUCIBLE's episodes and manifest, route choice's
fixtures, seed 003's verdicts and judge import). Its ``kind.py`` declares the kind once: one
``Pipeline`` registered with its report sections, plots, gate checks, frozen-document parts,
import checks and demo, and its rubric preset (``register_rubric_template``).
Its templates are in ``templates/studies/<kind>/``.

The packages depend on the core apps (core … analysis) and never the reverse: the core apps
call a kind only through the registries it registers with (docs/architecture.md, "Add a study
kind").
"""
