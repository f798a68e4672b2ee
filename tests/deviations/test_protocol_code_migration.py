"""The migration that gave log entries their protocol code (deviations 0004, with 0005 after it)
over a log written before it (issue #18): entries hashed over the protocol's code then, the
column filled from the protocol row, and the chain still verifies.

Run with Django's migration executor: migrate ``deviations`` back to 0003, write entries as the
code of that time did (their hash taken over the live protocol code), migrate forward.
"""

from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from apps.core import dbroles
from apps.deviations.chain import GENESIS_HASH, entry_hash
from apps.deviations.models import LogCheckpoint, LogEntry
from apps.deviations.selectors import chain_verify
from apps.protocols.models import Protocol
from tests import dbroles as test_roles
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("deviations", "0003_occurred_on_open_kinds")


@contextmanager
def _as_owner():
    """The default connection, logged in as the owner while inside (migrations are the owner's:
    the runtime role may not ALTER a table), then the runtime role again, with its grants on
    the tables the forward migration made."""
    if connections["default"].vendor != "postgresql" or not test_roles.two_roles():
        yield connections["default"]
        return
    runtime = {key: settings.DATABASES["default"].get(key) for key in ("USER", "PASSWORD")}
    owner = dbroles.owner_credentials()
    test_roles._log_in_as({"USER": owner["USER"], "PASSWORD": owner["PASSWORD"]})
    try:
        yield connections["default"]
        dbroles.runtime_grant(connections["default"])
    finally:
        test_roles._log_in_as(runtime)


def _migrate(connection, targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def _time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _rewrite_history(connection, protocol, user) -> None:
    # Back to 0003, three entries written as the code of that time wrote them, forward again.
    leaves = [
        key
        for key in MigrationExecutor(connection).loader.graph.leaf_nodes()
        if key[0] == "deviations"
    ]
    try:
        _migrate(connection, [BEFORE])
        old_apps = MigrationExecutor(connection).loader.project_state([BEFORE]).apps
        OldEntry = old_apps.get_model("deviations", "LogEntry")
        assert "protocol_code" not in {field.name for field in OldEntry._meta.get_fields()}
        previous = GENESIS_HASH
        start = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
        for seq in (1, 2, 3):
            recorded_at = start + timedelta(minutes=seq)
            payload = {
                "actor": user.username,
                "kind": "deviation",
                "occurred_on": None,
                "outcome_visible": False,
                "prev_hash": previous,
                # The code of that time: the live protocol row's.
                "protocol": protocol.code,
                "rationale": f"Entry {seq}, written before entries kept their code.",
                "recorded_at": _time(recorded_at),
                "refs": [],
                "seq": seq,
            }
            digest = entry_hash(payload)
            OldEntry.objects.create(
                protocol_id=protocol.pk,
                seq=seq,
                recorded_at=recorded_at,
                actor_id=user.pk,
                actor_name=user.username,
                kind="deviation",
                rationale=payload["rationale"],
                refs=[],
                occurred_on=None,
                outcome_visible=False,
                prev_hash=previous,
                hash=digest,
            )
            previous = digest
    finally:
        _migrate(connection, leaves)


def test_entries_written_before_the_migration_get_their_code_and_still_verify():
    user = UserFactory(username="before-0004")
    protocol = Protocol.objects.create(code="OLD-LOG", title="A log from before", created_by=user)
    with _as_owner() as connection:
        _rewrite_history(connection, protocol, user)

    entries = list(LogEntry.objects.filter(protocol=protocol).order_by("seq"))
    assert [entry.protocol_code for entry in entries] == ["OLD-LOG"] * 3
    report = chain_verify(protocol=protocol)
    assert report.verified_through == 3, report
    assert report.protocol == "OLD-LOG"
    # The tables 0005 made are back and usable by the application.
    assert LogCheckpoint.objects.count() == 0
