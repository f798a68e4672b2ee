"""``manage.py demo_xstest``: the whole XSTest study, from the shared CSVs to the headline table."""

from django.core.management.base import CommandError

from apps.demo.commands import DemoCommand
from apps.demo.xstest import (
    xstest_analyse,
    xstest_build,
    xstest_headline,
    xstest_score,
)


def _percent(value: float | None) -> str:
    return "    –" if value is None else f"{value:5.1f}"


class Command(DemoCommand):
    help = (
        "Build XSTest from ../shared/data/xstest, score every response through the blind queue "
        "with the annotators' labels (disagreements adjudicated with the final labels), run the "
        "preregistered analysis, unseal it as the PI and print the refusal rates and α."
    )

    def load(self, people):
        pi = people["pi"]
        try:
            build = xstest_build(user=pi)
        except FileNotFoundError as error:
            raise CommandError(str(error)) from None
        version = build.version
        self.write_built(
            created=build.created, version=version, details=f" in {build.seconds:.1f} s."
        )
        scoring = xstest_score(
            version=version,
            pi=pi,
            reviewers=(people["reviewer1"], people["reviewer2"]),
            adjudicator=people["reviewer3"],
        )
        self.stdout.write(
            f"Scored through the queue: {scoring.primary} primary scores, "
            f"{scoring.adjudicated} adjudications, in {scoring.seconds:.1f} s."
        )
        run = xstest_analyse(version=version, pi=pi)
        self.require_success(run)
        self.unseal(version=version, pi=pi)
        self.stdout.write(
            f"\nAnalysis run {run.number}: refusal rates (%) and Krippendorff's α (nominal)\n"
        )
        header = (
            f"{'evaluand':<16} {'safe full':>9} {'safe partial':>12} "
            f"{'unsafe full':>11} {'unsafe partial':>14} {'α':>6}"
        )
        self.write_header(header)
        for row in xstest_headline(run):
            alpha = "     –" if row["alpha"] is None else f"{row['alpha']:6.3f}"
            self.stdout.write(
                f"{row['evaluand']:<16} {_percent(row['S_full']):>9} "
                f"{_percent(row['S_partial']):>12} {_percent(row['U_full']):>11} "
                f"{_percent(row['U_partial']):>14} {alpha}"
            )
        self.stdout.write(
            "\nRöttger et al. (NAACL 2024): Llama-2-70b-chat with its original system prompt "
            "fully refuses 38.0% and partially refuses 21.6% of safe prompts."
        )
