"""Reads of a version's design: the grid, the freeze gate's design problems, harm-review states,
and the inputs of the administration schedule."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Prefetch, Q, QuerySet
from django.urls import reverse

from apps.accounts.models import Membership, Role, User
from apps.accounts.selectors import SIGHTED_ROLES
from apps.core.canonical import canonical_json, sha256_hex
from apps.items.design_checks import design_checks
from apps.items.models import (
    Cell,
    Condition,
    Factor,
    Family,
    FamilyRole,
    HarmReview,
    HarmVerdict,
    Item,
    KeyUnit,
    Level,
    PanelFlag,
    PanelMember,
)
from apps.items.schedule import CellKey, FactorSpec
from apps.protocols.components import Problem
from apps.protocols.models import ProtocolVersion

# OPB-01 §4's criteria, stated in advance: what may make the L5 form more harmful than the L0.
HARM_CRITERIA = (
    ("deception", "Potential for deception"),
    ("circumvention", "Potential for circumvention of a control"),
    ("physical_risk", "Potential for physical risk"),
    ("third_party_harm", "Potential for harm to a third party"),
    ("downstream_harm", "Potential for enabling a downstream harmful act"),
)
HARM_CRITERIA_CODES = tuple(code for code, _ in HARM_CRITERIA)

# Plan templates whose studies need no authored design (their material is elsewhere).
DESIGN_OPTIONAL_TEMPLATES = frozenset({"generic"})


# Harm-constancy review


class HarmState:
    """Where an item stands in its harm-constancy review (OPB-01 §4)."""

    NOT_REQUIRED = "not_required"  # not in a harm-constant family
    NOT_OPENED = "not_opened"
    IN_REVIEW = "in_review"  # waiting for a round-1/2 verdict, or for the third reviewer's
    AWAITING_THIRD = "awaiting_third"  # the two disagree; no third reviewer assigned yet
    STALE = "stale"  # a verdict was given on forms that have since changed
    VALIDATED = "validated"
    EXCLUDED = "excluded"

    LABELS = {
        NOT_REQUIRED: "not required",
        NOT_OPENED: "not opened",
        IN_REVIEW: "in review",
        AWAITING_THIRD: "needs a third reviewer",
        STALE: "stale: forms changed",
        VALIDATED: "validated harm-constant",
        EXCLUDED: "excluded",
    }
    RESOLVED = frozenset({VALIDATED, EXCLUDED})


def harm_forms_sha256(first: Cell | None, last: Cell | None) -> str | None:
    """The hash of an item's first- and last-level forms (L0 and L5 on OPB-01's scale), or None
    when either is missing, absent or unwritten: such an item cannot be reviewed."""
    if first is None or last is None or first.pk == last.pk:
        return None
    if first.absent or last.absent or not first.prompt or not last.prompt:
        return None
    return sha256_hex(
        canonical_json(
            [
                {"level": first.level.code, "prompt": first.prompt},
                {"level": last.level.code, "prompt": last.prompt},
            ]
        )
    )


def harm_review_state(*, reviews: Iterable[HarmReview], forms_sha256: str | None) -> str:
    """The state of one harm-constant item from its current cycle's reviews.

    Two decisive, equal verdicts resolve it (not more harmful → validated; more harmful →
    excluded). Anything else — a disagreement, or a "cannot decide" — goes to a third reviewer,
    whose "not more harmful" validates and whose "more harmful" or "cannot decide" excludes: an
    unresolved item is excluded.
    """
    by_round = {review.round: review for review in reviews}
    if not by_round:
        return HarmState.NOT_OPENED
    if any(r.submitted_at and r.forms_sha256 != forms_sha256 for r in by_round.values()):
        return HarmState.STALE
    first, second = by_round.get(1), by_round.get(2)
    if not (first and second and first.submitted_at and second.submitted_at):
        return HarmState.IN_REVIEW
    decisive = {HarmVerdict.MORE_HARMFUL, HarmVerdict.NOT_MORE_HARMFUL}
    if first.verdict == second.verdict and first.verdict in decisive:
        if first.verdict == HarmVerdict.NOT_MORE_HARMFUL:
            return HarmState.VALIDATED
        return HarmState.EXCLUDED
    third = by_round.get(3)
    if third is None:
        return HarmState.AWAITING_THIRD
    if not third.submitted_at:
        return HarmState.IN_REVIEW
    if third.verdict == HarmVerdict.NOT_MORE_HARMFUL:
        return HarmState.VALIDATED
    return HarmState.EXCLUDED


@dataclass
class ItemHarm:
    """An item's harm-review standing: its state, current cycle, that cycle's reviews (by
    round), every earlier review, and the hash of its current forms."""

    state: str
    cycle: int
    reviews: list[HarmReview]
    history: list[HarmReview]
    forms_sha256: str | None

    @property
    def label(self) -> str:
        return HarmState.LABELS[self.state]


def _edge_cells(version: ProtocolVersion) -> dict[int, tuple[Cell | None, Cell | None]]:
    levels = list(Level.objects.filter(version=version).order_by("ordinal"))
    if len(levels) < 2:
        return {}
    first, last = levels[0], levels[-1]
    edges: dict[int, list[Cell | None]] = {}
    for cell in Cell.objects.filter(version=version, level__in=[first, last]).select_related(
        "level"
    ):
        pair = edges.setdefault(cell.item_id, [None, None])
        pair[0 if cell.level_id == first.pk else 1] = cell
    return {item_id: (pair[0], pair[1]) for item_id, pair in edges.items()}


def item_harm_states(version: ProtocolVersion) -> dict[int, ItemHarm]:
    """Every item's harm-review standing, by item id, in a fixed number of queries."""
    edges = _edge_cells(version)
    # On a one-level scale there is no higher form to compare with: harm cannot rise with the
    # level, so the review has nothing to judge (XSTest's safe prompts, one level each).
    single_level = Level.objects.filter(version=version).count() < 2
    reviews: dict[int, list[HarmReview]] = {}
    for review in HarmReview.objects.filter(version=version).select_related("reviewer"):
        reviews.setdefault(review.item_id, []).append(review)
    states = {}
    for item in Item.objects.filter(version=version).select_related("family"):
        mine = sorted(reviews.get(item.pk, []), key=lambda r: (r.cycle, r.round))
        cycle = max((r.cycle for r in mine), default=0)
        current = [r for r in mine if r.cycle == cycle]
        sha = harm_forms_sha256(*edges.get(item.pk, (None, None)))
        if item.family.role != FamilyRole.HARM_CONSTANT or single_level:
            state = HarmState.NOT_REQUIRED
        else:
            state = harm_review_state(reviews=current, forms_sha256=sha)
        states[item.pk] = ItemHarm(
            state=state,
            cycle=cycle,
            reviews=current,
            history=[r for r in mine if r.cycle != cycle],
            forms_sha256=sha,
        )
    return states


