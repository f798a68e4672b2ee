from django.db import migrations

from apps.core.dbguards import install_guard_functions


class Migration(migrations.Migration):
    dependencies: list = []
    operations = [install_guard_functions()]
