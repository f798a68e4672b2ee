from django.db import migrations

from apps.core.dbguards import append_only


class Migration(migrations.Migration):
    dependencies = [("raters", "0004_scoring_queue"), ("core", "0001_guard_functions")]
    operations = [append_only("raters_scoringopening")]
