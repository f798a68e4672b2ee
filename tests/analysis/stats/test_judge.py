"""Judge validation (issue 34 §5, §6) checked against scikit-learn and the krippendorff package,
and the Horvitz–Thompson weights of a stratified audit against a known population."""

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_recall_fscore_support

from apps.analysis.stats.bootstrap import MIN_CLUSTERS_FLOOR
from apps.analysis.stats.judge import (
    Bootstrap,
    compare,
    judge_validation,
    nominal_alpha_of_tables,
)

LABELS = ["comply", "refuse", "partial"]


def _data(n=120, items=30, agree=0.8, seed=1):
    rng = np.random.default_rng(seed)
    human = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    machine = np.where(rng.random(n) < agree, human, rng.integers(0, 3, n))
    clusters = [f"item{i % items}" for i in range(n)]
    return human, machine, clusters


def test_confusion_and_per_class_figures_equal_scikit_learn():
    human, machine, clusters = _data()
    keys = [f"{i}.1" for i in range(len(human))]
    result = judge_validation(
        machine=dict(zip(keys, machine.astype(float), strict=True)),
        final=dict(zip(keys, human.astype(float), strict=True)),
        reviewers={},
        clusters=dict(zip(keys, clusters, strict=True)),
        level="nominal",
        labels=LABELS,
        bootstrap=Bootstrap(replicates=99),
    )
    # Keys sort as text; scikit-learn gets the same responses in the same order.
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    y_true, y_pred = human[order], machine[order]
    expected = confusion_matrix(y_true, y_pred, labels=[0, 1, 2])
    assert [row["counts"] for row in result["confusion"]["rows"]] == expected.tolist()
    precision, recall, f1, support = precision_recall_fscore_support(
        y_true, y_pred, labels=[0, 1, 2], zero_division=np.nan
    )
    for i, row in enumerate(result["classes"]):
        assert row["precision"] == pytest.approx(precision[i], abs=1e-12)
        assert row["recall"] == pytest.approx(recall[i], abs=1e-12)
        assert row["f1"] == pytest.approx(f1[i], abs=1e-12)
        assert row["support"] == support[i]
    final = result["final"]
    assert final["kappa"] == pytest.approx(cohen_kappa_score(y_true, y_pred), abs=1e-12)
    assert final["alpha"] == pytest.approx(
        krippendorff.alpha(
            reliability_data=np.vstack([y_true, y_pred]).astype(float),
            level_of_measurement="nominal",
        ),
        abs=1e-12,
    )
    assert final["percent_agreement"] == pytest.approx(np.mean(y_true == y_pred))
    low, high = final["alpha_interval"]
    assert low < final["alpha"] < high
    low, high = final["kappa_interval"]
    assert low < final["kappa"] < high


def test_weighted_figures_equal_scikit_learn_with_sample_weights():
    human, machine, clusters = _data(seed=4)
    weights = np.where(machine == 0, 4.0, 1.0)
    table = confusion_matrix(human, machine, labels=[0, 1, 2], sample_weight=weights)
    result = compare(human, machine, clusters, level="nominal", n_categories=3, weights=weights)
    assert result["kappa"] == pytest.approx(
        cohen_kappa_score(human, machine, sample_weight=weights), abs=1e-12
    )
    assert result["percent_agreement"] == pytest.approx(np.trace(table) / table.sum())
    precision, recall, f1, _ = precision_recall_fscore_support(
        human, machine, labels=[0, 1, 2], sample_weight=weights, zero_division=np.nan
    )
    keys = [str(i) for i in range(len(human))]
    validated = judge_validation(
        machine=dict(zip(keys, machine.astype(float), strict=True)),
        final=dict(zip(keys, human.astype(float), strict=True)),
        reviewers={},
        clusters=dict(zip(keys, clusters, strict=True)),
        level="nominal",
        labels=LABELS,
        weights=dict(zip(keys, weights, strict=True)),
        bootstrap=Bootstrap(replicates=49),
    )
    assert [c["precision"] for c in validated["classes"]] == pytest.approx(list(precision))
    assert [c["recall"] for c in validated["classes"]] == pytest.approx(list(recall))
    assert [c["f1"] for c in validated["classes"]] == pytest.approx(list(f1))


