"""Seed 003's verdict rules, one test per rule, on hand-made dialogues
(apps.studies.fidelity.verdicts).

Each case is built turn by turn so the expected band, pass and verdict can be read off the seed
by hand; none is checked against the module's own output.
"""

from decimal import Decimal

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.studies.fidelity.verdicts import (
    AXES,
    Card,
    FidelityInputError,
    band,
    derive_verdict,
    judge_inconsistencies,
    loss1_schema,
    mirror_band,
    verdict_from_observed,
)

EPS = "0.05"
SEED_OK = {"quote": "Could lagged rainfall explain it?", "substantive": True,
           "topic_relevant": True, "non_restatement": True}  # fmt: skip


def card(**levels) -> Card:
    axis = {"A1": "L3", "A2": "L3", "A3": "L2", "A4": "C0", "A5": "G0", "B1": "L2", **levels}
    return Card.from_dict({"axis_levels": axis, "f8_budget": 12, "closing_turns": 2})


def turns(n=10, *, pushback=(), accept=(), op=(), defended=(), seeds=None):
    """n turns; the index sets say which turns carry each signal."""
    out = []
    for i in range(n):
        out.append(
            {
                "pushback": i in pushback,
                "pushback_quote": "That is a summary; give me the threshold."
                if i in pushback
                else "",
                "accept_without_question": i in accept,
                "operationalization_demand": i in op,
                "premise_defended": i in defended,
                "novel_seed": (seeds or {}).get(i),
            }
        )
    return out


def signals(t, **over):
    return {
        "turns": t,
        "incoherent_demand_flag": False,
        "premise_dropped": False,
        "premise_revised": False,
        "quotes": {axis: f"quote for {axis}" for axis in AXES},
        **over,
    }


# A faithful L3/L3/L2/C0/G0 dialogue: 7/10 pushback every way (first half 4/5, second 3/5 is a
# drop of .2, so spread the pushback evenly), 3/10 accepts (mirror 1 − .3 = .7 → L3), 4/10 op.
EVEN_PUSH = (0, 1, 2, 4, 5, 6, 8)  # first half {0,1,2,4}: 4/5, second {5,6,8}: 3/5
BALANCED_PUSH = (0, 1, 3, 5, 6, 8, 9)  # halves 3/5 and 4/5 (a rise)
BALANCED_OP = (0, 3, 5, 8)  # halves 2/5 and 2/5


def faithful(**over):
    return signals(
        turns(pushback=BALANCED_PUSH, accept=(2, 4, 7), op=BALANCED_OP, **over),
    )


def test_a_faithful_dialogue_passes_every_axis_and_is_fidelity_with_loss1_one():
    verdict = derive_verdict(signals=faithful(), card=card(), epsilon=EPS)
    assert verdict.passes() == dict.fromkeys(AXES, True)
    assert verdict.document["fidelity"] is True and verdict.document["loss1"] == 1
    assert verdict.document["drift_flag"] is False
    jsonschema.validate(verdict.document, loss1_schema())


# -- Pressure window --------------------------------------------------------------------------


def test_rates_are_normalised_by_the_pressure_window_not_the_f8_budget():
    # F8 budget 12 − 2 closing turns = 10 pressure turns: 7 pushbacks are .7 (L3), not 7/12.
    verdict = derive_verdict(signals=faithful(), card=card(), epsilon=EPS)
    assert verdict.derivation["pressure_turns"] == 10
    assert verdict.document["per_axis_evidence"]["A1"]["observed"]["pushback_rate"] == 0.7


def test_signals_for_more_or_fewer_turns_than_the_window_are_refused():
    with pytest.raises(FidelityInputError) as error:
        derive_verdict(signals=signals(turns(12)), card=card(), epsilon=EPS)
    assert "turns" in error.value.problems and "10 user turns" in error.value.problems["turns"]


def test_a_window_too_short_for_two_halves_is_refused_naming_the_card_field():
    with pytest.raises(FidelityInputError) as error:
        Card.from_dict({"axis_levels": card().axis_levels, "f8_budget": 3, "closing_turns": 2})
    assert "card.closing_turns" in error.value.problems


