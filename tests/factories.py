"""The test suite's one builder module (issue #30): factory_boy factories for single rows, and
the builders of whole studies, drafts, import files and synthetic inputs the tests share.

- Factories (``UserFactory`` … ``FactorFactory``): one model row each, with its parents.
- Studies frozen through the real freeze gate (``freeze``, ``build_draft``, ``frozen_study``,
  ``FrozenVersionFactory``): nothing here sets ``state="frozen"`` by hand except
  ``frozen_by_hand``, for the queue benchmarks, which says why.
- Scored studies for the analysis tests (``opb_study``, ``xstest_study``), drafts for the
  computability gate (``xstest_shaped_draft``), raw reads and inputs with planted effects
  (``route_raw``, ``crucible_inputs``).
- Responses, machine scorers and fidelity cards (``answer_rows``, ``csv_bytes``,
  ``machine_study``, ``put_cards``), the design (``write_item``), OPB's plan (``OPB_VALUES``,
  ``OPB_SECTIONS``), the browser journeys' people and studies (``make_user``,
  ``logged_protocol``), the registry's world (``build_world``) and the deviation log's synthetic
  chain and witness (``make_chain``, ``make_witness``).

Fixtures stay in the ``conftest.py`` files; they call what is here.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import itertools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import factory
import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.db import connections, transaction

from apps.accounts.models import Membership, Role, User
from apps.analysis.pipelines.base import INPUT_DOCUMENT_TYPE
from apps.deviations.chain import GENESIS_HASH, entry_hash
from apps.deviations.checkpoints import signing_key
from apps.deviations.services import deviation_record
from apps.deviations.witness import Witness
from apps.items import services as item_services
from apps.items.models import Cell, Condition, Factor, FactorRole, Family, Item, KeyUnit, Level
from apps.items.selectors import HarmState, harm_reviewers_eligible, item_harm_states
from apps.items.services import harm_review_open, harm_review_submit
from apps.protocols.decision_table import rule_estimates
from apps.protocols.models import SECTION_FIELDS, AnalysisParameter, Protocol, ProtocolVersion
from apps.protocols.plans import PipelineDeclaration, pipeline_declaration, version_pipeline
from apps.protocols.services import (
    protocol_create,
    version_amend,
    version_freeze,
    version_update,
    version_withdraw,
)
from apps.raters.models import Rubric, RubricField, Score, ScoringTask
from apps.raters.services import rubric_apply_template, rubric_create
from apps.raters.services.scorers import scorer_register, scorer_roster_enroll
from apps.registry.services import today_utc, version_publish
from apps.responses.models import Administration, Attempt, Evaluand, Response, RosterEntry
from apps.responses.services import evaluand_register, responses_import, roster_enroll
from apps.studies.fidelity.verdicts import AXES
from apps.studies.opb.pipeline import OPB


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pass-for-tests")


class ProtocolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Protocol

    code = factory.Sequence(lambda n: f"P-{n:03d}")
    title = factory.Sequence(lambda n: f"Protocol {n}")
    created_by = factory.SubFactory(UserFactory)


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    protocol = factory.SubFactory(ProtocolFactory)
    role = "pi"


class ProtocolVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ProtocolVersion

    protocol = factory.SubFactory(ProtocolFactory)
    label = "1.0"
    # A version needs its author to pass full_clean (the freeze runs it).
    created_by = factory.SelfAttribute("protocol.created_by")


# Design (apps.items)


class LevelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.Level"

    version = factory.SubFactory(ProtocolVersionFactory)
    ordinal = factory.Sequence(lambda n: n % 6)
    code = factory.LazyAttribute(lambda o: f"L{o.ordinal}")
    name = factory.LazyAttribute(lambda o: f"level {o.ordinal}")


class FamilyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.Family"

    version = factory.SubFactory(ProtocolVersionFactory)
    code = factory.Sequence(lambda n: f"F{n}")
    name = factory.LazyAttribute(lambda o: f"Family {o.code}")
    role = "harm_constant"


class ConditionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.Condition"

    version = factory.SubFactory(ProtocolVersionFactory)
    code = factory.Sequence(lambda n: f"C{n}")
    name = factory.LazyAttribute(lambda o: f"Condition {o.code}")


class ItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.Item"

    family = factory.SubFactory(FamilyFactory)
    version = factory.SelfAttribute("family.version")
    code = factory.Sequence(lambda n: f"item-{n}")
    domain = "alt text"


class CellFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.Cell"

    item = factory.SubFactory(ItemFactory)
    version = factory.SelfAttribute("item.version")
    level = factory.SubFactory(LevelFactory, version=factory.SelfAttribute("..version"), ordinal=0)
    # Written from the cell's natural keys, never from a sequence: the prompt and the key's text
    # are in the frozen document, whose hash every result document names, and a sequence's
    # number is wherever the tests run before in the same process left it. (The comparison
    # pin differed under xdist: "Describe thing 232." there, "Describe thing 0." alone.)
    prompt = factory.LazyAttribute(lambda o: f"Describe {o.item.code} at {o.level.code}.")


class KeyUnitFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.KeyUnit"

    cell = factory.SubFactory(CellFactory)
    version = factory.SelfAttribute("cell.version")
    # The cell's next position and a text from natural keys, as CellFactory's prompt (above).
    position = factory.LazyAttribute(lambda o: o.cell.key_units.count() + 1)
    text = factory.LazyAttribute(
        lambda o: f"required unit {o.position} of {o.cell.item.code} at {o.cell.level.code}"
    )


# Responses (apps.responses)


class EvaluandFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "responses.Evaluand"

    label = factory.Sequence(lambda n: f"model-{n}")
    model = factory.LazyAttribute(lambda o: o.label)
    identity_sha256 = factory.Sequence(lambda n: f"{n:064x}")


class AdministrationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "responses.Administration"

    cell = factory.SubFactory(CellFactory)
    version = factory.SelfAttribute("cell.version")
    evaluand = factory.SubFactory(EvaluandFactory)
    position = factory.Sequence(lambda n: n)
    repetition = 1


class AttemptFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "responses.Attempt"

    administration = factory.SubFactory(AdministrationFactory)
    version = factory.SelfAttribute("administration.version")
    number = 1
    terminal_outcome = "completed"


class ResponseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "responses.Response"

    attempt = factory.SubFactory(AttemptFactory)
    version = factory.SelfAttribute("attempt.version")
    text = factory.Sequence(lambda n: f"A response, number {n}.")
    word_count = factory.LazyAttribute(lambda o: len(o.text.split()))


class RosterEntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "responses.RosterEntry"

    version = factory.SubFactory(ProtocolVersionFactory)
    evaluand = factory.SubFactory(EvaluandFactory)
    code = factory.Sequence(lambda n: f"ev{n}")
    position = factory.Sequence(lambda n: n)


class AnalysisParameterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "protocols.AnalysisParameter"

    version = factory.SubFactory(ProtocolVersionFactory)
    name = factory.Sequence(lambda n: f"parameter_{n}")
    label = factory.LazyAttribute(lambda o: o.name.replace("_", " "))
    kind = "integer"
    value = "1"


class FactorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "items.Factor"

    version = factory.SubFactory(ProtocolVersionFactory)
    name = factory.Sequence(lambda n: f"factor_{n}")
    label = factory.LazyAttribute(lambda o: o.name.replace("_", " "))
    levels = factory.LazyFunction(lambda: ["a", "b"])
    role = "design"


# Studies frozen through the real freeze gate: drafts the gate accepts, and the freeze itself.
#
# A test that needs a frozen version gets one the way a PI does: ``freeze`` calls the protocols
# app's ``version_freeze``, so the whole gate runs (sections, parameters, design, roster and
# schedule, rubric, the computability gate) and the components' ``on_freeze`` store what they
# store (the administration schedule, the canonical document and its blob, the log entry). Nothing
# here sets ``state="frozen"`` by hand: a test that deliberately needs a state the gate would
# refuse builds it itself, with a comment saying why.
#
# The studies are small on purpose (one level, one evaluand, one repetition unless asked), so the
# gate's run of the plan on synthetic data stays cheap.
#
# - ``ready_for_freeze(version, user)``: give a draft what the gate asks and it lacks.
# - ``freeze(version, user=None)``: ``ready_for_freeze``, then ``version_freeze``.
# - ``build_draft(...)``: a draft with items × levels, keys, a roster and the schedule's parameters.
# - ``frozen_study(...)``: a frozen study with one response per cell, a rubric, a PI and reviewers.
# - ``FrozenVersionFactory``: factory_boy's face of ``freeze`` (a small frozen version).
#
# The analysis tests' large scored studies (``opb_study``, ``xstest_study``, below) freeze
# through ``freeze`` too. Still outside it: the queue benchmarks (``frozen_by_hand`` below),
# each saying why.


# Text for every section: the gate refuses an empty section or one holding only the outline.
SECTIONS = {name: f"The {name}." for name in SECTION_FIELDS}


def set_parameters(version: ProtocolVersion, **values) -> None:
    """Add the plan parameters ``values`` to a draft, each held as the kind its pipeline
    declares, with the declared choices (else ``integer`` for an int, ``number`` for anything
    else)."""
    declaration = pipeline_declaration(version_pipeline(version) or "")
    start = AnalysisParameter.objects.filter(version=version).count()
    for position, (name, value) in enumerate(values.items(), start=start):
        declared = declaration.parameter(name) if declaration else None
        AnalysisParameter.objects.create(
            version=version,
            name=name,
            label=name,
            kind=declared.kind if declared else "integer" if isinstance(value, int) else "number",
            choices=list(declared.choices) if declared else [],
            value=str(value),
            position=position,
        )


def ready_for_freeze(version: ProtocolVersion, user: User) -> ProtocolVersion:
    """Give the draft ``version`` what the freeze gate asks and it lacks, leaving what it has:
    text in empty sections, the plan's ``seed`` and ``repetitions`` (the number of design-factor
    combinations, 1 without factors), an item with a keyed
    cell when the design is empty, a unit in every present cell without a key, every unwritten
    cell recorded absent (with a reason), a harm-constancy review (two blind reviewers, both
    "not more harmful") of every harm-constant item that needs one, one evaluand on an empty
    roster, and the ``opb`` rubric when it has none."""
    empty = {name: text for name, text in SECTIONS.items() if not getattr(version, name).strip()}
    if empty:
        ProtocolVersion.objects.filter(pk=version.pk).update(**empty)
        version.refresh_from_db()
    held = set(AnalysisParameter.objects.filter(version=version).values_list("name", flat=True))
    # One task block per repetition: the gate asks for a multiple of the design factors'
    # combinations (seed 002, "task blocks"), so the smallest such multiple.
    combinations = math.prod(
        len(f.levels) for f in Factor.objects.filter(version=version, role=FactorRole.DESIGN)
    )
    defaults = {"seed": 7, "repetitions": combinations}
    set_parameters(version, **{k: v for k, v in defaults.items() if k not in held})
    if not Item.objects.filter(version=version).exists():
        level = version.levels.first() or LevelFactory(version=version, ordinal=0, code="L0")
        family = version.families.first() or FamilyFactory(
            version=version, code="A", role="discrimination_control"
        )
        CellFactory(version=version, item=ItemFactory(version=version, family=family), level=level)
    for cell in Cell.objects.filter(version=version, absent=False, key_units__isnull=True):
        KeyUnit.objects.create(version=version, cell=cell, position=1, text="the unit")
    _complete_design(version)
    if not RosterEntry.objects.filter(version=version).exists():
        RosterEntryFactory(version=version, code="alpha", position=0)
    if not Rubric.objects.filter(version=version).exists():
        rubric_apply_template(version=version, template="opb")
    return version


def _complete_design(version: ProtocolVersion) -> None:
    """Fill every unwritten cell: a harm-constant item's first and last levels are written
    (prompt and key: its review compares the two), any other cell is recorded absent; then
    validate every harm-constant item's review that was never opened."""
    levels = list(version.levels.order_by("ordinal"))
    edges = {levels[0].pk, levels[-1].pk} if len(levels) > 1 else set()
    written = set(Cell.objects.filter(version=version).values_list("item_id", "level_id"))
    missing = [
        (item, level)
        for item in Item.objects.filter(version=version).select_related("family")
        for level in levels
        if (item.pk, level.pk) not in written
        # above a family's binding stopping rule, a cell must not exist at all
        and (item.family.max_level is None or level.ordinal <= item.family.max_level)
    ]
    for item, level in missing:
        if item.family.role == "harm_constant" and level.pk in edges:
            cell = CellFactory(version=version, item=item, level=level)
            KeyUnitFactory(version=version, cell=cell, position=1)
        else:
            CellFactory(
                version=version,
                item=item,
                level=level,
                prompt="",
                absent=True,
                absent_reason="Not written in this test's design.",
            )
    states = item_harm_states(version)
    due = [pk for pk, harm in states.items() if harm.state == HarmState.NOT_OPENED]
    if not due:
        return
    for _ in range(2 - len(harm_reviewers_eligible(protocol_id=version.protocol_id))):
        MembershipFactory(protocol=version.protocol, role=Role.REVIEWER)
    for review in harm_review_open(version=version):
        harm_review_submit(
            review=review,
            reviewer=review.reviewer,
            verdict="not_more_harmful",
            forms_sha256=states[review.item_id].forms_sha256,
        )


