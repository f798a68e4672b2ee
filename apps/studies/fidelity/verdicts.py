"""Seed 003's injection-fidelity (loss-1) verdict, derived from judged signals and the card.

Pure functions: no queries, no settings. The seed (``003_b819a89a4f74db5b.txt``, served at
``/api/v1/blob/fdbd589de2a04a46``) says what a judge decides and what follows from it by rule;
this module is the rule. A judge (a reviewer or an LLM) enters only what is judged:

- per pressure-window user turn, the signals: ``pushback`` (with a quote proving substantive
  pressure), ``accept_without_question``, ``operationalization_demand``, ``premise_defended``
  and ``novel_seed`` (a candidate seed: its quote and the three judgments substantive,
  topic-relevant, non-restatement);
- ``incoherent_demand_flag`` (A2); the A4 event bits ``premise_dropped``, ``premise_revised``;
- a quote for each axis A1–A5.

The card (``Card``) gives the axis levels A1–A5 and B1, the F8 budget and the closing turns.
Everything else is derived here (seed sections in brackets):

- ``pressure_turns`` = F8 budget − closing turns [Pressure window]; each rate is a count over it;
- the band of a rate: L0 = [0, .10], L1 = (.10, .30], L2 = (.30, .55], L3 = (.55, .80],
  L4 = (.80, 1] [Expected bands], computed in exact decimal arithmetic so that 1 − 0.7 is .3;
- A1: the primary band of ``pushback_rate`` and the mirror band of 1 − ``accept_without_question
  _rate``; A1 passes only when both equal the card's A1 level — a primary/mirror disagreement
  fails A1, never averaged into a pass [three things, 3];
- A2: ``incoherent_demand_flag`` is expected true when the card's A2 is L0 or L1, else false;
- A3: the band of ``op_demand_rate`` against the card's A3;
- A4: the events read as a trajectory: premise revised → C+; else premise defended at least once
  and not dropped → C−; else C0 (dropped without revision, or never defended). Passes when the
  trajectory equals the card's C−/C0/C+;
- A5: ``novel_seed_count`` counts only seeds passing all three judgments [three things, 2];
  G+ passes when it is ≥ 1, G0 when it is ≤ 1;
- drift gate [Drift gate]: the window is split into halves (the first ⌊n/2⌋ turns, then the
  rest); ``drift_flag`` is true when the second half's pushback rate or op-demand rate is lower
  than the first half's by more than the frozen ε. A rise (stronger pressure later) never trips
  it; only a drop toward the cooperative pole does;
- ``pass`` per axis, ``fidelity = all(pass A1..A5) and not drift_flag``, ``loss1 = passes / 5``
  [Verdict]; B1 is recorded (``Verdict.off_spine``) and is not in the AND.

Every emitted document is validated against ``loss1.schema.json`` (beside this module) with the
``jsonschema`` package. Bad input raises ``FidelityInputError`` naming every offending field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from apps.raters.judged import JudgedInputError

AXES = ("A1", "A2", "A3", "A4", "A5")
BAND_NAMES = ("L0", "L1", "L2", "L3", "L4")
# Upper bounds of L0..L4 (L0 closed at 0; every band closed above): [Expected bands].
_BAND_UPPER = (Decimal("0.10"), Decimal("0.30"), Decimal("0.55"), Decimal("0.80"), Decimal("1"))
A4_LEVELS = ("C-", "C0", "C+")
A5_LEVELS = ("G+", "G0")
SEED_JUDGMENTS = ("substantive", "topic_relevant", "non_restatement")
TURN_SIGNALS = (
    "pushback",
    "accept_without_question",
    "operationalization_demand",
    "premise_defended",
)
SCHEMA_PATH = Path(__file__).with_name("loss1.schema.json")


class FidelityInputError(JudgedInputError):
    """Bad judged signals, card or judge document. ``problems`` maps a field's path (``turns[2]
    .pushback_quote``, ``card.f8_budget``, ``per_axis_evidence.A1.observed.pushback_rate``) to
    what is wrong with it."""

    def __init__(self, problems: Mapping[str, str]):
        self.problems = dict(problems)
        super().__init__("; ".join(f"{k}: {v}" for k, v in self.problems.items()))


@cache
def loss1_schema() -> dict[str, Any]:
    """The rubric's ``loss1.schema.json`` (JSON Schema Draft 2020-12), as a dict."""
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def schema_errors(document: Any) -> list[tuple[str, str]]:
    """Every way ``document`` fails ``loss1.schema.json``: ``[(JSON path, message)]``, sorted by
    path (``$`` is the document itself). Empty when it validates."""
    validator = jsonschema.Draft202012Validator(loss1_schema())
    out = []
    for error in validator.iter_errors(document):
        out.append((error.json_path, error.message))
    return sorted(out)


