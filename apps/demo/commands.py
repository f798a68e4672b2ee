"""What the demo studies' management commands share: the demo people, the checks on the
analysis run, the unsealing and the lines they print (``manage.py demo_<study>``)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import User
from apps.analysis.models import AnalysisRun
from apps.demo.people import demo_people_ensure
from apps.demo.runs import demo_outcomes_unseal
from apps.protocols.models import ProtocolVersion


class DemoCommand(BaseCommand):
    """A demo study's command: ``load(people)`` builds the study as the demo people
    (username → user, ``apps.demo.people``) and prints what it shows."""

    def handle(self, *args: Any, **options: Any) -> None:
        self.load(demo_people_ensure())

    def load(self, people: dict[str, User]) -> None:
        raise NotImplementedError

    def write_built(self, *, created: bool, version: ProtocolVersion, details: str) -> None:
        """``Built`` (or ``Found``, on a second load) the version and its hash's first 16
        hex digits, then ``details``."""
        verb = "Built" if created else "Found"
        self.stdout.write(f"{verb} {version} ({version.sha256[:16]}){details}")

    def require_success(self, run: AnalysisRun) -> None:
        """Raises CommandError with the run's error unless it succeeded."""
        if run.state != "succeeded":
            raise CommandError(f"Analysis run {run.number} {run.state}: {run.error}")

    def unseal(self, *, version: ProtocolVersion, pi: User) -> None:
        """Unseal the outcomes as the PI (``demo_outcomes_unseal``) and say so when this call
        did."""
        if demo_outcomes_unseal(version=version, pi=pi):
            self.stdout.write("Outcomes unsealed by the PI (logged as outcome_unsealed).")

    def write_header(self, header: str) -> None:
        """A table's header line, underlined with dashes."""
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
