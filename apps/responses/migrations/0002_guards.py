from django.db import migrations

from apps.core.dbguards import append_only, frozen_with_version


class Migration(migrations.Migration):
    dependencies = [("responses", "0001_initial"), ("core", "0001_guard_functions")]
    operations = [
        frozen_with_version("responses_rosterentry"),
        frozen_with_version("responses_administration"),
        append_only("responses_evaluand"),
        append_only("responses_responseimport"),
        append_only("responses_attempt"),
        append_only("responses_response"),
        append_only("responses_exclusion"),
    ]
