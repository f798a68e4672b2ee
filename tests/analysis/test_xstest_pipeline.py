"""The XSTest pipeline on a small data set written in the XSTest files' own format."""

import csv
import json

import pytest

from apps.analysis.models import RunState
from tests.factories import XSTEST_MODELS, xstest_study

pytestmark = pytest.mark.django_db

LABELS = ("1_full_compliance", "2_full_refusal", "3_partial_refusal")


def _write(folder, prompts, labels_by_model):
    (folder / "model_completions").mkdir()
    with open(folder / "xstest_prompts.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "prompt", "type", "label", "focus", "note"])
        for i, safe in enumerate(prompts, start=1):
            writer.writerow(
                [
                    i,
                    f"prompt {i}",
                    "homonyms" if safe else "contrast_homonyms",
                    "safe" if safe else "unsafe",
                    "",
                    "",
                ]
            )
    for model in XSTEST_MODELS:
        path = folder / "model_completions" / f"xstest_v2_completions_{model}.csv"
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(
                [
                    "id",
                    "type",
                    "prompt",
                    "completion",
                    "annotation_1",
                    "annotation_2",
                    "agreement",
                    "final_label",
                ]
            )
            for i, (a1, a2, final) in enumerate(labels_by_model[model], start=1):
                writer.writerow(
                    [f"v2-{i}", "homonyms", f"prompt {i}", "an answer", a1, a2, a1 == a2, final]
                )


@pytest.fixture
def small_xstest(tmp_path):
    prompts = [True] * 6 + [False] * 4
    labels = {}
    for m, model in enumerate(XSTEST_MODELS):
        rows = []
        for i in range(10):
            final = LABELS[(i + m) % 3]
            second = final if i != 2 else LABELS[(i + m + 1) % 3]  # one disagreement, adjudicated
            rows.append((final, second, final))
        labels[model] = rows
    _write(tmp_path, prompts, labels)
    return tmp_path, prompts, labels


def test_rates_per_model_and_prompt_type_are_the_final_labels_shares(small_xstest, run_now):
    folder, prompts, labels = small_xstest
    study = xstest_study(folder, replicates="200")
    run = run_now(study.version, study.pi)
    assert run.state == RunState.SUCCEEDED, run.error
    estimates = json.loads(bytes(run.result.content))["estimates"]
    assert estimates["labels"] == list(LABELS)
    assert len(estimates["rates"]) == 5 * 2 * 3
    for rate in estimates["rates"]:
        safe = rate["prompt_type"] == "safe"
        finals = [
            final
            for (_, _, final), is_safe in zip(labels[rate["evaluand"]], prompts, strict=True)
            if is_safe == safe
        ]
        assert rate["n"] == len(finals)
        assert rate["count"] == finals.count(rate["label"])
        assert rate["rate"] == pytest.approx(finals.count(rate["label"]) / len(finals))
        # Six safe prompts give an item-clustered interval; four unsafe ones are below the 6
        # items a rate interval needs: the rate is reported, the interval unavailable, and why.
        assert (rate["interval"] is not None) is safe
        if not safe:
            assert "fewer than the minimum of 6" in rate["note"]
    assert estimates["coverage"]["n_total"] == estimates["coverage"]["N_total"] == 50


def test_agreement_is_alpha_between_the_two_primary_reviewers(small_xstest, run_now):
    folder, _, _ = small_xstest
    study = xstest_study(folder, replicates="100")
    reliability = json.loads(bytes(run_now(study.version, study.pi).result.content))["estimates"][
        "reliability"
    ]
    assert reliability["level"] == "nominal"
    overall = reliability["overall"]
    assert overall["n_raters"] == 2 and overall["n_pairable_units"] == 50
    assert overall["raters"] == ["xstest-reviewer1", "xstest-reviewer2"]  # not the adjudicator
    assert 0 < overall["alpha"] < 1
    # Beside α, as the XSTest paper reports: one disagreement per model in 10 responses.
    assert overall["percent_agreement"] == pytest.approx(45 / 50)
    assert 0 < overall["fleiss_kappa"] < 1
    assert all(r["percent_agreement"] == pytest.approx(0.9) for r in reliability["per_evaluand"])
    assert [r["evaluand"] for r in reliability["per_evaluand"]] == sorted(XSTEST_MODELS)


def test_the_unsealed_xstest_report_shows_rates_agreement_and_a_plot(
    small_xstest, run_now, unseal, client
):
    from django.urls import reverse

    folder, _, _ = small_xstest
    study = xstest_study(folder, replicates="100")
    run = run_now(study.version, study.pi)
    unseal(study.version, study.pi)
    client.force_login(study.auditor)
    kwargs = {"code": "XSTEST", "label": "1.0", "number": run.number}
    text = client.get(reverse("analysis:report", kwargs=kwargs)).content.decode()
    assert "Label rates" in text and "Agreement between reviewers" in text
    # gpt4 on the six safe prompts: labels cycle, so each is 2 of 6 = 33.3 %
    assert "33.3 %" in text and "2 / 6" in text
    assert reverse("analysis:plot", kwargs={**kwargs, "index": 0}) in text
    svg = client.get(reverse("analysis:plot", kwargs={**kwargs, "index": 0}))
    assert svg.status_code == 200 and svg.content.startswith(b"<?xml")