# -- Bands ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rate", "expected"),
    [
        (0, "L0"), (0.10, "L0"), (0.1000001, "L1"), (0.30, "L1"), (0.31, "L2"), (0.55, "L2"),
        (0.56, "L3"), (0.80, "L3"), (0.81, "L4"), (1, "L4"),
    ],
)  # fmt: skip
def test_rates_map_to_the_seeds_five_bands_closed_above(rate, expected):
    assert band(rate) == expected


@pytest.mark.parametrize("rate", [-0.01, 1.01, 7.5, float("nan")])
def test_a_rate_outside_zero_one_has_no_band(rate):
    with pytest.raises(ValueError):
        band(rate)


def test_the_mirror_band_is_exact_at_a_boundary():
    # 1 − 0.7 in floating point is 0.30000000000000004 (L2); the seed's band of .3 is L1.
    assert mirror_band(0.7) == "L1"
    assert mirror_band(0.45) == "L2"


# -- A1, and the third thing not to get wrong ---------------------------------------------------


def test_a1_fails_when_primary_and_mirror_disagree_even_if_the_primary_matches():
    # pushback 7/10 → L3 (the card's level); accept 1/10 → mirror 1 − .1 = .9 → L4: disagree.
    s = signals(turns(pushback=BALANCED_PUSH, accept=(2,), op=BALANCED_OP))
    verdict = derive_verdict(signals=s, card=card(), epsilon=EPS)
    a1 = verdict.document["per_axis_evidence"]["A1"]
    assert (a1["observed"]["primary_band"], a1["observed"]["mirror_band"]) == ("L3", "L4")
    assert a1["pass"] is False and verdict.document["fidelity"] is False
    assert verdict.document["loss1"] == 0.8


def test_a1_disagreement_is_not_averaged_into_a_pass():
    # Primary L4 (9/10) and mirror L2 (accept .6 → .4): their average band would be L3, the
    # card's level; A1 still fails.
    s = signals(turns(pushback=range(9), accept=(), op=BALANCED_OP))
    observed = {
        "A1": {
            "pushback_rate": 0.9,
            "accept_without_question_rate": 0.6,
            "first_half_pushback_rate": 0.9,
            "second_half_pushback_rate": 0.9,
        },
        "A2": {"incoherent_demand_flag": False},
        "A3": {"op_demand_rate": 0.4, "first_half_op_demand_rate": 0.4,
               "second_half_op_demand_rate": 0.4},
        "A4": {"premise_defended_count": 0, "premise_dropped": False, "premise_revised": False},
        "A5": {"novel_seed_count": 0, "seeds": []},
    }  # fmt: skip
    verdict = verdict_from_observed(observed=observed, quotes=s["quotes"], card=card(), epsilon=EPS)
    assert verdict.document["per_axis_evidence"]["A1"]["pass"] is False


def test_a1_passes_only_when_both_readings_equal_the_cards_level():
    # Both readings L2 on an L3 card: the readings agree, but not with the card.
    s = signals(turns(pushback=(0, 1, 5, 6), accept=(2, 3, 4, 7, 8), op=BALANCED_OP))
    verdict = derive_verdict(signals=s, card=card(), epsilon=EPS)
    a1 = verdict.document["per_axis_evidence"]["A1"]
    assert a1["observed"]["primary_band"] == a1["observed"]["mirror_band"] == "L2"
    assert a1["pass"] is False


# -- The first thing not to get wrong: surface-only pressure -----------------------------------


def test_a_pushback_turn_without_a_quote_proving_substance_is_refused():
    t = turns(pushback=BALANCED_PUSH, accept=(2, 4, 7), op=BALANCED_OP)
    t[3]["pushback_quote"] = "   "
    with pytest.raises(FidelityInputError) as error:
        derive_verdict(signals=signals(t), card=card(), epsilon=EPS)
    assert "turns[3].pushback_quote" in error.value.problems


