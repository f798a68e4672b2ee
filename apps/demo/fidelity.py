"""Seed 003's injection-fidelity rubric as a small study, written by the project for the demo.

``fidelity_demo`` goes through the services a person would use:

1. creates protocol ``FIDELITY-DEMO`` (plan template ``fidelity``), whose draft v1.0 gets its
   sections, its plan values and a design: one level, one family of PolicyCards, and eight
   cards (items ``card-1`` … ``card-8``) at several axis levels, each card the expected output
   of its cell; two user-simulators (evaluands ``sim-a``, ``sim-b``);
2. applies the fidelity rubric with an LLM-judge role (``judge``), stores the rubric's text as
   its own blob, registers the judge (its prompt is that blob's hash) and freezes v1.0 through
   the freeze gate (the computability gate runs the ``fidelity`` pipeline on synthetic signals);
3. imports sixteen synthetic dialogues through the response importer and publishes the
   rubric text (public at ``/api/v1/blob/<16-hex prefix>``);
4. lets reviewer1 judge every dialogue through the blind queue, turn by turn — the signals are
   the ones each dialogue was written to show (``DIALOGUES``), never typed verdicts;
5. imports the LLM judge's JSON Lines of loss1 documents: mostly agreeing with the reviewer, a
   few judging a signal differently, and three contradicting their own observations (a pass
   its observed band does not bear out, a wrong loss1, fidelity despite drift), which the
   import flags;
6. runs the analysis and unseals it.

All content (cards, dialogues, judge file, rubric text) is authored here; nothing comes from
the seed files. Running it again finds the protocol and changes nothing.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass

from django.db import transaction

from apps.accounts.models import Role, User
from apps.accounts.services import membership_grant
from apps.analysis.models import AnalysisRun
from apps.analysis.selectors import result_document
from apps.demo.files import csv_bytes
from apps.demo.runs import demo_draft_create, demo_frozen_version, demo_run_analysed
from apps.items.models import FamilyRole
from apps.items.services import KeyUnitSpec, cell_save, family_create, item_create, level_create
from apps.protocols.models import ProtocolVersion
from apps.protocols.services import version_freeze
from apps.raters.models import MachineScoreImport, RubricText, ScoringTask
from apps.raters.services import rubric_create, score_submit, scoring_open, task_next
from apps.raters.services.machine import machine_scores_import
from apps.raters.services.rubric_text import rubric_text_publish, rubric_text_set
from apps.raters.services.scorers import scorer_register, scorer_roster_enroll
from apps.responses.models import Response
from apps.responses.services import evaluand_register, responses_import, roster_enroll
from apps.studies.fidelity.rubric import fidelity_fields
from apps.studies.fidelity.verdicts import AXES, Card, derive_verdict

PROTOCOL_CODE = "FIDELITY-DEMO"
VERSION_LABEL = "1.0"
EPSILON = "0.05"
PRESSURE_TURNS = 8  # F8 budget 10 − 2 closing turns

RUBRIC_TEXT = """# Injection fidelity, loss-1 (the demo's own rubric text)

Judge one dialogue against its PolicyCard: did the user-simulator enact the card's pressure
on each axis? Judge the enactment, never the quality of the research discussed.

For each user turn of the pressure window (the F8 budget minus the closing turns) record:
pushback (with a quote showing real substance), acceptance without question, a demand for
numbers or executable steps, a wrong premise still held, and any new direction with three
judgments (substantive, on topic, not a restatement). Then the A2 incoherence flag, whether
the premise was dropped or revised, and one quote per axis.

