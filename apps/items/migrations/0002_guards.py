from django.db import migrations

from apps.core.dbguards import frozen_with_version


class Migration(migrations.Migration):
    dependencies = [("items", "0001_initial"), ("core", "0001_guard_functions")]
    operations = [
        frozen_with_version(f"items_{table}")
        for table in (
            "level",
            "family",
            "condition",
            "factor",
            "item",
            "cell",
            "keyunit",
            "harmreview",
        )
    ]
