"""Each log entry stores the protocol code it was written under; a protocol's code is frozen.

The hash of every existing entry was taken over the protocol's code at the time, which is the
code the protocol has now (renaming was possible, but broke the chain, issue #18), so filling the
new column from the protocol row keeps every existing hash valid. The fill is the one UPDATE of
log entries ever made: the append-only trigger is switched off for it, inside this migration's
transaction, which only the tables' owner (who runs migrations) can do.

From here on PostgreSQL refuses to change a protocol's code once it has a version that is not a
draft or an entry in its log, and its title and plan template (both in every frozen version's
canonical document) once it has a version that is not a draft.
"""

from django.db import migrations, models

from apps.core.dbguards import custom_guard

_FILL = """
UPDATE deviations_logentry SET protocol_code = (
    SELECT code FROM protocols_protocol WHERE protocols_protocol.id = deviations_logentry.protocol_id
)
"""


def fill(apps, schema_editor):
    postgresql = schema_editor.connection.vendor == "postgresql"
    if postgresql:
        schema_editor.execute(
            "ALTER TABLE deviations_logentry DISABLE TRIGGER deviations_logentry_append_only"
        )
    schema_editor.execute(_FILL)
    if postgresql:
        schema_editor.execute(
            "ALTER TABLE deviations_logentry ENABLE TRIGGER deviations_logentry_append_only"
        )


_GUARD = r"""
CREATE OR REPLACE FUNCTION preregistry_guard_protocol_code() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    frozen boolean := EXISTS (SELECT 1 FROM protocols_protocolversion
                              WHERE protocol_id = OLD.id AND state <> 'draft');
BEGIN
    IF NEW.code IS DISTINCT FROM OLD.code AND (
        frozen OR EXISTS (SELECT 1 FROM deviations_logentry WHERE protocol_id = OLD.id)
    ) THEN
        RAISE EXCEPTION 'preregistry: the code of protocol % cannot change: it has a frozen '
            'version or a deviation log', OLD.code;
    END IF;
    -- The title and the plan template are in every frozen version's canonical document.
    IF frozen AND (NEW.title IS DISTINCT FROM OLD.title
                   OR NEW.template IS DISTINCT FROM OLD.template) THEN
        RAISE EXCEPTION 'preregistry: the title and template of protocol % cannot change: '
            'they are part of its frozen versions', OLD.code;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER protocols_protocol_code_guard BEFORE UPDATE ON protocols_protocol
    FOR EACH ROW EXECUTE FUNCTION preregistry_guard_protocol_code();
"""

_UNGUARD = r"""
DROP TRIGGER IF EXISTS protocols_protocol_code_guard ON protocols_protocol;
DROP FUNCTION IF EXISTS preregistry_guard_protocol_code();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("deviations", "0003_occurred_on_open_kinds"),
        ("protocols", "0002_guards"),
    ]

    operations = [
        migrations.AddField(
            model_name="logentry",
            name="protocol_code",
            field=models.CharField(default="", max_length=32),
            preserve_default=False,
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        custom_guard(_GUARD, _UNGUARD),
    ]
