"""What a study administers: the design of a protocol version (OPB-01 §2–§5, seed 002's design).

Every row here carries ``version_id`` and is frozen with its version: on PostgreSQL a trigger
refuses INSERT, UPDATE and DELETE once the version is no longer a draft.
"""

from typing import Any

from django.conf import settings
from django.db import models

from apps.core.canonical import canonical_json, sha256_hex
from apps.protocols.models import ProtocolVersion


class Level(models.Model):
    """One step of the version's ordinal level scale (OPB-01 §2: L0 description … L5 execution)."""

    version = models.ForeignKey(ProtocolVersion, on_delete=models.CASCADE, related_name="levels")
    ordinal = models.PositiveSmallIntegerField()
    code = models.CharField(max_length=16)
    name = models.CharField(max_length=100)
    form = models.TextField(blank=True, help_text="What a request at this level looks like.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "ordinal"], name="level_unique_ordinal"),
            models.UniqueConstraint(fields=["version", "code"], name="level_unique_code"),
        ]
        ordering = ["version", "ordinal"]

    def __str__(self) -> str:
        return f"{self.code} {self.name}"


class FamilyRole(models.TextChoices):
    HARM_CONSTANT = "harm_constant", "Harm-constant"
    DISCRIMINATION_CONTROL = "discrimination_control", "Discrimination control"
    DISCLOSURE = "disclosure", "Disclosure"
    FORCE_CONTROL = "force_control", "Force control"
    OTHER = "other", "Other"


class Family(models.Model):
    """A family of items (OPB-01 Family A, B, C; XSTest's safe prompts and unsafe contrasts).

    ``max_level`` is the binding stopping rule: no cell of this family may be authored above it
    (OPB-01 §4: Family B is written to L3 maximum). Null means the whole scale is allowed.
    """

    version = models.ForeignKey(ProtocolVersion, on_delete=models.CASCADE, related_name="families")
    code = models.CharField(max_length=16)
    name = models.CharField(max_length=200)
    role = models.CharField(max_length=32, choices=FamilyRole.choices)
    max_level = models.PositiveSmallIntegerField(null=True, blank=True)
    stopping_rule = models.TextField(
        blank=True, help_text="The rule's text, quoted whenever it refuses something."
    )
    description = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "code"], name="family_unique_code"),
        ]
        ordering = ["version", "code"]
        verbose_name_plural = "families"

    def __str__(self) -> str:
        return f"Family {self.code}"


class Condition(models.Model):
    """An arm of the design, e.g. coordinate inscription vs the sham inscription placebo."""

    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.CASCADE, related_name="conditions"
    )
    code = models.CharField(max_length=32)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    is_sham = models.BooleanField(default=False, help_text="A placebo arm (OPB-01 §5's C₀).")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "code"], name="condition_unique_code"),
        ]
        ordering = ["version", "code"]

    def __str__(self) -> str:
        return self.code


class FactorRole(models.TextChoices):
    DESIGN = "design", "Design factor (randomised)"
    COUNTERBALANCED = "counterbalanced", "Counterbalanced nuisance factor"


class Factor(models.Model):
    """A factor of a factorial design (seed 002: friction × alternate route × framing, with tool
    names and presentation order counterbalanced)."""

    version = models.ForeignKey(ProtocolVersion, on_delete=models.CASCADE, related_name="factors")
    name = models.SlugField(max_length=64)
    label = models.CharField(max_length=200)
    levels = models.JSONField(help_text="The factor's levels, in order, as strings.")
    role = models.CharField(max_length=16, choices=FactorRole.choices, default=FactorRole.DESIGN)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "name"], name="factor_unique_name"),
        ]
        ordering = ["version", "name"]

    def __str__(self) -> str:
        return self.name


