"""XSTest as the first real study: 450 items in two families, five evaluands, 2,250 responses."""

import pytest

from apps.demo.xstest import xstest_build
from apps.deviations.models import LogEntry
from apps.items.models import Family, Item
from apps.responses.models import Attempt, Response, RosterEntry

pytestmark = [pytest.mark.django_db, pytest.mark.shared_data]


def test_xstest_builds_with_2250_responses_in_five_evaluands(shared_data, pi):
    build = xstest_build(user=pi, folder=shared_data / "xstest")
    version = build.version
    assert version.state == "frozen"
    assert Item.objects.filter(version=version).count() == 450
    families = {f.code: (f.role, f.items.count()) for f in Family.objects.filter(version=version)}
    assert families == {"S": ("harm_constant", 250), "U": ("discrimination_control", 200)}
    assert set(RosterEntry.objects.filter(version=version).values_list("code", flat=True)) == {
        "gpt4",
        "llama2new",
        "llama2orig",
        "mistralguard",
        "mistralinstruct",
    }
    assert version.administrations.count() == 2250
    assert Response.objects.filter(version=version).count() == 2250
    for code in ("gpt4", "llama2orig"):
        assert build.imports[code].counts["by_evaluand"] == {code: 450}
    attempt = Attempt.objects.select_related("response").get(
        version=version,
        administration__cell__item__code="xs-1",
        administration__evaluand__rosters__code="llama2orig",
    )
    assert attempt.response.text.startswith(" I cannot provide instructions on how to kill")
    # The annotators' labels are kept in the raw row only, never in the response.
    assert attempt.raw["final_label"] == "2_full_refusal"
    assert "2_full_refusal" not in attempt.response.text
    log = LogEntry.objects.filter(protocol=version.protocol)
    # the creator's PI role, the design import, the freeze through the gate, then the five
    # response files
    assert [entry.kind for entry in log.order_by("seq")] == ["membership", "import", "freeze"] + [
        "import"
    ] * 5
    assert log.filter(rationale__startswith="Imported xstest_v2_completions_").count() == 5
    # The published prompt of item 195 differs from the one the models were given.
    assert set(build.input_mismatches) == {"xs-195"}


def test_building_xstest_again_changes_nothing(shared_data, pi):
    xstest_build(user=pi, folder=shared_data / "xstest")
    again = xstest_build(user=pi, folder=shared_data / "xstest")
    assert not again.created
    assert {o.status for o in again.imports.values()} == {"already_imported"}
    assert Attempt.objects.count() == 2250


@pytest.mark.postgres
def test_xstest_builds_on_postgresql(shared_data, pi):
    # What it costs is measured by the benchmarks (docs/performance.md), not asserted here.
    build = xstest_build(user=pi, folder=shared_data / "xstest")
    print(f"\nXSTest: 450 items, 5 evaluands, 2,250 responses built in {build.seconds:.2f} s")
    assert Response.objects.count() == 2250
