"""``manage.py import_responses``: the same import a browser upload or the API performs."""

from typing import Any

from apps.responses.access import WRITE_ROLES
from apps.responses.import_command import ImportCommand, ImportInputs
from apps.responses.services import responses_import


class Command(ImportCommand):
    help = (
        "Import a CSV, JSON Lines or Inspect AI log file of attempts into a frozen version: "
        "all of it or nothing; the same file twice is a no-op."
    )
    doing = "import responses"
    roles = WRITE_ROLES
    mapping_help = "The column mapping as JSON, or @path to a JSON file (docs/import-formats.md)."

    def run_import(self, *, inputs: ImportInputs, options: dict[str, Any]) -> Any:
        arguments = self.import_arguments(inputs, options)
        return responses_import(**arguments, data=inputs.path, mapping=inputs.mapping)
