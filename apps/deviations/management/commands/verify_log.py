"""``manage.py verify_log [--protocol CODE]``: recompute deviation-log chains from the database.

Prints one line per protocol, ``CODE: verified through entry N at T (head hash H)`` or
``CODE: broken at entry N: <why>``, and exits with status 1 when any chain is broken.
"""

import re

from django.core.management.base import BaseCommand, CommandError

from apps.deviations.selectors import chain_verify
from apps.protocols.models import Protocol

_ANCHOR = re.compile(r"^(\d+)=([0-9a-fA-F]{64})$")


class Command(BaseCommand):
    help = "Verify the hash chain of every protocol's deviation log (or one protocol's)."

    def add_arguments(self, parser):
        parser.add_argument("--protocol", metavar="CODE", help="verify only this protocol's log")
        parser.add_argument(
            "--expect",
            action="append",
            default=[],
            metavar="SEQ=HASH",
            help="a hash seen earlier for entry SEQ (with --protocol; repeatable): the log must "
            "still hold it, which shows a log that was rewritten or cut short",
        )

    def handle(self, *args, protocol=None, expect=(), **options):
        anchors = {}
        for value in expect:
            match = _ANCHOR.match(value)
            if not match:
                raise CommandError(f"--expect wants SEQ=HASH (64 hex digits), not {value!r}")
            anchors[int(match[1])] = match[2].lower()
        if anchors and not protocol:
            raise CommandError("--expect needs --protocol: anchors belong to one chain")
        protocols = Protocol.objects.order_by("code")
        if protocol:
            protocols = protocols.filter(code=protocol)
            if not protocols.exists():
                raise CommandError(f"No protocol has the code {protocol!r}.")
        broken = []
        for each in list(protocols):
            report = chain_verify(protocol=each, expect=anchors)
            line = f"{each.code}: {report.summary()}"
            if report.ok:
                self.stdout.write(line)
            else:
                broken.append(each.code)
                self.stdout.write(self.style.ERROR(line))
        if broken:
            raise CommandError(f"{len(broken)} broken chain(s): {', '.join(broken)}", returncode=1)
