"""``manage.py demo_crucible``: the synthetic CRUCIBLE study, from design to acceptance verdicts."""

from apps.demo.commands import DemoCommand
from apps.demo.crucible import (
    PROTOCOL_CODE,
    crucible_acceptance,
    crucible_analyse,
    crucible_build,
)


class Command(DemoCommand):
    help = (
        "Build the project's synthetic CRUCIBLE study (3 evaluands, 15 families × 3 seeds, 4 "
        "autonomy rungs, 12 graded axes), import its episodes and harness grades through the "
        "real importers, freeze it, run the crucible analysis on the Celery path (in-process "
        "without a worker), unseal it and print the maximum acceptable rung per policy."
    )

    def load(self, people):
        pi = people["pi"]
        build = crucible_build(user=pi)
        version = build.version
        self.write_built(created=build.created, version=version, details=".")
        if build.refused_evaluand:
            self.stdout.write(f"Roster refused a bare model name: {build.refused_evaluand}")
        run = crucible_analyse(version=version, pi=pi)
        self.require_success(run)
        self.unseal(version=version, pi=pi)
        self.stdout.write(f"\nAnalysis run {run.number}: maximum acceptable autonomy rung\n")
        header = f"{'policy':<14} {'evaluand':<9} {'maximum acceptable rung':<28} first failure"
        self.write_header(header)
        for row in crucible_acceptance(run):
            failure = next(iter(row["failed"].items()), None)
            shown = f"{failure[0]}: {failure[1]}" if failure else "—"
            self.stdout.write(
                f"{row['policy']:<14} {row['evaluand']:<9} {row['verdict']:<28} {shown}"
            )
        url = f"/protocols/{PROTOCOL_CODE}/v/{version.label}/analysis/{run.number}/"
        self.stdout.write(f"\nReport: {url}")
