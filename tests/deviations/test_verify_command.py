"""manage.py verify_log: one line per protocol, non-zero exit status when a chain is broken."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.deviations.selectors import chain_verify
from tests.factories import ProtocolFactory

pytestmark = pytest.mark.django_db


def test_every_protocols_chain_is_verified_and_reported(protocol, append):
    other = ProtocolFactory(code="ZZ-9")
    entries = append(protocol, 3)
    out = StringIO()
    call_command("verify_log", stdout=out)
    report = chain_verify(protocol=protocol)
    assert out.getvalue().splitlines() == [
        f"{protocol.code}: verified through entry 3 at {report.verified_through_at} "
        f"(head hash {entries[-1].hash})",
        f"{other.code}: no entries yet",
    ]


def test_one_protocol_and_its_anchors(protocol, append):
    entries = append(protocol, 2)
    out = StringIO()
    call_command("verify_log", protocol=protocol.code, expect=[f"2={entries[1].hash}"], stdout=out)
    assert out.getvalue().startswith(f"{protocol.code}: verified through entry 2 at ")
    with pytest.raises(CommandError) as failed:
        call_command(
            "verify_log", protocol=protocol.code, expect=[f"3={entries[1].hash}"], stdout=StringIO()
        )
    assert failed.value.returncode == 1


def test_an_unknown_protocol_is_an_error(db):
    with pytest.raises(CommandError, match="No protocol has the code 'NOPE'"):
        call_command("verify_log", protocol="NOPE", stdout=StringIO())
