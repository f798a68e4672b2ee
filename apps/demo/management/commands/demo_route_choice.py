"""``manage.py demo_route_choice``: seed 002's route-choice study, from synthetic session archives
to the paired-contrast table."""

from apps.analysis.selectors import result_document
from apps.demo.commands import DemoCommand
from apps.demo.route_choice import contrast_table, route_choice_build


def _interval(pair) -> str:
    return "            –" if pair is None else f"[{pair[0]:+.3f}, {pair[1]:+.3f}]"


class Command(DemoCommand):
    help = (
        "Build ROUTE-02 (seed 002, synthetic and authored by the project): 2 models × 64 task "
        "blocks in each sub-study, controls and infrastructure failures; import the Inspect-style "
        "session archives through the response importer, score with the oracle, analyse, unseal "
        "as the PI and print the paired contrasts."
    )

    def load(self, people):
        demo = route_choice_build(user=people["pi"])
        run = demo.run
        self.require_success(run)
        version = demo.version
        self.stdout.write(
            f"{version} ({version.sha256[:16]}): {demo.sessions} sessions imported, oracle-"
            f"scored, analysed (run {run.number}) and unsealed."
        )
        self.stdout.write(
            "\nPaired within-block contrasts (high − low), per model and sub-study, never pooled."
            "\nSub-study B: behavioural evidence, not inferred motive.\n"
        )
        header = (
            f"{'model':<8} {'sub':<3} {'endpoint':<20} {'contrast':<20} {'estimate':>8} "
            f"{'bootstrap 95%':>18} {'paired t 95%':>18} {'blocks':>6}"
        )
        self.write_header(header)
        for r in contrast_table(
            run, endpoints=("alternate_route", "full_completion", "items_completed")
        ):
            estimate = "–" if r["estimate"] is None else f"{r['estimate']:+.3f}"
            self.stdout.write(
                f"{r['evaluand']:<8} {r['sub_study']:<3} {r['endpoint']:<20} "
                f"{r['contrast']:<20} {estimate:>8} {_interval(r['bootstrap_interval']):>18} "
                f"{_interval(r['t_interval']):>18} {r['n_blocks']:>6}"
            )
        document = result_document(run)["estimates"]
        self.stdout.write("\nInfrastructure failures (in no endpoint's denominator):")
        for c in document["infrastructure"]["counts"]:
            self.stdout.write(
                f"  {c['stratum']:<10} {c['evaluand']:<8} {c['sub_study']}: {c['count']}"
            )
        self.stdout.write("\nControls:")
        for c in document["controls"]:
            self.stdout.write(
                f"  {c['code']:<6} {c['kind']:<9} {c['evaluand']:<8} {c['endpoint']:<16} "
                f"behaved as expected: {c['behaved_as_expected']}"
            )
