"""``manage.py backfill_session_columns``: store the typed session columns of attempts imported
before they were stored (``services.session_columns_backfill``)."""

from django.core.management.base import BaseCommand, CommandError

from apps.protocols.models import ProtocolVersion, VersionState
from apps.responses.services import session_columns_backfill


class Command(BaseCommand):
    help = (
        "Store the typed session columns (tokens, operations, cost, tool calls, interruptions, "
        "aborted, claimed completion, unsupported blockers, infrastructure stratum) of every "
        "attempt that has none, in versions whose plan reads sessions. Idempotent."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # ``--version`` names the protocol version, as in import_responses.
        kwargs.setdefault("conflict_handler", "resolve")
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("--protocol", help="Only this protocol (its code).")
        parser.add_argument("--version", dest="label", help="Only this version (its label).")

    def handle(self, *args, **options):
        versions = ProtocolVersion.objects.filter(state=VersionState.FROZEN).select_related(
            "protocol"
        )
        if options["protocol"]:
            versions = versions.filter(protocol__code=options["protocol"])
        if options["label"]:
            versions = versions.filter(label=options["label"])
        failed = 0
        for version in versions.order_by("pk"):
            written, problems = session_columns_backfill(version=version)
            if written or problems:
                self.stdout.write(
                    f"{version.protocol.code} v{version.label}: {written} attempts given "
                    f"their session columns"
                )
            for problem in problems:
                self.stderr.write(f"  {problem}")
            failed += len(problems)
        if failed:
            raise CommandError(
                f"{failed} attempts could not be read as sessions; they have no columns"
            )
