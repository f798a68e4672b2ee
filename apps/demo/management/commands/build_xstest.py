"""``manage.py build_xstest --user USERNAME``: the XSTest study, through the real importer."""

from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import User
from apps.demo.xstest import xstest_build


class Command(BaseCommand):
    help = (
        "Build protocol XSTEST from ../shared/data/xstest (450 items, five evaluands), freeze it "
        "and import the 2,250 published completions. Idempotent."
    )

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="The PI who builds and imports.")

    def handle(self, *args, **options):
        user = User.objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"No user {options['user']!r}.")
        try:
            build = xstest_build(user=user)
        except FileNotFoundError as error:
            raise CommandError(str(error)) from None
        verb = "Built" if build.created else "Found"
        self.stdout.write(self.style.SUCCESS(f"{verb} {build.version} in {build.seconds:.2f} s."))
        for code, outcome in build.imports.items():
            self.stdout.write(f"  {code}: {outcome.message}")
        for item, difference in build.input_mismatches.items():
            self.stdout.write(
                self.style.WARNING(f"  input mismatch on {item} (all files): {difference}")
            )
