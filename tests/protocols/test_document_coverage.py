"""Every frozen column is in the canonical document, or listed here with the reason it is not
(issue #33, "Why" 5: 21 frozen columns were outside the hash).

The frozen-guarded tables are found from the models (every model with a ``version`` foreign key
to ``ProtocolVersion`` whose table the frozen-version trigger guards, plus the version and its
protocol), so a new column, or a new guarded table, fails this test until it is hashed or listed.
Each column of a rich study is changed in turn (in a savepoint, on SQLite, where no trigger
refuses it) and the document rebuilt: it must change. Order columns (``position``) are swapped
between two rows instead: the document keeps their order, not their numbers.
"""

import random
from decimal import Decimal

import pytest
from django.apps import apps
from django.db import IntegrityError, connection, models, transaction

from apps.protocols.documents import version_document_bytes
from apps.protocols.models import Protocol, ProtocolVersion
from tests.factories import EvaluandFactory, opb_study


@pytest.fixture(autouse=True)
def isolated_components():
    """Every component as the apps registered it, not this app's empty registry (conftest)."""
    from apps.protocols import components

    return components


# Every table the frozen-version guard protects (apps/*/migrations: frozen_with_version), and the
# two it reads through. ``test_the_list_is_the_databases`` checks it against PostgreSQL.
FROZEN_TABLES = {
    "items_level",
    "items_family",
    "items_condition",
    "items_factor",
    "items_item",
    "items_cell",
    "items_keyunit",
    "items_harmreview",
    "protocols_protocolversion",
    "protocols_analysisparameter",
    "raters_rubric",
    "raters_rubricfield",
    "raters_scorerrosterentry",
    "raters_rubrictext",
    "responses_rosterentry",
    "responses_administration",
}

# Columns that are not frozen content, and why.
NOT_FROZEN = {
    "id": "a database id: the document holds natural keys only",
    "version_id": "the version the row belongs to: the document is that version's",
    "protocols_protocol.id": "a database id",
    "protocols_protocol.created_by_id": "who created the protocol: in the deviation log",
    "protocols_protocol.created_at": "a clock time: in the deviation log",
    "protocols_protocolversion.protocol_id": "the protocol the version belongs to",
    "protocols_protocolversion.created_by_id": "who opened the draft: in the log and history",
    "protocols_protocolversion.created_at": "a clock time",
    "protocols_protocolversion.updated_at": "a clock time",
    "protocols_protocolversion.frozen_by_id": "who froze it: the freeze entry of the log",
    "protocols_protocolversion.frozen_at": "when: the freeze entry of the log",
    "protocols_protocolversion.sha256": "the document's own hash, vouched for by the log",
    "items_harmreview.token": "an opaque capability for the reviewer's form, not content",
    "items_harmreview.assigned_at": "a clock time",
    "items_harmreview.submitted_at": "a clock time (whether it was submitted is hashed)",
    "protocols_protocolversion.state": "the lifecycle, not the content (a frozen document is "
    "frozen by definition): the identity trigger refuses any change of it once frozen, and a "
    "draft that the log says was frozen raises the integrity alarm",
    "raters_rubricfield.rubric_id": "the version's one rubric (one per version, and the field's "
    "version_id is guarded): there is no other rubric it could name",
}

ORDER_COLUMNS = {
    "items_keyunit.position",
    "protocols_analysisparameter.position",
    "raters_rubricfield.position",
    "raters_scorerrosterentry.position",
    "responses_rosterentry.position",
}


def _models() -> dict[str, type[models.Model]]:
    by_table = {model._meta.db_table: model for model in apps.get_models()}
    return {table: by_table[table] for table in FROZEN_TABLES | {"protocols_protocol"}}


