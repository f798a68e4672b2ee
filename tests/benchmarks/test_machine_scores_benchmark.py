"""Import rate of machine scores: 100,000 LLM-judge scores into PostgreSQL (target ≤ 10 s).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/preregistry .venv/bin/python -m pytest \\
        tests/benchmarks/test_machine_scores_benchmark.py -p no:randomly -s -o addopts=""

The design: 25,000 single-level items × 1 evaluand = 25,000 responses (imported first through the
response importer). The file: one JSON Lines row per response from one LLM judge, with seed 003's
four verdict fields (fidelity, loss1, drift_flag, a quote) = 100,000 machine scores. Measured:
the wall time of ``machine_scores_import`` (read, resolve each row's response, check every value as
a reviewer's would be, COPY, the log entry, the commit). Figures go to docs/performance.md.
"""

import csv
import io
import json
import os
import time

import pytest

from apps.items.models import Cell, Family, Item, KeyUnit, Level
from apps.protocols.models import SECTION_FIELDS
from apps.protocols.services import version_freeze
from apps.raters.models import MachineScore
from apps.raters.services import rubric_create
from apps.raters.services.machine import machine_scores_import
from apps.raters.services.scorers import scorer_register, scorer_roster_enroll
from apps.responses.services import evaluand_register, responses_import, roster_enroll
from tests.benchmarks.conftest import meets, sized
from tests.factories import JUDGE, AnalysisParameterFactory, ProtocolVersionFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

ITEMS = int(os.environ.get("BENCH_ITEMS", sized("25000", "250")))
TARGET_SECONDS = 10.0
FIELDS = [
    {"name": "fidelity", "kind": "binary", "scored_by": "scorer", "scorer_role": "judge"},
    {
        "name": "loss1",
        "kind": "number",
        "minimum": "0",
        "maximum": "1",
        "scored_by": "scorer",
        "scorer_role": "judge",
    },
    {"name": "drift_flag", "kind": "binary", "scored_by": "scorer", "scorer_role": "judge"},
    {"name": "quote", "kind": "quote", "scored_by": "scorer", "scorer_role": "judge"},
]


def _frozen_version(protocol, pi):
    version = ProtocolVersionFactory(
        protocol=protocol, created_by=pi, **{name: f"The {name}." for name in SECTION_FIELDS}
    )
    level = Level.objects.create(version=version, ordinal=0, code="L0", name="prompt")
    family = Family.objects.create(version=version, code="A", name="A", role="harm_constant")
    items = Item.objects.bulk_create(
        [Item(version=version, family=family, code=f"j-{n}") for n in range(1, ITEMS + 1)],
        batch_size=5000,
    )
    cells = Cell.objects.bulk_create(
        [Cell(version=version, item=i, level=level, prompt=f"Dialogue {i.code}") for i in items],
        batch_size=5000,
    )
    KeyUnit.objects.bulk_create(
        [KeyUnit(version=version, cell=c, position=1, text="Enacts.") for c in cells],
        batch_size=5000,
    )
    evaluand, _ = evaluand_register(user=pi, label="simulator", model="simulator-1")
    roster_enroll(version=version, evaluand=evaluand, code="sim", user=pi)
    AnalysisParameterFactory(version=version, name="repetitions", value="1")
    AnalysisParameterFactory(version=version, name="seed", value="1")
    rubric_create(version=version, name="injection-fidelity", fields=FIELDS)
    scorer, _ = scorer_register(user=pi, label="judge", **JUDGE)
    scorer_roster_enroll(version=version, scorer=scorer, code="judge", role="judge", user=pi)
    version = version_freeze(version=version, user=pi)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["item", "evaluand", "response"])
    for n in range(1, ITEMS + 1):
        writer.writerow([f"j-{n}", "sim", f"The simulated user pushes back on turn {n}."])
    responses_import(version=version, user=pi, data=out.getvalue().encode(), filename="r.csv")
    return version


def _judge_file() -> bytes:
    lines = []
    for n in range(1, ITEMS + 1):
        row = {
            "item": f"j-{n}",
            "evaluand": "sim",
            "scorer": "judge",
            "fidelity": n % 3 != 0,
            "loss1": (n % 6) / 5 if n % 6 < 6 else 1,
            "drift_flag": n % 7 == 0,
            "quote": f"pushes back on turn {n}",
        }
        lines.append(json.dumps(row))
    return ("\n".join(lines) + "\n").encode()


def test_import_100k_machine_scores(protocol, pi):
    started = time.perf_counter()
    version = _frozen_version(protocol, pi)
    setup_seconds = time.perf_counter() - started
    data = _judge_file()
    started = time.perf_counter()
    profile = None
    if os.environ.get("BENCH_PROFILE"):
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    outcome = machine_scores_import(version=version, user=pi, data=data, filename="judge.jsonl")
    seconds = time.perf_counter() - started
    if profile is not None:
        profile.disable()
        profile.dump_stats(os.environ["BENCH_PROFILE"])
    load = os.getloadavg()
    scores = ITEMS * len(FIELDS)
    assert outcome.counts["scores"] == scores
    assert MachineScore.objects.filter(version_id=version.pk).count() == scores
    verdict = "met" if seconds <= TARGET_SECONDS else "NOT met"
    print(
        f"\n{scores:,} machine scores ({ITEMS:,} JSON Lines rows, {len(data) / 1e6:.1f} MB) "
        f"imported in {seconds:.2f} s ({scores / seconds:,.0f} scores/s); target "
        f"≤ {TARGET_SECONDS:.0f} s {verdict}"
        f"\nload average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on "
        f"{os.cpu_count()} CPUs; setup (design, freeze, {ITEMS:,} responses) {setup_seconds:.1f} s"
    )
    assert meets(seconds, at_most=TARGET_SECONDS)  # issue #13's target, held at the full size