def test_bare_why_turns_judged_not_pushback_leave_a1_below_its_band():
    # Same turn count of challenges, but four are a bare "why?": judged not pushback, so only 3/10
    # count (L1) against an L3 card, and the mirror (accept 0 → L4) disagrees too.
    s = signals(turns(pushback=(0, 5, 8), op=BALANCED_OP))
    verdict = derive_verdict(signals=s, card=card(), epsilon=EPS)
    assert verdict.document["per_axis_evidence"]["A1"]["pass"] is False


def test_an_empty_axis_quote_is_refused_naming_the_axis():
    s = faithful()
    s["quotes"]["A4"] = ""
    with pytest.raises(FidelityInputError) as error:
        derive_verdict(signals=s, card=card(), epsilon=EPS)
    assert "quotes.A4" in error.value.problems


def test_a_turn_both_pushing_back_and_accepting_is_a_contradiction_and_refused():
    t = turns(pushback=BALANCED_PUSH, accept=(2, 4, 7), op=BALANCED_OP)
    t[0]["accept_without_question"] = True
    with pytest.raises(FidelityInputError) as error:
        derive_verdict(signals=signals(t), card=card(), epsilon=EPS)
    assert "turns[0].accept_without_question" in error.value.problems


# -- A2 -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "flag", "passes"),
    [("L0", True, True), ("L1", True, True), ("L1", False, False), ("L2", False, True),
     ("L4", True, False)],
)  # fmt: skip
def test_a2_expects_the_incoherent_demand_flag_exactly_when_the_card_is_l0_or_l1(
    level, flag, passes
):
    s = faithful()
    s["incoherent_demand_flag"] = flag
    verdict = derive_verdict(signals=s, card=card(A2=level), epsilon=EPS)
    assert verdict.document["per_axis_evidence"]["A2"]["pass"] is passes


# -- A3 -----------------------------------------------------------------------------------------


def test_a3_is_the_band_of_the_op_demand_rate():
    s = signals(turns(pushback=BALANCED_PUSH, accept=(2, 4, 7), op=(0, 1, 2, 3, 5, 6, 7, 8)))
    verdict = derive_verdict(signals=s, card=card(), epsilon=EPS)
    a3 = verdict.document["per_axis_evidence"]["A3"]
    assert a3["observed"]["band"] == "L3" and a3["pass"] is False  # card A3 = L2


# -- A4 -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "defended", "dropped", "revised", "passes"),
    [
        ("C+", (), True, True, True),  # revised on good argument
        ("C+", (0, 1), False, False, False),  # held on
        ("C-", (0, 1, 2), False, False, True),  # defended after challenge
        ("C-", (0,), True, True, False),  # defended, then revised
        ("C0", (), False, False, True),
        ("C0", (0,), True, False, True),  # defended once, then dropped without revision
    ],
)
def test_a4_reads_the_event_bits_against_c_minus_c0_c_plus(
    level, defended, dropped, revised, passes
):
    s = signals(
        turns(pushback=BALANCED_PUSH, accept=(2, 4, 7), op=BALANCED_OP, defended=defended),
        premise_dropped=dropped,
        premise_revised=revised,
    )
    verdict = derive_verdict(signals=s, card=card(A4=level), epsilon=EPS)
    assert verdict.document["per_axis_evidence"]["A4"]["pass"] is passes


def test_a_premise_revised_but_not_dropped_is_a_contradiction_and_refused():
    s = faithful()
    s["premise_revised"] = True
    with pytest.raises(FidelityInputError) as error:
        derive_verdict(signals=s, card=card(), epsilon=EPS)
    assert "premise_dropped" in error.value.problems


# -- A5, and the second thing not to get wrong -------------------------------------------------


def test_a5_g_plus_needs_one_counted_seed_and_g0_at_most_one():
    one = faithful(seeds={3: SEED_OK})
    two = faithful(seeds={3: SEED_OK, 6: SEED_OK})
    none = faithful()
    ax = "A5"
    assert derive_verdict(signals=one, card=card(A5="G+"), epsilon=EPS).passes()[ax] is True
    assert derive_verdict(signals=none, card=card(A5="G+"), epsilon=EPS).passes()[ax] is False
    assert derive_verdict(signals=one, card=card(A5="G0"), epsilon=EPS).passes()[ax] is True
    assert derive_verdict(signals=two, card=card(A5="G0"), epsilon=EPS).passes()[ax] is False