def test_every_versioned_table_is_listed():
    """A new model that belongs to a version is either frozen (listed above) or says why not."""
    unguarded_on_purpose = {
        # Written after the freeze, by design: imports, scores, runs, tombstones, panels, ...
        model._meta.db_table
        for model in apps.get_models()
        # (the registry's publications and view-only links are acts on a frozen version, each
        # logged, and publishing changes nothing the version froze)
        if model._meta.app_label in ("responses", "raters", "analysis", "deviations", "registry")
        or model._meta.db_table.startswith(("items_panel", "protocols_historical"))
        or model._meta.db_table in ("protocols_withdrawal", "protocols_deposit")
    }
    versioned = {
        model._meta.db_table
        for model in apps.get_models()
        if any(
            getattr(field, "related_model", None) is ProtocolVersion and field.name == "version"
            for field in model._meta.concrete_fields
        )
    }
    assert versioned - FROZEN_TABLES - unguarded_on_purpose == set()


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_list_is_the_databases():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "JOIN pg_proc p ON p.oid = t.tgfoid "
            "WHERE p.proname = 'preregistry_guard_frozen' AND NOT t.tgisinternal"
        )
        assert {name for (name,) in cursor.fetchall()} == FROZEN_TABLES


def _rich_version() -> ProtocolVersion:
    from apps.items.models import Cell, Factor, Family, Level
    from apps.raters.models import RubricText, ScorerRosterEntry
    from apps.raters.services.scorers import scorer_register

    study = opb_study(evaluands=2, with_disclosure=True)
    version = study.version
    Factor.objects.create(version=version, name="friction", label="Friction", levels=["lo", "hi"])
    Factor.objects.create(version=version, name="alternate", label="Alt", levels=["a", "b"])
    cell = Cell.objects.filter(version=version).order_by("pk").first()
    Cell.objects.filter(pk=cell.pk).update(
        expected_kind="json", expected_output={"answer": 1}, requires_tools=["search"]
    )
    Family.objects.filter(version=version).update(max_level=3)
    # A cell with no key units and no administrations: somewhere for a unit or an
    # administration to be moved without breaking a unique order.
    taken = set(Cell.objects.filter(item=cell.item).values_list("level_id", flat=True))
    free = Level.objects.filter(version=version).exclude(pk__in=taken).first()
    if free is None:
        free = Level.objects.create(version=version, ordinal=90, code="L90", name="spare")
    Cell.objects.create(version=version, item=cell.item, level=free, prompt="spare")
    RubricText.objects.create(version=version, sha256="c" * 64, media_type="text/markdown")
    for n in (1, 2):
        scorer, _ = scorer_register(
            user=None, label=f"grader {n}", kind="script", name=f"grader-{n}", version="1"
        )
        ScorerRosterEntry.objects.create(
            version=version, scorer=scorer, code=f"g{n}", role="grader", position=n
        )
    # An evaluand and a scorer on no roster, for roster entries to be pointed at.
    EvaluandFactory()
    scorer_register(user=None, label="spare", kind="script", name="spare", version="1")
    # Another version of the protocol, for ``supersedes`` to point at.
    ProtocolVersion.objects.create(protocol=version.protocol, label="0.9")
    return version


def _other_values(field, row) -> list:
    value = getattr(row, field.attname)
    if field.choices:
        return [choice for choice, _ in field.flatchoices if choice != value]
    if isinstance(field, models.BooleanField):
        return [not value]
    if isinstance(field, models.DecimalField):
        return [(value or Decimal(0)) + Decimal("0.5")]
    if isinstance(field, models.IntegerField):
        return [(value or 0) + 1000]
    if isinstance(field, models.JSONField):
        if isinstance(value, list):
            return [[*value, value[0] if value else "extra"]]
        if isinstance(value, dict):
            return [{**value, "extra": 1}]
        return [{"extra": 1}]
    if isinstance(field, models.CharField | models.TextField):
        return [(value or "") + "x"]
    raise AssertionError(f"no change known for {type(field).__name__}")


def _rows(model, version):
    if model is Protocol:
        return [version.protocol]
    if model is ProtocolVersion:
        return [version]
    return list(model.objects.filter(version=version).order_by("pk"))


class _Undo(Exception):
    """Rolls a change back, carrying the hash of the document it gave."""


