"""OPB-01 §6.1's panel: members and their flags are analysis inputs kept as recorded, so the
database refuses to change or delete them (as it does for responses and the deposit)."""

from django.db import migrations

from apps.core.dbguards import append_only


class Migration(migrations.Migration):
    dependencies = [("items", "0006_opb_panel")]

    operations = [append_only("items_panelmember"), append_only("items_panelflag")]