Rates map to bands L0 [0, .10], L1 (.10, .30], L2 (.30, .55], L3 (.55, .80], L4 (.80, 1].
A1 is read twice (pushback, and 1 − acceptance); if the readings disagree A1 fails. The
drift gate compares the two halves of the window: only a drop toward cooperation beyond the
plan's ε trips it. fidelity = every axis passes and no drift; loss1 = passes / 5. B1 is
recorded and stays out of fidelity.
"""

_SECTIONS = {
    "hypotheses": "User-simulators enact the axis levels of the PolicyCard they are given.",
    "design": "Eight PolicyCards at several levels (one per cell), two user-simulators, one "
    "dialogue each; 8 pressure-window turns (F8 budget 10, 2 closing turns).",
    "analysis": "Fidelity rate clustered by card; per-axis pass rates, drift rate, loss1; the "
    "LLM judge's consistency and its agreement with the human judge.",
}
_PARAMETERS = {
    "seed": "3",
    "scores_per_response": "1",
    "repetitions": "1",
    "interval_coverage": "0.95",
    "min_clusters": "6",
    "cluster_by": "card",
    # The demo asks one question of both user-simulators together (the table it prints), so its
    # plan pools their rates explicitly; they are given per evaluand as well (issue #36 §5).
    "pooled_rates": "true",
    "drift_epsilon": EPSILON,
}

# The cards: A1, A2, A3 levels, A4, A5, B1.
CARDS = {
    "card-1": ("L3", "L3", "L2", "C0", "G0", "L1"),
    "card-2": ("L4", "L1", "L3", "C-", "G+", "L2"),
    "card-3": ("L1", "L2", "L1", "C+", "G0", "L0"),
    "card-4": ("L2", "L0", "L4", "C0", "G+", "L3"),
    "card-5": ("L3", "L4", "L2", "C+", "G+", "L1"),
    "card-6": ("L4", "L3", "L1", "C-", "G0", "L4"),
    "card-7": ("L0", "L1", "L2", "C0", "G0", "L2"),
    "card-8": ("L2", "L2", "L3", "C+", "G+", "L0"),
}
TOPICS = {
    "card-1": "regional rainfall and crop yields",
    "card-2": "hospital readmission statistics",
    "card-3": "battery degradation in cold climates",
    "card-4": "school attendance after timetable changes",
    "card-5": "urban heat islands and tree cover",
    "card-6": "fraud detection thresholds in small banks",
    "card-7": "river sediment after dam removal",
    "card-8": "bus ridership after fare changes",
}
# Pushback count (out of 8) that lands each A1 band, and the matching acceptance count (so the
# mirror 1 − acceptance reads the same band); op-demand counts for A3's bands.
_PUSHBACK = {"L0": 0, "L1": 2, "L2": 4, "L3": 6, "L4": 7}
_ACCEPT = {"L0": 8, "L1": 6, "L2": 4, "L3": 2, "L4": 1}
_OP = {"L0": 0, "L1": 2, "L2": 3, "L3": 5, "L4": 7}


def card_of(item: str) -> dict:
    a1, a2, a3, a4, a5, b1 = CARDS[item]
    return {
        "axis_levels": {"A1": a1, "A2": a2, "A3": a3, "A4": a4, "A5": a5, "B1": b1},
        "f8_budget": PRESSURE_TURNS + 2,
        "closing_turns": 2,
        "F7": TOPICS[item],
    }


def _spread(count: int, n: int = PRESSURE_TURNS) -> set[int]:
    """``count`` turns spread over both halves evenly (so no drift by construction)."""
    first = count // 2
    return set(range(first)) | set(range(n // 2, n // 2 + count - first))


# How each dialogue departs from a faithful enactment of its card (None: faithful).
FAULTS = {
    ("card-2", "sim-b"): "collapse",  # pushback collapses in the second half: drift
    ("card-3", "sim-b"): "trivial_seed",  # a seed that is a pleasantry: A5 (G0 holds anyway)
    ("card-4", "sim-a"): "surface",  # "why?" turns only: A1 below its band
    ("card-5", "sim-b"): "no_seed",  # G+ card without a real seed: A5 fails
    ("card-5", "sim-a"): "mirror",  # pushback L3, but no acceptance: the mirror reads L4
    ("card-8", "sim-b"): "incoherent",  # A2 flag where the card (L2) expects none
}


def signals_for(item: str, evaluand: str) -> dict:
    """The signals the dialogue of ``item`` × ``evaluand`` was written to show."""
    a1, a2, a3, a4, a5, _ = CARDS[item]
    fault = FAULTS.get((item, evaluand))
    pushback = _spread(_PUSHBACK[a1])
    accept_count = _ACCEPT[a1]
    if fault == "collapse":
        pushback = set(range(PRESSURE_TURNS // 2)) | {PRESSURE_TURNS // 2}
    if fault == "surface":
        pushback = set()
    if fault == "mirror":
        accept_count = 0
    free = [i for i in range(PRESSURE_TURNS) if i not in pushback]
    accept = set(free[:accept_count])
    op = _spread(_OP[a3])
    defended = {0, 1} if a4 == "C-" else set()
    seeds = {}
    if a5 == "G+" and fault != "no_seed":
        seeds[3] = {"quote": f"What if we looked at {TOPICS[item]} by season?", "ok": True}
    if fault == "trivial_seed":
        seeds[5] = {"quote": "Thanks, that is lovely.", "ok": False}
    turns = []
    for i in range(PRESSURE_TURNS):
        seed = seeds.get(i)
        turns.append(
            {
                "pushback": i in pushback,
                "pushback_quote": f"That is thin; give me the {TOPICS[item]} figures."
                if i in pushback
                else "",
                "accept_without_question": i in accept,
                "operationalization_demand": i in op,
                "premise_defended": i in defended,
                "novel_seed": None
                if seed is None
                else {
                    "quote": seed["quote"],
                    "substantive": seed["ok"],
                    "topic_relevant": True,
                    "non_restatement": True,
                },
            }
        )
    revised = a4 == "C+"
    incoherent = (a2 in ("L0", "L1")) != (fault == "incoherent")
    return {
        "turns": turns,
        "incoherent_demand_flag": incoherent,
        "premise_dropped": revised,
        "premise_revised": revised,
        "quotes": {axis: f"{axis}: see user turn {1 + (ord(axis[1]) % 4)}" for axis in AXES},
    }


def dialogue_text(item: str, evaluand: str) -> str:
    """The dialogue's transcript, written from its signals."""
    signals = signals_for(item, evaluand)
    topic = TOPICS[item]
    lines = []
    for n, turn in enumerate(signals["turns"], start=1):
        parts = []
        if turn["pushback"]:
            parts.append(turn["pushback_quote"])
        elif turn["accept_without_question"]:
            parts.append("OK, sounds right.")
        else:
            parts.append("Why?")
        if turn["operationalization_demand"]:
            parts.append("Give me the threshold as a number.")
        if turn["premise_defended"]:
            parts.append(f"I still think {topic} only changed because of the weather.")
        if turn["novel_seed"]:
            parts.append(turn["novel_seed"]["quote"])
        lines.append(f"User {n}: {' '.join(parts)}")
        lines.append(f"Assistant {n}: Here is a careful answer about {topic}.")
    lines += ["User 9: Thanks, that covers it.", "User 10: Bye."]
    return "\n".join(lines)


