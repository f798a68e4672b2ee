from django.db import migrations

from apps.core.dbguards import append_only, frozen_with_version


class Migration(migrations.Migration):
    dependencies = [("protocols", "0001_initial"), ("core", "0001_guard_functions")]
    operations = [
        frozen_with_version("protocols_protocolversion", column="id"),
        frozen_with_version("protocols_analysisparameter"),
        append_only("protocols_blob"),
        append_only("protocols_withdrawal"),
        append_only("protocols_historicalprotocolversion"),
        append_only("protocols_historicalanalysisparameter"),
    ]