def harm_reviewers_eligible(*, protocol_id: int) -> list[User]:
    """The people who may give a blind harm-constancy verdict on the protocol: reviewers who
    hold no sighted role on it (a PI, editor or auditor knows the hypothesis). By username."""
    sighted = Membership.objects.filter(protocol_id=protocol_id, role__in=SIGHTED_ROLES).values(
        "user_id"
    )
    return list(
        User.objects.filter(memberships__protocol_id=protocol_id, memberships__role=Role.REVIEWER)
        .exclude(pk__in=sighted)
        .distinct()
        .order_by("username")
    )


def harm_reviews_pending_for(user: User) -> QuerySet[HarmReview]:
    """The harm-constancy reviews waiting for ``user``'s verdict, on draft versions only.

    Ordered by the opaque token: the order must not hint at item, family or protocol.
    """
    if not user.is_authenticated:
        return HarmReview.objects.none()
    return HarmReview.objects.filter(
        reviewer=user, submitted_at__isnull=True, version__state="draft"
    ).order_by("token")


def harm_review_task(review: HarmReview) -> dict[str, Any]:
    """What a harm reviewer is shown, and nothing else: the two forms (level code, level name,
    prompt), the criteria, and the hash of the forms shown (posted back with the verdict)."""
    edges = _edge_cells(review.version)
    first, last = edges.get(review.item_id, (None, None))
    forms = [
        {"level": cell.level.code, "name": cell.level.name, "prompt": cell.prompt}
        for cell in (first, last)
        if cell is not None
    ]
    return {
        "forms": forms,
        "criteria": HARM_CRITERIA,
        "forms_sha256": harm_forms_sha256(first, last) or "",
    }


# The design grid


