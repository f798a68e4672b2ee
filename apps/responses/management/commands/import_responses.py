"""``manage.py import_responses``: the same import a browser upload or the API performs."""

from typing import Any

from apps.responses.access import WRITE_ROLES, require_version_role
from apps.responses.import_command import ImportCommand, ImportInputs
from apps.responses.services import responses_import


class Command(ImportCommand):
    help = (
        "Import a CSV, JSON Lines or Inspect AI log file of attempts into a frozen version: "
        "all of it or nothing; the same file twice is a no-op."
    )
    doing = "import responses"
    mapping_help = "The column mapping as JSON, or @path to a JSON file (docs/import-formats.md)."

    def check_role(self, *, inputs: ImportInputs) -> None:
        require_version_role(
            user=inputs.user, version=inputs.version, roles=WRITE_ROLES, doing=self.doing
        )

    def run_import(self, *, inputs: ImportInputs, options: dict[str, Any]) -> Any:
        return responses_import(
            version=inputs.version,
            user=inputs.user,
            data=inputs.path,
            filename=inputs.path.name,
            format=options["format"],
            mapping=inputs.mapping,
            note=options["note"],
            dry_run=options["dry_run"],
        )
