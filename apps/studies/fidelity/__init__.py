"""Injection fidelity (seed 003): the judged signals and their verdicts, the LLM judge's import and
the fidelity pipeline."""
