"""The real XSTest study (Röttger et al., NAACL 2024): the run's rates are the dataset's.

The study is built by ``tests.factories.xstest_study``, a fast ORM stand-in for the
builder in ``apps.demo.xstest``, with the annotators' labels as primary scores and the final
label as an adjudication where they disagree (``tests/demo/test_demo_xstest.py`` does the whole
round-trip through the importer and the queue). The run goes through the real service and the
(eager) Celery task.
"""

import json
from collections import Counter

import pytest

from apps.analysis.models import RunState
from tests.factories import XSTEST_LABELS, XSTEST_MODELS, read_xstest, xstest_study

pytestmark = [pytest.mark.postgres, pytest.mark.shared_data, pytest.mark.django_db]


@pytest.fixture(scope="module")
def xstest_folder():
    from django.conf import settings

    folder = settings.SHARED_DATA_DIR / "xstest"
    if not (folder / "xstest_prompts.csv").is_file():
        pytest.skip(f"XSTest is absent from {folder}")
    return folder


def test_the_xstest_run_reports_the_datasets_rates_and_the_papers_numbers(
    xstest_folder, run_now, shared_data
):
    study = xstest_study(xstest_folder)
    run = run_now(study.version, study.pi)
    assert run.state == RunState.SUCCEEDED, run.error
    estimates = json.loads(bytes(run.result.content))["estimates"]

    prompts, completions = read_xstest(xstest_folder)
    prompt_type = {f"v2-{p['id']}": p["label"] for p in prompts}
    expected = {}
    for model in XSTEST_MODELS:
        for kind in ("safe", "unsafe"):
            finals = [r["final_label"] for r in completions[model] if prompt_type[r["id"]] == kind]
            counts = Counter(finals)
            for label in XSTEST_LABELS:
                expected[(model, kind, label)] = (counts[label], len(finals))
    got = {(r["evaluand"], r["prompt_type"], r["label"]): r for r in estimates["rates"]}
    assert set(got) == set(expected)
    for key, (count, n) in expected.items():
        assert (got[key]["count"], got[key]["n"]) == (count, n), key
        assert got[key]["rate"] == pytest.approx(count / n, abs=1e-12), key
        lo, hi = got[key]["interval"]
        assert lo <= got[key]["rate"] <= hi
        # Never zero-width, not even for a label a model never got (issue #19: the percentile
        # bootstrap printed "0.0–0.0" here).
        assert hi > lo, key
    assert any(r["count"] == 0 for r in estimates["rates"])  # such rates exist in XSTest

    # The paper: Llama-2-70b-chat (the original system prompt) fully refuses 38.0 % of the
    # 250 safe prompts and partially refuses another 21.6 %.
    llama = {label: got[("llama2orig", "safe", label)] for label in XSTEST_LABELS}
    assert llama["2_full_refusal"]["n"] == 250
    assert round(100 * llama["2_full_refusal"]["rate"], 1) == 38.0
    assert round(100 * llama["3_partial_refusal"]["rate"], 1) == 21.6

    reliability = estimates["reliability"]
    assert reliability["overall"]["n_pairable_units"] == 5 * 450
    assert reliability["overall"]["alpha"] > 0.9  # the annotators agree on most completions
    # Beside α, the figures the paper compares: percent agreement and Fleiss' κ, computed here
    # from the dataset's two annotation columns directly.
    pairs = [(r["annotation_1"], r["annotation_2"]) for m in XSTEST_MODELS for r in completions[m]]
    agree = sum(a == b for a, b in pairs) / len(pairs)
    assert reliability["overall"]["percent_agreement"] == pytest.approx(agree, abs=1e-12)
    assert 0.9 < reliability["overall"]["fleiss_kappa"] <= 1
    assert len(reliability["per_evaluand"]) == 5
    assert estimates["coverage"]["n_total"] == estimates["coverage"]["N_total"] == 2250
