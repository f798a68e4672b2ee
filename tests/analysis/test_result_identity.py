"""Issue #12 §7: the analysis plans as data change nothing for existing studies.

The result documents of an OPB-01-shaped study (``tests.factories.opb_study``, every
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
environment (the shared virtualenv) and for the frozen documents as ``main`` builds them. Since
2 December the pins are of the documents' figures to 9 significant digits (``figures_sha256``),
because a new machine with the same locked packages moved the last bits of fitted values.
"""

import hashlib
import json

import factory
import pytest

from apps.analysis.models import RunState
from apps.core.canonical import canonical_json
from tests import factories
from tests.factories import comparison_study, opb_study, xstest_study

pytestmark = pytest.mark.django_db

# How far every factory's sequence is moved before a pin is taken (``_late_in_a_run``): not a
# multiple of 6, so LevelFactory's ordinal (n % 6) moves too.
SEQUENCES_MOVED_BY = 10_007


def _sequence_owners() -> list[type[factory.django.DjangoModelFactory]]:
    """The factories of ``tests.factories`` that own a sequence counter (a factory of the same
    model as its parent, FrozenVersionFactory say, counts on its parent's)."""
    return [
        value
        for value in vars(factories).values()
        if isinstance(value, type)
        and issubclass(value, factory.django.DjangoModelFactory)
        and value._meta.model is not None
        and value._meta.counter_reference is value._meta
    ]


@pytest.fixture(autouse=True)
def _late_in_a_run():
    """Every pin here is taken as if late in a full run: each factory's sequence moved on by
    ``SEQUENCES_MOVED_BY``, and put back after. Under ``pytest -n auto`` the counters stand
    wherever the tests run before in the same worker left them, so a document that read one
    gave one hash alone and another in the suite: the comparison pin of e8b0cba, whose frozen
    document held CellFactory's "Describe thing {n}." and KeyUnitFactory's "required unit {n}"
    (n from 0 alone, from 232 in the worker that failed, 58543b77…). A pin that holds here
    holds whatever ran before it."""
    owners = _sequence_owners()
    saved = {}
    for owner in owners:
        owner._meta._initialize_counter()
        saved[owner] = owner._meta._counter.seq
        owner.reset_sequence(saved[owner] + SEQUENCES_MOVED_BY)
    yield
    for owner in owners:
        owner.reset_sequence(saved[owner])


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
# From 2 December the pins are of the figures (``figures_sha256``: floats to 9 significant
# digits), not of the exact bytes; the exact result hashes on that day were 88a8a583… (OPB) and
# 0aefcc54… (XSTest), on SQLite and PostgreSQL alike.
# Both re-pinned on branch pins (from integ at b8bf597; main was fc91b0e), when new freezes began
# to write revision 2 of the frozen document (issue #33 §3, branch guards: a parameter's
# help_text, the rubric text's media type, a cell's expected output without a kind). Compared key
# by key with main's documents (all floats equal to the last bit, not only to 9 digits), only
# "protocol.sha256" differs, in each document: the versions' documents gain each parameter's
# help_text ("") and the revision-2 type name, and the same versions rebuilt as revision 1 hash
# to main's values exactly. "input_sha256" is unchanged (the inputs hold no frozen document).
# Reliability before adjudication (issue #32 §1, branch seeds) changes no figure here: every
# response of both studies is scored, none awaits adjudication or is partly scored, and
# main's α was already computed over the primaries' pre-adjudication values of scored ones.
# OPB: 8ecd8ddf… on main, now 6b4ae3be…; XSTest: 406880a9… on main, now d620a932….
# OPB re-pinned at the merge of the clustered-rate interval (issue #36 §2): compared key by key
# with the document before it (6b4ae3be…), only the refusal rate R's interval and its
# interval_method differ, in 24 cells and 32 methods, and each new interval contains the old.
# OPB re-pinned on branch skew (issue #36 §1: F_att and A_att cell means choose their interval
# by the effective number of events, stats.bounded_means): compared key by key with the document
# before it (c8658a8e…), only the interval_method of the F_att and A_att cells differs, in 82
# cells (56 F_att, 26 A_att); every interval there was and is unavailable (3 or 6 items, below
# the floor of 10), so no figure changes.
# OPB re-pinned on branch s44-calib (issue #36 §1: the cell means' rule reads the estimate's
# skewness γ* in place of E* ≥ 30): compared key by key with the document before it
# (c8080b99…), only the interval_method of the same 82 cells differs (56 F_att, 26 A_att), whose
# intervals are still unavailable below the floor of 10 items, so no figure changes.
# OPB re-pinned on branch s45-band (issue #36 §1: the hull's beta-binomial member takes the χ²₁
# reference below 15 clusters): compared key by key with the document before it (9460822e…),
# only the interval_method of the same 82 cells differs (56 F_att, 26 A_att: the rule's name
# gains its reference), whose intervals are still unavailable below the floor of 10 items, so
# no figure changes.
# OPB re-pinned on branch s46-band (issue #36 §1: the hull's Korn–Graubard member takes mid-p
# tails): compared key by key with the document before it (86a8c818…, which main's
# stats.bounded_means still gives on this branch), only the interval_method of the same 82 cells
# differs (56 F_att, 26 A_att: the rule's name gains "with mid-p tails"), whose intervals are
# still unavailable below the floor of 10 items, so no figure changes.
OPB_RESULT_SHA256 = "03940aba027e69fac258b853590b4ab24ce1d6431e5af649e0d36c0eabb452f7"
# XSTest re-pinned on branch abuild (issue #22), when xstest_study began to freeze through the
# real gate (section text, key units and typed parameters enter the frozen document): compared
# key by key with the document of 1c45378e…, only "protocol.sha256" and "input_sha256" differ;
# every figure is equal. Re-pinned on branch pins for revision 2 of the frozen document (above):
# only "protocol.sha256" differs from main's document (406880a9…, now d620a932…).
XSTEST_RESULT_SHA256 = "d620a932924f8c4a60f9f0a884e6ce7f43cf55b7a98b58c0a0292f2befb80a3e"
# The general comparison pipeline (issue #34), first pinned on 6 December 2026 (stop 46), after
# its nested designs took their degrees of freedom from the random-effects working model
# (``stats.comparison``): items nested in two conditions, refusals varying within items too.
# That pin (8a6c5607…, e8b0cba) held alone and failed under xdist (58543b77…): the builder's
# prompts and key units came from factory_boy sequences (``_late_in_a_run``, above). Pinned
# again on branch s47-pin, with them written from the cells' codes: compared key by key with
# 8a6c5607…'s document, only "protocol.sha256" differed (the frozen documents differ in the 24
# prompts and 24 key-unit texts only; "input_sha256" and every figure equal), dec358af…. That
# pin did not move with the random-effects working model switched off (``random_effects=False``
# in both contrasts): every cluster held two responses. So three responses go unjudged
# (``UNJUDGED``), and the pin moves with it.
COMPARISON_RESULT_SHA256 = "1f003f34ab67c401dd7b066bfee82be00291b30e0ddaf3531846e84d51d3b27e"