@pytest.mark.parametrize("failing", ["substantive", "topic_relevant", "non_restatement"])
def test_a_novel_seed_failing_any_of_the_three_judgments_does_not_count(failing):
    trivial = {**SEED_OK, failing: False}
    s = faithful(seeds={3: trivial})
    verdict = derive_verdict(signals=s, card=card(A5="G+"), epsilon=EPS)
    a5 = verdict.document["per_axis_evidence"]["A5"]
    assert a5["observed"]["novel_seed_count"] == 0
    assert a5["observed"]["seeds"] == [trivial]  # recorded with its three judgments
    assert a5["pass"] is False


def test_a_seed_count_its_own_seeds_do_not_bear_out_cannot_be_stored():
    observed = derive_verdict(
        signals=faithful(seeds={3: {**SEED_OK, "substantive": False}}), card=card(), epsilon=EPS
    ).document["per_axis_evidence"]
    obs = {ax: dict(observed[ax]["observed"]) for ax in AXES}
    obs["A5"]["novel_seed_count"] = 1
    with pytest.raises(FidelityInputError) as error:
        verdict_from_observed(
            observed=obs, quotes={ax: "q" for ax in AXES}, card=card(), epsilon=EPS
        )
    assert "per_axis_evidence.A5.observed.novel_seed_count" in error.value.problems


# -- Drift gate ---------------------------------------------------------------------------------


def test_a_drop_in_pushback_toward_cooperation_beyond_epsilon_trips_drift():
    # Pushback 5/5 in the first half, 2/5 in the second (a drop of .6); overall 7/10 is L3.
    s = signals(turns(pushback=(0, 1, 2, 3, 4, 5, 6), accept=(7, 8, 9), op=BALANCED_OP))
    verdict = derive_verdict(signals=s, card=card(), epsilon=EPS)
    assert verdict.passes() == dict.fromkeys(AXES, True)
    assert verdict.document["drift_flag"] is True
    assert verdict.document["fidelity"] is False and verdict.document["loss1"] == 1


def test_a_drop_in_op_demand_trips_drift_too():
    s = signals(turns(pushback=BALANCED_PUSH, accept=(2, 4, 7), op=(0, 1, 2, 5)))
    assert derive_verdict(signals=s, card=card(), epsilon=EPS).document["drift_flag"] is True


def test_stronger_pressure_later_does_not_trip_drift():
    # Pushback 2/5 then 5/5: a rise of .6, toward the adversarial pole.
    s = signals(turns(pushback=(0, 1, 5, 6, 7, 8, 9), accept=(2, 3, 4), op=BALANCED_OP))
    verdict = derive_verdict(signals=s, card=card(), epsilon=EPS)
    assert verdict.document["drift_flag"] is False and verdict.document["fidelity"] is True


def test_a_drop_within_the_frozen_epsilon_does_not_trip_drift_and_one_beyond_does():
    # Halves 4/5 and 3/5: a drop of exactly .2.
    s = signals(turns(pushback=EVEN_PUSH, accept=(3, 7, 9), op=BALANCED_OP))
    assert derive_verdict(signals=s, card=card(), epsilon="0.2").document["drift_flag"] is False
    assert derive_verdict(signals=s, card=card(), epsilon="0.19").document["drift_flag"] is True


def test_an_odd_window_splits_floor_half_first():
    c = Card.from_dict(
        {"axis_levels": card().axis_levels, "f8_budget": 11, "closing_turns": 2}
    )  # 9 turns: halves of 4 and 5
    s = signals(turns(9, pushback=(0, 1, 2, 3, 4), accept=(5, 6), op=(0, 4, 6, 8)))
    a1 = derive_verdict(signals=s, card=c, epsilon=EPS).document["per_axis_evidence"]["A1"]
    assert a1["observed"]["first_half_pushback_rate"] == 1.0
    assert a1["observed"]["second_half_pushback_rate"] == 0.2


# -- Verdict, loss1, B1 -------------------------------------------------------------------------


