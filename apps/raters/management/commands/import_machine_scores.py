"""``manage.py import_machine_scores``: the same import a browser upload or the API performs."""

import json
from pathlib import Path

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import User
from apps.protocols.models import ProtocolVersion
from apps.raters.access import require_rubric_editor
from apps.raters.machine_import import with_scorer
from apps.raters.services.machine import machine_scores_import
from apps.responses.import_frame import ImportRejected


class Command(BaseCommand):
    help = (
        "Import machine scores (CSV, JSON Lines, or an Inspect AI log's sample scores) onto a "
        "frozen version's responses: all of it or nothing; the same file twice is a no-op."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # ``--version`` names the protocol version, as in import_responses.
        kwargs.setdefault("conflict_handler", "resolve")
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--protocol", required=True, help="The protocol's code.")
        parser.add_argument("--version", dest="label", required=True, help="The label, e.g. 1.0.")
        parser.add_argument("--format", choices=["csv", "jsonl", "inspect"])
        parser.add_argument("--scorer", help="The scorer's roster code, when rows do not say.")
        parser.add_argument("--mapping", help="The mapping as JSON, or @path to a JSON file.")
        parser.add_argument("--user", required=True, help="Who imports (a PI or editor).")
        parser.add_argument("--note", default="")
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
            require_rubric_editor(user=user, version=version, doing="import machine scores")
            outcome = machine_scores_import(
                version=version,
                user=user,
                data=path.read_bytes(),
                filename=path.name,
                format=options["format"],
                mapping=with_scorer(mapping, options["scorer"]),
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
