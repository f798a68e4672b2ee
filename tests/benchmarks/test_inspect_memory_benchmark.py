"""Peak memory of reading a ~50 MB Inspect AI ``.eval`` log (issue #33, "Why" 6).

    .venv/bin/python -m pytest tests/benchmarks/test_inspect_memory_benchmark.py \\
        -p no:randomly -s -o addopts=""

The log is the shared demo log (``../shared/data/inspect``) grown to ~50 MB: ``BENCH_SAMPLES``
(default 340) samples, each padded with 200 KiB of random text (barely compressible, so the
archive passes every archive limit, as the hostile test's did). A fresh process reads it as the
importer does (``formats.stream_file``, every record consumed) and reports its peak RSS above
its RSS once Django and inspect_ai are imported; the same for inspect_ai's whole-log reader
(what the importer did before). Target: ≤ 300 MB for the streaming reader (asserted).
"""

import json
import os
import random
import string
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = Path(os.environ.get("PREREGISTRY_SHARED_DATA", ROOT.parent / "shared" / "data"))
DEMO_LOG = DEMO / "inspect" / "refusal_demo_mockllm.eval"
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "340"))
TARGET_MB = 300

_READ = r"""
import os, resource, sys
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
django.setup()
import inspect_ai.log
from apps.responses.formats import stream_file
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS")) // 1024
base = rss()
if sys.argv[2] == "stream":
    n = sum(1 for _ in stream_file(sys.argv[1], "inspect").records)
else:
    log = inspect_ai.log.read_eval_log(sys.argv[1])
    n = len([s.model_dump(mode="json") for s in log.samples])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(n, base, peak)
"""


def _grown_log(path: Path) -> None:
    import inspect_ai.log  # noqa: F401  (registers the zip compression the demo log uses)

    rng = random.Random(7)
    with zipfile.ZipFile(DEMO_LOG) as demo, zipfile.ZipFile(path, "w") as out:
        template = None
        for entry in demo.infolist():
            data = demo.read(entry)
            if entry.filename.startswith("samples/"):
                template = template or json.loads(data)
                continue
            out.writestr(entry.filename, data, compress_type=zipfile.ZIP_DEFLATED)
        for n in range(1, SAMPLES + 1):
            sample = dict(template, id=f"s{n}", epoch=1)
            pad = "".join(rng.choices(string.ascii_letters + string.digits, k=200 * 1024))
            sample["metadata"] = {**(sample.get("metadata") or {}), "pad": pad}
            out.writestr(
                f"samples/s{n}_epoch_1.json",
                json.dumps(sample),
                compress_type=zipfile.ZIP_DEFLATED,
            )


@pytest.mark.timeout(900)
def test_a_50_mb_eval_log_is_read_within_300_mb(tmp_path):
    if not DEMO_LOG.is_file():
        pytest.skip(f"the demo log {DEMO_LOG} is absent (set PREREGISTRY_SHARED_DATA)")
    log = tmp_path / "grown.eval"
    _grown_log(log)
    size_mb = log.stat().st_size / 2**20
    figures = {}
    for how in ("stream", "whole"):
        done = subprocess.run(
            [sys.executable, "-c", _READ, str(log), how],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            env=os.environ | {"DJANGO_SETTINGS_MODULE": "config.settings.test"},
        )
        assert done.returncode == 0, done.stderr[-2000:]
        n, base, peak = (int(x) for x in done.stdout.split()[-3:])
        figures[how] = (n, peak - base)
        print(f"{how}: {n} samples from a {size_mb:.1f} MB log, peak {peak - base} MB above {base}")
    assert figures["stream"][0] == SAMPLES
    assert figures["stream"][1] <= TARGET_MB
