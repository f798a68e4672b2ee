"""Import rate of machine scores from one Inspect AI log of several scorers: 100,000 (≤ 10 s).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/preregistry .venv/bin/python -m pytest \\
        tests/benchmarks/test_machine_scorers_log_benchmark.py -p no:randomly -s -o addopts=""

The log: ``tests/inspect_logs.py`` writes a three-sample task with inspect_ai (``includes()``,
the documented multi-value ``letter_count`` and an appended LLM judge, two epochs); the first
sample's two epoch entries, as inspect_ai wrote them, are copied into the same archive under
12,500 ids = 25,000 records (inspect_ai.eval needs minutes per thousand samples here, and
``write_eval_log`` time quadratic in the samples). Four scores per record: includes,
letter_count's a_count and e_count (key paths), judge = 100,000 machine scores for three
roster scorers, in one import.
The design: 12,500 single-level items × 1 evaluand × 2 repetitions, the responses imported from
the same log first. The log has 25,000 sample entries, above the default archive limit of
10,000 entries (``PREREGISTRY_ARCHIVE_MAX_ENTRIES``), which the benchmark raises. Measured: the
wall time of ``machine_scores_import`` (read the log sample by sample, check the provenance,
resolve each record's response, check every value, COPY, the log entry, the commit).

``BENCH_SAMPLES=<n>`` sets the ids per epoch (default 12,500); ``BENCH_PROFILE=<path>`` writes a
cProfile of the timed call to ``<path>`` (read it with ``python -m pstats <path>``), e.g.
``BENCH_SAMPLES=1500 BENCH_PROFILE=/tmp/scorers.prof``.
"""

import cProfile
import json
import os
import time
import zipfile

import pytest
from django.db import connection

from apps.items.models import Cell, Family, Item, KeyUnit, Level
from apps.protocols.models import SECTION_FIELDS
from apps.protocols.services import version_freeze
from apps.raters.models import MachineScore
from apps.raters.services import rubric_create
from apps.raters.services.machine import machine_scores_import
from apps.raters.services.scorers import scorer_register, scorer_roster_enroll
from apps.responses.formats import inspect_available
from apps.responses.services import evaluand_register, responses_import, roster_enroll
from tests.benchmarks.conftest import backend_pid, meets, process_cpu_seconds, sized
from tests.factories import AnalysisParameterFactory, ProtocolVersionFactory
from tests.inspect_logs import GRADER, TEMPLATE, written_logs

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,
    pytest.mark.skipif(not inspect_available(), reason="inspect_ai not installed"),
    pytest.mark.timeout(3600),  # the setup: a design and responses of 25,000 records
]

SAMPLES = int(os.environ.get("BENCH_SAMPLES", sized("12500", "50")))
TARGET_SECONDS = 10.0
FIELDS = [
    {"name": "complied", "kind": "binary", "scored_by": "scorer", "scorer_role": "grader"},
    {"name": "a_count", "kind": "count", "scored_by": "scorer", "scorer_role": "letters"},
    {"name": "e_count", "kind": "count", "scored_by": "scorer", "scorer_role": "letters"},
    {"name": "judged", "kind": "binary", "scored_by": "scorer", "scorer_role": "judge"},
]
SCORERS = {
    "includes": ("grader", {"kind": "harness_grader", "name": "includes", "version": "1"}),
    "letters": ("letters", {"kind": "harness_grader", "name": "letter_count", "version": "1"}),
    "judge": (
        "judge",
        {
            "kind": "llm_judge",
            "name": "judge",
            "version": "1",
            "model": GRADER,
            "provider": "mockllm",
            "prompt": TEMPLATE,
        },
    ),
}
MAPPING = {
    "scores": {
        "includes": {"scorer": "includes", "field": "complied"},
        "scores.letter_count.value.a_count": {"scorer": "letters", "field": "a_count"},
        "scores.letter_count.value.e_count": {"scorer": "letters", "field": "e_count"},
        "judge": {"scorer": "judge", "field": "judged"},
    }
}


