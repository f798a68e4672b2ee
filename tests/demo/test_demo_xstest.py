"""``make demo-xstest`` end to end: XSTest (Röttger et al., NAACL 2024) built through the real
importer, scored through the real blind queue with the two annotators' labels (disagreements
adjudicated with the dataset's final label), analysed by the preregistered pipeline, and printed.

The figures are checked against the published data and the paper, not against our own output:
α per model against Krippendorff's α computed by the ``krippendorff`` package straight from the
two annotation columns, every final label against the dataset's ``final_label``, and Llama-2's
safe-prompt refusal rates against the paper's 38.0 % and 21.6 %.
"""

import csv
import io
import json

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command

from apps.analysis.models import AnalysisRun
from apps.deviations.models import LogEntry
from apps.protocols.models import ProtocolVersion
from apps.raters.models import ScoringTask
from apps.raters.selectors import final_scores
from apps.responses.models import Response

pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.django_db,
    # 4,500 scores and the adjudications through the queue's services: about two minutes.
    pytest.mark.timeout(1200),
]

MODELS = ("gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct")
LABELS = ["1_full_compliance", "2_full_refusal", "3_partial_refusal"]


def _completions(folder):
    rows = {}
    for model in MODELS:
        path = folder / "model_completions" / f"xstest_v2_completions_{model}.csv"
        with path.open(newline="", encoding="utf-8") as handle:
            rows[model] = list(csv.DictReader(handle))
    return rows


@pytest.mark.slow
def test_demo_xstest_scores_through_the_queue_and_prints_the_papers_rates(shared_data):
    out = io.StringIO()
    call_command("demo_xstest", stdout=out)
    printed = out.getvalue()
    rows_by_model = _completions(shared_data / "xstest")

    disagreements = sum(
        row["annotation_1"] != row["annotation_2"]
        for rows in rows_by_model.values()
        for row in rows
    )
    assert "4500 primary scores" in printed
    assert f"{disagreements} adjudications" in printed
    assert ScoringTask.objects.filter(kind="adjudication").count() == disagreements

    # Every agreed or adjudicated label is the dataset's final label.
    version = ProtocolVersion.objects.get(protocol__code="XSTEST")
    finals = {row["response_id"]: row["final"]["label"] for row in final_scores(version)}
    raw = dict(Response.objects.values_list("pk", "attempt__raw"))
    assert len(finals) == 2250
    assert all(finals[pk] == raw[pk]["final_label"] for pk in finals)

    # The headline line of Llama-2 with its original system prompt: the paper's rates.
    (llama,) = [line for line in printed.splitlines() if line.startswith("llama2orig ")]
    safe_full, safe_partial = llama.split()[1:3]
    assert (safe_full, safe_partial) == ("38.0", "21.6")

    run = AnalysisRun.objects.get()
    assert run.state == "succeeded"
    estimates = json.loads(bytes(run.result.content))["estimates"]
    # Issue #19: the demo's report has no zero-width interval, not even for a label a model
    # never got (the percentile bootstrap printed "0.0–0.0" there).
    assert any(r["count"] == 0 for r in estimates["rates"])
    for rate in estimates["rates"]:
        lo, hi = rate["interval"]
        assert lo <= rate["rate"] <= hi and hi > lo, rate
    reliability = estimates["reliability"]
    alphas = {a["evaluand"]: a["alpha"] for a in reliability["per_evaluand"]}
    for model, rows in rows_by_model.items():
        data = np.array(
            [
                [LABELS.index(row["annotation_1"]) for row in rows],
                [LABELS.index(row["annotation_2"]) for row in rows],
            ],
            dtype=float,
        )
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
        assert alphas[model] == pytest.approx(expected, abs=1e-9), model
        (line,) = [line for line in printed.splitlines() if line.startswith(f"{model} ")]
        assert line.split()[-1] == f"{expected:.3f}"

    kinds = list(LogEntry.objects.order_by("seq").values_list("kind", flat=True))
    assert kinds[-2:] == ["analysis", "outcome_unsealed"]

    # A second run finds everything done: no new scores, a rerun of the analysis, logged.
    again = io.StringIO()
    call_command("demo_xstest", stdout=again)
    assert "0 primary scores, 0 adjudications" in again.getvalue()
    assert LogEntry.objects.filter(kind="rerun").count() == 1
