import numpy as np
import pandas as pd
import pytest

from apps.analysis.stats.proportions import label_rates

LABELS = ("1_full_compliance", "2_full_refusal", "3_partial_refusal")


def _table():
    # Two models, eight prompts each; labels chosen so the counts are easy to check by eye.
    rows = []
    model_a = ["1_full_compliance"] * 5 + ["2_full_refusal"] * 2 + ["3_partial_refusal"]
    model_b = ["1_full_compliance"] * 2 + ["2_full_refusal"] * 6
    for model, labels in (("model_a", model_a), ("model_b", model_b)):
        for prompt, label in enumerate(labels):
            rows.append({"model": model, "prompt": f"p{prompt}", "final_label": label})
    return pd.DataFrame(rows)


def test_rates_equal_a_direct_count():
    table = _table()
    result = label_rates(
        table, label="final_label", cluster="prompt", group="model", labels=LABELS, seed=1
    )
    counts = table.groupby("model")["final_label"].value_counts()
    for row in result.rates:
        expected = counts.get((row.group, row.label), 0)
        assert row.count == expected
        assert row.n == 8
        assert row.rate == pytest.approx(expected / 8)
    assert result.rate("model_b", "3_partial_refusal").rate == 0.0


def test_a_label_never_used_has_a_zero_width_interval_at_zero():
    result = label_rates(
        _table(), label="final_label", cluster="prompt", group="model", labels=LABELS, seed=1
    )
    assert result.rate("model_b", "3_partial_refusal").interval == (0.0, 0.0)


def test_intervals_bracket_the_rate_and_rerun_identically():
    kwargs = dict(label="final_label", cluster="prompt", group="model", labels=LABELS, seed=4)
    first = label_rates(_table(), **kwargs)
    assert first.to_dict() == label_rates(_table(), **kwargs).to_dict()
    for row in first.rates:
        lo, hi = row.interval
        assert 0.0 <= lo <= row.rate <= hi <= 1.0


def test_without_a_group_all_rows_form_one_group():
    result = label_rates(_table(), label="final_label", cluster="prompt", labels=LABELS, seed=0)
    assert {row.group for row in result.rates} == {"all"}
    assert result.rate("all", "1_full_compliance").rate == pytest.approx(7 / 16)


def test_too_few_items_leave_the_interval_unavailable():
    result = label_rates(
        _table(), label="final_label", cluster="prompt", labels=LABELS, seed=0, min_clusters=50
    )
    assert all(row.interval is None for row in result.rates)


def test_labels_outside_the_label_set_are_refused():
    table = _table()
    table.loc[0, "final_label"] = "4_other"
    with pytest.raises(ValueError, match="labels not in the label set"):
        label_rates(table, label="final_label", cluster="prompt", labels=LABELS, seed=0)


def test_missing_labels_are_refused_not_dropped():
    table = _table()
    table.loc[0, "final_label"] = np.nan
    with pytest.raises(ValueError, match="'final_label' has missing values"):
        label_rates(table, label="final_label", cluster="prompt", labels=LABELS, seed=0)


def test_to_dict_serialises_canonically():
    from apps.core.canonical import canonical_json

    result = label_rates(
        _table(), label="final_label", cluster="prompt", group="model", labels=LABELS, seed=1
    )
    assert canonical_json(result.to_dict()).startswith(b'{"confidence":0.95,"labels":[')