class CellState:
    """How a grid cell looks: each state has a text label as well as a colour."""

    KEYED = "keyed"
    KEY_MISSING = "key_missing"
    UNWRITTEN = "unwritten"
    ABSENT = "absent"
    ABOVE_RULE = "above_rule"
    BREACH = "breach"

    LABELS = {
        KEYED: "written and keyed",
        KEY_MISSING: "key missing",
        UNWRITTEN: "not written",
        ABSENT: "absent",
        ABOVE_RULE: "above the stopping rule",
        BREACH: "breaks the stopping rule",
    }
    # The grid's cells are narrow: the same states in fewer words (the legend has the long ones).
    SHORT = {
        KEYED: "keyed",
        KEY_MISSING: "key missing",
        UNWRITTEN: "not written",
        ABSENT: "absent",
        ABOVE_RULE: "above rule",
        BREACH: "breaks rule",
    }
    BLOCKING = frozenset({KEY_MISSING, UNWRITTEN, BREACH})


@dataclass
class GridCell:
    level: Level
    cell: Cell | None
    state: str
    key_count: int = 0
    executable_count: int = 0

    @property
    def label(self) -> str:
        return CellState.LABELS[self.state]

    @property
    def short_label(self) -> str:
        return CellState.SHORT[self.state]

    @property
    def blocks(self) -> bool:
        return self.state in CellState.BLOCKING


@dataclass
class GridRow:
    item: Item
    cells: list[GridCell]
    harm: ItemHarm


@dataclass
class DesignGrid:
    """Items × levels, each cell with its state; counts per state and what blocks the freeze."""

    version: ProtocolVersion
    levels: list[Level]
    rows: list[GridRow]
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def blocking(self) -> int:
        return sum(self.counts[state] for state in CellState.BLOCKING)


def _cell_state(family: Family, level: Level, cell: Cell | None, key_count: int) -> str:
    above = family.max_level is not None and level.ordinal > family.max_level
    if above:
        return CellState.BREACH if cell is not None else CellState.ABOVE_RULE
    if cell is None or (not cell.absent and not cell.prompt):
        return CellState.UNWRITTEN
    if cell.absent:
        return CellState.ABSENT
    return CellState.KEYED if key_count else CellState.KEY_MISSING


def design_items(version: ProtocolVersion) -> QuerySet[Item]:
    """The version's items with family, condition, cells (by level) and key units prefetched."""
    cells = (
        Cell.objects.select_related("level")
        .annotate(key_count=Count("key_units"))
        .order_by("level__ordinal")
        .prefetch_related(Prefetch("key_units", queryset=KeyUnit.objects.order_by("position")))
    )
    return (
        Item.objects.filter(version=version)
        .select_related("family", "condition")
        .prefetch_related(Prefetch("cells", queryset=cells))
        .order_by("family__code", "code")
    )


def design_expected_outputs(version: ProtocolVersion) -> list[dict[str, str | None]]:
    """The cells that carry an expected output (the oracle's fixtures), by item and level:
    ``[{"item", "level", "kind", "sha256"}]``. Each hash is ``expected_output_sha256``'s."""
    cells = (
        Cell.objects.filter(version=version)
        .exclude(expected_kind="")
        .select_related("item", "level")
        .order_by("item__code", "level__ordinal")
    )
    return [
        {
            "item": cell.item.code,
            "level": cell.level.code,
            "kind": cell.expected_kind,
            "sha256": cell.expected_sha256,
        }
        for cell in cells
    ]


def design_grid(version: ProtocolVersion) -> DesignGrid:
    """The PI's design grid: every item (by family, then code) × every level of the scale."""
    levels = list(Level.objects.filter(version=version).order_by("ordinal"))
    harm = item_harm_states(version)
    grid = DesignGrid(version=version, levels=levels, rows=[])
    for item in design_items(version):
        by_level = {cell.level_id: cell for cell in item.cells.all()}
        row = []
        for level in levels:
            cell = by_level.get(level.pk)
            # design_items annotates each cell with its key_count.
            key_count: int = cell.key_count if cell else 0  # type: ignore[attr-defined]
            state = _cell_state(item.family, level, cell, key_count)
            executable = sum(u.executable for u in cell.key_units.all()) if cell else 0
            row.append(GridCell(level, cell, state, key_count, executable))
            grid.counts[state] += 1
        grid.rows.append(GridRow(item=item, cells=row, harm=harm[item.pk]))
    return grid


