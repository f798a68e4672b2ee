"""Studies with machine scorers: a draft with a rubric whose fields name scorer roles and a scorer
roster, frozen through the real freeze gate, with responses imported through the real importer."""

import json

from apps.protocols.services import version_freeze
from apps.raters.services import rubric_create
from apps.raters.services.scorers import scorer_register, scorer_roster_enroll
from apps.responses.services import responses_import
from tests.builders import build_draft
from tests.factories import AnalysisParameterFactory
from tests.responses.conftest import answer_rows, csv_bytes

JUDGE = {
    "kind": "llm_judge",
    "name": "injection-fidelity",
    "version": "git:20260916.f5399c9A",
    "model": "judge-model-2026-01",
    "provider": "example-provider",
    "inference_settings": {"temperature": 0, "max_tokens": 2048},
    "prompt_sha256": "fdbd589de2a04a46" + "0" * 48,
}

# Seed 003's verdict, as rubric fields an LLM judge scores.
JUDGE_FIELDS = [
    {"name": "fidelity", "kind": "binary", "scored_by": "scorer", "scorer_role": "judge"},
    {
        "name": "loss1",
        "kind": "number",
        "minimum": "0",
        "maximum": "1",
        "scored_by": "scorer",
        "scorer_role": "judge",
    },
    {"name": "drift_flag", "kind": "binary", "scored_by": "scorer", "scorer_role": "judge"},
]


def machine_study(
    *,
    protocol,
    pi,
    fields: list[dict],
    scorers: dict[str, tuple[str, dict]],
    items: int | list[str] = 3,
    evaluands=("alpha", "beta"),
    repetitions: int = 1,
    answers: dict[tuple[str, str, int], str] | None = None,
    before_freeze=None,
    parameters: dict[str, str] | None = None,
):
    """A frozen version with ``fields`` and ``scorers`` (code → (role, identity)), every
    administration answered (``answers`` by (item, evaluand, repetition) overrides the text)."""
    draft = build_draft(
        protocol=protocol, user=pi, items=items, evaluands=evaluands, repetitions=repetitions
    )
    for name, value in (parameters or {}).items():
        AnalysisParameterFactory(version=draft, name=name, value=str(value))
    rubric_create(version=draft, name="Machine rubric", fields=fields)
    for code, (role, identity) in scorers.items():
        scorer, _ = scorer_register(user=pi, label=code, **identity)
        scorer_roster_enroll(version=draft, scorer=scorer, code=code, role=role, user=pi)
    if before_freeze is not None:
        before_freeze(draft)
    version = version_freeze(version=draft, user=pi)
    rows = answer_rows(version)
    for row in rows:
        key = (row["item"], row["evaluand"], int(row["repetition"]))
        if answers and key in answers:
            row["response"] = answers[key]
    responses_import(version=version, user=pi, data=csv_bytes(rows), filename="answers.csv")
    return version


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()
