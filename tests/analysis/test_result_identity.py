"""Issue #12 §7: the analysis plans as data change nothing for existing studies.

The result documents of an OPB-01-shaped study (``tests.analysis.builders.opb_study``, every
stage of the pipeline) and of the real XSTest study are byte-identical
to those the code gave before pipelines declared themselves: on the branch that made the change
(commit d1558fa) they equalled the SHA-256s recorded on ``main`` (commit ddee556) before it,
``42da3aa1…`` and ``efe72ddb…``. Two changes merged beside it alter result documents on purpose
and are pinned here from the merge on: the machine-scores work adds ``machine_agreement`` to every
result and new keys to the frozen document (so the version's hash, which the result names), and
the interval calibration replaced the rate, cell-mean and β interval methods, and the test
builders now freeze with the real document hash (which the result names). From here the pins
guard against any unintended change. A result document names the
frozen version's hash and the numeric libraries' versions, so the figures hold in this
environment (the shared virtualenv) and for the frozen documents as ``main`` builds them.
"""

import pytest

from apps.analysis.models import RunState
from tests.analysis.builders import opb_study, xstest_study

pytestmark = pytest.mark.django_db

# Recorded at the merge of the plans work with the machine-scores and interval work
# (acd83641…), then on branch opb (issue #17), which adds to the OPB result on purpose: the
# three-way contrast (here "not estimable": the builder's C items name no base item), each
# surface's fresh-session guarantee (§6.3), three
# disclosure rules, "items_required" on intervals unavailable for too few items and each
# not-evaluable rule's reason; and the plan gains disclosure_epsilon (so the version's and the
# inputs' hashes change). Every value the document held before was checked equal, key by key,
# against the document of the branch's base (whose hash was febe6bde…, already not acd83641…
# in this environment on SQLite and PostgreSQL alike).
# OPB re-pinned on branch abuild3 (issue #22), when opb_study began to freeze through the real
# gate. The pin before it, f22bbf9a…, was not reproduced in this environment (the shared
# virtualenv of 2 December; SQLite): the branch's base gave eec0bd72…, as did 1823b02, which set
# f22bbf9a…. Compared key by key with eec0bd72…, what differs is "protocol.sha256",
# "input_sha256" and what the gate demands of the design: "parameters.repetitions" (the
# schedule's); "estimates.absent_cells" (Family B's L4–L5 were cells recorded absent, and the
# gate refuses any cell above a stopping rule, so now there are none); the disclosure arm's
# three-way contrast and its six contrast estimates per surface (the C items now name base items)
# with rules 8.6–8.8's reasons for being not evaluable; and on surface m2 the refusal GEE's level
# coefficient, zero to machine precision (2.9e-16, now -1.2e-16): the fit's rows follow the
# freeze's seeded schedule now, not the builder's order. Every other figure is equal.
OPB_RESULT_SHA256 = "88a8a5832a44c400f64834f0291b8b082f49b3a30bdbf6f3e3a84f53b0607ded"
# XSTest re-pinned on branch abuild (issue #22), when xstest_study began to freeze through the
# real gate (section text, key units and typed parameters enter the frozen document): compared
# key by key with the document of 1c45378e…, only "protocol.sha256" and "input_sha256" differ;
# every figure is equal.
XSTEST_RESULT_SHA256 = "0aefcc545d2331e1d04e0b3b33860ac8535b605e21be0c9cd0c48ac44d242b52"


def test_the_opb_result_is_byte_identical_to_before(run_now):
    # Two evaluands, Families A and B, the disclosure arms and the force arm: every stage.
    study = opb_study(evaluands=2, with_disclosure=True, with_force=True)
    run = run_now(study.version, study.pi)
    assert run.state == RunState.SUCCEEDED, run.error
    assert run.result_id == OPB_RESULT_SHA256


@pytest.mark.shared_data
def test_the_xstest_result_is_byte_identical_to_before(shared_data, run_now):
    folder = shared_data / "xstest"
    if not (folder / "xstest_prompts.csv").is_file():
        pytest.skip(f"XSTest is absent from {folder}")
    study = xstest_study(folder, replicates="1000")
    run = run_now(study.version, study.pi)
    assert run.state == RunState.SUCCEEDED, run.error
    assert run.result_id == XSTEST_RESULT_SHA256