def _changes_document(version, model, field) -> bool:
    """Whether some change of ``field`` on some row changes the version's document."""
    before = version_document_bytes(version=ProtocolVersion.objects.get(pk=version.pk))[1]
    rows = _rows(model, version)
    assert rows, f"the rich version has no {model._meta.db_table} row: add one"
    key = f"{model._meta.db_table}.{field.column}"
    attempts = []
    if key in ORDER_COLUMNS:
        parent = {
            "items_keyunit": "cell_id",
            "raters_rubricfield": "rubric_id",
        }.get(model._meta.db_table)
        for first in rows:
            for second in rows:
                same_parent = parent is None or getattr(first, parent) == getattr(second, parent)
                a, b = getattr(first, field.attname), getattr(second, field.attname)
                if first.pk < second.pk and same_parent and a != b:
                    # Through a value no row has, so that a unique order is never broken.
                    attempts.append([(first.pk, 30_000), (second.pk, a), (first.pk, b)])
    elif field.is_relation:
        related = field.related_model
        values = {getattr(row, field.attname) for row in rows}
        if any(
            f.name == "version" and f.related_model is ProtocolVersion for f in related._meta.fields
        ):
            values |= set(related.objects.filter(version=version).values_list("pk", flat=True))
        elif related is ProtocolVersion:
            values |= set(
                ProtocolVersion.objects.filter(protocol=version.protocol).values_list(
                    "pk", flat=True
                )
            )
        else:  # evaluands, scorers, people: not versioned
            values |= set(related.objects.values_list("pk", flat=True)[:20])
        for row in rows[:40]:
            for value in sorted(values - {getattr(row, field.attname)}, key=str):
                attempts.append([(row.pk, value)])
    else:
        attempts = [[(row.pk, other)] for row in rows[:3] for other in _other_values(field, row)]
    # Many candidates collide with a unique constraint (a cell moved to an item that has its
    # level already): a fixed shuffle spreads the tries over rows and values.
    random.Random(0).shuffle(attempts)
    for changes in attempts[:400]:
        try:
            with transaction.atomic():
                for pk, value in changes:
                    model.objects.filter(pk=pk).update(**{field.attname: value})
                try:
                    after = version_document_bytes(
                        version=ProtocolVersion.objects.get(pk=version.pk)
                    )[1]
                except Exception:
                    after = "unbuildable"
                raise _Undo(after)
        except _Undo as undo:
            if undo.args[0] != before:
                return True
        except IntegrityError:  # this change breaks a constraint: try another
            continue
    return False


@pytest.mark.django_db
def test_every_frozen_column_changes_the_document_or_is_listed_with_a_reason():
    if connection.vendor == "postgresql":
        pytest.skip("rewrites frozen rows in place: on SQLite, where no trigger refuses it")
    version = _rich_version()
    # A change is judged by the document alone: the rows' own CHECK constraints (an absent
    # cell has a reason, …) are the application's business, not what this test asks.
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA ignore_check_constraints = ON")
    outside = []
    for table, model in sorted(_models().items()):
        for field in model._meta.concrete_fields:
            key = f"{table}.{field.column}"
            if field.column in ("id", "version_id") or key in NOT_FROZEN:
                continue
            if not _changes_document(version, model, field):
                outside.append(key)
    assert outside == [], "\n".join(outside)


@pytest.mark.django_db
def test_a_version_frozen_as_revision_1_still_verifies_and_a_new_freeze_writes_revision_2(
    monkeypatch,
):
    """Revision 2 adds columns to the document; a document frozen before keeps its bytes: it is
    rebuilt with the revision its blob names (apps/protocols/documents.py)."""
    import json
    from functools import partial

    from apps.protocols import documents, services
    from apps.protocols.integrity import version_integrity_verify
    from apps.protocols.models import Blob

    monkeypatch.setattr(
        services,
        "version_document_bytes",
        partial(documents.version_document_bytes, revision=1),
    )
    old = opb_study(code="OLD", evaluands=1).version
    monkeypatch.undo()
    new = opb_study(code="NEW", evaluands=1).version
    for version, revision in ((old, 1), (new, 2)):
        stored = json.loads(bytes(Blob.objects.get(sha256=version.sha256).content))
        assert stored["document"] == f"preregistry/protocol-version/{revision}"
        assert ("help_text" in next(iter(stored["parameters"].values()))) is (revision == 2)
        assert version_integrity_verify(version=version).ok, version
    # The two revisions of one version differ: revision 2 holds more.
    assert (
        documents.version_document_bytes(version=old, revision=1)[1]
        != documents.version_document_bytes(version=old, revision=2)[1]
    )