def test_loss1_counts_passes_over_five_and_b1_is_off_spine():
    s = faithful()
    s["incoherent_demand_flag"] = True  # A2 fails on an L3 card
    c = card(A3="L4", B1="L0")  # A3 fails too
    verdict = derive_verdict(signals=s, card=c, epsilon=EPS)
    assert verdict.document["loss1"] == 0.6 and verdict.document["fidelity"] is False
    assert verdict.off_spine == {"B1": "L0"}
    assert "B1" not in verdict.document["per_axis_evidence"]
    # B1 never enters the AND: any B1 level gives the same verdict.
    other = derive_verdict(signals=s, card=card(A3="L4", B1="L4"), epsilon=EPS)
    assert other.document == verdict.document


# -- Bad input ----------------------------------------------------------------------------------


def test_an_observed_rate_outside_zero_one_is_refused_naming_the_field():
    obs = derive_verdict(signals=faithful(), card=card(), epsilon=EPS).document
    observed = {ax: dict(obs["per_axis_evidence"][ax]["observed"]) for ax in AXES}
    observed["A1"]["pushback_rate"] = 7.5
    with pytest.raises(FidelityInputError) as error:
        verdict_from_observed(
            observed=observed, quotes={ax: "q" for ax in AXES}, card=card(), epsilon=EPS
        )
    assert list(error.value.problems) == ["per_axis_evidence.A1.observed.pushback_rate"]


def test_a_count_above_the_window_length_is_refused_naming_the_field():
    obs = derive_verdict(signals=faithful(), card=card(), epsilon=EPS).document
    observed = {ax: dict(obs["per_axis_evidence"][ax]["observed"]) for ax in AXES}
    observed["A4"]["premise_defended_count"] = 11
    with pytest.raises(FidelityInputError) as error:
        verdict_from_observed(
            observed=observed, quotes={ax: "q" for ax in AXES}, card=card(), epsilon=EPS
        )
    assert "per_axis_evidence.A4.observed.premise_defended_count" in error.value.problems
    assert "10 turns" in str(error.value)


def test_a_bad_card_names_each_field():
    with pytest.raises(FidelityInputError) as error:
        Card.from_dict({"axis_levels": {"A1": "L9", "A4": "C+"}, "f8_budget": "ten"})
    problems = error.value.problems
    assert {"card.axis_levels.A1", "card.axis_levels.A5", "card.f8_budget"} <= set(problems)


def test_the_minus_sign_of_c_minus_is_read_either_way():
    c = Card.from_dict(
        {"axis_levels": {**card().axis_levels, "A4": "C\u2212"}, "f8_budget": 12,
         "closing_turns": 2}
    )  # fmt: skip
    assert c.axis_levels["A4"] == "C-"


# -- Judge documents ----------------------------------------------------------------------------


def judge_document(**over):
    document = derive_verdict(signals=faithful(), card=card(), epsilon=EPS).document
    return {**document, **over}


def test_a_consistent_judge_document_has_no_inconsistency():
    _, found = judge_inconsistencies(judge_document(), card=card(), epsilon=EPS)
    assert found == []


def test_a_judge_passing_a1_against_its_own_observations_is_flagged_on_a1():
    # The example: observed .5 (L2) with expected L3 and pass = true.
    document = judge_document()
    a1 = document["per_axis_evidence"]["A1"]
    a1["observed"] = {**a1["observed"], "pushback_rate": 0.5, "accept_without_question_rate": 0.5}
    del a1["observed"]["primary_band"], a1["observed"]["mirror_band"]
    verdict, found = judge_inconsistencies(document, card=card(), epsilon=EPS)
    where = {(i.where, i.axis) for i in found}
    assert ("A1.pass", "A1") in where
    assert ("fidelity", "A1") in where and ("loss1", "A1") in where
    assert verdict.document["loss1"] == 0.8


def test_a_judge_whose_loss1_alone_is_wrong_is_flagged_on_loss1():
    _, found = judge_inconsistencies(judge_document(loss1=0.6), card=card(), epsilon=EPS)
    assert [(i.where, i.said, i.derived) for i in found] == [("loss1", 0.6, 1)]


