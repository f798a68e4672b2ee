from django.db import migrations

from apps.core.dbguards import append_only, frozen_with_version


class Migration(migrations.Migration):
    dependencies = [("raters", "0006_machine_scores"), ("core", "0001_guard_functions")]
    operations = [
        # A scorer's identity never changes: a change is a new scorer (as for evaluands).
        append_only("raters_scorer"),
        # The scorer roster is part of the frozen version.
        frozen_with_version("raters_scorerrosterentry"),
        append_only("raters_machinescoreimport"),
        append_only("raters_machinescore"),
        append_only("raters_auditsample"),
    ]
