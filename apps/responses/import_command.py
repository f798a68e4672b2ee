"""The frame the file-import management commands share (``import_responses``,
``import_machine_scores``): the same arguments, the version and user looked up by name, the
mapping read, the role checked, and a refusal printed row by row, as the pages and the API
report it.

A subclass names its import in ``doing`` and the roles that may run it in ``roles``, and
implements ``run_import`` (``import_arguments`` gives what every import takes).
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.accounts.models import User
from apps.protocols.import_frame import ImportRejected
from apps.protocols.models import ProtocolVersion
from apps.responses.access import require_version_role


@dataclass(frozen=True)
class ImportInputs:
    """What every import command reads from its arguments."""

    path: Path
    version: ProtocolVersion
    user: User
    mapping: dict[str, Any] | None


class ImportCommand(BaseCommand):
    """``manage.py <import> FILE --protocol CODE --version LABEL --user NAME [--format F]
    [--mapping JSON|@path] [--note TEXT] [--dry-run]``: all of the file or nothing.

    Exits with CommandError (status 1) naming what is wrong: a missing file, an unknown
    version or user, a mapping that is not JSON, a role that does not allow the import, or
    every problem of a refused file (row and field, at most the first hundred, then a count).
    """

    doing = "import"
    roles: tuple[str, ...] = ()
    mapping_help = "The mapping as JSON, or @path to a JSON file (docs/import-formats.md)."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # ``--version`` names the protocol version here, as everywhere in the product; it
        # replaces Django's own ``--version`` (which would print Django's version).
        kwargs.setdefault("conflict_handler", "resolve")
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--protocol", required=True, help="The protocol's code, e.g. OPB-01.")
        parser.add_argument("--version", dest="label", required=True, help="The label, e.g. 1.0.")
        parser.add_argument("--format", choices=["csv", "jsonl", "inspect"])
        parser.add_argument("--mapping", help=self.mapping_help)
        parser.add_argument("--user", required=True, help="Who imports (a PI or editor).")
        parser.add_argument("--note", default="", help="Why (for reruns, say).")
        parser.add_argument("--dry-run", action="store_true", help="Check and preview only.")

    def check_role(self, *, inputs: ImportInputs) -> None:
        """Raise PermissionDenied unless ``inputs.user`` holds one of ``roles`` on the version."""
        require_version_role(
            user=inputs.user, version=inputs.version, roles=self.roles, doing=self.doing
        )

    @staticmethod
    def import_arguments(inputs: ImportInputs, options: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments every import service takes but ``data`` and ``mapping``."""
        return {
            "version": inputs.version,
            "user": inputs.user,
            "filename": inputs.path.name,
            "format": options["format"],
            "note": options["note"],
            "dry_run": options["dry_run"],
        }

    def run_import(self, *, inputs: ImportInputs, options: dict[str, Any]) -> Any:
        """Run the import; return its outcome (with a ``message``)."""
        raise NotImplementedError

    def handle(self, *args: Any, **options: Any) -> None:
        inputs = self.inputs(options)
        try:
            self.check_role(inputs=inputs)
            outcome = self.run_import(inputs=inputs, options=options)
        except ImportRejected as rejected:
            for problem in rejected.problems:
                self.stderr.write(str(problem))
            if rejected.unlisted:
                self.stderr.write(rejected.unlisted)
            raise CommandError(f"{rejected.nothing_imported}.") from None
        except (ValidationError, PermissionDenied) as error:
            messages = getattr(error, "messages", None) or [str(error)]
            raise CommandError(" ".join(messages)) from None
        self.stdout.write(self.style.SUCCESS(outcome.message))

    def inputs(self, options: dict[str, Any]) -> ImportInputs:
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
        return ImportInputs(path=path, version=version, user=user, mapping=mapping)
