"""``migrate`` as the owner role, then the runtime role's privileges granted again.

With ``DATABASE_OWNER_URL`` set, Django's ``migrate`` runs logged in as the owner (who then owns
every table it creates), and afterwards grants the runtime role of ``DATABASE_URL`` exactly the
DML it needs (``apps.core.dbroles.runtime_grant``): a new table or a new guard is covered on the
next deploy without anyone remembering to grant it. Without an owner URL (SQLite, or a single
role) it is Django's own ``migrate``.
"""

from typing import Any

from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import connections

from apps.core.dbroles import as_owner, runtime_grant, runtime_role


class Command(DjangoMigrate):
    def handle(self, *args: Any, **options: Any) -> None:
        connection = connections[options["database"]]
        with as_owner(connection):
            super().handle(*args, **options)
            granted = runtime_grant(connection)
        if granted and options["verbosity"] >= 1:
            self.stdout.write(
                f"Granted the runtime role {runtime_role()} its privileges "
                f"({len(granted)} statements)."
            )