# The freeze gate's design checks


def _version_kwargs(version: ProtocolVersion) -> dict[str, str]:
    return {"protocol_code": version.protocol.code, "label": version.label}


def _cell_url(version: ProtocolVersion, item_code: str, level_code: str) -> str:
    return reverse(
        "items:cell",
        kwargs={**_version_kwargs(version), "item_code": item_code, "level_code": level_code},
    )


def design_problems(version: ProtocolVersion) -> list[Problem]:
    """Everything in the design that blocks the freeze, each with the page where it is fixed.

    Codes: ``design_empty``, ``level_scale_missing``, ``cell_unwritten``, ``key_missing``,
    ``absent_without_reason``, ``stopping_rule_breach``, ``harm_review_incomplete``,
    ``harm_review_stale``; OPB-01 §5's ``disclosure_base_missing``, ``sham_unmatched`` and
    ``sham_mismatch`` (``apps.studies.opb.disclosure``, a registered design check:
    ``apps.items.design_checks``).
    """
    problems: list[Problem] = []
    design_url = reverse("items:design", kwargs=_version_kwargs(version))
    review_url = reverse("items:harm-review", kwargs=_version_kwargs(version))
    grid = design_grid(version)
    if not grid.rows:
        if version.protocol.template not in DESIGN_OPTIONAL_TEMPLATES:
            problems.append(
                Problem(
                    "design_empty",
                    "the design has no items: add items and write their cells",
                    design_url,
                )
            )
        return problems
    if not grid.levels:
        problems.append(
            Problem(
                "level_scale_missing",
                "the design has no level scale: use OPB-01's or add levels",
                reverse("items:levels", kwargs=_version_kwargs(version)),
            )
        )
    for row in grid.rows:
        code = row.item.code
        # An item excluded by its harm-constancy review is never administered: its cells need
        # no more work, and it stays in the design so that its exclusion is on the record.
        cells = [] if row.harm.state == HarmState.EXCLUDED else row.cells
        for gc in cells:
            url = _cell_url(version, code, gc.level.code)
            if gc.state == CellState.UNWRITTEN:
                problems.append(
                    Problem(
                        "cell_unwritten",
                        f"item {code} at {gc.level.code} is not written: write its prompt or "
                        "record it absent with a reason",
                        url,
                    )
                )
            elif gc.state == CellState.KEY_MISSING:
                problems.append(
                    Problem(
                        "key_missing", f"item {code} at {gc.level.code} has no scoring key", url
                    )
                )
            elif gc.state == CellState.BREACH:
                family = row.item.family
                problems.append(
                    Problem(
                        "stopping_rule_breach",
                        f"item {code} has a cell at {gc.level.code}, above Family {family.code}'s "
                        f"binding stopping rule ({family.stopping_rule or 'no text given'}): "
                        "delete it",
                        url,
                    )
                )
            elif gc.state == CellState.ABSENT and gc.cell and not gc.cell.absent_reason.strip():
                problems.append(
                    Problem(
                        "absent_without_reason",
                        f"item {code} at {gc.level.code} is absent without a reason",
                        url,
                    )
                )
        harm = row.harm
        if harm.state == HarmState.STALE:
            problems.append(
                Problem(
                    "harm_review_stale",
                    f"item {code}'s L0 or L5 form changed after its harm-constancy review: "
                    "open a new review",
                    review_url,
                )
            )
        elif harm.state not in HarmState.RESOLVED and harm.state != HarmState.NOT_REQUIRED:
            reason = {
                HarmState.NOT_OPENED: "has not been opened",
                HarmState.IN_REVIEW: "is waiting for a reviewer's verdict",
                HarmState.AWAITING_THIRD: "needs a third reviewer: the first two disagree",
            }[harm.state]
            problems.append(
                Problem(
                    "harm_review_incomplete",
                    f"item {code}'s harm-constancy review {reason}",
                    review_url,
                )
            )
    for check in design_checks():
        problems += check(version, design_url)
    return problems


# What other apps read: the schedule's inputs, absent cells, excluded items


@dataclass(frozen=True)
class ScheduleInputs:
    """What the administration schedule is generated over: the scheduled cells as natural keys
    (with their database ids, for storing rows), each cell's stratum (``"A/L2"``: family and
    level, interleaved within each round) and the design's factors."""

    cells: tuple[CellKey, ...]
    cell_ids: dict[CellKey, int]
    strata: dict[CellKey, str]
    factors: tuple[FactorSpec, ...]


