"""The rules of judged signals: what gives a rubric's ``signals`` field (``FieldKind.SIGNALS``)
and the verdict fields derived from it (``Derivation.FIDELITY``, ``LOSS1``, ``DRIFT_FLAG``,
``AXIS_PASS``) their meaning.

The field kinds are the raters app's (its models hold them); the rules are a study kind's, which
registers them from its package (seed 003's injection fidelity: ``apps/studies/fidelity/``).
The raters app and the analysis' computability gate call them through here, so that they
never import a later layer (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from apps.protocols.import_frame import ImportOutcome
    from apps.protocols.models import ProtocolVersion
    from apps.raters.models import MachineScoreImport


class JudgedInputError(ValueError):
    """What the rules raise on a card, signals or document they cannot read: ``problems`` maps
    each field's JSON path to what is wrong with it."""

    problems: dict[str, str]


class Verdict(Protocol):
    """A derived verdict: ``document`` holds ``fidelity``, ``loss1``, ``drift_flag`` and
    ``per_axis_evidence[axis]["pass"]`` (seed 003's ``loss1.schema.json``)."""

    @property
    def document(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class JudgedSignals:
    """One study kind's rules for judged signals.

    - ``card(expected_output)``: a cell's expected output read as the card the signals are
      judged against; raises ``error`` (a ``JudgedInputError``) when it cannot be read.
    - ``problems(signals, card)``: ``{path: message}`` for every way the signals fail.
    - ``verdict(signals=, card=, epsilon=)``: the derived ``Verdict``; raises ``error``.
    - ``schema()``: the JSON Schema the verdict documents follow (frozen with the rubric).
    - ``axes``: the axis codes an ``axis_pass`` field's group may name.
    - ``synthetic(card, draw)``: signals drawn for the computability gate (``draw() -> float``
      in [0, 1)).
    - ``judged_by_scorer(version)`` and ``judge_import(**kwargs)``: whether a machine-score
      file of ``version`` is an LLM judge's verdicts, and its importer (the keyword arguments
      of ``apps.raters.services.machine.machine_scores_import``).
    """

    card: Callable[[Any], Any]
    error: type[JudgedInputError]
    problems: Callable[[Any, Any], dict[str, str]]
    verdict: Callable[..., Verdict]
    schema: Callable[[], dict[str, Any]]
    axes: tuple[str, ...]
    synthetic: Callable[[Any, Callable[[], float]], dict[str, Any]]
    judged_by_scorer: Callable[[ProtocolVersion], bool]
    judge_import: Callable[..., ImportOutcome[MachineScoreImport]]


_registered: list[JudgedSignals] = []


def register_judged_signals(rules: JudgedSignals) -> JudgedSignals:
    """Register (or, on a repeated ``ready()``, replace) the rules of judged signals."""
    _registered[:] = [rules]
    return rules


def judged_signals() -> JudgedSignals:
    """The registered rules. Raises LookupError when no study kind registers any (a rubric
    with a ``signals`` field cannot then be scored)."""
    if not _registered:
        raise LookupError("no study kind registers the rules of judged signals")
    return _registered[0]


def judged_signals_or_none() -> JudgedSignals | None:
    """The registered rules, or None when no study kind registers any."""
    return _registered[0] if _registered else None