def _rounded(value):
    """``value`` with every float kept to 9 significant digits and anything below 1e-12 in
    size read as 0.0."""
    if isinstance(value, float):
        return 0.0 if abs(value) < 1e-12 else float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def figures_sha256(run) -> str:
    """SHA-256 of the run's canonical result document with its floats rounded (``_rounded``).

    Why not the result's own hash: the last bits of a fitted value depend on the machine's
    numeric kernels (on 2 December a new machine with the same locked packages gave the OPB
    document a different hash, every figure equal to 9 digits; a GEE coefficient of 2.9e-16
    came out as another value of that size). Nine digits are far finer than any figure the
    pipelines report or any test checks, so a real change still moves the pin."""
    assert run.state == RunState.SUCCEEDED, run.error
    document = json.loads(bytes(run.result.content))
    return hashlib.sha256(canonical_json(_rounded(document))).hexdigest()


def test_the_opb_results_figures_are_unchanged(run_now):
    # Two evaluands, Families A and B, the disclosure arms and the force arm: every stage.
    study = opb_study(evaluands=2, with_disclosure=True, with_force=True)
    run = run_now(study.version, study.pi)
    assert figures_sha256(run) == OPB_RESULT_SHA256, run.result_id


@pytest.mark.shared_data
def test_the_xstest_results_figures_are_unchanged(shared_data, run_now):
    folder = shared_data / "xstest"
    if not (folder / "xstest_prompts.csv").is_file():
        pytest.skip(f"XSTest is absent from {folder}")
    study = xstest_study(folder, replicates="1000")
    run = run_now(study.version, study.pi)
    assert figures_sha256(run) == XSTEST_RESULT_SHA256, run.result_id


# Responses the judge gave no verdict (unscored): the items' clusters are then of unequal sizes,
# and only then do the nested designs' random-effects degrees of freedom differ from those
# under independence (with equal clusters the two working models give the same eigenvalue
# ratio), so only then does the pin see that working model.
UNJUDGED = {("plain-02", "alpha", 2), ("plain-05", "beta", 1), ("warned-06", "alpha", 1)}


def _comparison_refusal(item: str, evaluand: str, repetition: int) -> bool | None:
    """Warned prompts 1–9 of 12 refused, plain 1–3, each fourth prompt's second repetition the
    other way round, and model beta refusing warned prompt 10 too; no verdict on ``UNJUDGED``."""
    if (item, evaluand, repetition) in UNJUDGED:
        return None
    condition, number = item.rsplit("-", 1)
    refused = int(number) <= (9 if condition == "warned" else 3)
    refused |= evaluand == "beta" and item == "warned-10"
    return refused != (repetition == 2 and int(number) % 4 == 0)


@pytest.mark.parametrize("after_another", [False, True], ids=["first", "after-another-study"])
def test_the_comparison_results_figures_are_unchanged(run_now, after_another):
    if after_another:
        # A second study in the same database: every row's id moves on, and the evaluands and
        # the judge registered by the first are found again (registered once, by identity).
        earlier = comparison_study(code="CMP-EARLIER", refusal=_comparison_refusal, repetitions=2)
        run_now(earlier, earlier.created_by)
    version = comparison_study(code="CMP-PIN", refusal=_comparison_refusal, repetitions=2)
    run = run_now(version, version.created_by)
    assert figures_sha256(run) == COMPARISON_RESULT_SHA256, run.result_id
