from django.db import migrations

from apps.core.dbguards import append_only


class Migration(migrations.Migration):
    dependencies = [("deviations", "0001_initial"), ("core", "0001_guard_functions")]
    operations = [
        append_only("deviations_logentry"),
        append_only("deviations_outcomeunsealing"),
    ]
