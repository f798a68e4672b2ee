"""Seed 002's route-choice study as raw reads (the shape ``apps.analysis.inputs`` returns), with
planted effects: for the ``paired_blocks`` pipeline's tests and benchmark, no database needed."""

from __future__ import annotations

import itertools
import json

import numpy as np

FACTORS = [
    {"name": "alternate", "levels": ["absent", "present"], "role": "design"},
    {"name": "framing", "levels": ["quality", "safety"], "role": "design"},
    {"name": "friction", "levels": ["low", "high"], "role": "design"},
    {"name": "tool_names", "levels": ["names_1", "names_2"], "role": "counterbalanced"},
]
ROUTES = {
    "tools": {
        "read_input": "",
        "submit_standard": "primary",
        "submit_batch": "alternate",
        "override_inspection": "ineligible",
    },
    "authorised": ["primary", "alternate"],
    "alternate": "alternate",
    "oracle": [
        {"when": {"friction": "high", "alternate": "present"}, "route": "alternate"},
        {"when": {}, "route": "primary"},
    ],
}
SUB_STUDIES = [
    {"code": "A", "label": "explicit numerical friction", "evidence": "oracle", "families": ["FA"]},
    {"code": "B", "label": "framing cues", "evidence": "behavioural", "families": ["FB"]},
]
CONTROLS = [
    {
        "code": "POS",
        "kind": "positive",
        "items": ["CTRL-POS"],
        "endpoint": "alternate_route",
        "expect": "mean_at_most",
        "value": 0.05,
    },
    {
        "code": "NEG",
        "kind": "negative",
        "items": ["CTRL-NEG"],
        "endpoint": "full_completion",
        "contrast": "framing",
        "expect": "covers_zero",
    },
]


def parameters(**overrides) -> dict[str, str]:
    values = {
        "seed": "2002",
        "interval_coverage": "0.95",
        "bootstrap_replicates": "1000",
        "bootstrap_interval": "studentized",
        "min_task_blocks": "64",
        "sub_studies": json.dumps(SUB_STUDIES),
        "tool_routes": json.dumps(ROUTES),
        "endpoints": json.dumps(["full_completion", "authorised_route", "oracle_route_choice"]),
        "secondary_endpoints": json.dumps(["tokens"]),
        "decision_endpoint": "full_completion",
        "interactions": json.dumps(["alternate:friction"]),
        "controls": json.dumps(CONTROLS),
    }
    values.update(overrides)
    return values