class Item(models.Model):
    """One item: a content unit of a family, written at one or more levels (its cells)."""

    version = models.ForeignKey(ProtocolVersion, on_delete=models.CASCADE, related_name="items")
    family = models.ForeignKey(Family, on_delete=models.CASCADE, related_name="items")
    code = models.CharField(max_length=64)
    domain = models.CharField(max_length=200, blank=True)
    condition = models.ForeignKey(
        Condition, on_delete=models.PROTECT, null=True, blank=True, related_name="items"
    )
    notes = models.TextField(blank=True)
    # OPB-01 §5: a disclosure item (C_SPXI or the sham C₀) is a Family A item with an
    # inscription; the three-way contrast pairs it with that plain item by this link.
    base_item = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="variants",
        help_text="The harm-constant (Family A) item this disclosure item inscribes (OPB-01 §5).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "code"], name="item_unique_code"),
        ]
        ordering = ["version", "code"]

    def __str__(self) -> str:
        return self.code


class ExpectedKind(models.TextChoices):
    NONE = "", "No expected output"
    TEXT = "text", "Text"
    JSON = "json", "JSON"


def expected_output_sha256(kind: str, value: Any) -> str | None:
    """The SHA-256 of a cell's expected output, as published with the frozen fixtures.

    Text: the SHA-256 of its UTF-8 bytes (what ``sha256sum`` gives for the fixture file). JSON:
    the SHA-256 of its canonical JSON (``apps.core.canonical``). None when the cell has none.
    """
    if kind == ExpectedKind.TEXT:
        return sha256_hex(str(value).encode("utf-8"))
    if kind == ExpectedKind.JSON:
        return sha256_hex(canonical_json(value))
    return None


class Cell(models.Model):
    """An item at one level: the prompt that is administered, or an absent cell with its reason.

    Absent cells are recorded and reported, never filled or approximated (OPB-01 §2).
    """

    version = models.ForeignKey(ProtocolVersion, on_delete=models.CASCADE, related_name="cells")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="cells")
    level = models.ForeignKey(Level, on_delete=models.PROTECT, related_name="cells")
    prompt = models.TextField(blank=True)
    absent = models.BooleanField(default=False)
    absent_reason = models.TextField(blank=True)
    # The frozen expected output an oracle scorer compares a response with (seed 002's exact
    # input/output fixtures): text, or any JSON value. Empty kind: the cell has none.
    # db_default too: rows written by raw SQL (bulk loaders, tests of the guards) get "none".
    expected_kind = models.CharField(
        max_length=8,
        choices=ExpectedKind.choices,
        blank=True,
        default=ExpectedKind.NONE,
        db_default=ExpectedKind.NONE,
    )
    expected_output = models.JSONField(null=True, blank=True)
    # OPB-01 §2's L5 invariant: the tools or connectors this cell's key requires, by the names
    # evaluands' toolkits use; the freeze gate compares an L5 cell's list with each enrolled
    # evaluand's external tools (``apps.responses.surfaces.l5_tool_problems``).
    requires_tools = models.JSONField(
        default=list,
        blank=True,
        db_default=[],
        help_text="Tool or connector names this cell's key requires (checked at L5).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "level"], name="cell_unique_item_level"),
            models.CheckConstraint(
                condition=models.Q(absent=False) | ~models.Q(absent_reason=""),
                name="cell_absent_has_reason",
            ),
            # An absent cell is never approximated: it carries no prompt to administer.
            models.CheckConstraint(
                condition=models.Q(absent=False) | models.Q(prompt=""),
                name="cell_absent_has_no_prompt",
            ),
        ]
        ordering = ["version", "item", "level"]

    def __str__(self) -> str:
        return f"{self.item_id}@{self.level_id}"

    @property
    def expected_sha256(self) -> str | None:
        return expected_output_sha256(self.expected_kind, self.expected_output)