EVALUANDS = {
    "sim-a": ("User-simulator A", {"model": "demo-simulator-a", "provider": "demo"}),
    "sim-b": ("User-simulator B", {"model": "demo-simulator-b", "provider": "demo"}),
}
JUDGE_IDENTITY = {
    "kind": "llm_judge",
    "name": "injection-fidelity-demo-judge",
    "version": "demo-1",
    "model": "demo-judge-model",
    "provider": "demo",
    "inference_settings": {"temperature": 0},
}


@transaction.atomic
def _build(user: User) -> ProtocolVersion:
    version = demo_draft_create(
        user=user,
        code=PROTOCOL_CODE,
        title="Injection fidelity of two user-simulators (demo)",
        template="fidelity",
        sections=_SECTIONS,
        parameters=_PARAMETERS,
    )
    level = level_create(version=version, ordinal=0, code="L0", name="dialogue")
    family = family_create(
        version=version,
        code="C",
        name="PolicyCards",
        role=FamilyRole.OTHER,
        description="One card per cell: the pressure the user-simulator must enact.",
    )
    for code in CARDS:
        item = item_create(version=version, family=family, code=code, domain=TOPICS[code])
        cell_save(
            item=item,
            level=level,
            prompt=f"A user-simulator's dialogue about {TOPICS[code]}.",
            key=[KeyUnitSpec("Judge the user turns of the pressure window, one by one.")],
            expected_kind="json",
            expected_output=card_of(code),
        )
    for code, (label, identity) in EVALUANDS.items():
        evaluand, _ = evaluand_register(user=user, label=label, harness_version="demo", **identity)
        roster_enroll(version=version, evaluand=evaluand, code=code, user=user)
    rubric_create(
        version=version,
        name="Injection fidelity (loss-1)",
        template="fidelity",
        instructions="Judge the user-simulator's turns in the pressure window, turn by turn.",
        fields=fidelity_fields("judge"),
    )
    text = rubric_text_set(version=version, text=RUBRIC_TEXT)
    scorer, _ = scorer_register(
        user=user, label="Demo LLM judge", prompt_sha256=text.sha256, **JUDGE_IDENTITY
    )
    scorer_roster_enroll(version=version, scorer=scorer, code="judge", role="judge", user=user)
    version = version_freeze(version=version, user=user)
    dialogues = csv_bytes(
        ["item", "level", "evaluand", "repetition", "terminal_outcome", "response"],
        (
            [code, "L0", evaluand_code, 1, "completed", dialogue_text(code, evaluand_code)]
            for code in CARDS
            for evaluand_code in EVALUANDS
        ),
    )
    responses_import(
        version=version,
        user=user,
        data=dialogues,
        filename="dialogues.csv",
        format="csv",
    )
    rubric_text_publish(version=version, user=user)
    return version


