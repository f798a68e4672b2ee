"""Issue #17 §2: OPB-01 §5's three-way contrast, base items and the sham's match (the gate)."""

import json

import numpy as np
import pytest
from django.core.exceptions import ValidationError

from apps.analysis.inputs import plan_parameters
from apps.analysis.models import RunState
from apps.analysis.pipelines import get_pipeline
from apps.analysis.stats.paired import paired_contrast
from apps.core.canonical import canonical_json
from apps.demo.design import INSCRIPTION, SHAM, demo_design_build
from apps.demo.opb01 import opb01_v1_0_draft
from apps.items.models import Cell, Item
from apps.items.selectors import design_problems
from apps.items.services import item_base_set, item_create
from apps.studies.opb.disclosure import sham_mismatches
from tests.factories import UserFactory, opb_study

pytestmark = pytest.mark.django_db

ANALYTIC = {"interval_method": "analytic", "min_clusters": "6", "disclosure_epsilon": "0.05"}


def _result(run) -> dict:
    assert run.state == RunState.SUCCEEDED, run.error
    return json.loads(bytes(run.result.content))["estimates"]


def _stage(surface, name):
    return next(s for s in surface["stages"] if s["stage"] == name)


def _contrast(surface, name):
    three_way = _stage(surface, "disclosure")["three_way"]
    return next(c for c in three_way["contrasts"] if c["name"] == name)


def test_a_planted_c_spxi_effect_with_none_for_c0_finds_that_coordinates_contribute(run_now):
    # C_SPXI lowers F_att's logit by 1.5 against its base item; C₀ not at all.
    study = opb_study(
        code="SPXI",
        evaluands=1,
        items_per_family=10,
        repetitions=3,
        with_disclosure=True,
        disclosure_effects={"C_SPXI": -1.5, "C0": 0.0},
        parameters=ANALYTIC,
    )
    surface = _result(run_now(study.version, study.pi))["surfaces"][0]
    spxi = _contrast(surface, "F_att_SPXI_vs_plain")
    sham = _contrast(surface, "F_att_sham_vs_plain")
    versus = _contrast(surface, "F_att_SPXI_vs_sham")
    assert spxi["n_pairs"] == 10 and spxi["base_items"][0] == "A01"
    assert spxi["interval"][1] < 0 and versus["interval"][1] < 0
    assert sham["interval"][0] < 0 < sham["interval"][1]
    decision = _stage(surface, "decision")
    assert "OPB01-8.7" in decision["matched"], decision["rules"]
    assert any(f.startswith("The coordinates contribute") for f in decision["findings"])
    assert "OPB01-8.6" not in decision["matched"]
    # R's contrasts are reported beside F_att's, with intervals.
    assert _contrast(surface, "R_SPXI_vs_sham")["interval"] is not None


def test_equal_effects_of_c_spxi_and_c0_do_not_find_that_coordinates_contribute(run_now):
    study = opb_study(
        code="SHAMEQ",
        evaluands=1,
        items_per_family=10,
        repetitions=3,
        with_disclosure=True,
        disclosure_effects={"C_SPXI": -1.5, "C0": -1.5},
        parameters=ANALYTIC,
    )
    surface = _result(run_now(study.version, study.pi))["surfaces"][0]
    decision = _stage(surface, "decision")
    assert _contrast(surface, "F_att_sham_vs_plain")["interval"][1] < 0
    assert "OPB01-8.7" not in decision["matched"] and "OPB01-8.8" not in decision["matched"]


def test_disclosure_items_without_base_items_give_no_contrast_and_say_which():
    # The freeze gate refuses disclosure items without base items (disclosure_base_missing,
    # below); inputs without the links (a version frozen before OPB-01 §5's links) still get a
    # named refusal from the pipeline, not a contrast.
    study = opb_study(code="NOBASE", evaluands=1, with_disclosure=True)
    pipeline = get_pipeline("opb")
    inputs = json.loads(canonical_json(pipeline.collect(study.version)))
    del inputs["item_bases"]
    result = pipeline.compute(inputs, parameters=plan_parameters(study.version), seed=1)
    three_way = _stage(result["surfaces"][0], "disclosure")["three_way"]
    assert three_way["error"].startswith("not estimable: disclosure items C01, C02")
    assert "name no Family A base item" in three_way["error"]
    assert "contrasts" not in three_way


def test_too_few_base_items_say_not_evaluable_with_the_counts(run_now):
    study = opb_study(
        code="FEWBASE",
        evaluands=1,
        items_per_family=4,
        with_disclosure=True,
        disclosure_effects={"C_SPXI": -1.0, "C0": 0.0},
        parameters=ANALYTIC,
    )
    decision = _stage(_result(run_now(study.version, study.pi))["surfaces"][0], "decision")
    rule = next(r for r in decision["rules"] if r["rule_id"] == "OPB01-8.7")
    assert not rule["evaluable"]
    assert (
        "F_att_SPXI_vs_plain not evaluable: 4 items, the plan requires 6" in rule["not_evaluable"]
    )


