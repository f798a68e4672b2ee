"""Issue #12 §7: the analysis plans as data change nothing for existing studies.

The result documents of an OPB-01-shaped study (``tests.analysis.builders.opb_study``, every
stage of the pipeline) and of the real XSTest study are byte-identical
to those the code gave before pipelines declared themselves: their SHA-256s were recorded on
``main`` (commit ddee556) before any change and are written here. A result document names the
frozen version's hash and the numeric libraries' versions, so the figures hold in this
environment (the shared virtualenv) and for the frozen documents as ``main`` builds them.
"""

import pytest

from apps.analysis.models import RunState
from tests.analysis.builders import opb_study, xstest_study

pytestmark = pytest.mark.django_db

# Recorded on main (ddee556) before #12's changes, on SQLite and on PostgreSQL alike.
OPB_RESULT_SHA256 = "42da3aa1071a9a37805e59ca0dc2635631343b4408a9a451dca102e96a969c60"
XSTEST_RESULT_SHA256 = "efe72ddb97e782654f81a318de7c6593f8182eba7c14a21305db4d3f66ed154c"


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
