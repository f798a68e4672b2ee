"""``manage.py check_db_role``: refuse a runtime database role that could switch the guards off.

Prints ``database role <name>: least privilege`` and exits 0, or one line per reason (TEMPORARY
on the database, a guard function without a fixed search_path, superuser,
CREATEROLE, may SET session_replication_role, owns a protected table, holds TRUNCATE, TRIGGER,
UPDATE or DELETE where the guards refuse them) and exits 1. On SQLite it says there are no roles
and exits 0. Checks the connection of ``DATABASE_URL`` (``--database`` for another alias).
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS, connections

from apps.core.dbroles import role_problems


class Command(BaseCommand):
    help = "Exit non-zero, with the reason, if the runtime database role could bypass the guards."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS)

    def handle(self, *args: Any, database: str = DEFAULT_DB_ALIAS, **options: Any) -> None:
        connection = connections[database]
        if connection.vendor != "postgresql":
            self.stdout.write(
                f"database {connection.vendor}: no roles; the guards are the application's own"
            )
            return
        problems = role_problems(connection)
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_user")
            (user,) = cursor.fetchone()
        if not problems:
            self.stdout.write(f"database role {user}: least privilege")
            return
        for problem in problems:
            self.stdout.write(self.style.ERROR(f"database role {user}: {problem}"))
        raise CommandError(
            f"the runtime database role {user} could switch the guards off "
            f"({len(problems)} reason(s) above)",
            returncode=1,
        )
