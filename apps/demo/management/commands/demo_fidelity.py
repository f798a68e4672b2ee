"""``manage.py demo_fidelity``: seed 003's injection-fidelity rubric end to end, on the demo's
own cards and dialogues, to the fidelity table."""

from apps.demo.commands import DemoCommand
from apps.demo.fidelity import (
    dialogue_count,
    fidelity_demo,
    fidelity_table,
    rubric_address,
)


def _rate(part: dict | None) -> str:
    if not part:
        return "–"
    interval = part.get("interval")
    bounds = f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else " (no interval)"
    return f"{part['rate']:.2f}{bounds}  ({part['count']}/{part['n']})"


def _number(value) -> str:
    return "   –" if value is None else f"{value:6.3f}"


class Command(DemoCommand):
    help = (
        "Build the demo's injection-fidelity study (seed 003's rubric), judge every dialogue "
        "through the blind queue, import an LLM judge's loss1 documents (three of them "
        "self-contradictory), run the analysis, unseal it and print the fidelity table."
    )

    def load(self, people):
        pi = people["pi"]
        demo = fidelity_demo(pi=pi, reviewer=people["reviewer1"])
        version, run = demo.version, demo.run
        self.write_built(
            created=demo.created,
            version=version,
            details=f": {dialogue_count(version)} dialogues; "
            f"rubric text public at {rubric_address(version)}.",
        )
        self.stdout.write(f"reviewer1 judged {demo.judged} dialogues through the queue.")
        self.require_success(run)
        self.unseal(version=version, pi=pi)
        table = fidelity_table(run)
        self.stdout.write(f"\nAnalysis run {run.number} ({table['interval']['method']})\n")
        self.stdout.write(f"{'fidelity rate':<22} {_rate(table['fidelity'])}")
        for axis, part in table["axes"].items():
            self.stdout.write(f"{axis + ' pass rate':<22} {_rate(part)}")
        self.stdout.write(f"{'drift rate':<22} {_rate(table['drift'])}")
        loss1 = ", ".join(f"{d['loss1']:.1f}: {d['count']}" for d in table["loss1"]["distribution"])
        self.stdout.write(f"{'loss1 distribution':<22} {loss1} (mean {table['loss1']['mean']:.2f})")
        collapse = table["collapse"]
        self.stdout.write(
            f"{'most collapsing axis':<22} {collapse['most_collapsing_overall']} "
            f"(by card level: {collapse['most_collapsing_by_level']})"
        )
        judge = table["judge"]
        self.stdout.write(
            f"{'judge inconsistencies':<22} {judge['inconsistent_documents']} of "
            f"{judge['documents']} documents, by axis {judge['by_axis']}"
        )
        self.stdout.write("\nLLM judge vs the human judge, per field (α, Cohen's κ, n):")
        for name, pair in table["judge_agreement"].items():
            self.stdout.write(
                f"  {name:<12} α {_number(pair.get('alpha'))}  κ {_number(pair.get('kappa'))}"
                f"  n {pair.get('n')}"
            )