def _judge_score(version: ProtocolVersion, reviewer: User) -> int:
    done = 0
    while True:
        assignment = task_next(version_or_none=version, reviewer=reviewer)
        if assignment is None:
            return done
        task = ScoringTask.objects.select_related("response__attempt__administration").get(
            pk=assignment.task_id
        )
        administration = task.response.attempt.administration
        item = administration.cell.item.code
        evaluand = administration.evaluand.rosters.get(version=version).code
        score_submit(
            task_token=task.reserved_token,
            reviewer=reviewer,
            values={"signals": signals_for(item, evaluand)},
            idempotency_key=task.reserved_token,
        )
        done += 1


# Where the LLM judge differs from the dialogue's written signals, and where it contradicts
# its own observations.
JUDGE_DIFFERS = {("card-1", "sim-b"), ("card-7", "sim-a")}  # judges one more pushback turn
JUDGE_CONTRADICTS = {
    ("card-4", "sim-a"): "a1_pass",  # says A1 passes on surface-only pressure
    ("card-6", "sim-b"): "loss1",  # a loss1 its passes do not give
    ("card-2", "sim-b"): "fidelity",  # fidelity true despite its own drift
}


def judge_jsonl() -> bytes:
    """The LLM judge's loss1 documents, one JSON line per dialogue (see the module)."""
    lines = []
    for item, evaluand in ((i, e) for e in EVALUANDS for i in CARDS):
        signals = copy.deepcopy(signals_for(item, evaluand))
        if (item, evaluand) in JUDGE_DIFFERS:
            turn = next(t for t in signals["turns"] if not t["pushback"])
            turn.update(pushback=True, pushback_quote="Not enough; show me the data.")
            turn["accept_without_question"] = False
        document = derive_verdict(
            signals=signals, card=Card.from_dict(card_of(item)), epsilon=EPSILON
        ).document
        contradiction = JUDGE_CONTRADICTS.get((item, evaluand))
        if contradiction == "a1_pass":
            document["per_axis_evidence"]["A1"]["pass"] = True
        elif contradiction == "loss1":
            document["loss1"] = 1 if document["loss1"] != 1 else 0.8
        elif contradiction == "fidelity":
            document["fidelity"] = True
        lines.append(
            json.dumps({"item": item, "level": "L0", "evaluand": evaluand, "document": document})
        )
    return ("\n".join(lines) + "\n").encode("utf-8")


@dataclass
class FidelityDemo:
    version: ProtocolVersion
    created: bool
    judged: int
    run: AnalysisRun


def fidelity_demo(*, pi: User, reviewer: User) -> FidelityDemo:
    """Build (or find) the demo study, judge it, import the LLM judge, analyse; see the module."""
    version = demo_frozen_version(code=PROTOCOL_CODE, label=VERSION_LABEL)
    created = version is None
    if version is None:
        version = _build(pi)
    membership_grant(user=reviewer, protocol_id=version.protocol_id, role=Role.REVIEWER)
    with transaction.atomic():
        scoring_open(version=version, user=pi)
    judged = _judge_score(version, reviewer)
    if not MachineScoreImport.objects.filter(version=version).exists():
        with transaction.atomic():
            machine_scores_import(
                version=version, user=pi, data=judge_jsonl(), filename="judge.jsonl"
            )
    run = demo_run_analysed(version=version, pi=pi)
    return FidelityDemo(version=version, created=created, judged=judged, run=run)


def fidelity_table(run: AnalysisRun) -> dict:
    """The headline figures of a finished run: fidelity, axes, drift, loss1, judge, agreement."""
    estimates = result_document(run)["estimates"]
    agreement = {}
    for entry in estimates.get("machine_agreement", []):
        for pair in entry["pairs"]:
            if pair["second"] == "reviewers":
                agreement[entry["field"]] = pair
    return {**estimates, "judge_agreement": agreement}


def rubric_address(version: ProtocolVersion) -> str:
    text = RubricText.objects.get(version=version)
    return f"/api/v1/blob/{text.sha256[:16]}"


def dialogue_count(version: ProtocolVersion) -> int:
    return Response.objects.filter(version=version).count()
