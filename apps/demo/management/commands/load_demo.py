from django.core.management.base import BaseCommand

from apps.demo.people import DEMO_PEOPLE
from apps.demo.study import demo_study_load


class Command(BaseCommand):
    help = "Load the demo study and its people (idempotent), then print the demo logins."

    def handle(self, *args, **options):
        summary = demo_study_load()
        self.stdout.write(self.style.SUCCESS(summary))
        self.stdout.write("\nDemo logins (for this laptop only):")
        for person in DEMO_PEOPLE:
            self.stdout.write(
                f"  {person.username:<10} {person.password:<22} {person.role:<9} → {person.place}"
            )
        self.stdout.write("")