def test_the_paired_t_interval_covers_a_known_mean_difference_at_its_nominal_rate():
    # Simulation of a known truth: K = 8 pairs, differences ~ N(−0.1, 0.2²).
    rng = np.random.default_rng(20261201)
    runs, covered = 2000, 0
    for _ in range(runs):
        d = rng.normal(-0.1, 0.2, size=8)
        lo, hi = paired_contrast(d, method="analytic", confidence=0.95).interval
        covered += lo < -0.1 < hi
    assert 0.935 <= covered / runs <= 0.965


def test_the_paired_bootstrap_refuses_an_interval_below_its_floor_and_says_so():
    result = paired_contrast(np.linspace(-0.2, 0.1, 7), method="bootstrap", seed=1)
    assert result.interval is None and result.pairs_required == 10
    assert "7 clusters contributed" in result.note


# -- authoring: base items and the sham's match (the freeze gate) -----------------------------


@pytest.fixture
def draft(db):
    draft = opb01_v1_0_draft(pi=UserFactory(), code="OPB-D")
    demo_design_build(draft)
    return draft


def _codes(version):
    return [p for p in design_problems(version) if p.code.startswith(("disclosure", "sham"))]


def test_the_demo_design_links_its_c_items_and_its_sham_matches(draft):
    assert {
        i.code: i.base_item.code for i in Item.objects.filter(version=draft, family__code="C")
    } == {
        # Each of the eight Family A items under C_SPXI and C₀ (issue #17), a-04 first.
        **{"c-01": "a-04", "c-02": "a-04"},
        **{
            f"c-{2 * n + k:02d}": base
            for n, base in enumerate(["a-01", "a-02", "a-03", "a-05", "a-06", "a-07", "a-08"], 1)
            for k in (1, 2)
        },
    }
    assert _codes(draft) == []
    assert sham_mismatches(INSCRIPTION, SHAM, tolerance=0.1) == []


def test_a_c_item_without_a_base_item_is_refused_naming_it(draft):
    item_base_set(item=Item.objects.get(version=draft, code="c-02"), base_item=None)
    problems = _codes(draft)
    assert [p.code for p in problems] == ["disclosure_base_missing"]
    assert "disclosure item c-02 names no Family A base item" in problems[0].message


def test_a_sham_that_does_not_match_its_inscription_is_refused_naming_what_differs(draft):
    cell = Cell.objects.get(item__version=draft, item__code="c-02", level__code="L2")
    short = SHAM.replace("wind: north-westerly, gusting to fifteen knots in the afternoon\n", "")
    cell.prompt = "## Station\n" + short + cell.prompt[len(SHAM) :] + " extra " * 30
    cell.save()
    problems = _codes(draft)
    assert [p.code for p in problems] == ["sham_mismatch"]
    message = problems[0].message
    assert message.startswith(
        "sham item c-02 does not match its inscription c-01 (base item a-04) at L2"
    )
    assert "word count" in message and "heading structure [2] against []" in message
    assert "metadata form none against front matter with 7 fields" in message


def test_a_base_item_outside_family_a_is_refused_naming_the_item(draft):
    b_item = Item.objects.filter(version=draft, family__code="B").first()
    with pytest.raises(ValidationError) as caught:
        item_base_set(item=Item.objects.get(version=draft, code="c-01"), base_item=b_item)
    assert f"item c-01's base item {b_item.code} is in Family B" in str(caught.value)
    a_item = Item.objects.get(version=draft, code="a-01")
    with pytest.raises(ValidationError, match="only a disclosure item"):
        item_create(version=draft, family=a_item.family, code="a-99", base_item=a_item)


def test_the_report_shows_the_three_way_contrast_and_why_a_rule_is_not_evaluable(
    client, run_now, unseal
):
    from django.urls import reverse

    study = opb_study(
        code="PAGE3",
        evaluands=1,
        items_per_family=4,
        with_disclosure=True,
        disclosure_effects={"C_SPXI": -1.0, "C0": 0.0},
        parameters=ANALYTIC,
    )
    assert run_now(study.version, study.pi).state == RunState.SUCCEEDED
    unseal(study.version, study.pi)
    client.force_login(study.pi)
    url = reverse(
        "analysis:report",
        kwargs={"code": study.version.protocol.code, "label": "1.1", "number": 1},
    )
    text = client.get(url).content.decode()
    assert "Three-way contrast (OPB-01 §5)" in text
    assert "C_SPXI − plain" in text and "C_SPXI − C₀" in text
    assert "F_att_SPXI_vs_plain not evaluable: 4 items, the plan requires 6" in text