def _big_log(directory) -> bytes:
    """The small log's archive with its sample entries copied to ``SAMPLES`` ids per epoch:
    every entry is one inspect_ai wrote, with the sample's id changed (inspect_ai's own
    ``write_eval_log`` takes time quadratic in the samples: hours for 25,000)."""
    small = written_logs(directory)["appended"]
    path = directory / "big.eval"
    with zipfile.ZipFile(small) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for entry in source.infolist():
            data = source.read(entry)
            if not entry.filename.startswith("samples/"):
                out.writestr(entry.filename, data)
                continue
            if not entry.filename.startswith("samples/xs-1_"):
                continue
            sample = json.loads(data)
            for n in range(1, SAMPLES + 1):
                sample["id"] = f"s-{n}"
                out.writestr(f"samples/s-{n}_epoch_{sample['epoch']}.json", json.dumps(sample))
    return path.read_bytes()


def _frozen_version(protocol, pi, log: bytes):
    version = ProtocolVersionFactory(
        protocol=protocol, created_by=pi, **{name: f"The {name}." for name in SECTION_FIELDS}
    )
    level = Level.objects.create(version=version, ordinal=0, code="L0", name="prompt")
    family = Family.objects.create(version=version, code="A", name="A", role="harm_constant")
    items = Item.objects.bulk_create(
        [Item(version=version, family=family, code=f"s-{n}") for n in range(1, SAMPLES + 1)],
        batch_size=5000,
    )
    cells = Cell.objects.bulk_create(
        [Cell(version=version, item=i, level=level, prompt=f"Question {i.code}") for i in items],
        batch_size=5000,
    )
    KeyUnit.objects.bulk_create(
        [KeyUnit(version=version, cell=c, position=1, text="Answers.") for c in cells],
        batch_size=5000,
    )
    evaluand, _ = evaluand_register(user=pi, label="mock", model="mockllm/model")
    roster_enroll(version=version, evaluand=evaluand, code="mock", user=pi)
    AnalysisParameterFactory(version=version, name="repetitions", value="2")
    AnalysisParameterFactory(version=version, name="seed", value="1")
    rubric_create(version=version, name="graders", fields=FIELDS)
    for code, (role, identity) in SCORERS.items():
        scorer, _ = scorer_register(user=pi, label=code, **identity)
        scorer_roster_enroll(version=version, scorer=scorer, code=code, role=role, user=pi)
    version = version_freeze(version=version, user=pi)
    responses_import(version=version, user=pi, data=log, filename="big.eval")
    return version


def test_import_100k_machine_scores_from_one_multi_scorer_log(protocol, pi, settings, tmp_path):
    settings.ARCHIVE_MAX_ENTRIES = 2 * SAMPLES + 100
    settings.ARCHIVE_MAX_RATIO = 1000  # the copies compress far better than a real log
    started = time.perf_counter()
    log = _big_log(tmp_path)
    version = _frozen_version(protocol, pi, log)
    setup_seconds = time.perf_counter() - started
    profile = os.environ.get("BENCH_PROFILE")
    profiler = cProfile.Profile() if profile else None
    backend = backend_pid(connection)
    backend_cpu = process_cpu_seconds(backend)
    cpu = time.process_time()
    started = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    outcome = machine_scores_import(
        version=version, user=pi, data=log, filename="big.eval", mapping=MAPPING
    )
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    backend_cpu = process_cpu_seconds(backend) - backend_cpu
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile)
    load = os.getloadavg()
    scores = 2 * SAMPLES * 4
    assert outcome.counts["scores"] == scores
    assert outcome.counts["by_scorer"] == {
        "includes": 2 * SAMPLES,
        "judge": 2 * SAMPLES,
        "letters": 4 * SAMPLES,
    }
    assert MachineScore.objects.filter(version_id=version.pk).count() == scores
    verdict = "met" if seconds <= TARGET_SECONDS else "NOT met"
    print(
        f"\n{scores:,} machine scores (one .eval log, {2 * SAMPLES:,} samples × epochs, "
        f"{len(log) / 1e6:.1f} MB, 3 scorers) imported in {seconds:.2f} s "
        f"({scores / seconds:,.0f} scores/s); target ≤ {TARGET_SECONDS:.0f} s {verdict}"
        f"\nload average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on "
        f"{os.cpu_count()} CPUs; CPU time of the import: this process {cpu:.2f} s, PostgreSQL "
        f"backend {backend_cpu:.2f} s; setup (log, design, freeze, responses) "
        f"{setup_seconds:.1f} s"
    )
    assert meets(seconds, at_most=TARGET_SECONDS)
