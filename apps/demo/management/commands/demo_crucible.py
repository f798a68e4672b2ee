"""``manage.py demo_crucible``: the synthetic CRUCIBLE study, from design to acceptance verdicts."""

from django.core.management.base import BaseCommand, CommandError

from apps.demo.crucible import (
    PROTOCOL_CODE,
    crucible_acceptance,
    crucible_analyse,
    crucible_build,
)
from apps.demo.people import demo_people_ensure
from apps.demo.runs import demo_outcomes_unseal


class Command(BaseCommand):
    help = (
        "Build the project's synthetic CRUCIBLE study (3 evaluands, 15 families × 3 seeds, 4 "
        "autonomy rungs, 12 graded axes), import its episodes and harness grades through the "
        "real importers, freeze it, run the crucible analysis on the Celery path (in-process "
        "without a worker), unseal it and print the maximum acceptable rung per policy."
    )

    def handle(self, *args, **options):
        pi = demo_people_ensure()["pi"]
        build = crucible_build(user=pi)
        version = build.version
        verb = "Built" if build.created else "Found"
        self.stdout.write(f"{verb} {version} ({version.sha256[:16]}).")
        if build.refused_evaluand:
            self.stdout.write(f"Roster refused a bare model name: {build.refused_evaluand}")
        run = crucible_analyse(version=version, pi=pi)
        if run.state != "succeeded":
            raise CommandError(f"Analysis run {run.number} {run.state}: {run.error}")
        if demo_outcomes_unseal(version=version, pi=pi):
            self.stdout.write("Outcomes unsealed by the PI (logged as outcome_unsealed).")
        self.stdout.write(f"\nAnalysis run {run.number}: maximum acceptable autonomy rung\n")
        header = f"{'policy':<14} {'evaluand':<9} {'maximum acceptable rung':<28} first failure"
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for row in crucible_acceptance(run):
            failure = next(iter(row["failed"].items()), None)
            shown = f"{failure[0]}: {failure[1]}" if failure else "—"
            self.stdout.write(
                f"{row['policy']:<14} {row['evaluand']:<9} {row['verdict']:<28} {shown}"
            )
        url = f"/protocols/{PROTOCOL_CODE}/v/{version.label}/analysis/{run.number}/"
        self.stdout.write(f"\nReport: {url}")
