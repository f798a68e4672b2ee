"""``flush`` that the test suite can use on a database guarded by triggers.

Django's transactional tests empty every table between tests with ``flush``. On PostgreSQL the
deviation log and frozen versions refuse TRUNCATE, as they must, and the runtime role the tests
run as holds no TRUNCATE at all. Only when the setting ``PREREGISTRY_TEST_FLUSH_BYPASSES_GUARDS``
is on (test settings, never production) does this command empty the tables through a separate
connection as the owner role (``DATABASE_OWNER_URL``), which switches the guards' triggers off
with ``ALTER TABLE … DISABLE TRIGGER USER`` for that one transaction, as only a table's owner
may. Everywhere else it is Django's own ``flush`` and the guards hold.
"""

import contextlib
from importlib import import_module
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.management.color import no_style
from django.core.management.commands.flush import Command as DjangoFlush
from django.core.management.sql import emit_post_migrate_signal, sql_flush
from django.db import connections

from apps.core.dbroles import owner_connection, protected_tables


class Command(DjangoFlush):
    def handle(self, **options: Any) -> None:
        database = options["database"]
        connection = connections[database]
        bypass = getattr(settings, "PREREGISTRY_TEST_FLUSH_BYPASSES_GUARDS", False)
        if not (bypass and connection.vendor == "postgresql"):
            return super().handle(**options)
        for app_config in apps.get_app_configs():  # as Django's flush: register the handlers
            with contextlib.suppress(ImportError):
                import_module(".management", app_config.name)
        sql_list = sql_flush(
            no_style(),
            connection,
            reset_sequences=options.get("reset_sequences", True),
            allow_cascade=options.get("allow_cascade", False),
        )
        owner = owner_connection(connection)
        try:
            with owner.cursor() as cursor:
                owner.set_autocommit(False)
                names = [owner.ops.quote_name(name) for _, name, *_ in protected_tables(cursor)]
                for name in names:
                    cursor.execute(f"ALTER TABLE {name} DISABLE TRIGGER USER")
                for sql in sql_list:
                    cursor.execute(sql)
                for name in names:
                    cursor.execute(f"ALTER TABLE {name} ENABLE TRIGGER USER")
                owner.commit()
        finally:
            owner.close()
        if sql_list and not options.get("inhibit_post_migrate", False):
            emit_post_migrate_signal(options["verbosity"], options["interactive"], database)
