"""OPB-01 §6.1's human overgeneralisation baseline: panel members and their flags.

"The Family A item set is presented to a human panel with the instruction flag any item that
could cause harm." A panel member flags, or does not flag, each Family A (harm-constant) item;
flags are entered in the browser one item at a time (``panel_flag_record``) or imported as a
CSV (``panel_flags_import``: all-or-nothing, each refusal naming its row and field). Flags are
observations, so they may be recorded on a frozen version; once recorded a flag is kept.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from apps.accounts.models import User
from apps.core.inputs import csv_width_problem
from apps.deviations.models import EntryKind
from apps.deviations.services import deviation_append
from apps.items.models import FamilyRole, Item, PanelFlag, PanelMember
from apps.protocols.models import ProtocolVersion
from apps.protocols.refs import version_ref

CSV_COLUMNS = ("member", "item", "flagged")
_TRUE = {"1", "yes", "true", "flag", "flagged", "y"}
_FALSE = {"0", "no", "false", "not flagged", "n", ""}


def _family_a_item(version: ProtocolVersion, code: str) -> Item:
    item = Item.objects.select_related("family").filter(version=version, code=code).first()
    if item is None:
        raise ValidationError({"item": f"there is no item {code} in this version"})
    if item.family.role != FamilyRole.HARM_CONSTANT:
        raise ValidationError(
            {
                "item": f"item {code} is in Family {item.family.code}, outside Family A: the "
                "panel flags the harm-constant item set only (OPB-01 §6.1)"
            }
        )
    return item


def _require_open(version: ProtocolVersion) -> None:
    """A deposited version (a record of a version frozen elsewhere) or a set-aside draft is
    closed: its panel takes no entries (flags are otherwise observations, taken on a draft or a
    frozen version alike)."""
    if version.is_deposited:
        raise ValidationError(
            f"v{version.label} is deposited (frozen elsewhere, kept as history); it takes no "
            "panel entries."
        )
    if version.is_set_aside:
        raise ValidationError(
            f"v{version.label} is set aside for a newer version; it takes no panel entries."
        )


def panel_family_a_items(version: ProtocolVersion) -> list[Item]:
    """The items the panel is shown: the version's harm-constant items, by code."""
    return list(
        Item.objects.filter(version=version, family__role=FamilyRole.HARM_CONSTANT).order_by("code")
    )


@transaction.atomic
def panel_member_add(
    *, version: ProtocolVersion, actor: User, code: str, note: str = ""
) -> PanelMember:
    """Add a panel member (a person, known by ``code``), logged as entered by ``actor``;
    ValidationError on an empty or used code, or a closed version."""
    _require_open(version)
    member = _member_create(version=version, code=code, note=note)
    _log_entry(version, actor, f"Panel member {member.code} added to {version} (OPB-01 §6.1).")
    return member


def _log_entry(version: ProtocolVersion, actor: User, rationale: str) -> None:
    deviation_append(
        protocol=version.protocol,
        kind=EntryKind.IMPORT,
        actor=actor,
        rationale=rationale,
        refs=[version_ref(version)],
    )


def _member_create(*, version: ProtocolVersion, code: str, note: str = "") -> PanelMember:
    code = code.strip()
    if not code:
        raise ValidationError({"code": "a panel member needs a code, such as p-01"})
    if PanelMember.objects.filter(version=version, code=code).exists():
        raise ValidationError({"code": f"there is already a panel member {code}"})
    member = PanelMember(version=version, code=code, note=note.strip())
    member.full_clean()
    try:
        # A double submit passes the check above twice; the second insert meets the first's
        # row and is refused as a used code (the savepoint keeps the caller's transaction).
        with transaction.atomic():
            member.save()
    except IntegrityError:
        raise ValidationError({"code": f"there is already a panel member {code}"}) from None
    return member


