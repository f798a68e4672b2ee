from django.db import migrations

from apps.core.dbguards import append_only, frozen_with_version


class Migration(migrations.Migration):
    dependencies = [("raters", "0002_initial"), ("core", "0001_guard_functions")]
    operations = [
        frozen_with_version("raters_rubric"),
        frozen_with_version("raters_rubricfield"),
        append_only("raters_score"),
    ]
