"""``manage.py import_machine_scores``: the same import a browser upload or the API performs."""

from typing import Any

from django.core.management.base import CommandParser

from apps.raters.access import RUBRIC_EDITORS
from apps.raters.machine_import import with_scorer
from apps.raters.services.machine import machine_scores_import
from apps.responses.import_command import ImportCommand, ImportInputs


class Command(ImportCommand):
    help = (
        "Import machine scores (CSV, JSON Lines, or an Inspect AI log's sample scores) onto a "
        "frozen version's responses: all of it or nothing; the same file twice is a no-op."
    )
    doing = "import machine scores"
    roles = RUBRIC_EDITORS

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--scorer", help="The scorer's roster code, when rows do not say.")

    def run_import(self, *, inputs: ImportInputs, options: dict[str, Any]) -> Any:
        return machine_scores_import(
            **self.import_arguments(inputs, options),
            data=inputs.path.read_bytes(),
            mapping=with_scorer(inputs.mapping, options["scorer"]),
        )