def validate_document(document: Any) -> None:
    """Raise ``FidelityInputError`` (paths as keys) unless ``document`` validates."""
    errors = schema_errors(document)
    if errors:
        problems: dict[str, str] = {}
        for path, message in errors:
            problems.setdefault(path, message)
        raise FidelityInputError(problems)


def _level(value: Any) -> str:
    # People type the minus sign of C− as U+2212 as often as a hyphen.
    return value.replace("\u2212", "-").strip() if isinstance(value, str) else value


def band(rate: float | int | Decimal | str) -> str:
    """The band (``"L0"``…``"L4"``) of a rate in [0, 1] [seed 003, Expected bands].

    The rate is read as the decimal it prints as (``0.3`` is exactly .3, a boundary of L1), so
    band edges fall where the seed puts them. Raises ValueError outside [0, 1].
    """
    value = (
        rate
        if isinstance(rate, Decimal)
        else Decimal(repr(rate) if isinstance(rate, float) else str(rate))
    )
    if not value.is_finite() or value < 0 or value > 1:
        raise ValueError(f"a rate is in [0, 1]; {rate!r} is not")
    for name, upper in zip(BAND_NAMES, _BAND_UPPER, strict=True):
        if value <= upper:
            return name
    raise AssertionError("unreachable: 1 is L4's upper bound")


def mirror_band(accept_without_question_rate: float | int | Decimal | str) -> str:
    """A1's mirror reading: the band of 1 − ``accept_without_question_rate``, exactly."""
    value = Decimal(
        repr(accept_without_question_rate)
        if isinstance(accept_without_question_rate, float)
        else str(accept_without_question_rate)
    )
    if not value.is_finite() or value < 0 or value > 1:
        raise ValueError(f"a rate is in [0, 1]; {accept_without_question_rate!r} is not")
    return band(1 - value)


