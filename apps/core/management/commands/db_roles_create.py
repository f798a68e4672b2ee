"""``manage.py db_roles_create --admin-url URL``: the owner and runtime roles, and the database.

Run once per deployment (and by ``.ci/run``) with a superuser's URL; idempotent. The roles, their
passwords and the database's name come from ``DATABASE_OWNER_URL`` (the owner) and
``DATABASE_URL`` (the runtime role). Then ``manage.py migrate`` (as the owner) creates the tables
and grants the runtime role its privileges, and ``manage.py check_db_role`` proves the result.
"""

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.core.dbroles import owner_credentials, provision, runtime_role


class Command(BaseCommand):
    help = "Create the owner and runtime PostgreSQL roles and the database (as a superuser)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--admin-url",
            required=True,
            help="a superuser's connection, e.g. postgres://postgres@127.0.0.1:5432/postgres",
        )
        parser.add_argument(
            "--createdb",
            action="store_true",
            help="let the owner create databases (the test suite creates test_<name> as owner)",
        )
        parser.add_argument(
            "--adopt",
            action="store_true",
            help="hand the owner every table, sequence and function another role owns "
            "(an existing deployment that ran as one role)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        database = settings.DATABASES["default"]
        owner = owner_credentials()
        if database["ENGINE"] != "django.db.backends.postgresql" or owner is None:
            raise CommandError("set DATABASE_URL and DATABASE_OWNER_URL to postgres:// URLs first")
        if not owner["USER"] or owner["USER"] == runtime_role():
            raise CommandError(
                "DATABASE_OWNER_URL and DATABASE_URL must name two different roles "
                f"(both are {runtime_role()!r})"
            )
        try:
            done = provision(
                admin_url=options["admin_url"],
                database=database["NAME"],
                owner=owner["USER"],
                runtime=runtime_role(),
                owner_password=owner["PASSWORD"],
                runtime_password=database.get("PASSWORD", ""),
                createdb=options["createdb"],
                adopt=options["adopt"],
            )
        except Exception as error:  # psycopg.Error and bad URLs alike: say what the server said
            raise CommandError(f"could not set the roles up: {error}") from error
        for line in done:
            self.stdout.write(line)
