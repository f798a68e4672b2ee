"""``manage.py import_responses``: the same import a browser upload or the API performs."""

import json
from pathlib import Path

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import User
from apps.protocols.models import ProtocolVersion
from apps.responses.access import WRITE_ROLES, require_version_role
from apps.responses.import_frame import ImportRejected
from apps.responses.services import responses_import


class Command(BaseCommand):
    help = (
        "Import a CSV, JSON Lines or Inspect AI log file of attempts into a frozen version: "
        "all of it or nothing; the same file twice is a no-op."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # ``--version`` names the protocol version here, as everywhere in the product; it
        # replaces Django's own ``--version`` (which would print Django's version).
        kwargs.setdefault("conflict_handler", "resolve")
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--protocol", required=True, help="The protocol's code, e.g. OPB-01.")
        parser.add_argument("--version", dest="label", required=True, help="The label, e.g. 1.0.")
        parser.add_argument("--format", choices=["csv", "jsonl", "inspect"])
        parser.add_argument(
            "--mapping",
            help="The column mapping as JSON, or @path to a JSON file (docs/import-formats.md).",
        )
        parser.add_argument("--user", required=True, help="Who imports (a PI or editor).")
        parser.add_argument("--note", default="", help="Why (for reruns, say).")
        parser.add_argument("--dry-run", action="store_true", help="Check and preview only.")

    def handle(self, *args, **options):
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"No such file: {path}")
        version = (
            ProtocolVersion.objects.select_related("protocol")
            .filter(protocol__code=options["protocol"], label=options["label"])
            .first()
        )
        if version is None:
            raise CommandError(f"No version {options['label']} of {options['protocol']}.")
        user = User.objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"No user {options['user']!r}.")
        mapping = None
        if options["mapping"]:
            text = options["mapping"]
            if text.startswith("@"):
                text = Path(text[1:]).read_text(encoding="utf-8")
            try:
                mapping = json.loads(text)
            except ValueError as error:
                raise CommandError(f"--mapping is not JSON: {error}") from error
        try:
            require_version_role(
                user=user, version=version, roles=WRITE_ROLES, doing="import responses"
            )
            outcome = responses_import(
                version=version,
                user=user,
                data=path,
                filename=path.name,
                format=options["format"],
                mapping=mapping,
                note=options["note"],
                dry_run=options["dry_run"],
            )
        except ImportRejected as rejected:
            for problem in rejected.problems:
                self.stderr.write(str(problem))
            if rejected.total > len(rejected.problems):
                self.stderr.write(f"… and {rejected.total - len(rejected.problems)} more problems")
            raise CommandError(f"Nothing was imported: {rejected.total} problem(s).") from None
        except (ValidationError, PermissionDenied) as error:
            messages = getattr(error, "messages", None) or [str(error)]
            raise CommandError(" ".join(messages)) from None
        self.stdout.write(self.style.SUCCESS(outcome.message))
