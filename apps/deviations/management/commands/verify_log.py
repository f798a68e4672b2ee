"""``manage.py verify_log [--protocol CODE]``: recompute deviation-log chains from the database.

Prints one line per protocol, ``CODE: verified through entry N at T (head hash H)`` or
``CODE: broken at entry N: <why>``, and exits with status 1 when any chain is broken. Every
checkpoint kept in the database is an anchor; ``--checkpoint FILE`` adds saved ones (their
signatures are checked against the configured keys), which is what catches a log whose whole
chain was recomputed after they were signed.
"""

import re

from django.core.management.base import BaseCommand, CommandError

from apps.deviations import chain
from apps.deviations.checkpoints import (
    log_verifier_keys,
    stored_checkpoints,
    trusted_public_keys,
)
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
        parser.add_argument(
            "--checkpoint",
            action="append",
            default=[],
            metavar="FILE",
            help="a signed checkpoint saved earlier (repeatable): the log must extend it",
        )

    def handle(self, *args, protocol=None, expect=(), checkpoint=(), **options):
        anchors = {}
        for value in expect:
            match = _ANCHOR.match(value)
            if not match:
                raise CommandError(f"--expect wants SEQ=HASH (64 hex digits), not {value!r}")
            anchors[int(match[1])] = match[2].lower()
        if anchors and not protocol:
            raise CommandError("--expect needs --protocol: anchors belong to one chain")
        saved = [_saved_checkpoint(path) for path in checkpoint]
        protocols = Protocol.objects.order_by("code")
        if protocol:
            protocols = protocols.filter(code=protocol)
            if not protocols.exists():
                raise CommandError(f"No protocol has the code {protocol!r}.")
        broken = []
        for each in list(protocols):
            mine = [c for c in saved if c.get("protocol") in (each.code, None)] or []
            if saved and not mine and protocol:
                mine = saved  # the checkpoint names another code: the verifier says so
            report = chain_verify(
                protocol=each, expect=anchors, checkpoints=stored_checkpoints(each) + mine
            )
            line = f"{each.code}: {report.summary()}"
            if report.ok:
                self.stdout.write(line)
            else:
                broken.append(each.code)
                self.stdout.write(self.style.ERROR(line))
        if broken:
            raise CommandError(f"{len(broken)} broken chain(s): {', '.join(broken)}", returncode=1)


def _saved_checkpoint(path: str) -> dict:
    """A checkpoint file given on the command line, its signature checked against the
    configured keys (CommandError, exit status 1, when it does not verify)."""
    try:
        document = chain.read_checkpoint_file(path)
    except (OSError, ValueError) as error:
        raise CommandError(f"{path}: not a readable checkpoint ({error})") from error
    if document.get("type") == chain.NOTE_CHECKPOINT_TYPE:
        try:
            _note, (origin, _size, _root) = chain.checkpoint_note_verify(
                str(document.get("note")), log_verifier_keys()
            )
        except ValueError as error:
            raise CommandError(f"{path}: {error}", returncode=1) from error
        document.setdefault("protocol", origin.rsplit("/", 1)[-1])
        return document
    valid, why = chain.checkpoint_signature(document, trusted_public_keys())
    if valid is not True:
        raise CommandError(f"{path}: {why}", returncode=1)
    return document