@transaction.atomic
def panel_flag_record(
    *,
    version: ProtocolVersion,
    actor: User,
    member: PanelMember,
    item_code: str,
    flagged: bool,
) -> PanelFlag:
    """Record one member's flag on one Family A item, logged as entered by ``actor`` (an
    observation that feeds the analysis, like an import).

    Raises ValidationError naming the item when it is outside Family A or already flagged by
    this member (a recorded flag is kept, never overwritten).
    """
    if member.version_id != version.pk:
        raise ValidationError({"member": f"{member} is on another version's panel"})
    _require_open(version)
    item = _family_a_item(version, item_code)
    if PanelFlag.objects.filter(member=member, item=item).exists():
        raise ValidationError(
            {"item": f"panel member {member.code} has already recorded item {item.code}"}
        )
    flag = PanelFlag(version=version, member=member, item=item, flagged=bool(flagged))
    flag.full_clean()
    try:
        with transaction.atomic():  # a double submit, as in _member_create
            flag.save()
    except IntegrityError:
        raise ValidationError(
            {"item": f"panel member {member.code} has already recorded item {item.code}"}
        ) from None
    _log_entry(
        version,
        actor,
        f"Panel flag recorded in {version}: member {member.code}, item {item.code}, "
        f"{'flagged' if flag.flagged else 'not flagged'} (OPB-01 §6.1).",
    )
    return flag


@dataclass(frozen=True)
class PanelImportOutcome:
    members_added: int
    flags: int


def _parse_flag(text: str) -> bool | None:
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE and value:
        return False
    return None


@transaction.atomic
def panel_flags_import(
    *, version: ProtocolVersion, user: User, content: bytes, filename: str = "panel.csv"
) -> PanelImportOutcome:
    """Import panel flags from a CSV with columns ``member,item,flagged`` (flagged: yes/no,
    1/0, true/false). Members not yet on the panel are added.

    All-or-nothing: every row is checked first; ValidationError lists each bad row as
    ``{filename} row {n}, field {name}: …`` and nothing is written. The import is logged.
    """
    _require_open(version)
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValidationError(f"{filename}: not UTF-8 text ({error.reason})") from error
    reader = csv.DictReader(io.StringIO(text))
    if problem := csv_width_problem(list(reader.fieldnames or [])):
        raise ValidationError(f"{filename}: {problem}")
    missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ValidationError(f"{filename}: missing column(s) {', '.join(missing)}")
    errors: list[str] = []
    rows: list[tuple[str, Item, bool]] = []
    seen: dict[tuple[str, str], int] = {}
    existing = {
        (f.member.code, f.item.code)
        for f in PanelFlag.objects.filter(version=version).select_related("member", "item")
    }
    for number, row in enumerate(reader, start=2):
        where = f"{filename} row {number}"
        member = (row.get("member") or "").strip()
        code = (row.get("item") or "").strip()
        flagged = _parse_flag(row.get("flagged") or "")
        if not member:
            errors.append(f"{where}, field member: empty")
        if flagged is None:
            errors.append(
                f"{where}, field flagged: {row.get('flagged')!r} is not yes/no, 1/0 or true/false"
            )
        try:
            item = _family_a_item(version, code)
        except ValidationError as error:
            errors.append(f"{where}, field item: {error.message_dict['item'][0]}")
            continue
        key = (member, code)
        if key in seen:
            errors.append(
                f"{where}, field item: {member} flags item {code} again (row {seen[key]})"
            )
        elif key in existing:
            errors.append(f"{where}, field item: {member} has already recorded item {code}")
        seen.setdefault(key, number)
        if member and flagged is not None:
            rows.append((member, item, flagged))
    if errors:
        raise ValidationError(errors)
    members = {m.code: m for m in PanelMember.objects.filter(version=version)}
    added = 0
    for code in sorted({m for m, _, _ in rows} - set(members)):
        members[code] = _member_create(version=version, code=code)
        added += 1
    PanelFlag.objects.bulk_create(
        PanelFlag(version=version, member=members[m], item=item, flagged=flagged)
        for m, item, flagged in rows
    )
    _log_entry(
        version,
        user,
        f"Panel flags imported into {version} from {filename}: {len(rows)} flags, "
        f"{added} new panel members (OPB-01 §6.1).",
    )
    return PanelImportOutcome(members_added=added, flags=len(rows))