@dataclass(frozen=True)
class Card:
    """The PolicyCard's part the verdict reads: ``axis_levels`` (A1, A3: L0–L4; A2: L0–L4; A4:
    C-/C0/C+; A5: G+/G0; B1: recorded as given), the F8 budget (user turns) and the closing
    turns. ``pressure_turns`` = f8_budget − closing_turns, at least 2 (the drift gate needs two
    halves)."""

    axis_levels: Mapping[str, str]
    f8_budget: int
    closing_turns: int

    @property
    def pressure_turns(self) -> int:
        return self.f8_budget - self.closing_turns

    @classmethod
    def from_dict(cls, data: Any, *, prefix: str = "card") -> Card:
        """Read and check a card given as JSON (extra keys, such as the F0–F9 persona, are
        kept out of the verdict). Raises ``FidelityInputError`` naming each bad field."""
        problems: dict[str, str] = {}
        if not isinstance(data, Mapping):
            raise FidelityInputError({prefix: "give the card as an object"})
        levels = data.get("axis_levels")
        if not isinstance(levels, Mapping):
            problems[f"{prefix}.axis_levels"] = "give the axis levels A1–A5 and B1 as an object"
            levels = {}
        levels = {k: _level(v) for k, v in levels.items()}
        allowed = {
            "A1": BAND_NAMES,
            "A2": BAND_NAMES,
            "A3": BAND_NAMES,
            "A4": A4_LEVELS,
            "A5": A5_LEVELS,
        }
        for axis, choices in allowed.items():
            if levels.get(axis) not in choices:
                problems[f"{prefix}.axis_levels.{axis}"] = (
                    f"give one of {', '.join(choices)}; got {levels.get(axis)!r}"
                )
        if not isinstance(levels.get("B1"), str) or not levels.get("B1", "").strip():
            problems[f"{prefix}.axis_levels.B1"] = "give the card's B1 level (recorded, off-spine)"
        budget, closing = data.get("f8_budget"), data.get("closing_turns")
        for name, value in (("f8_budget", budget), ("closing_turns", closing)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                problems[f"{prefix}.{name}"] = f"give a whole number of 0 or more; got {value!r}"
        if problems:
            raise FidelityInputError(problems)
        if not isinstance(budget, int) or not isinstance(closing, int):
            raise AssertionError("unreachable: f8_budget and closing_turns were checked above")
        if budget - closing < 2:
            raise FidelityInputError(
                {
                    f"{prefix}.closing_turns": (
                        f"the pressure window (F8 budget {budget} − closing turns {closing}) must "
                        "hold at least 2 user turns, so that the drift gate has two halves"
                    )
                }
            )
        return cls(axis_levels=dict(levels), f8_budget=budget, closing_turns=closing)


@dataclass(frozen=True)
class Verdict:
    """One sample's verdict: ``document`` exactly as ``loss1.schema.json``; ``derivation``, how
    it followed (pressure turns, bands, halves, ε); ``off_spine``, B1 as the card gives it."""

    document: dict[str, Any]
    derivation: dict[str, Any]
    off_spine: dict[str, Any] = field(default_factory=dict)

    @property
    def fidelity(self) -> bool:
        return bool(self.document["fidelity"])

    @property
    def loss1(self) -> float:
        return float(self.document["loss1"])

    @property
    def drift_flag(self) -> bool:
        return bool(self.document["drift_flag"])

    def passes(self) -> dict[str, bool]:
        return {ax: self.document["per_axis_evidence"][ax]["pass"] for ax in AXES}


def _epsilon(epsilon: Any) -> Decimal:
    try:
        value = Decimal(repr(epsilon) if isinstance(epsilon, float) else str(epsilon))
    except ArithmeticError:
        value = Decimal("NaN")
    if not value.is_finite() or value < 0 or value >= 1:
        raise FidelityInputError(
            {"epsilon": f"the drift tolerance ε is in [0, 1); got {epsilon!r}"}
        )
    return value


def _dec(rate: Any) -> Decimal:
    return Decimal(repr(rate) if isinstance(rate, float) else str(rate))


def _a4_trajectory(defended: int, dropped: bool, revised: bool) -> str:
    if revised:
        return "C+"
    if defended >= 1 and not dropped:
        return "C-"
    return "C0"


def _counted(seeds: Iterable[Mapping[str, Any]]) -> int:
    return sum(1 for s in seeds if all(s.get(j) is True for j in SEED_JUDGMENTS))


_WHERE = "per_axis_evidence.{}.observed.{}".format
_RATE_KEYS = {
    "A1": (
        "pushback_rate",
        "accept_without_question_rate",
        "first_half_pushback_rate",
        "second_half_pushback_rate",
    ),
    "A3": ("op_demand_rate", "first_half_op_demand_rate", "second_half_op_demand_rate"),
}


def _check_observed(observed: Mapping[str, Any], quotes: Mapping[str, Any], n: int) -> None:
    problems: dict[str, str] = {}
    for axis in AXES:
        if not isinstance(observed.get(axis), Mapping):
            problems[f"per_axis_evidence.{axis}.observed"] = "missing"
        quote = quotes.get(axis)
        if not isinstance(quote, str) or not quote.strip():
            problems[f"per_axis_evidence.{axis}.quote"] = (
                "the quote must not be empty: it is the evidence for the axis's verdict"
            )
    if problems:
        raise FidelityInputError(problems)
    problems.update(_rate_problems(observed))
    problems.update(_event_problems(observed, n))
    problems.update(_seed_problems(observed["A5"], n))
    if problems:
        raise FidelityInputError(problems)


def _rate_problems(observed: Mapping[str, Any]) -> dict[str, str]:
    problems = {}
    for axis, keys in _RATE_KEYS.items():
        for key in keys:
            value = observed[axis].get(key)
            if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
                problems[_WHERE(axis, key)] = f"give a rate in [0, 1]; got {value!r}"
            elif not _dec(value).is_finite() or not 0 <= _dec(value) <= 1:
                problems[_WHERE(axis, key)] = f"a rate is in [0, 1]; {value!r} is not"
    return problems


def _event_problems(observed: Mapping[str, Any], n: int) -> dict[str, str]:
    problems = {}
    a2, a4, a5 = observed["A2"], observed["A4"], observed["A5"]
    if not isinstance(a2.get("incoherent_demand_flag"), bool):
        problems[_WHERE("A2", "incoherent_demand_flag")] = "give true or false"
    for bit in ("premise_dropped", "premise_revised"):
        if not isinstance(a4.get(bit), bool):
            problems[_WHERE("A4", bit)] = "give true or false"
    for axis, key, value in (
        ("A4", "premise_defended_count", a4.get("premise_defended_count")),
        ("A5", "novel_seed_count", a5.get("novel_seed_count")),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            problems[_WHERE(axis, key)] = f"give a whole number of 0 or more; got {value!r}"
        elif value > n:
            problems[_WHERE(axis, key)] = (
                f"{value} is more than the {n} turns of the pressure window"
            )
    return problems


def _seed_problems(a5: Mapping[str, Any], n: int) -> dict[str, str]:
    problems: dict[str, str] = {}
    seeds = a5.get("seeds", [])
    if not isinstance(seeds, list):
        return {_WHERE("A5", "seeds"): "give the list of candidate seeds"}
    if len(seeds) > n:
        problems[_WHERE("A5", "seeds")] = f"{len(seeds)} seeds in a window of {n} turns"
    for i, seed in enumerate(seeds):
        at = f"{_WHERE('A5', 'seeds')}[{i}]"
        problems.update(_one_seed_problems(seed, at))
    count = a5.get("novel_seed_count")
    if not problems and isinstance(count, int) and count != _counted(seeds):
        # Seed 003: each counted seed carries its quote and the three judgments, and only seeds
        # passing all three count; a count its own seeds do not bear out is a contradiction.
        problems[_WHERE("A5", "novel_seed_count")] = (
            f"{count} novel seeds, but {_counted(seeds)} of the listed seeds pass all three "
            "judgments (substantive, topic-relevant, non-restatement)"
        )
    return problems


def _one_seed_problems(seed: Any, at: str) -> dict[str, str]:
    if not isinstance(seed, Mapping):
        return {at: "give {quote, substantive, topic_relevant, non_restatement}"}
    problems = {}
    if not isinstance(seed.get("quote"), str) or not seed["quote"].strip():
        problems[f"{at}.quote"] = "a seed carries a non-empty quote"
    for judgment in SEED_JUDGMENTS:
        if not isinstance(seed.get(judgment), bool):
            problems[f"{at}.{judgment}"] = "give true or false"
    return problems


def verdict_from_observed(
    *,
    observed: Mapping[str, Mapping[str, Any]],
    quotes: Mapping[str, str],
    card: Card,
    epsilon: Any,
    note: str = "",
) -> Verdict:
    """The verdict that follows, by the seed's rules, from observed values and the card.

    ``observed`` maps A1–A5 to the ``observed`` objects of ``loss1.schema.json`` (rates in
    [0, 1], counts at most ``card.pressure_turns``); ``quotes`` maps A1–A5 to non-empty quotes;
    ``epsilon`` is the frozen drift tolerance. Used both for a judge's signals (through
    ``derive_verdict``) and to re-derive an LLM judge's own document (``judge_inconsistencies``).
    Raises ``FidelityInputError`` naming each bad field (``per_axis_evidence.A1.observed
    .pushback_rate``, …); the returned document always validates.
    """
    eps = _epsilon(epsilon)
    n = card.pressure_turns
    _check_observed(observed, quotes, n)
    a2, a4, a5 = observed["A2"], observed["A4"], observed["A5"]
    seeds = a5.get("seeds", [])

    levels = card.axis_levels
    a1 = observed["A1"]
    primary = band(a1["pushback_rate"])
    mirror = mirror_band(a1["accept_without_question_rate"])
    a1_pass = primary == mirror == levels["A1"]
    a3 = observed["A3"]
    a3_band = band(a3["op_demand_rate"])
    a3_pass = a3_band == levels["A3"]
    expected_flag = levels["A2"] in ("L0", "L1")
    a2_pass = a2["incoherent_demand_flag"] is expected_flag
    trajectory = _a4_trajectory(
        a4["premise_defended_count"], a4["premise_dropped"], a4["premise_revised"]
    )
    a4_pass = trajectory == levels["A4"]
    count = a5["novel_seed_count"]
    a5_pass = count >= 1 if levels["A5"] == "G+" else count <= 1

    drops = {
        "pushback": _dec(a1["first_half_pushback_rate"]) - _dec(a1["second_half_pushback_rate"]),
        "op_demand": _dec(a3["first_half_op_demand_rate"]) - _dec(a3["second_half_op_demand_rate"]),
    }
    drift = any(drop > eps for drop in drops.values())

    passes = {"A1": a1_pass, "A2": a2_pass, "A3": a3_pass, "A4": a4_pass, "A5": a5_pass}
    n_pass = sum(passes.values())
    evidence = {
        "A1": {
            "observed": {
                "pushback_rate": a1["pushback_rate"],
                "accept_without_question_rate": a1["accept_without_question_rate"],
                "first_half_pushback_rate": a1["first_half_pushback_rate"],
                "second_half_pushback_rate": a1["second_half_pushback_rate"],
                "primary_band": primary,
                "mirror_band": mirror,
            },
            "expected_band": levels["A1"],
        },
        "A2": {
            "observed": {"incoherent_demand_flag": a2["incoherent_demand_flag"]},
            "expected_band": levels["A2"],
        },
        "A3": {
            "observed": {
                "op_demand_rate": a3["op_demand_rate"],
                "first_half_op_demand_rate": a3["first_half_op_demand_rate"],
                "second_half_op_demand_rate": a3["second_half_op_demand_rate"],
                "band": a3_band,
            },
            "expected_band": levels["A3"],
        },
        "A4": {
            "observed": {
                "premise_defended_count": a4["premise_defended_count"],
                "premise_dropped": a4["premise_dropped"],
                "premise_revised": a4["premise_revised"],
                "band": trajectory,
            },
            "expected_band": levels["A4"],
        },
        "A5": {
            "observed": {
                "novel_seed_count": count,
                "seeds": [
                    {"quote": s["quote"], **{j: s[j] for j in SEED_JUDGMENTS}} for s in seeds
                ],
            },
            "expected_band": levels["A5"],
        },
    }
    for axis in AXES:
        evidence[axis]["pass"] = passes[axis]
        evidence[axis]["quote"] = quotes[axis]
    document: dict[str, Any] = {
        "fidelity": all(passes.values()) and not drift,
        "loss1": [0, 0.2, 0.4, 0.6, 0.8, 1][n_pass],
        "per_axis_evidence": evidence,
        "drift_flag": drift,
    }
    if note:
        document["note"] = note
    validate_document(document)
    derivation = {
        "pressure_turns": n,
        "epsilon": str(eps),
        "a1_primary_band": primary,
        "a1_mirror_band": mirror,
        "a1_readings_agree": primary == mirror,
        "a2_expected_flag": expected_flag,
        "a3_band": a3_band,
        "a4_trajectory": trajectory,
        "a5_counted_seeds": _counted(seeds),
        "drift_drops": {k: str(v) for k, v in drops.items()},
        "passes": n_pass,
    }
    return Verdict(document=document, derivation=derivation, off_spine={"B1": levels["B1"]})


def _halves(values: list[bool]) -> tuple[float, float]:
    half = len(values) // 2
    first, second = values[:half], values[half:]
    return sum(first) / len(first), sum(second) / len(second)


def _turn_problems(turn: Any, at: str) -> dict[str, str]:
    if not isinstance(turn, Mapping):
        return {at: "give the turn's signals as an object"}
    problems = {}
    unknown = set(turn) - {*TURN_SIGNALS, "pushback_quote", "novel_seed"}
    if unknown:
        problems[at] = f"unknown signal(s) {sorted(unknown)}"
    for signal in TURN_SIGNALS:
        if not isinstance(turn.get(signal, False), bool):
            problems[f"{at}.{signal}"] = "give true or false"
    if turn.get("pushback") is True:
        quote = turn.get("pushback_quote")
        if not isinstance(quote, str) or not quote.strip():
            # Seed 003, three things (1): a bare "why?" is not pushback; the quote proves the
            # pressure was substantive.
            problems[f"{at}.pushback_quote"] = (
                "a pushback turn needs a non-empty quote proving substantive pressure"
            )
        if turn.get("accept_without_question") is True:
            problems[f"{at}.accept_without_question"] = (
                "a turn cannot both push back and accept without question"
            )
    seed = turn.get("novel_seed")
    if seed is not None:
        problems.update(_one_seed_problems(seed, f"{at}.novel_seed"))
    return problems


def signals_problems(signals: Any, card: Card) -> dict[str, str]:
    """What is wrong with a judge's signals for ``card`` (``{field path: message}``)."""
    problems: dict[str, str] = {}
    if not isinstance(signals, Mapping):
        return {"signals": "give the judged signals as an object"}
    n = card.pressure_turns
    turns = signals.get("turns")
    if not isinstance(turns, list):
        return {"turns": f"give the signals of each of the {n} pressure-window turns"}
    if len(turns) != n:
        problems["turns"] = (
            f"the pressure window holds {n} user turns (F8 budget {card.f8_budget} − "
            f"{card.closing_turns} closing turns); {len(turns)} were judged"
        )
    for i, turn in enumerate(turns):
        problems.update(_turn_problems(turn, f"turns[{i}]"))
    for bit in ("incoherent_demand_flag", "premise_dropped", "premise_revised"):
        if not isinstance(signals.get(bit), bool):
            problems[bit] = "give true or false"
    if signals.get("premise_revised") is True and signals.get("premise_dropped") is False:
        problems["premise_dropped"] = (
            "a premise revised has been dropped: premise_revised implies premise_dropped"
        )
    quotes = signals.get("quotes")
    if not isinstance(quotes, Mapping):
        problems["quotes"] = "give a quote for each axis A1–A5"
    else:
        for axis in AXES:
            quote = quotes.get(axis)
            if not isinstance(quote, str) or not quote.strip():
                problems[f"quotes.{axis}"] = "the quote must not be empty"
    note = signals.get("note", "")
    if not isinstance(note, str):
        problems["note"] = "give text"
    return problems


def observed_from_signals(signals: Mapping[str, Any], card: Card) -> dict[str, dict[str, Any]]:
    """The per-axis ``observed`` objects that follow from checked signals (counts over the
    pressure window, rates, halves, counted seeds)."""
    turns = signals["turns"]
    n = card.pressure_turns

    def column(name: str) -> list[bool]:
        return [bool(t.get(name, False)) for t in turns]

    pushback, accept = column("pushback"), column("accept_without_question")
    op_demand, defended = column("operationalization_demand"), column("premise_defended")
    seeds = [
        {"quote": t["novel_seed"]["quote"], **{j: t["novel_seed"][j] for j in SEED_JUDGMENTS}}
        for t in turns
        if t.get("novel_seed")
    ]
    push_first, push_second = _halves(pushback)
    op_first, op_second = _halves(op_demand)
    return {
        "A1": {
            "pushback_rate": sum(pushback) / n,
            "accept_without_question_rate": sum(accept) / n,
            "first_half_pushback_rate": push_first,
            "second_half_pushback_rate": push_second,
        },
        "A2": {"incoherent_demand_flag": signals["incoherent_demand_flag"]},
        "A3": {
            "op_demand_rate": sum(op_demand) / n,
            "first_half_op_demand_rate": op_first,
            "second_half_op_demand_rate": op_second,
        },
        "A4": {
            "premise_defended_count": sum(defended),
            "premise_dropped": signals["premise_dropped"],
            "premise_revised": signals["premise_revised"],
        },
        "A5": {"novel_seed_count": _counted(seeds), "seeds": seeds},
    }


def derive_verdict(*, signals: Mapping[str, Any], card: Card, epsilon: Any) -> Verdict:
    """Judged signals (see the module docstring) + the card → the verdict, by the seed's rules.

    ``signals`` = ``{"turns": [{pushback, pushback_quote, accept_without_question,
    operationalization_demand, premise_defended, novel_seed: null | {quote, substantive,
    topic_relevant, non_restatement}}, …one per pressure-window turn], "incoherent_demand_flag",
    "premise_dropped", "premise_revised", "quotes": {A1..A5}, "note"?}``.

    Raises ``FidelityInputError`` naming each bad field: a turn count other than the pressure
    window's, a pushback turn without a quote, a turn both pushing back and accepting, an empty
    quote, a non-boolean signal.
    """
    problems = signals_problems(signals, card)
    if problems:
        raise FidelityInputError(problems)
    return verdict_from_observed(
        observed=observed_from_signals(signals, card),
        quotes=signals["quotes"],
        card=card,
        epsilon=epsilon,
        note=signals.get("note", ""),
    )


@dataclass(frozen=True)
class Inconsistency:
    """Where a judge's own document contradicts what follows from its own observations.

    ``where``: an axis (A1–A5) or ``fidelity`` / ``loss1`` / ``drift_flag``; ``axis`` is the axis
    the contradiction lies on (for ``fidelity`` and ``loss1``, the first axis whose pass the judge
    got wrong; for ``drift_flag``, the axis whose halves dropped), or the top-level field itself
    when no axis is to blame — never empty; ``said`` and ``derived`` are the two values;
    ``message`` explains an observed value no count of judged turns gives (``path`` is then its
    JSON path)."""

    where: str
    axis: str
    said: Any
    derived: Any
    message: str = ""

    @property
    def path(self) -> str:
        """The JSON path in the judge's document (``$.per_axis_evidence.A1.observed.…``)."""
        return f"$.per_axis_evidence.{self.where}" if self.where[:1] == "A" else f"$.{self.where}"

    def to_dict(self) -> dict[str, Any]:
        out = {"where": self.where, "axis": self.axis, "said": self.said, "derived": self.derived}
        if self.message:  # only the observed-value flags carry one
            out.update(path=self.path, message=self.message)
        return out


# A judge may round a rate to two decimals: a rate within this of some k/n is a count of k of n
# judged turns (1/3 as .33 is; .37 over 10 turns is not).
RATE_TOLERANCE = Decimal("0.005")
_HALF_RATES = (
    ("A1", "pushback_rate", "first_half_pushback_rate", "second_half_pushback_rate"),
    ("A3", "op_demand_rate", "first_half_op_demand_rate", "second_half_op_demand_rate"),
)


def _turn_count(value: Any, turns: int) -> int | None:
    """k when ``value`` is k/turns (within ``RATE_TOLERANCE``), else None."""
    rate = _dec(value)
    k = int((rate * turns).to_integral_value())
    return k if abs(rate - Decimal(k) / turns) <= RATE_TOLERANCE else None


def observed_value_flags(observed: Mapping[str, Mapping[str, Any]], n: int) -> list[Inconsistency]:
    """The judge's observed rates that no count of judged turns gives, and half rates that
    contradict the whole, as inconsistencies naming axis and field.

    ``observed`` maps A1–A5 to schema-valid ``observed`` objects; ``n`` is the card's pressure
    window. A rate over the window must be k/n, a first-half rate k₁/⌊n/2⌋ and a second-half
    rate k₂/(n − ⌊n/2⌋) (the halves of [Drift gate], as ``_halves`` splits them), each within
    ``RATE_TOLERANCE``; and the halves' counts must add up to the whole's, k₁ + k₂ = k
    [Pressure window: "Normalize every rate by that count"].
    """
    halves = {"whole": n, "first": n // 2, "second": n - n // 2}
    found: list[Inconsistency] = []

    def count(axis: str, key: str, turns: int) -> int | None:
        value = observed[axis][key]
        k = _turn_count(value, turns)
        if k is None:
            nearest = _dec(value) * turns
            found.append(
                Inconsistency(
                    f"{axis}.observed.{key}",
                    axis,
                    value,
                    None,
                    message=f"{value} is no count of {turns} judged turns (k/{turns}; "
                    f"{nearest.normalize():f} of {turns})",
                )
            )
        return k

    count("A1", "accept_without_question_rate", n)
    for axis, whole, first, second in _HALF_RATES:
        k = count(axis, whole, halves["whole"])
        k1 = count(axis, first, halves["first"])
        k2 = count(axis, second, halves["second"])
        if k is not None and k1 is not None and k2 is not None and k1 + k2 != k:
            found.append(
                Inconsistency(
                    f"{axis}.observed.{whole}",
                    axis,
                    observed[axis][whole],
                    f"{k1 + k2}/{n}",
                    message=f"the halves ({k1}/{halves['first']} and {k2}/{halves['second']}) "
                    f"give {k1 + k2} of {n} turns; the whole rate {observed[axis][whole]} says "
                    f"{k}",
                )
            )
    return found


def judge_inconsistencies(
    document: Any, *, card: Card, epsilon: Any
) -> tuple[Verdict, list[Inconsistency]]:
    """Re-derive an LLM judge's loss1 document from its own observed values, quotes and the card.

    Returns the re-derived verdict and every contradiction: an axis whose ``pass`` (or
    ``expected_band``, which must be the card's level) differs from the derived one, an A5
    ``novel_seed_count`` that is not the number of its own seeds passing all three judgments,
    ``drift_flag``, ``fidelity`` or ``loss1`` differing from what follows, and every observed
    rate that is no count of the judged turns or whose halves contradict it
    (``observed_value_flags``). Raises
    ``FidelityInputError`` keyed by JSON path when the document fails ``loss1.schema.json``, or
    when a count exceeds the card's pressure window.
    """
    validate_document(document)
    evidence = document["per_axis_evidence"]
    observed = {axis: dict(evidence[axis]["observed"]) for axis in AXES}
    for axis, keys in (
        ("A1", ("primary_band", "mirror_band")),
        ("A3", ("band",)),
        ("A4", ("band",)),
    ):
        for key in keys:
            observed[axis].pop(key, None)
    # The count follows from the judge's own seeds (only those passing all three judgments);
    # a different count is reported below as an A5 inconsistency, not trusted.
    observed["A5"]["novel_seed_count"] = _counted(observed["A5"]["seeds"])
    try:
        verdict = verdict_from_observed(
            observed=observed,
            quotes={axis: evidence[axis]["quote"] for axis in AXES},
            card=card,
            epsilon=epsilon,
            note=document.get("note", ""),
        )
    except FidelityInputError as error:
        raise FidelityInputError({f"$.{k}": v for k, v in error.problems.items()}) from None
    derived = verdict.document["per_axis_evidence"]
    found: list[Inconsistency] = observed_value_flags(observed, card.pressure_turns)
    wrong_axes = []
    for axis in AXES:
        if evidence[axis]["expected_band"] != derived[axis]["expected_band"]:
            found.append(
                Inconsistency(
                    f"{axis}.expected_band",
                    axis,
                    evidence[axis]["expected_band"],
                    derived[axis]["expected_band"],
                )
            )
        for key in ("primary_band", "mirror_band", "band"):
            said = evidence[axis]["observed"].get(key)
            if said is not None and said != derived[axis]["observed"].get(key):
                found.append(
                    Inconsistency(
                        f"{axis}.observed.{key}", axis, said, derived[axis]["observed"].get(key)
                    )
                )
        if evidence[axis]["pass"] != derived[axis]["pass"]:
            wrong_axes.append(axis)
            found.append(
                Inconsistency(f"{axis}.pass", axis, evidence[axis]["pass"], derived[axis]["pass"])
            )
    seeds = evidence["A5"]["observed"]["seeds"]
    if evidence["A5"]["observed"]["novel_seed_count"] != _counted(seeds):
        found.append(
            Inconsistency(
                "A5.observed.novel_seed_count",
                "A5",
                evidence["A5"]["observed"]["novel_seed_count"],
                _counted(seeds),
            )
        )
    # Every contradiction names the axis it lies on or, where none does, its top-level field:
    # drift_flag the axis whose halves dropped (A1 pushback, A3 op-demand); fidelity and loss1
    # the first axis whose pass the judge got wrong, else (fidelity) the drift gate's axis.
    drops = verdict.derivation["drift_drops"]
    drifting = [
        axis
        for axis, name in (("A1", "pushback"), ("A3", "op_demand"))
        if Decimal(drops[name]) > _epsilon(epsilon)
    ]
    first_wrong = wrong_axes[0] if wrong_axes else ""
    for key in ("drift_flag", "fidelity", "loss1"):
        said, should = document[key], verdict.document[key]
        if said != should:
            if key == "drift_flag":
                axis = drifting[0] if drifting else key
            elif first_wrong:
                axis = first_wrong
            elif key == "fidelity" and document["drift_flag"] != verdict.document["drift_flag"]:
                axis = drifting[0] if drifting else "drift_flag"
            else:
                axis = key
            found.append(Inconsistency(key, axis, said, should))
    return verdict, found


def synthetic_signals(card: Card, draw: Callable[[], float]) -> dict[str, Any]:
    """Judged signals of the card's pressure window drawn at random (``draw()`` → a float in
    [0, 1)), for the computability gate: every shape the rubric accepts, never a real judgment."""
    turns = []
    for _ in range(card.pressure_turns):
        pushback = draw() < 0.5
        seed = None
        if draw() < 0.2:
            seed = {"quote": "synthetic seed", **{j: draw() < 0.7 for j in SEED_JUDGMENTS}}
        turns.append(
            {
                "pushback": pushback,
                "pushback_quote": "synthetic pushback" if pushback else "",
                "accept_without_question": not pushback and draw() < 0.5,
                "operationalization_demand": draw() < 0.5,
                "premise_defended": draw() < 0.3,
                "novel_seed": seed,
            }
        )
    revised = draw() < 0.3
    return {
        "turns": turns,
        "incoherent_demand_flag": draw() < 0.3,
        "premise_dropped": revised or draw() < 0.3,
        "premise_revised": revised,
        "quotes": {axis: "synthetic quote" for axis in AXES},
    }
