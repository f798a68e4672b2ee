"""``manage.py log_checkpoint [--protocol CODE] [--force]``: sign log heads now (on demand).

Prints one line per protocol: the checkpoint written (entry, hash, key), "unchanged" when the
head was already checkpointed, or why it was refused (a chain that does not verify or does not
extend an earlier checkpoint is never signed; exit status 1).
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.deviations.checkpoints import CheckpointRefused, checkpoint_write, signing_key
from apps.protocols.models import Protocol


class Command(BaseCommand):
    help = "Sign a checkpoint of every protocol's log head (or one protocol's)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--protocol", metavar="CODE")
        parser.add_argument("--force", action="store_true", help="sign even an unchanged head")

    def handle(self, *args: Any, protocol: str | None = None, force: bool = False, **_: Any):
        if signing_key() is None:
            raise CommandError("no signing key: set LOG_SIGNING_KEY or LOG_SIGNING_KEY_FILE")
        protocols = Protocol.objects.filter(log_entries__isnull=False).distinct().order_by("code")
        if protocol:
            protocols = Protocol.objects.filter(code=protocol)
            if not protocols.exists():
                raise CommandError(f"No protocol has the code {protocol!r}.")
        refused = []
        for each in protocols:
            try:
                checkpoint = checkpoint_write(protocol=each, force=force)
            except CheckpointRefused as error:
                refused.append(each.code)
                self.stdout.write(self.style.ERROR(f"{each.code}: refused: {error.messages[0]}"))
                continue
            if checkpoint is None:
                self.stdout.write(f"{each.code}: unchanged (or no entries)")
            else:
                self.stdout.write(
                    f"{each.code}: checkpoint of {checkpoint.seq} entries (root "
                    f"{checkpoint.document['root_hash']}) "
                    f"signed with key {checkpoint.key_id}"
                )
        if refused:
            raise CommandError(f"refused: {', '.join(refused)}", returncode=1)