def test_each_reviewer_is_compared_on_the_responses_they_scored():
    human, machine, clusters = _data(n=40, items=20)
    keys = [str(i) for i in range(40)]
    first = {k: float(v) for k, v in zip(keys[:25], human[:25], strict=True)}
    second = {k: float((v + 1) % 3) for k, v in zip(keys[10:], human[10:], strict=True)}
    result = judge_validation(
        machine=dict(zip(keys, machine.astype(float), strict=True)),
        final=dict(zip(keys, human.astype(float), strict=True)),
        reviewers={"ann": first, "bob": second},
        clusters=dict(zip(keys, clusters, strict=True)),
        level="nominal",
        labels=LABELS,
        bootstrap=Bootstrap(replicates=49),
    )
    ann, bob = result["reviewers"]
    assert (ann["reviewer"], ann["n"], bob["reviewer"], bob["n"]) == ("ann", 25, "bob", 30)
    bob_keys = sorted(second)
    assert bob["kappa"] == pytest.approx(
        cohen_kappa_score([second[k] for k in bob_keys], [machine[int(k)] for k in bob_keys])
    )
    assert ann["alpha_interval"] is None  # point estimates per reviewer


def test_too_few_items_give_no_interval_and_say_why():
    human, machine, clusters = _data(n=30, items=MIN_CLUSTERS_FLOOR - 1)
    result = compare(
        human,
        machine,
        clusters,
        level="nominal",
        n_categories=3,
        bootstrap=Bootstrap(replicates=49),
    )
    assert result["alpha"] is not None and result["alpha_interval"] is None
    assert "fewer than 10" in result["note"]


def test_ordinal_and_interval_fields_get_alpha_at_their_level():
    rng = np.random.default_rng(3)
    human = rng.normal(size=60)
    machine = human + rng.normal(scale=0.5, size=60)
    clusters = [i // 3 for i in range(60)]
    result = compare(
        human,
        machine,
        clusters,
        level="interval",
        n_categories=None,
        bootstrap=Bootstrap(replicates=49),
    )
    assert result["kappa"] is None
    assert result["alpha"] == pytest.approx(
        krippendorff.alpha(
            reliability_data=np.vstack([human, machine]), level_of_measurement="interval"
        ),
        abs=1e-12,
    )
    assert result["alpha_interval"][0] < result["alpha"] < result["alpha_interval"][1]


def test_stratified_weights_recover_the_population_agreement_the_sample_misses():
    """A population of 20,000 responses where the judge is right on 95 % of its "comply"
    verdicts (90 % of them) and 60 % of the rest: true agreement 0.915. An audit oversampling
    the rare verdicts (5 % of comply, 50 % of the rest) sees about 0.72 unweighted; with
    Horvitz–Thompson weights 1/π it recovers the population's figure."""
    rng = np.random.default_rng(11)
    n = 20_000
    machine = np.where(rng.random(n) < 0.9, 0, rng.integers(1, 3, n))
    right = np.where(machine == 0, rng.random(n) < 0.95, rng.random(n) < 0.60)
    human = np.where(right, machine, (machine + rng.integers(1, 3, n)) % 3)
    truth = float(np.mean(human == machine))
    fraction = np.where(machine == 0, 0.05, 0.5)
    drawn = np.zeros(n, dtype=bool)
    for stratum, f in ((True, 0.05), (False, 0.5)):
        members = np.flatnonzero((machine == 0) == stratum)
        take = rng.choice(members, size=int(np.ceil(f * members.size)), replace=False)
        drawn[take] = True
    clusters = list(range(int(drawn.sum())))
    plain = compare(human[drawn], machine[drawn], clusters, level="nominal", n_categories=3)
    weighted = compare(
        human[drawn],
        machine[drawn],
        clusters,
        level="nominal",
        n_categories=3,
        weights=1 / fraction[drawn],
    )
    assert truth == pytest.approx(0.915, abs=0.01)
    assert plain["percent_agreement"] < truth - 0.1  # the oversampled rare verdicts bias it
    assert weighted["percent_agreement"] == pytest.approx(truth, abs=0.015)
    # κ, being chance-corrected, moves less; weighted it is the population's too.
    assert weighted["kappa"] == pytest.approx(cohen_kappa_score(human, machine), abs=0.04)


def test_the_replicates_alpha_from_tables_equals_the_krippendorff_package():
    rng = np.random.default_rng(5)
    for k in (2, 3, 4):
        for _ in range(20):
            human = rng.integers(0, k, 30)
            machine = np.where(rng.random(30) < 0.7, human, rng.integers(0, k, 30))
            if np.unique(np.concatenate([human, machine])).size < 2:
                continue
            table = np.zeros((k, k))
            np.add.at(table, (human, machine), 1)
            expected = krippendorff.alpha(
                reliability_data=np.vstack([human, machine]).astype(float),
                level_of_measurement="nominal",
            )
            assert nominal_alpha_of_tables(table) == pytest.approx(expected, abs=1e-12)