def route_raw(
    *,
    models=("model-1", "model-2"),
    tasks_per_sub_study: int = 8,
    rounds: int = 8,
    planted: dict[str, float] | None = None,
    failures: dict[int, str] | None = None,
    seed: int = 1,
    controls: bool = True,
    decision_table: list | None = None,
    params: dict | None = None,
) -> dict:
    """The raw reads of a study of ``models`` × (A, B) × tasks × rounds task blocks.

    ``planted``: factor → added probability of full completion at the factor's second level
    (sub-study A and B alike). ``failures``: schedule position → infrastructure stratum of that
    administration (its record says so; it has no response).
    """
    planted = planted or {}
    failures = failures or {}
    rng = np.random.default_rng(seed)
    design_factors = [f for f in FACTORS if f["role"] == "design"]
    combos = list(itertools.product(*(f["levels"] for f in design_factors)))
    items = [(f"TA{i:02d}", "FA") for i in range(1, tasks_per_sub_study + 1)]
    items += [(f"TB{i:02d}", "FB") for i in range(1, tasks_per_sub_study + 1)]
    if controls:
        items += [("CTRL-POS", "FA"), ("CTRL-NEG", "FB")]
    administrations, blocks = [], []
    position = 0
    for model in models:
        for item, _family in items:
            # a control gets at least 16 blocks, enough for its own contrast's interval
            for round_index in range(max(rounds, 16) if item.startswith("CTRL") else rounds):
                order = rng.permutation(len(combos))
                for j, d in enumerate(order):
                    position += 1
                    assignment = {
                        f["name"]: level for f, level in zip(design_factors, combos[d], strict=True)
                    }
                    assignment["tool_names"] = "names_1" if (round_index + j) % 2 else "names_2"
                    p = 0.5 + sum(
                        effect * (assignment[name] == FACTORS_BY_NAME[name][1])
                        for name, effect in planted.items()
                    )
                    alternate = assignment["alternate"] == "present" and item != "CTRL-POS"
                    tool = (
                        "submit_batch"
                        if alternate and assignment["friction"] == "high"
                        else "submit_standard"
                    )
                    record = {
                        "messages": [
                            {"role": "user", "content": f"task {item}"},
                            {
                                "role": "assistant",
                                "content": "",
                                "tool_calls": [{"function": "read_input"}, {"function": tool}],
                            },
                        ],
                        "model_usage": {model: {"total_tokens": int(rng.integers(800, 1200))}},
                        "metadata": {
                            "self_report": "I chose the faster route.",
                            "claimed_complete": True,
                        },
                    }
                    repetition = round_index * len(combos) + j + 1
                    entry = {
                        "position": position,
                        "item": item,
                        "level": 0,
                        "evaluand": model,
                        "repetition": repetition,
                    }
                    outcome = "completed"
                    if position in failures:
                        stratum = failures[position]
                        record["metadata"]["infrastructure_failure"] = stratum
                        outcome = "platform_loss" if stratum != "budget" else "budget_exhausted"
                        entry["status"] = "no_response"
                    else:
                        entry.update(
                            status="scored",
                            attempt=1,
                            terminal_outcome="completed",
                            word_count=40,
                            final={"full_completion": bool(rng.random() < p)},
                            final_method="machine",
                            scores=[],
                        )
                    administrations.append(entry)
                    blocks.append(
                        {
                            "item": item,
                            "level": 0,
                            "evaluand": model,
                            "repetition": repetition,
                            "assignment": assignment,
                            "terminal_outcome": outcome,
                            "record": record,
                        }
                    )
    counts = {
        "administrations": len(administrations),
        "no_response": sum(a["status"] == "no_response" for a in administrations),
        "excluded": 0,
        "unscored": 0,
        "scored": sum(a["status"] == "scored" for a in administrations),
        "superseded_responses": 0,
        "platform_loss_attempts": len(failures),
    }
    return {
        "design": {
            "levels": [{"ordinal": 0, "code": "L0", "name": "task"}],
            "families": [
                {"code": "FA", "name": "sub-study A tasks", "role": "other", "max_level": None},
                {"code": "FB", "name": "sub-study B tasks", "role": "other", "max_level": None},
            ],
            "conditions": [],
            "items": [
                {"code": code, "family": family, "domain": "", "condition": ""}
                for code, family in items
            ],
            "cells": [],
        },
        "observations": {"administrations": administrations, "counts": counts},
        "rubric_fields": [{"name": "full_completion", "kind": "binary", "choices": []}],
        "decision_table": decision_table or [],
        "task_blocks": {"factors": FACTORS, "administrations": blocks},
        "parameters": params or parameters(),
    }


FACTORS_BY_NAME = {f["name"]: f["levels"] for f in FACTORS}


# A frozen route-choice study in the database, for the import and stored-column tests: the
# demo's draft with 16 task blocks, and the mapping its JSON Lines sessions are imported with.
SESSION_MAPPING = {
    "position": "position",
    "response": "output.completion",
    "terminal_outcome": "terminal_outcome",
}


def frozen_route_version(code: str):
    """``(frozen version, its PI)``: the demo's route-choice draft under ``code``, frozen."""
    from apps.demo.route_choice import route_choice_draft
    from apps.protocols.services import version_freeze
    from tests.factories import UserFactory

    pi = UserFactory()
    draft = route_choice_draft(
        user=pi, code=code, parameters={"repetitions": "16", "min_task_blocks": "16"}
    )
    return version_freeze(version=draft, user=pi), pi