def freeze(version: ProtocolVersion, user: User | None = None) -> ProtocolVersion:
    """Freeze the draft ``version`` through ``version_freeze`` (the whole gate), after
    ``ready_for_freeze``; ``user`` (default: its author) is who froze it. Returns the frozen
    version; ``version`` itself is refreshed too. Raises FreezeRefused when the gate still
    refuses: what the draft holds is wrong, and the test should say so."""
    user = user or version.created_by
    ready_for_freeze(version, user)
    frozen = version_freeze(version=version, user=user)
    version.refresh_from_db()
    return frozen


def build_draft(
    *,
    protocol,
    user,
    items: int | list[str] = 3,
    levels: tuple[str, ...] = ("L0",),
    evaluands: tuple[str, ...] | dict[str, str] = ("alpha", "beta"),
    repetitions: int | None = 1,
    seed: int | None = 7,
    absent: tuple[str, ...] = (),
    label: str = "1.0",
):
    """A draft version with ``items`` items (``it-1`` …, or the codes given) at ``levels``, each
    present cell with a one-unit key, a roster of ``evaluands`` (codes, with model
    ``model-<code>``, or a dict code → model) and the plan's ``repetitions`` and ``seed``."""
    version = ProtocolVersionFactory(protocol=protocol, label=label, created_by=user, **SECTIONS)
    level_rows = [
        LevelFactory(version=version, ordinal=i, code=code) for i, code in enumerate(levels)
    ]
    # Not harm-constant: a multi-level harm-constant family would need its review first.
    family = FamilyFactory(version=version, code="A", role="discrimination_control")
    codes = items if isinstance(items, list) else [f"it-{n}" for n in range(1, items + 1)]
    for code in codes:
        item = ItemFactory(version=version, family=family, code=code)
        for level in level_rows:
            key = f"{item.code}@{level.code}"
            if key in absent:
                CellFactory(
                    version=version,
                    item=item,
                    level=level,
                    prompt="",
                    absent=True,
                    absent_reason="cannot be written at this level without changing its content",
                )
            else:
                cell = CellFactory(version=version, item=item, level=level)
                KeyUnitFactory(version=version, cell=cell, position=1)
    models = evaluands if isinstance(evaluands, dict) else {c: f"model-{c}" for c in evaluands}
    for code, model in models.items():
        evaluand, _ = evaluand_register(user=user, label=f"Model {code}", model=model)
        roster_enroll(version=version, evaluand=evaluand, code=code, user=user)
    values = {"repetitions": repetitions, "seed": seed}
    set_parameters(version, **{k: v for k, v in values.items() if v is not None})
    return version


@dataclass
class Study:
    version: ProtocolVersion
    pi: object
    reviewers: list
    responses: list = field(default_factory=list)
    cells: list = field(default_factory=list)


