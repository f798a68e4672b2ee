"""``flush`` that the test suite can use on a database guarded by triggers.

Django's transactional tests empty every table between tests with ``flush``. On PostgreSQL the
deviation log and frozen versions refuse TRUNCATE, as they must; only when the setting
``PREREGISTRY_TEST_FLUSH_BYPASSES_GUARDS`` is on (test settings, never production) does this
command run its TRUNCATE with ``session_replication_role = replica``, which skips user triggers
for that one transaction. Everywhere else it is Django's own ``flush`` and the guards hold.
"""

from django.conf import settings
from django.core.management.commands.flush import Command as DjangoFlush
from django.db import connections, transaction


class Command(DjangoFlush):
    def handle(self, **options):
        connection = connections[options["database"]]
        bypass = getattr(settings, "PREREGISTRY_TEST_FLUSH_BYPASSES_GUARDS", False)
        if not (bypass and connection.vendor == "postgresql"):
            return super().handle(**options)
        with transaction.atomic(using=connection.alias):
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL session_replication_role = replica")
            return super().handle(**options)