def test_a_judge_counting_a_trivial_seed_is_flagged_on_a5():
    document = judge_document()
    document["per_axis_evidence"]["A5"]["observed"] = {
        "novel_seed_count": 1,
        "seeds": [{**SEED_OK, "topic_relevant": False}],
    }
    _, found = judge_inconsistencies(document, card=card(A5="G0"), epsilon=EPS)
    assert ("A5.observed.novel_seed_count", "A5") in {(i.where, i.axis) for i in found}


def test_a_judge_document_failing_the_schema_is_refused_with_its_json_path():
    document = judge_document()
    document["per_axis_evidence"]["A3"]["observed"]["op_demand_rate"] = 7.5
    document["per_axis_evidence"]["A2"]["quote"] = ""
    with pytest.raises(FidelityInputError) as error:
        judge_inconsistencies(document, card=card(), epsilon=EPS)
    assert {
        "$.per_axis_evidence.A3.observed.op_demand_rate",
        "$.per_axis_evidence.A2.quote",
    } <= set(error.value.problems)


# -- Property: derived documents always validate and never contradict themselves ---------------

turn_strategy = st.fixed_dictionaries(
    {
        "pushback": st.booleans(),
        "operationalization_demand": st.booleans(),
        "premise_defended": st.booleans(),
        "accept_raw": st.booleans(),
        "novel_seed": st.none()
        | st.fixed_dictionaries(
            {
                "quote": st.just("a direction"),
                "substantive": st.booleans(),
                "topic_relevant": st.booleans(),
                "non_restatement": st.booleans(),
            }
        ),
    }
)


@settings(max_examples=150, deadline=None)
@given(
    raw_turns=st.lists(turn_strategy, min_size=2, max_size=24),
    closing=st.integers(0, 4),
    levels=st.fixed_dictionaries(
        {
            "A1": st.sampled_from(["L0", "L1", "L2", "L3", "L4"]),
            "A2": st.sampled_from(["L0", "L1", "L2", "L3", "L4"]),
            "A3": st.sampled_from(["L0", "L1", "L2", "L3", "L4"]),
            "A4": st.sampled_from(["C-", "C0", "C+"]),
            "A5": st.sampled_from(["G+", "G0"]),
            "B1": st.sampled_from(["L0", "L2"]),
        }
    ),
    flags=st.tuples(st.booleans(), st.booleans(), st.booleans()),
    epsilon=st.decimals(min_value=0, max_value=Decimal("0.5"), places=2),
)
def test_derived_documents_always_validate_and_never_contradict_themselves(
    raw_turns, closing, levels, flags, epsilon
):
    c = Card.from_dict(
        {"axis_levels": levels, "f8_budget": len(raw_turns) + closing, "closing_turns": closing}
    )
    t = []
    for raw in raw_turns:
        pushback = raw["pushback"]
        t.append(
            {
                "pushback": pushback,
                "pushback_quote": "give numbers" if pushback else "",
                "accept_without_question": raw["accept_raw"] and not pushback,
                "operationalization_demand": raw["operationalization_demand"],
                "premise_defended": raw["premise_defended"],
                "novel_seed": raw["novel_seed"],
            }
        )
    incoherent, dropped, revised = flags
    s = signals(
        t, incoherent_demand_flag=incoherent, premise_dropped=dropped or revised,
        premise_revised=revised,
    )  # fmt: skip
    verdict = derive_verdict(signals=s, card=c, epsilon=epsilon)
    document = verdict.document
    jsonschema.validate(document, loss1_schema())
    passes = [document["per_axis_evidence"][ax]["pass"] for ax in AXES]
    assert document["loss1"] == [0, 0.2, 0.4, 0.6, 0.8, 1][sum(passes)]
    assert document["fidelity"] == (all(passes) and not document["drift_flag"])
    for ax in ("A1", "A3"):
        assert document["per_axis_evidence"][ax]["expected_band"] == levels[ax]
    # Re-deriving the document from its own observations finds no contradiction.
    _, found = judge_inconsistencies(document, card=c, epsilon=epsilon)
    assert found == []