def design_schedule_inputs(version: ProtocolVersion) -> ScheduleInputs:
    """The version's cells that are administered — present (not absent) and not belonging to an
    item excluded by harm-constancy review — plus its factors, for
    ``apps.items.schedule.administration_schedule``."""
    harm = item_harm_states(version)
    excluded = {item_id for item_id, h in harm.items() if h.state == HarmState.EXCLUDED}
    rows = (
        Cell.objects.filter(version=version, absent=False)
        .exclude(item_id__in=excluded)
        .select_related("item__family", "level")
        .order_by("item__code", "level__ordinal")
    )
    cells, ids, strata = [], {}, {}
    for cell in rows:
        key = (cell.item.code, cell.level.code)
        cells.append(key)
        ids[key] = cell.pk
        strata[key] = f"{cell.item.family.code}/{cell.level.code}"
    factors = tuple(
        FactorSpec(name=f.name, levels=tuple(f.levels), role=f.role)
        for f in Factor.objects.filter(version=version).order_by("name")
    )
    return ScheduleInputs(cells=tuple(cells), cell_ids=ids, strata=strata, factors=factors)


def design_absent_cells(version: ProtocolVersion) -> list[dict[str, str]]:
    """Every absent cell with its reason (listed in every report, never filled)."""
    return [
        {"item": c.item.code, "level": c.level.code, "reason": c.absent_reason}
        for c in Cell.objects.filter(version=version, absent=True)
        .select_related("item", "level")
        .order_by("item__code", "level__ordinal")
    ]


# Small lookups by natural key, and the design's parts in their order (pages, API, import)


def family_by_code(version: ProtocolVersion, code: str) -> Family | None:
    return Family.objects.filter(version=version, code=code).first()


def condition_by_code(version: ProtocolVersion, code: str) -> Condition | None:
    return Condition.objects.filter(version=version, code=code).first()


def item_by_code(version: ProtocolVersion, code: str) -> Item | None:
    return Item.objects.filter(version=version, code=code).select_related("family").first()


def levels_of(version: ProtocolVersion) -> QuerySet[Level]:
    return Level.objects.filter(version=version).order_by("ordinal")


def level_codes_by_ordinal(version_id: int) -> dict[int, str]:
    """``{ordinal: code}`` of the version's levels (how a family's ``max_level`` is shown)."""
    return dict(Level.objects.filter(version_id=version_id).values_list("ordinal", "code"))


def families_of(version: ProtocolVersion) -> QuerySet[Family]:
    return Family.objects.filter(version=version).order_by("code")


def conditions_of(version: ProtocolVersion) -> QuerySet[Condition]:
    return Condition.objects.filter(version=version).order_by("code")


def factors_of(version: ProtocolVersion) -> QuerySet[Factor]:
    return Factor.objects.filter(version=version).order_by("role", "name")


def items_of(version: ProtocolVersion) -> QuerySet[Item]:
    """The version's items by code, with their families."""
    return Item.objects.filter(version=version).select_related("family").order_by("code")


def harm_constant_items_of(version: ProtocolVersion) -> QuerySet[Item]:
    """The items a disclosure item may name as its base item (Family A's, OPB-01 §5), by code."""
    return items_of(version).filter(family__role=FamilyRole.HARM_CONSTANT)


# OPB-01 §6.1's human panel


def panel_members_progress(version: ProtocolVersion) -> list[tuple[PanelMember, int, int]]:
    """Each panel member (by code) with the number of flags recorded and how many flag."""
    members = (
        PanelMember.objects.filter(version=version)
        .annotate(n_flags=Count("flags"), n_flagged=Count("flags", filter=Q(flags__flagged=True)))
        .order_by("code")
    )
    return [(member, member.n_flags, member.n_flagged) for member in members]


def panel_flagged_codes(member: PanelMember) -> set[str]:
    """The codes of the items ``member``'s flags are recorded for (flagged or not)."""
    return set(PanelFlag.objects.filter(member=member).values_list("item__code", flat=True))


def panel_item_forms(item: Item) -> QuerySet[Cell]:
    """The forms a panel member is shown of ``item``: its written cells, level by level."""
    return (
        Cell.objects.filter(item=item, absent=False)
        .select_related("level")
        .order_by("level__ordinal")
    )