class KeyUnit(models.Model):
    """One required unit of a cell's frozen scoring key (OPB-01 §3), in order.

    ``executable`` marks the units that count for A_att (executable steps, L3–L5).
    """

    version = models.ForeignKey(ProtocolVersion, on_delete=models.CASCADE, related_name="key_units")
    cell = models.ForeignKey(Cell, on_delete=models.CASCADE, related_name="key_units")
    position = models.PositiveSmallIntegerField()
    text = models.TextField()
    executable = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cell", "position"], name="keyunit_unique_position"),
        ]
        # By the column, not the relation: following Cell's ordering (version, item → version)
        # reaches the version table twice and Django refuses it as an ordering loop.
        ordering = ["cell_id", "position"]

    def __str__(self) -> str:
        return f"{self.position}. {self.text[:40]}"


class HarmVerdict(models.TextChoices):
    MORE_HARMFUL = "more_harmful", "L5 is more harmful than L0"
    NOT_MORE_HARMFUL = "not_more_harmful", "L5 is not more harmful than L0"
    CANNOT_DECIDE = "cannot_decide", "Cannot decide"


class HarmReview(models.Model):
    """One reviewer's blind judgement of one harm-constant item (OPB-01 §4).

    Rounds 1 and 2 are the independent reviewers; round 3 is the third reviewer who resolves a
    disagreement. ``token`` is the opaque id the reviewer sees.

    ``cycle`` numbers the reviews of one item: when an item's L0 or L5 form changes after it was
    reviewed, the PI opens a new cycle and the earlier one stays as history (the current cycle is
    the highest). ``forms_sha256`` is the hash of the forms the verdict was given on; a submitted
    review whose hash differs from the item's current forms is stale.
    """

    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.CASCADE, related_name="harm_reviews"
    )
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="harm_reviews")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="harm_reviews"
    )
    cycle = models.PositiveSmallIntegerField(default=1)
    round = models.PositiveSmallIntegerField()
    token = models.CharField(max_length=32, unique=True)
    verdict = models.CharField(max_length=32, choices=HarmVerdict.choices, blank=True)
    criteria = models.JSONField(
        default=list, blank=True, help_text="The stated criteria the reviewer found met."
    )
    note = models.TextField(blank=True)
    forms_sha256 = models.CharField(
        max_length=64, help_text="Hash of the L0 and L5 forms the reviewer was shown."
    )
    assigned_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["item", "cycle", "reviewer"], name="harmreview_one_per_reviewer"
            ),
            models.UniqueConstraint(
                fields=["item", "cycle", "round"], name="harmreview_unique_round"
            ),
            models.CheckConstraint(
                condition=models.Q(round__gte=1, round__lte=3), name="harmreview_round_1_to_3"
            ),
        ]
        ordering = ["item", "cycle", "round"]

    def __str__(self) -> str:
        return f"harm review {self.round} of item {self.item_id}"


class PanelMember(models.Model):
    """One person of OPB-01 §6.1's human panel: not a blind reviewer of responses, but someone
    who is shown the Family A item set and flags any item that could cause harm. Known to the
    study by a code only (``p-01``)."""

    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.CASCADE, related_name="panel_members"
    )
    code = models.CharField(max_length=64)
    note = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "code"], name="panel_member_unique_code"),
        ]
        ordering = ["version", "code"]

    def __str__(self) -> str:
        return self.code


class PanelFlag(models.Model):
    """One panel member's verdict on one Family A item: flagged as potentially harmful, or not
    (OPB-01 §6.1). One per member and item; a recorded flag is kept."""

    version = models.ForeignKey(
        ProtocolVersion, on_delete=models.CASCADE, related_name="panel_flags"
    )
    member = models.ForeignKey(PanelMember, on_delete=models.PROTECT, related_name="flags")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="panel_flags")
    flagged = models.BooleanField()
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["member", "item"], name="panel_flag_unique_item"),
        ]
        ordering = ["version", "member", "item"]

    def __str__(self) -> str:
        return f"{self.member} on {self.item}: {'flagged' if self.flagged else 'not flagged'}"
