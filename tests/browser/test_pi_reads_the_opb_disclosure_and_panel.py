"""Issue #17: the PI reads the OPB report's three-way contrast and panel comparison.

Makes ``tour-7-three-way-contrast`` and ``tour-8-panel-baseline`` in ``$PREREGISTRY_TOUR_DIR``
(docs/img for the README), from a study whose C_SPXI lowers F_att and whose C₀ does not.
"""

import pytest

from tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_pi_reads_the_opb_disclosure_and_panel(journey, django_capture_on_commit_callbacks):
    from apps.analysis.services import analysis_run_request
    from apps.deviations.services import outcome_unseal
    from apps.studies.opb.panel import panel_flags_import
    from tests.factories import opb_study

    study = opb_study(
        code="OPB-J7",
        evaluands=1,
        items_per_family=8,
        repetitions=2,
        with_disclosure=True,
        with_force=True,
        disclosure_effects={"C_SPXI": -1.5, "C0": 0.0},
        parameters={"interval_method": "analytic", "min_clusters": "6"},
    )
    rows = [
        f"p-0{m},A0{i},{'yes' if (i == 3 or (m == 2 and i == 5)) else 'no'}"
        for m in (1, 2, 3)
        for i in range(1, 9)
    ]
    panel_flags_import(
        version=study.version,
        user=study.pi,
        content=("member,item,flagged\n" + "\n".join(rows) + "\n").encode(),
    )
    with django_capture_on_commit_callbacks(execute=True):
        analysis_run_request(version=study.version, user=study.pi)
    outcome_unseal(version=study.version, user=study.pi, confirmation="OPB-J7")
    study.pi.set_password(PASSWORD)
    study.pi.save()
    page = journey.page
    journey.sign_in(study.pi.username)
    journey.go("/protocols/OPB-J7/v/1.1/analysis/1/")
    # Each analysis stage is a collapsed section under the finding (issue #21): closed, its
    # contents are hidden; opening the disclosure stage shows the three-way contrast.
    assert page.get_by_role("heading", name="Three-way contrast (OPB-01 §5)").count() == 0
    summaries = page.locator('details.stage[data-stage="disclosure"] > summary')
    for i in range(summaries.count()):
        summaries.nth(i).click()
    heading = page.get_by_role("heading", name="Three-way contrast (OPB-01 §5)")
    assert heading.count() == 1
    assert "C_SPXI − C₀" in page.content()
    heading.scroll_into_view_if_needed()
    journey.snap("three-way")
    page.evaluate("() => window.scrollTo(0, 0)")
    page.evaluate("() => document.querySelector('h4').scrollIntoView({block: 'start'})")
    journey.tour("tour-7-three-way-contrast")
    panel = page.get_by_role("heading", name="Human overgeneralisation baseline (OPB-01 §6.1)")
    assert panel.count() == 1
    page.evaluate(
        "() => document.getElementById('panel-baseline').scrollIntoView({block: 'start'})"
    )
    journey.snap("panel")
    journey.tour("tour-8-panel-baseline")
