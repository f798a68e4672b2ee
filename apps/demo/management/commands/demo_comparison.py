"""``manage.py demo_comparison``: the general comparison pipeline on a two-condition refusal
study the demo wrote, to the table of differences."""

from apps.demo.commands import DemoCommand
from apps.demo.comparison import comparison_demo, comparison_table


def _interval(pair, sign: str = "+") -> str:
    return "no interval" if not pair else f"[{pair[0]:{sign}.3f}, {pair[1]:{sign}.3f}]"


class Command(DemoCommand):
    help = (
        "Build the demo's two-condition refusal study on the general comparison pipeline, "
        "import its responses and an LLM judge's scores, run the analysis, unseal it and "
        "print the differences (warned − plain) per model."
    )

    def load(self, people):
        pi = people["pi"]
        demo = comparison_demo(pi=pi)
        self.write_built(
            created=demo.created, version=demo.version, details=": 40 prompts × 2 models."
        )
        self.require_success(demo.run)
        self.unseal(version=demo.version, pi=pi)
        self.write_header(
            f"{'model':<8} {'outcome':<18} {'difference':>10} {'interval':>18}   ratio"
        )
        for row in comparison_table(demo.run):
            ratio = row.get("ratio") or {}
            shown = (
                f"{ratio['estimate']:.2f} {_interval(ratio.get('interval'), '')}"
                if ratio.get("estimate") is not None
                else "—"
            )
            self.stdout.write(
                f"{row['evaluand']:<8} {row['outcome']:<18} {row['estimate']:>+10.3f} "
                f"{_interval(row['interval']):>18}   {shown}"
            )