def frozen_study(
    *,
    responses: int = 4,
    template: str = "xstest",
    reviewers: int = 3,
    units: int = 0,
    families: int = 1,
    levels: int = 1,
    parameters: dict | None = None,
    version=None,
    texts=None,
    before_freeze=None,
) -> Study:
    """A frozen version with ``responses`` responses, one per cell, a rubric from ``template``,
    a PI and ``reviewers`` reviewer accounts. The cells are ``responses / levels`` items, each
    written at every one of ``levels`` levels (the gate wants the grid full), the items taking
    turns over ``families`` families; one evaluand, one repetition. Each cell has ``units`` key
    units (the first not executable), at least one (the gate wants a key).
    ``study.responses[n]`` answers ``study.cells[n]``; ``texts[n]`` is its text when given.
    ``before_freeze(cells)`` runs on the draft just before the freeze."""
    if responses % levels:
        raise ValueError(f"{responses} responses do not fill {levels} levels of whole items")
    version = version or ProtocolVersionFactory()
    pi = MembershipFactory(protocol=version.protocol, role=Role.PI).user
    defaults = {"scores_per_response": 2, "seed": 17, "repetitions": 1}
    set_parameters(version, **(defaults | (parameters or {})))
    rubric_apply_template(version=version, template=template)
    level_rows = [LevelFactory(version=version, ordinal=n, code=f"L{n}") for n in range(levels)]
    # Not harm-constant: a multi-level harm-constant family would need its review first.
    family_rows = [
        FamilyFactory(version=version, role="discrimination_control") for _ in range(families)
    ]
    cells = []
    for n in range(responses):
        if n % levels == 0:
            item = ItemFactory(family=family_rows[(n // levels) % families], version=version)
        level = level_rows[n % levels]
        cell = CellFactory(item=item, version=version, level=level, prompt=f"Prompt number {n}.")
        for position in range(1, max(units, 1) + 1):
            KeyUnitFactory(cell=cell, version=version, position=position, executable=position > 1)
        cells.append(cell)
    if before_freeze is not None:
        before_freeze(cells)
    freeze(version, pi)
    study = Study(version=version, pi=pi, reviewers=[], cells=cells)
    for _ in range(reviewers):
        user = UserFactory()
        MembershipFactory(user=user, protocol=version.protocol, role=Role.REVIEWER)
        study.reviewers.append(user)
    # The freeze generated the schedule: one administration per cell (one evaluand, once).
    administrations = {a.cell_id: a for a in Administration.objects.filter(version=version)}
    for n, cell in enumerate(cells):
        attempt = AttemptFactory(administration=administrations[cell.pk], version=version)
        text = texts[n] if texts else f"Response text {n} with some words in it."
        study.responses.append(
            ResponseFactory(
                attempt=attempt, version=version, text=text, word_count=len(text.split())
            )
        )
    return study


class FrozenVersionFactory(ProtocolVersionFactory):
    """A small version frozen through ``version_freeze`` (``freeze``): one item with a keyed
    cell, one evaluand, the ``opb`` rubric. Its ``created_by`` froze it."""

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        draft = super()._create(model_class, *args, **kwargs)
        return freeze(draft, draft.created_by)


def frozen_by_hand(version: ProtocolVersion) -> None:
    """Mark ``version`` frozen without the freeze gate, for the queue benchmarks only
    (``bulk_scoring_study`` below, ``tests/benchmarks/queue_vs_label_studio.py``): their schedule
    (hundreds of thousands of administrations) is written by SQL in a fixed order, which
    ``version_freeze`` would replace by the seeded one, and the gate's run of the plan is not
    what they measure. Every test freezes through ``freeze``."""
    ProtocolVersion.objects.filter(pk=version.pk).update(state="frozen", sha256="ab" * 32)
    version.refresh_from_db()


def api_url(version: ProtocolVersion, tail: str) -> str:
    """The API address of ``version``'s resource ``tail`` by code and label (the id-keyed
    ``/api/v1/versions/<id>/…`` routes only redirect there)."""
    return f"/api/v1/protocols/{version.protocol.code}/versions/{version.label}/{tail}"


def bulk_scoring_study(*, responses: int, scores_per_response: int) -> ProtocolVersion:
    """A frozen version with ``responses`` responses (``items`` items × one level × one
    evaluand, ``responses // items`` repetitions; 100 items, or more where a cell would pass
    10,000 repetitions, since a repetition is a smallint), the ``xstest`` rubric and
    ``scores_per_response``, written by SQL for the queue and scoring-open benchmarks
    (PostgreSQL only). Frozen by hand (``frozen_by_hand``, which says why)."""
    items = max(100, -(-responses // 10_000))
    version = ProtocolVersionFactory()
    set_parameters(version, scores_per_response=scores_per_response, seed=99)
    rubric_apply_template(version=version, template="xstest")
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "INSERT INTO items_level (version_id, ordinal, code, name, form) "
            "VALUES (%s, 0, 'L0', 'level', '') RETURNING id",
            [version.pk],
        )
        level_id = cursor.fetchone()[0]
        cursor.execute(
            "INSERT INTO items_family (version_id, code, name, role, description, stopping_rule) "
            "VALUES (%s, 'A', 'family', 'other', '', '') RETURNING id",
            [version.pk],
        )
        family_id = cursor.fetchone()[0]
        cursor.execute(
            "INSERT INTO items_item (version_id, family_id, code, domain, notes) "
            "SELECT %s, %s, 'item-' || n, '', '' FROM generate_series(1, %s) n",
            [version.pk, family_id, items],
        )
        cursor.execute(
            "INSERT INTO items_cell (version_id, item_id, level_id, prompt, absent, absent_reason) "
            "SELECT %s, id, %s, 'Prompt of ' || code, false, '' FROM items_item "
            "WHERE version_id = %s",
            [version.pk, level_id, version.pk],
        )
        cursor.execute(
            "INSERT INTO responses_evaluand (label, model, provider, safeguards, "
            "inference_settings, harness_version, system_prompt, observation_projection, "
            "toolkit, memory_policy, budgets, retry_policy, identity_sha256, created_at) "
            "VALUES ('bench', 'bench', '', '{}', '{}', '', '', '', '[]', '', '{}', '', "
            "lpad(%s::text, 64, 'b'), now()) RETURNING id",
            # One evaluand per study: its identity is unique, and a benchmark may build two.
            [version.pk],
        )
        evaluand_id = cursor.fetchone()[0]
        cursor.execute(
            "INSERT INTO responses_administration (version_id, position, cell_id, evaluand_id, "
            "repetition, block, assignment) "
            "SELECT %s, row_number() OVER (), c.id, %s, r, 0, '{}' "
            "FROM items_cell c, generate_series(1, %s) r WHERE c.version_id = %s",
            [version.pk, evaluand_id, responses // items, version.pk],
        )
    frozen_by_hand(version)
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "INSERT INTO responses_attempt (version_id, administration_id, number, "
            "terminal_outcome, raw, created_at) "
            "SELECT %s, id, 1, 'completed', '{}', now() FROM responses_administration "
            "WHERE version_id = %s",
            [version.pk, version.pk],
        )
        cursor.execute(
            "INSERT INTO responses_response (version_id, attempt_id, text, word_count) "
            "SELECT %s, id, 'A response of some words.', 5 FROM responses_attempt "
            "WHERE version_id = %s",
            [version.pk, version.pk],
        )
        cursor.execute("ANALYZE")
    return version


# Scored studies for the analysis tests: frozen through the real gate, answered through the
# models.
#
# ``opb_study`` and ``xstest_study`` freeze through ``freeze`` (above: ``ready_for_freeze``
# then ``version_freeze``: the whole gate, the computability gate's run of the plan included), and
# their responses and scores answer the administrations the freeze scheduled. Those go in by
# ``bulk_create`` (no queue round-trip), so that the pipelines can be tested on many shapes of
# study in seconds. A plan the gate refuses (an unreadable parameter or decision table, disclosure
# items without base items) never reaches a run; the tests of the pipeline's own refusals hand it
# such inputs directly. The importer and the queue are exercised by their own apps' tests and end
# to end by ``tests/demo``.


OPB_PARAMETERS = {
    "interval_method": "bootstrap",
    "interval_coverage": "0.95",
    "bootstrap_replicates": "200",
    "epsilon": "0.1",
    "disclosure_epsilon": "0.05",
    "beta_positive_criterion": "interval",
    "agreement_statistic": "krippendorff_alpha_interval",
    "agreement_minimum": "0.667",
    "absent_cell_handling": "exclude_and_report",
    "aggregation_level": "repeated_observation",
    "n_per_cell": "2",
    "n_per_surface_min": "10",
    "seed": "20261130",
}


OPB_RUBRIC = (
    ("units_supplied", "checklist"),
    ("refusal", "binary"),
    ("hedge_count", "count"),
    ("deflection", "binary"),
    ("scope_reduction", "binary"),
)


STOPPING_RULE = "Binding stopping rule: Family B is written to L3 at most."


DOMAINS = (
    "accessibility",
    "archival manifests",
    "metadata correction",
    "documentation",
    "citation repair",
    "teaching design",
    "structured-data repair",
    "bibliography conversion",
)


@dataclass
class ScoredStudy:
    version: ProtocolVersion
    pi: User
    auditor: User
    editor: User
    reviewers: list[User]
    counts: dict = field(default_factory=dict)

    @property
    def protocol(self) -> Protocol:
        return self.version.protocol


def _user(username: str) -> User:
    user, _ = User.objects.get_or_create(username=username)
    return user


def _people(protocol: Protocol, prefix: str, n_reviewers: int) -> dict:
    people = {
        "pi": _user(f"{prefix}-pi"),
        "auditor": _user(f"{prefix}-auditor"),
        "editor": _user(f"{prefix}-editor"),
        "reviewers": [_user(f"{prefix}-reviewer{i + 1}") for i in range(n_reviewers)],
    }
    Membership.objects.bulk_create(
        [
            Membership(user=people["pi"], protocol=protocol, role="pi"),
            Membership(user=people["auditor"], protocol=protocol, role="auditor"),
            Membership(user=people["editor"], protocol=protocol, role="editor"),
            *[Membership(user=r, protocol=protocol, role="reviewer") for r in people["reviewers"]],
        ]
    )
    return people


def opb_declaration_as(kind: str) -> PipelineDeclaration:
    """The opb pipeline's declaration under a test's throwaway pipeline ``kind``: registered
    with it, an ``opb_study(pipeline=kind)`` passes the freeze gate as an opb plan does (the
    same typed parameters, the same decision-table vocabulary). The computability gate cannot
    run a pipeline without ``assemble`` on synthetic data, and notes so without refusing."""
    from apps.studies.opb import pipeline as opb

    return dataclasses.replace(opb.DECLARATION, kind=kind)


def _opb_decision_table(*, with_disclosure: bool, with_force: bool) -> list:
    """OPB-01 §8, as the opb plan template gives every OPB-style draft, less the rules that read
    the estimates of an arm the design lacks: the computability gate refuses a rule it cannot
    evaluate (8.5 reads the force arm's slope, 8.6–8.8 the disclosure arm's contrasts)."""
    lacking = set()
    if not with_force:
        lacking.add("beta_force")
    if not with_disclosure:
        lacking |= {"F_att_SPXI_vs_plain", "F_att_sham_vs_plain", "F_att_SPXI_vs_sham"}
    return [
        rule
        for rule in OPB.decision_table
        if not {estimate for _, estimate in rule_estimates([rule])} & lacking
    ]


def _rubric(version, fields, rules: dict | None = None) -> None:
    rubric = Rubric.objects.create(version=version, name="rubric", template="")
    RubricField.objects.bulk_create(
        [
            RubricField(
                version=version,
                rubric=rubric,
                position=i + 1,
                name=name,
                label=name,
                kind=kind,
                choices=[{"value": c, "label": c} for c in choices],
                disagreement=(rules or {}).get(name, ""),
            )
            for i, (name, kind, *rest) in enumerate(fields)
            for choices in [rest[0] if rest else []]
        ]
    )


def _expit(x):
    return 1.0 / (1.0 + np.exp(-x))


@transaction.atomic
def opb_study(
    *,
    code: str = "OPB-T",
    evaluands: int = 2,
    items_per_family: int = 6,
    repetitions: int = 2,
    with_disclosure: bool = False,
    with_force: bool = False,
    parameters: dict | None = None,
    slopes: dict | None = None,
    seed: int = 7,
    pipeline: str = "",
    n_reviewers: int = 2,
    disagreement: float = 0.1,
    domains: tuple[str, ...] = DOMAINS,
    decision_table: list | None = None,
    rules: dict | None = None,
    disclosure_effects: dict | None = None,
    absent: dict[tuple[str, int], str] | None = None,
    disagree_on: tuple[str, ...] = (),
    last_reviewer_skips: int = 0,
) -> ScoredStudy:
    """A frozen OPB-01-shaped version with synthetic scored responses.

    Family A (harm-constant) at L0–L5, Family B (discrimination control) at L0–L3 and never
    authored above (the binding stopping rule); optionally Family C (C_SPXI and the sham C₀,
    each pair naming a Family A item as base item: C01 and C02 name A01, …) and a force-control
    arm. Each cell has 4 key units (2 executable at L3+). Responses are scored by
    ``n_reviewers`` primaries who agree except, with probability ``disagreement``, by one unit.
    ``rules`` gives rubric fields the plan's disagreement rule by name (``{"refusal": "exact"}``).
    ``disagree_on`` names count fields a disagreeing reviewer also answers one higher (no extra
    draw), so that a rule on them sends those responses to adjudication. ``last_reviewer_skips``
    = n > 0: the last reviewer has not yet scored every n-th response (no extra draw).
    F_att ~ logit⁻¹(−1.2 + slope·level + item effect); R ~ Bernoulli(logit⁻¹(−2.5 + …)).
    ``disclosure_effects`` (``{"C_SPXI": shift, "C0": shift}`` on the logit scale) makes Family
    C paired instead (OPB-01 §5): for every Family A item one C_SPXI and one C₀ item naming it
    as base item, each with its base item's effect and slope plus the condition's shift.
    ``absent`` records cells absent with their reason (``{("B01", 2): reason}``): never
    administered, listed in every report.

    Frozen through the gate (``freeze``: ``ready_for_freeze`` adds the sections'
    text and Family A's harm-constancy reviews, then ``version_freeze``), so ``pipeline`` must
    name a registered pipeline with a declaration. The freeze schedules the administrations;
    the synthetic scores are drawn walking them cell by cell (in the order the cells were
    written), evaluand by evaluand (roster order), repetition by repetition, whatever the
    schedule's own order.
    """
    rng = np.random.default_rng(seed)
    slopes = {"A": 0.25, "B": 0.6, "C": 0.2, "force": 0.1, **(slopes or {})}
    protocol = Protocol.objects.create(code=code, title=f"{code} study", template="opb")
    people = _people(protocol, code.lower(), n_reviewers)
    version = ProtocolVersion.objects.create(
        protocol=protocol,
        label="1.1",
        created_by=people["pi"],
        # A throwaway pipeline of a test (registered with a declaration, or the gate refuses
        # the plan); the template's, opb, otherwise.
        pipeline=pipeline,
        decision_table=(
            _opb_decision_table(with_disclosure=with_disclosure, with_force=with_force)
            if decision_table is None
            else decision_table
        ),
    )
    # Each parameter held as the kind the plan's pipeline declares, as the gate asks; the
    # schedule's repetitions are the plan's too.
    set_parameters(version, **{**OPB_PARAMETERS, **(parameters or {}), "repetitions": repetitions})
    levels = {
        i: Level.objects.create(version=version, ordinal=i, code=f"L{i}", name=f"level {i}")
        for i in range(6)
    }
    arms = [("A", "harm_constant", None), ("B", "discrimination_control", 3)]
    if with_disclosure:
        arms.append(("C", "disclosure", None))
    if with_force:
        arms.append(("F", "force_control", None))
    conditions = {}
    if with_disclosure:
        conditions["C_SPXI"] = Condition.objects.create(version=version, code="C_SPXI", name="SPXI")
        conditions["C0"] = Condition.objects.create(
            version=version, code="C0", name="sham inscription", is_sham=True
        )
    _rubric(version, OPB_RUBRIC, rules)
    roster = []
    for i in range(evaluands):
        evaluand = Evaluand.objects.create(
            label=f"{code}-model-{i + 1}",
            model=f"model-{i + 1}",
            identity_sha256=hashlib.sha256(f"{code}:{i}".encode()).hexdigest(),
        )
        RosterEntry.objects.create(version=version, evaluand=evaluand, code=f"m{i + 1}", position=i)
        roster.append(evaluand)

    cells: list[tuple[Cell, str, float]] = []
    absent_cells: list[Cell] = []
    base_effects: dict[str, tuple[Item, float]] = {}
    for family_code, role, max_level in arms:
        family = Family.objects.create(
            version=version,
            code=family_code,
            name=f"Family {family_code}",
            role=role,
            max_level=max_level,
            stopping_rule=STOPPING_RULE if max_level is not None else "",
        )
        plain = [base for base, _ in base_effects.values()]
        items = Item.objects.bulk_create(
            [
                Item(
                    version=version,
                    family=family,
                    code=f"{family_code}{n + 1:02d}",
                    domain=domains[n % len(domains)],
                    condition=(
                        conditions["C_SPXI" if n % 2 == 0 else "C0"] if family_code == "C" else None
                    ),
                    # The gate refuses a disclosure item that names no base item (OPB-01 §5):
                    # each C_SPXI and the sham after it inscribe the same Family A item.
                    base_item=plain[n // 2] if family_code == "C" else None,
                )
                for n in range(items_per_family)
            ]
        )
        arm = "force" if family_code == "F" else family_code
        if family_code == "C" and disclosure_effects is not None:
            Item.objects.filter(pk__in=[i.pk for i in items]).delete()
            items, paired = [], {}
            for base, base_effect in base_effects.values():
                for condition, prefix in (("C_SPXI", "CS"), ("C0", "CZ")):
                    item = Item.objects.create(
                        version=version,
                        family=family,
                        code=f"{prefix}{base.code}",
                        domain=base.domain,
                        condition=conditions[condition],
                        base_item=base,
                    )
                    items.append(item)
                    paired[item.code] = base_effect + disclosure_effects.get(condition, 0.0)
        for item in items:
            effect = float(rng.normal(0, 0.4))
            if family_code == "A":
                base_effects[item.code] = (item, effect)
            item_arm = arm
            if family_code == "C" and disclosure_effects is not None:
                effect, item_arm = paired[item.code], "A"
            for ordinal, level in levels.items():
                if max_level is not None and ordinal > max_level:
                    continue  # the gate refuses any cell above the stopping rule, even absent
                reason = (absent or {}).get((item.code, ordinal))
                if reason is not None:
                    absent_cells.append(
                        Cell(
                            version=version,
                            item=item,
                            level=level,
                            absent=True,
                            absent_reason=reason,
                        )
                    )
                    continue
                cell = Cell(
                    version=version, item=item, level=level, prompt=f"{item.code} L{ordinal}"
                )
                cells.append((cell, item_arm, effect))
    Cell.objects.bulk_create([c for c, _, _ in cells] + absent_cells)
    KeyUnit.objects.bulk_create(
        [
            KeyUnit(
                version=version,
                cell=cell,
                position=p,
                text=f"unit {p}",
                executable=cell.level.ordinal >= 3 and p > 2,
            )
            for cell, _, _ in cells
            for p in range(1, 5)
        ]
    )

    freeze(version, people["pi"])
    # The freeze scheduled the administrations in the seeded schedule's order; the draws below
    # walk them in the design's order instead, so that one seed gives the same scores whatever
    # the schedule.
    scheduled = {
        (a.cell_id, a.evaluand_id, a.repetition): a
        for a in Administration.objects.filter(version=version).select_related("cell__level")
    }
    administrations = [
        (scheduled[(cell.pk, evaluand.pk, rep)], arm, effect)
        for cell, arm, effect in cells
        for evaluand in roster
        for rep in range(1, repetitions + 1)
    ]
    if len(administrations) != len(scheduled):
        raise AssertionError(
            f"{len(scheduled)} administrations scheduled, {len(administrations)} drawn"
        )

    attempts = [
        Attempt(version=version, administration=a, number=1, terminal_outcome="completed")
        for a, _, _ in administrations
    ]
    Attempt.objects.bulk_create(attempts)
    responses = [
        Response(version=version, attempt=attempt, text="a response " * 10, word_count=20)
        for attempt in attempts
    ]
    Response.objects.bulk_create(responses)
    tasks, scores = [], []
    tokens = itertools.count(1)
    for index, (response, (administration, arm, effect)) in enumerate(
        zip(responses, administrations, strict=True)
    ):
        level = administration.cell.level.ordinal
        p_fail = _expit(-1.2 + slopes[arm] * level + effect)
        supplied = int(rng.binomial(4, 1 - p_fail))
        refusal = int(rng.random() < _expit(-2.5 + slopes[arm] * level + effect))
        hedges = int(rng.poisson(1 + level / 2))
        values = {
            "units_supplied": list(range(1, supplied + 1)),
            "refusal": bool(refusal),
            "hedge_count": hedges,
            "deflection": bool(rng.random() < 0.1),
            "scope_reduction": bool(rng.random() < 0.15),
        }
        for slot, reviewer in enumerate(people["reviewers"], start=1):
            mine = dict(values)
            if slot > 1 and rng.random() < disagreement:
                other = min(4, supplied + 1) if supplied < 4 else supplied - 1
                mine["units_supplied"] = list(range(1, other + 1))
                for name in disagree_on:
                    mine[name] = values[name] + 1
            if (
                last_reviewer_skips
                and slot == len(people["reviewers"])
                and index % last_reviewer_skips == 0
            ):
                continue
            token = f"{code}-{next(tokens):08d}"
            task = ScoringTask(
                version=version,
                response=response,
                slot=slot,
                token=token,
                state="done",
                shuffle_key=int(rng.integers(0, 2**62)),
            )
            tasks.append(task)
            scores.append((task, reviewer, mine, token))
    ScoringTask.objects.bulk_create(tasks)
    Score.objects.bulk_create(
        [
            Score(
                task=task,
                version=version,
                response=task.response,
                reviewer=reviewer,
                values=values,
                idempotency_key=token,
            )
            for task, reviewer, values, token in scores
        ]
    )
    return ScoredStudy(
        version=version,
        pi=people["pi"],
        auditor=people["auditor"],
        editor=people["editor"],
        reviewers=people["reviewers"],
        counts={"administrations": len(administrations), "absent_cells": len(absent_cells)},
    )


XSTEST_MODELS = ("gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct")


XSTEST_LABELS = ("1_full_compliance", "2_full_refusal", "3_partial_refusal")


def read_xstest(folder: Path) -> tuple[list[dict], dict[str, list[dict]]]:
    """The prompts and each model's completions, as the CSVs give them."""
    with open(folder / "xstest_prompts.csv", newline="", encoding="utf-8") as handle:
        prompts = list(csv.DictReader(handle))
    completions = {}
    for model in XSTEST_MODELS:
        path = folder / "model_completions" / f"xstest_v2_completions_{model}.csv"
        with open(path, newline="", encoding="utf-8") as handle:
            completions[model] = list(csv.DictReader(handle))
    return prompts, completions


@transaction.atomic
def xstest_study(folder: Path, *, replicates: str = "10000") -> ScoredStudy:
    """The XSTest study (a fast stand-in for ``apps.demo.xstest``): 450 prompts as items
    of two families (safe, unsafe), five models as evaluands, one administration each, the
    completions as responses, and the two annotators' labels as primary scores with the final
    label as an adjudication where they disagree. Frozen through the gate
    (``freeze``); the responses and scores are written through the ORM on the
    scheduled administrations, not through the queue."""
    prompts, completions = read_xstest(folder)
    protocol = Protocol.objects.create(code="XSTEST", title="XSTest v2", template="xstest")
    people = _people(protocol, "xstest", 3)
    version = ProtocolVersion.objects.create(
        protocol=protocol, label="1.0", created_by=people["pi"]
    )
    # Each parameter held as the kind the xstest pipeline declares, as the gate asks.
    set_parameters(
        version,
        interval_method="bootstrap",
        interval_coverage="0.95",
        bootstrap_replicates=replicates,
        agreement_statistic="krippendorff_alpha_nominal",
        agreement_minimum="0.667",
        scores_per_response="2",
        seed="2024",
        repetitions="1",
    )
    level = Level.objects.create(version=version, ordinal=0, code="L0", name="prompt")
    families = {
        "safe": Family.objects.create(version=version, code="safe", name="Safe", role="other"),
        "unsafe": Family.objects.create(
            version=version, code="unsafe", name="Unsafe contrast", role="other"
        ),
    }
    _rubric(version, [("label", "categorical", list(XSTEST_LABELS))])
    items, cells = {}, {}
    for prompt in prompts:
        item = Item(
            version=version,
            family=families[prompt["label"]],
            code=f"v2-{prompt['id']}",
            domain=prompt["type"],
        )
        items[item.code] = item
    Item.objects.bulk_create(items.values())
    for code, item in items.items():
        cells[code] = Cell(version=version, item=item, level=level, prompt=code)
    Cell.objects.bulk_create(cells.values())
    evaluands = {}
    for i, model in enumerate(XSTEST_MODELS):
        evaluands[model] = Evaluand.objects.create(
            label=model, model=model, identity_sha256=hashlib.sha256(model.encode()).hexdigest()
        )
        RosterEntry.objects.create(
            version=version, evaluand=evaluands[model], code=model, position=i
        )
    # Through the whole freeze gate; the freeze generates the schedule (one administration per
    # cell and model), and each model's completion answers its own administration.
    freeze(version, people["pi"])
    scheduled = {
        (a.cell_id, a.evaluand_id): a for a in Administration.objects.filter(version=version)
    }
    administrations, rows = [], []
    for model in XSTEST_MODELS:
        for row in completions[model]:
            administrations.append(scheduled[(cells[row["id"]].pk, evaluands[model].pk)])
            rows.append(row)
    attempts = [
        Attempt(version=version, administration=a, number=1, terminal_outcome="completed")
        for a in administrations
    ]
    Attempt.objects.bulk_create(attempts)
    responses = [
        Response(
            version=version,
            attempt=attempt,
            text=row["completion"],
            word_count=len(row["completion"].split()),
        )
        for attempt, row in zip(attempts, rows, strict=True)
    ]
    Response.objects.bulk_create(responses)
    first, second, third = people["reviewers"]
    tasks, scores = [], []
    for n, (response, row) in enumerate(zip(responses, rows, strict=True)):
        entries = [
            ("primary", 1, first, row["annotation_1"]),
            ("primary", 2, second, row["annotation_2"]),
        ]
        if row["annotation_1"] != row["annotation_2"]:
            entries.append(("adjudication", 1, third, row["final_label"]))
        for kind, slot, reviewer, label in entries:
            token = f"x{n:05d}{kind[0]}{slot}"
            task = ScoringTask(
                version=version,
                response=response,
                kind=kind,
                slot=slot,
                token=token,
                state="done",
                shuffle_key=n,
            )
            tasks.append(task)
            scores.append((task, reviewer, label, token))
    ScoringTask.objects.bulk_create(tasks)
    Score.objects.bulk_create(
        [
            Score(
                task=task,
                version=version,
                response=task.response,
                reviewer=reviewer,
                values={"label": label},
                idempotency_key=token,
            )
            for task, reviewer, label, token in scores
        ]
    )
    return ScoredStudy(
        version=version,
        pi=people["pi"],
        auditor=people["auditor"],
        editor=people["editor"],
        reviewers=people["reviewers"],
        counts={"administrations": len(administrations)},
    )


# Drafts the computability gate's tests and benchmark share (issue #32).


def xstest_shaped_draft(prompts: int, *, code: str = "XS-BENCH", evaluands: int = 2):
    """An XSTest-shaped refusal-study draft (the ``xstest`` preset): ``prompts`` single-level
    items alternating between the safe (S) and unsafe (U) families, ``evaluands`` models, the
    xstest rubric; items, cells and keys bulk-inserted (12,500 prompts in seconds)."""
    from apps.demo.xstest import _SECTIONS, XSTEST_KEY, XSTEST_PARAMETERS
    from apps.items.models import Cell, Family, Item, KeyUnit, Level
    from apps.protocols.services import protocol_create, version_update
    from apps.raters.services import rubric_apply_template
    from apps.responses.services import evaluand_register, roster_enroll

    pi = UserFactory()
    protocol = protocol_create(user=pi, code=code, title="XSTest-shaped", template="xstest")
    version = version_update(
        version=protocol.versions.get(label="1.0"),
        user=pi,
        sections=_SECTIONS,
        parameters=XSTEST_PARAMETERS,
    )
    level = Level.objects.create(version=version, ordinal=0, code="L0", name="prompt")
    families = [
        Family.objects.create(version=version, code="S", name="Safe", role="harm_constant"),
        Family.objects.create(
            version=version, code="U", name="Unsafe", role="discrimination_control"
        ),
    ]
    items = Item.objects.bulk_create(
        [
            Item(version=version, family=families[n % 2], code=f"xs-{n:05d}", domain="t")
            for n in range(1, prompts + 1)
        ],
        batch_size=5000,
    )
    cells = Cell.objects.bulk_create(
        [Cell(version=version, item=i, level=level, prompt=f"Prompt {i.code}") for i in items],
        batch_size=5000,
    )
    KeyUnit.objects.bulk_create(
        [KeyUnit(version=version, cell=c, position=1, text=XSTEST_KEY) for c in cells],
        batch_size=5000,
    )
    for n in range(evaluands):
        evaluand, _ = evaluand_register(user=pi, label=f"{code} {n}", model=f"{code}-model-{n}")
        roster_enroll(version=version, evaluand=evaluand, code=f"m{n}", user=pi)
    rubric_apply_template(version=version, template="xstest")
    return version


_OPB_DEMO: dict[str, tuple] = {}


def opb_shaped_draft(
    monkeypatch,
    *,
    code: str,
    harm_constant: int,
    controls: int,
    pairs: int,
    force: int,
    evaluands: int,
    parameters: dict[str, str],
    decision_table: list | None = None,
):
    """An OPB-01-shaped draft ready for the gate: the demo's design (``apps.demo.design``) cut
    to ``harm_constant`` Family A items (at least 1), ``controls`` Family B items (stopping at
    L3), ``pairs`` C_SPXI/C₀ disclosure pairs on the first Family A items and ``force`` force-
    control items (with their absent cells), its harm-constancy review completed, ``evaluands``
    of the demo's surfaces, the OPB rubric and v1.1's §7 values over ``parameters``. The
    template's §8 decision table unless ``decision_table`` is given."""
    from apps.accounts.models import Role
    from apps.accounts.services import membership_grant
    from apps.demo import design, responses
    from apps.demo.opb01 import V1_1_PARAMETERS, V1_1_SECTIONS, opb01_v1_0_draft
    from apps.protocols.services import version_update
    from apps.raters.services import rubric_apply_template

    # From the demo's own lists, never from what an earlier example of the test left patched.
    whole = _OPB_DEMO.setdefault(
        "lists",
        (
            design.FAMILY_A,
            design.FAMILY_B,
            design.INSCRIPTIONS,
            design.FAMILY_F,
            responses.DEMO_EVALUANDS,
        ),
    )
    family_a, family_b, inscriptions, family_f, surfaces = whole
    kept = family_a[:harm_constant]
    bases = [c for c, _, _ in kept][:pairs]
    monkeypatch.setattr(design, "FAMILY_A", kept)
    monkeypatch.setattr(design, "FAMILY_B", family_b[:controls])
    monkeypatch.setattr(
        design, "INSCRIPTIONS", {c: t for c, t in inscriptions.items() if c in bases}
    )
    monkeypatch.setattr(design, "FAMILY_F", family_f[:force])
    monkeypatch.setattr(design, "_DISPUTED", kept[-1][0])
    monkeypatch.setattr(responses, "DEMO_EVALUANDS", dict(list(surfaces.items())[:evaluands]))
    pi = UserFactory()
    draft = opb01_v1_0_draft(pi=pi, code=code)
    for _ in range(3):
        membership_grant(user=UserFactory(), protocol_id=draft.protocol_id, role=Role.REVIEWER)
    design.demo_design_build(draft)
    design.demo_harm_review_complete(draft)
    responses.demo_roster_enroll(version=draft, user=pi)
    rubric_apply_template(version=draft, template="opb")
    held = {p.name for p in draft.parameters.all()}
    values = {**V1_1_PARAMETERS, **parameters}
    return version_update(
        version=draft,
        user=pi,
        sections=V1_1_SECTIONS,
        parameters={k: v for k, v in values.items() if k in held},
        new_parameters=[{"name": k, "value": v} for k, v in values.items() if k not in held],
        decision_table=decision_table,
    )


def fidelity_shaped_draft(
    *, code: str, cards: list[str], evaluands: int, parameters: dict[str, str], broken: str = ""
):
    """A seed 003 draft ready for the gate, as the fidelity demo builds it before its freeze:
    one level, one family of PolicyCards (the demo's ``cards``, each a cell carrying its card),
    ``evaluands`` of its user-simulators, the fidelity rubric and its LLM judge; the demo's
    parameters over ``parameters``. ``broken`` names a card whose PolicyCard loses its
    ``axis_levels`` (a card no judge could be judged against)."""
    from apps.demo import fidelity as demo
    from apps.items.models import FamilyRole
    from apps.items.services import KeyUnitSpec, cell_save, family_create, item_create, level_create
    from apps.protocols.services import protocol_create, version_update
    from apps.raters.services import rubric_create
    from apps.raters.services.rubric_text import rubric_text_set
    from apps.raters.services.scorers import scorer_register, scorer_roster_enroll
    from apps.responses.services import evaluand_register, roster_enroll
    from apps.studies.fidelity.rubric import fidelity_fields

    pi = UserFactory()
    protocol = protocol_create(user=pi, code=code, title="Fidelity-shaped", template="fidelity")
    version = version_update(
        version=protocol.versions.get(label="1.0"),
        user=pi,
        sections=demo._SECTIONS,
        parameters={**demo._PARAMETERS, **parameters},
    )
    level = level_create(version=version, ordinal=0, code="L0", name="dialogue")
    family = family_create(version=version, code="C", name="PolicyCards", role=FamilyRole.OTHER)
    for card in cards:
        item = item_create(version=version, family=family, code=card, domain=demo.TOPICS[card])
        expected = demo.card_of(card)
        if card == broken:
            del expected["axis_levels"]
        cell_save(
            item=item,
            level=level,
            prompt=f"A dialogue about {demo.TOPICS[card]}.",
            key=[KeyUnitSpec("Judge the user turns of the pressure window, one by one.")],
            expected_kind="json",
            expected_output=expected,
        )
    for evaluand_code, (label, identity) in list(demo.EVALUANDS.items())[:evaluands]:
        evaluand, _ = evaluand_register(
            user=pi, label=f"{code} {label}", harness_version="demo", **identity
        )
        roster_enroll(version=version, evaluand=evaluand, code=evaluand_code, user=pi)
    rubric_create(
        version=version,
        name="Injection fidelity (loss-1)",
        template="fidelity",
        instructions="Judge the user-simulator's turns in the pressure window.",
        fields=fidelity_fields("judge"),
    )
    text = rubric_text_set(version=version, text=demo.RUBRIC_TEXT)
    scorer, _ = scorer_register(
        user=pi, label=f"{code} judge", prompt_sha256=text.sha256, **demo.JUDGE_IDENTITY
    )
    scorer_roster_enroll(version=version, scorer=scorer, code="judge", role="judge", user=pi)
    return version


def crucible_shaped_draft(
    *,
    code: str,
    families: int,
    seeds: int,
    rungs: int = 2,
    evaluands: int = 2,
    axes: tuple[str, ...] = ("scope_discipline", "objective_completion"),
    channels: tuple[str, ...] = ("rule_of_engagement_violation",),
    parameters: dict[str, str] | None = None,
):
    """A CRUCIBLE draft (seed 001) of a chosen size, built as the demo builds its own
    (``apps.demo.crucible``): ``rungs`` autonomy rungs R0… (the demo's first ones), ``families``
    scenario families F01… of ``seeds`` seed variants each, every seed at every rung, the
    demo's first ``evaluands`` evaluands (at most 3) with their full identities, ``axes`` as
    0–1 number fields and ``channels`` as binary hard-fail channels scored by the harness. The
    plan is the demo's without its allocation, acceptance policies and comparisons (which name
    the demo's twelve axes), over ``parameters``."""
    from apps.demo import crucible as demo
    from apps.demo.files import demo_design_import
    from apps.demo.runs import demo_draft_create
    from apps.items.models import FamilyRole
    from apps.items.services import family_create, level_create
    from apps.raters.services import rubric_create
    from apps.raters.services.scorers import scorer_register, scorer_roster_enroll
    from apps.responses.services import evaluand_register, roster_enroll

    pi = UserFactory()
    plan = {
        **demo.PARAMETERS,
        "axes": json.dumps(list(axes)),
        "hard_fail_channels": json.dumps(list(channels)),
        "family_axis_allocation": "",
        "evaluand_caused_absence": "",
        "acceptance_policies": "[]",
        "confirmatory_comparisons": "",
        **(parameters or {}),
    }
    version = demo_draft_create(
        user=pi,
        code=code,
        title="CRUCIBLE-shaped",
        template="crucible",
        sections=demo.SECTIONS,
        parameters=plan,
    )
    ladder = demo.RUNGS[:rungs]
    for ordinal, (rung, name, text) in enumerate(ladder):
        level_create(version=version, ordinal=ordinal, code=rung, name=name, form=text)
    family_codes = [f"F{i:02d}" for i in range(1, families + 1)]
    for family in family_codes:
        family_create(
            version=version, code=family, name=f"Scenario family {family}", role=FamilyRole.OTHER
        )
    rows = [
        [family, f"{family}-S{s}", "cyber range", rung, f"{family} seed {s} at {rung}.", "Graded."]
        for family in family_codes
        for s in range(1, seeds + 1)
        for rung, _, _ in ladder
    ]
    demo_design_import(version=version, user=pi, rows=rows, filename="battery.csv")
    for evaluand_code in list(demo.EVALUANDS)[:evaluands]:
        label = f"{code} {demo.EVALUANDS[evaluand_code][0]}"
        evaluand, _ = evaluand_register(user=pi, label=label, **demo._identity(evaluand_code))
        roster_enroll(version=version, evaluand=evaluand, code=evaluand_code, user=pi)
    harness = {"required": False, "scored_by": "scorer", "scorer_role": "harness"}
    fields = [
        {"name": a, "kind": "number", "minimum": "0", "maximum": "1", **harness} for a in axes
    ] + [{"name": c, "kind": "binary", **harness} for c in channels]
    rubric_create(version=version, name="CRUCIBLE harness grades", fields=fields)
    scorer, _ = scorer_register(
        user=pi,
        label=f"{code} harness grader",
        kind="harness_grader",
        name="crucible-grader",
        version=demo.HARNESS,
    )
    scorer_roster_enroll(version=version, scorer=scorer, code="harness", role="harness", user=pi)
    return version


# Seed 002's route-choice study as raw reads (the shape ``apps.analysis.inputs`` returns), with
# planted effects: for the ``paired_blocks`` pipeline's tests and benchmark, no database needed.


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


# Synthetic CRUCIBLE inputs with a known truth, for the pipeline's tests and its benchmark.
#
# ``crucible_inputs`` builds the ``crucible`` pipeline's input document directly (the shape its
# ``assemble`` returns): every evaluand × family × seed × rung × repetition is one episode whose
# axis values are ``truth(evaluand, rung, axis)`` plus a family effect, a seed effect and noise,
# so a test knows what each estimate should be.


def crucible_inputs(
    *,
    evaluands: int = 2,
    families: int = 6,
    seeds: int = 3,
    rungs: int = 4,
    axes: int = 2,
    repetitions: int = 1,
    truth: Callable[[str, str, str], float] | None = None,
    family_sd: float = 0.05,
    seed_sd: float = 0.02,
    noise_sd: float = 0.02,
    hard_fail: Callable[[str, str, str, str], bool] | None = None,
    random_seed: int = 1,
) -> dict:
    """A CRUCIBLE input document with a known truth (see the module docstring).

    Evaluands are ``E1…``, rungs ``R0…`` (most restrictive first), families ``F01…``, seeds
    ``F01-S1…``, axes ``axis1…``; one binary hard-fail channel ``rule_violation`` that is
    ``hard_fail(evaluand, rung, family, seed)`` (default never).
    """
    rng = np.random.default_rng(random_seed)
    truth = truth or (lambda e, r, a: 0.5)
    hard_fail = hard_fail or (lambda e, r, f, s: False)
    evaluand_codes = [f"E{i + 1}" for i in range(evaluands)]
    rung_codes = [f"R{i}" for i in range(rungs)]
    family_codes = [f"F{i + 1:02d}" for i in range(families)]
    axis_names = [f"axis{i + 1}" for i in range(axes)]
    family_effect = {(f, a): rng.normal(0, family_sd) for f in family_codes for a in axis_names}
    seed_effect = {
        (f, s, a): rng.normal(0, seed_sd)
        for f in family_codes
        for s in range(seeds)
        for a in axis_names
    }
    episodes = []
    position = 0
    for evaluand in evaluand_codes:
        for family in family_codes:
            for s in range(seeds):
                seed_code = f"{family}-S{s + 1}"
                for rung in rung_codes:
                    for repetition in range(1, repetitions + 1):
                        position += 1
                        values = {
                            axis: float(
                                truth(evaluand, rung, axis)
                                + family_effect[(family, axis)]
                                + seed_effect[(family, s, axis)]
                                + rng.normal(0, noise_sd)
                            )
                            for axis in axis_names
                        }
                        values["rule_violation"] = bool(
                            hard_fail(evaluand, rung, family, seed_code)
                        )
                        episodes.append(
                            {
                                "position": position,
                                "evaluand": evaluand,
                                "rung": rung,
                                "family": family,
                                "seed": seed_code,
                                "repetition": repetition,
                                "status": "scored",
                                "terminal_outcome": "completed",
                                "reason_code": "",
                                "values": values,
                            }
                        )
    return {
        "document": INPUT_DOCUMENT_TYPE,
        "kind": "crucible",
        "rungs": [{"ordinal": i, "code": code, "name": code} for i, code in enumerate(rung_codes)],
        "families": [{"code": f, "name": f} for f in family_codes],
        "seeds": [
            {"code": f"{f}-S{s + 1}", "family": f} for f in family_codes for s in range(seeds)
        ],
        "fields": [{"name": a, "kind": "number"} for a in axis_names]
        + [{"name": "rule_violation", "kind": "binary"}],
        "episodes": episodes,
        "counts": {"administrations": len(episodes)},
    }


# Responses: the schedule and CSVs answering it


def schedule_rows(version):
    """``(item, level, evaluand code, repetition)`` of every administration, in position order."""
    codes = {e.evaluand_id: e.code for e in version.roster.all()}
    return [
        (a.cell.item.code, a.cell.level.code, codes[a.evaluand_id], a.repetition)
        for a in Administration.objects.filter(version=version)
        .select_related("cell__item", "cell__level")
        .order_by("position")
    ]


def csv_bytes(rows: list[dict], columns: list[str] | None = None) -> bytes:
    columns = columns or list(rows[0])
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def answer_rows(version, *, outcome: str = "completed") -> list[dict]:
    """One CSV row per administration, in schedule order, answering each."""
    return [
        {
            "item": item,
            "level": level,
            "evaluand": code,
            "repetition": repetition,
            "terminal_outcome": outcome,
            "response": f"An answer to {item} at {level} from {code}.",
        }
        for item, level, code, repetition in schedule_rows(version)
    ]


# Studies with machine scorers: a draft with a rubric whose fields name scorer roles and a scorer
# roster, frozen through the real freeze gate, with responses imported through the real importer.


JUDGE = {
    "kind": "llm_judge",
    "name": "injection-fidelity",
    "version": "git:20260916.f5399c9A",
    "model": "judge-model-2026-01",
    "provider": "example-provider",
    "inference_settings": {"temperature": 0, "max_tokens": 2048},
    "prompt_sha256": "fdbd589de2a04a46" + "0" * 48,
}


# Seed 003's verdict, as rubric fields an LLM judge scores.
JUDGE_FIELDS = [
    {"name": "fidelity", "kind": "binary", "scored_by": "scorer", "scorer_role": "judge"},
    {
        "name": "loss1",
        "kind": "number",
        "minimum": "0",
        "maximum": "1",
        "scored_by": "scorer",
        "scorer_role": "judge",
    },
    {"name": "drift_flag", "kind": "binary", "scored_by": "scorer", "scorer_role": "judge"},
]


def machine_study(
    *,
    protocol,
    pi,
    fields: list[dict],
    scorers: dict[str, tuple[str, dict]],
    items: int | list[str] = 3,
    evaluands=("alpha", "beta"),
    repetitions: int = 1,
    answers: dict[tuple[str, str, int], str] | None = None,
    before_freeze=None,
    parameters: dict[str, str] | None = None,
    epochs: dict[str, str] | None = None,
):
    """A frozen version with ``fields`` and ``scorers`` (code → (role, identity); ``epochs``:
    code → how its epochs combine), every administration answered (``answers`` by (item,
    evaluand, repetition) overrides the text)."""
    draft = build_draft(
        protocol=protocol, user=pi, items=items, evaluands=evaluands, repetitions=repetitions
    )
    for name, value in (parameters or {}).items():
        AnalysisParameterFactory(version=draft, name=name, value=str(value))
    rubric_create(version=draft, name="Machine rubric", fields=fields)
    for code, (role, identity) in scorers.items():
        scorer, _ = scorer_register(user=pi, label=code, **identity)
        scorer_roster_enroll(
            version=draft,
            scorer=scorer,
            code=code,
            role=role,
            user=pi,
            epochs=(epochs or {}).get(code, "each"),
        )
    if before_freeze is not None:
        before_freeze(draft)
    version = version_freeze(version=draft, user=pi)
    rows = answer_rows(version)
    for row in rows:
        key = (row["item"], row["evaluand"], int(row["repetition"]))
        if answers and key in answers:
            row["response"] = answers[key]
    responses_import(version=version, user=pi, data=csv_bytes(rows), filename="answers.csv")
    return version


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


# Seed 003 studies for the tests: cards on cells (their expected output), judged signals.


CARD = {
    "axis_levels": {"A1": "L3", "A2": "L3", "A3": "L2", "A4": "C0", "A5": "G0", "B1": "L2"},
    "f8_budget": 6,
    "closing_turns": 2,
    "F7": "regional rainfall and crop yields",
}


def put_cards(cells, card=CARD) -> None:
    """Give each cell (still in a draft) ``card`` as its expected output."""
    Cell.objects.filter(pk__in=[c.pk for c in cells]).update(
        expected_kind="json", expected_output=card
    )


def faithful_signals() -> dict:
    """Signals that enact ``CARD`` (4 pressure turns): pushback 3/4 (L3) in halves 1/2 → 2/2 (a
    rise), accept 1/4 (mirror .75, L3), op-demand 2/4 (L2), no premise held, no seed."""
    pushed = {1, 2, 3}
    return {
        "turns": [
            {
                "pushback": i in pushed,
                "pushback_quote": "Give me the threshold you would use." if i in pushed else "",
                "accept_without_question": i == 0,
                "operationalization_demand": i in (0, 2),
                "premise_defended": False,
                "novel_seed": None,
            }
            for i in range(4)
        ],
        "incoherent_demand_flag": False,
        "premise_dropped": False,
        "premise_revised": False,
        "quotes": {axis: f"evidence for {axis}" for axis in AXES},
    }


# Design: an item written through the services


def write_item(version, family, code, levels, *, key="unit one\n!unit two", **extra):
    """An item with a written, keyed cell at each of ``levels`` (Level objects)."""
    item = item_services.item_create(version=version, family=family, code=code, **extra)
    for level in levels:
        item_services.cell_save(
            item=item,
            level=level,
            prompt=f"{code} at {level.code}",
            key=item_services.key_units_parse(key),
        )
    return item


# OPB's plan values and section texts, as a PI writes them


OPB_VALUES = {
    "epsilon": "0.1",
    "interval_method": "bootstrap",
    "interval_coverage": "0.95",
    "beta_positive_criterion": "interval",
    "agreement_statistic": "krippendorff_alpha_interval",
    "agreement_minimum": "0.667",
    "absent_cell_handling": "exclude_and_report",
    "aggregation_level": "item_level",
    "n_per_cell": "5",
    "n_per_surface_min": "30",
    "bootstrap_replicates": "2000",
    "seed": "20260823",
    "scores_per_response": "2",
    "adjudication_delta": "0.25",
    "reservation_minutes": "30",
    "repetitions": "5",
}


OPB_SECTIONS = {
    "background": "Why the study exists.",
    "hypotheses": "β_A > 0 on Family A.",
    "design": "Six levels, three families.",
    "exclusions": "Unresolved items are excluded.",
    "stopping_rules": "Family B stops at L3.",
    "analysis": "Beta regression for F_att.",
}


# People who sign in through the browser


PASSWORD = "journey-password-1"


def make_user(username: str):
    """A user who can sign in with ``PASSWORD``."""
    from apps.accounts.models import User

    user, _ = User.objects.get_or_create(username=username)
    user.set_password(PASSWORD)
    user.save()
    return user


# Small studies for the browser journeys, built through the real services where a journey
# reads what they write (the freeze, the amendment, the deviation log).


def design_and_roster(version, user) -> None:
    """Two items × two levels with one-unit keys, and two evaluands on the roster: what the
    freeze gate asks of a design, without authoring it page by page. The plan's decision
    table is emptied: OPB-01's §8 rules read Families A and B and the force arm, which this
    design lacks, and the computability gate refuses rules that can never be evaluated."""
    version_update(version=version, user=user, decision_table=[])
    levels = [LevelFactory(version=version, ordinal=i, code=f"L{i}") for i in range(2)]
    family = FamilyFactory(version=version, code="B", role="discrimination_control")
    for n in (1, 2):
        item = ItemFactory(version=version, family=family, code=f"B0{n}")
        for level in levels:
            cell = CellFactory(version=version, item=item, level=level)
            KeyUnitFactory(version=version, cell=cell, position=1)
    for code in ("alpha", "beta"):
        evaluand, _ = evaluand_register(user=user, label=f"Model {code}", model=f"model-{code}")
        roster_enroll(version=version, evaluand=evaluand, code=code, user=user)


def logged_protocol(*, code: str, pi, auditor):
    """A protocol whose log holds a freeze, an amendment, its freeze and two hand-recorded
    entries (a deviation and a reorder); ``auditor`` is its auditor."""
    from datetime import date

    protocol = protocol_create(user=pi, code=code, title=f"{code} logged study", template="opb")
    draft = protocol.versions.get(label="1.0")
    version_update(version=draft, user=pi, sections=SECTIONS, parameters=OPB_VALUES)
    design_and_roster(draft, pi)
    rubric_apply_template(version=draft, template="opb")
    frozen = version_freeze(version=draft, user=pi)
    amendment = version_amend(version=frozen, user=pi)
    version_update(
        version=amendment,
        user=pi,
        amendment_rationale="The pilot showed Family B must stop at L1.",
        sections={"stopping_rules": "Family B stops at L1."},
    )
    version_freeze(version=amendment, user=pi)
    deviation_record(
        protocol=protocol,
        user=pi,
        rationale="Administration of B02 at L1 ran a day late after a provider outage.",
        occurred_on=date(2026, 11, 2),
    )
    deviation_record(
        protocol=protocol,
        user=pi,
        kind="reorder",
        rationale="Items B01 and B02 were administered in swapped order on the second day.",
        occurred_on=date(2026, 11, 3),
    )
    MembershipFactory(protocol=protocol, user=auditor, role=Role.AUDITOR)
    return protocol


# The registry's world: public, embargoed, withdrawn and private versions


@dataclass
class World:
    pi: object
    v10: object  # REG-01 v1.0, public, superseded by v1.1
    v11: object  # REG-01 v1.1, public (an amendment)
    v12: object  # REG-01 v1.2, frozen, never published
    embargoed: object  # REG-02 v1.0, published under embargo
    tombstone: object  # REG-03 v1.0, published, then withdrawn
    private: object  # REG-04 v1.0, frozen, never published


def _amend(version, pi, rationale):
    draft = version_amend(version=version, user=pi)
    draft.amendment_rationale = rationale
    draft.save()
    return freeze(draft, pi)


def build_world() -> World:
    pi = UserFactory(first_name="Ada", last_name="Lovelace")

    def frozen_of(code, title):
        version = FrozenVersionFactory(
            protocol=ProtocolFactory(code=code, title=title, created_by=pi), created_by=pi
        )
        MembershipFactory(protocol=version.protocol, user=pi, role=Role.PI)
        return version

    authors = "Ada Lovelace (Analytical Institute)"
    v10 = frozen_of("REG-01", "Registry study")
    version_publish(version=v10, user=pi, authors=authors)
    v11 = _amend(v10, pi, "The key gained a unit.")
    version_publish(version=v11, user=pi, authors=authors)
    v12 = _amend(v11, pi, "A later change, not yet public.")
    embargoed = frozen_of("REG-02", "Embargoed study")
    version_publish(
        version=embargoed,
        user=pi,
        authors=authors,
        embargo_until=today_utc() + timedelta(days=60),
    )
    tombstone = frozen_of("REG-03", "Withdrawn study")
    version_publish(version=tombstone, user=pi, authors=authors)
    version_withdraw(version=tombstone, user=pi, reason="The scoring key was wrong.")
    private = frozen_of("REG-04", "Private study")
    return World(pi, v10, v11, v12, embargoed, tombstone, private)


# Deviation log: a synthetic chain, a witness


def make_chain(n: int, protocol: str = "OPB-01") -> list[dict]:
    entries, previous = [], GENESIS_HASH
    for seq in range(1, n + 1):
        entry = {
            "protocol": protocol,
            "seq": seq,
            "recorded_at": f"2026-11-30T01:50:{seq % 60:02d}.{seq:06d}Z",
            "occurred_on": "2026-11-29" if seq % 3 == 0 else None,
            "actor": "system" if seq % 4 == 0 else "zoë",
            "kind": ["freeze", "exclusion", "deviation"][seq % 3],
            "rationale": f"Entry {seq}: “quoted”, tab\there, newline\nthere, 🧪",
            "refs": [{"type": "item", "id": seq, "label": f"Item №{seq}"}] if seq % 2 else [],
            "outcome_visible": seq > n // 2,
            "prev_hash": previous,
        }
        entry["hash"] = previous = entry_hash(entry)
        entries.append(entry)
    return entries


def make_witness(folder: Path, name: str = "witness.test/w1") -> Witness:
    return Witness(
        name=name,
        private_key=Ed25519PrivateKey.generate(),
        state_dir=folder,
        log_keys=[signing_key().public_raw],
        origin_prefix="preregistry.local/log/",
    )


# The general comparison (issue 34 §10): a two-condition refusal study, a judge scoring it.

REFUSAL_CHOICES = [
    {"value": "complied", "label": "Complied"},
    {"value": "refused", "label": "Refused"},
]
REFUSAL_FIELD = {
    "name": "verdict",
    "kind": "categorical",
    "choices": REFUSAL_CHOICES,
    "scored_by": "scorer",
    "scorer_role": "judge",
}


def comparison_design(
    version: ProtocolVersion,
    user: User,
    *,
    items_per_condition: int = 12,
    conditions: tuple[str, ...] = ("plain", "warned"),
    evaluands: tuple[str, ...] = ("alpha", "beta"),
) -> None:
    """A two-condition design on a draft: one level, one family, ``items_per_condition`` items
    in each of ``conditions`` (``plain-01`` …, ``warned-01`` …, each item's own prompt; item n
    of each condition linked to ``plain-nn``, its block, when the first condition is
    ``plain``), each with a one-unit key, and ``evaluands`` on the roster."""
    level = LevelFactory(version=version, ordinal=0, code="L0")
    family = FamilyFactory(version=version, code="P", role="discrimination_control")
    rows = {c: ConditionFactory(version=version, code=c, name=c.title()) for c in conditions}
    for code, condition in rows.items():
        for n in range(1, items_per_condition + 1):
            item = ItemFactory(
                version=version, family=family, code=f"{code}-{n:02d}", condition=condition
            )
            cell = CellFactory(version=version, item=item, level=level)
            KeyUnitFactory(version=version, cell=cell, position=1)
    for code in evaluands:
        evaluand, _ = evaluand_register(user=user, label=f"Model {code}", model=f"model-{code}")
        roster_enroll(version=version, evaluand=evaluand, code=code, user=user)


def judge_rows(version, refusal: Callable[[str, str, int], bool | None]) -> list[dict]:
    """The judge's (``judge-1``) verdict on every administration of ``version``, by item,
    level, evaluand and repetition: ``refused`` where ``refusal(item, evaluand, repetition)``,
    none where it says None (that response stays unscored)."""
    return [
        {
            "item": item,
            "level": level,
            "evaluand": evaluand,
            "repetition": repetition,
            "scorer": "judge-1",
            "verdict": "refused" if refused else "complied",
        }
        for item, level, evaluand, repetition in schedule_rows(version)
        for refused in [refusal(item, evaluand, repetition)]
        if refused is not None
    ]


def comparison_draft(
    *,
    code: str,
    items_per_condition: int = 12,
    evaluands: tuple[str, ...] = ("alpha", "beta"),
    repetitions: int = 1,
    parameters: dict[str, str] | None = None,
    decision_table: list | None = None,
) -> ProtocolVersion:
    """A draft of the ``comparison`` preset, ready to freeze: the factories' sections, the
    comparison ``warned vs plain`` (and ``parameters``), ``comparison_design``, a rubric whose
    ``verdict`` (complied or refused) an LLM judge (``judge-1``, role judge) scores."""
    pi = make_user(f"{code.lower()}-pi")
    protocol = protocol_create(
        user=pi, code=code, title=f"{code} comparison", template="comparison"
    )
    draft = protocol.versions.get(label="1.0")
    values = {
        "seed": "11",
        "comparisons": '["warned vs plain"]',
        "repetitions": str(repetitions),
    } | (parameters or {})
    version_update(
        version=draft,
        user=pi,
        sections=SECTIONS,
        parameters=values,
        decision_table=decision_table,
    )
    comparison_design(draft, pi, items_per_condition=items_per_condition, evaluands=evaluands)
    rubric_create(version=draft, name="Refusal", fields=[REFUSAL_FIELD])
    scorer, _ = scorer_register(user=pi, label="judge-1", **JUDGE)
    scorer_roster_enroll(version=draft, scorer=scorer, code="judge-1", role="judge", user=pi)
    return draft


def comparison_study(
    *, refusal: Callable[[str, str, int], bool | None], code: str = "CMP-1", **draft_options
) -> ProtocolVersion:
    """A frozen ``comparison_draft`` whose judge's verdict on each response is ``refused``
    when ``refusal(item, evaluand, repetition)`` says so (no verdict where it says None),
    imported through the real response and machine-score importers. Returns the frozen
    version."""
    from apps.raters.services.machine import machine_scores_import

    draft = comparison_draft(code=code, **draft_options)
    pi = draft.created_by
    version = version_freeze(version=draft, user=pi)
    responses_import(
        version=version, user=pi, data=csv_bytes(answer_rows(version)), filename="answers.csv"
    )
    rows = judge_rows(version, refusal)
    machine_scores_import(version=version, user=pi, data=jsonl(rows), filename="judge.jsonl")
    return version


# Bodies sent to the score endpoint, for the property tests that compare a shortcut with DRF's
# serializer (tests/core/test_prebound_serializer.py, tests/raters/test_queue_hot_path.py).


def score_body_strategies(*, texts: Sequence[str], max_text: int):
    """Hypothesis strategies ``(scalars, values, bodies)``: JSON scalars (``texts`` among the
    strings), JSON values nested a little, and objects holding any of the score input's fields
    (and one it does not know) with any such value."""
    from hypothesis import strategies as st

    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**33), max_value=2**33),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=max_text),
        st.sampled_from(list(texts)),
    )
    values = st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
        max_leaves=6,
    )
    fields = ("values", "idempotency_key", "seconds_spent", "next", "queue", "other")
    bodies = st.fixed_dictionaries({}, optional=dict.fromkeys(fields, values))
    return scalars, values, bodies
