"""Plan templates seed a new protocol's draft 1.0; parameter values are checked by kind."""

from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.core.exceptions import ValidationError

from apps.protocols.apis import ProtocolListCreateApi
from apps.protocols.forms import ProtocolCreateForm
from apps.protocols.models import ParameterKind
from apps.protocols.parameters import decimal_text, value_error
from apps.protocols.plans import PLAN_TEMPLATES, plan_template_choices
from apps.protocols.services import protocol_create
from apps.studies.opb.pipeline import OPB


def _param(kind, *, choices=(), minimum=None, maximum=None, label="equivalence margin ε"):
    return SimpleNamespace(
        label=label,
        kind=kind,
        choices=list(choices),
        minimum=None if minimum is None else Decimal(minimum),
        maximum=None if maximum is None else Decimal(maximum),
    )


@pytest.mark.parametrize("value", ["0.05", "0", "-1.5", "10", "0.10"])
def test_plain_decimals_are_accepted_as_numbers(value):
    assert value_error(_param(ParameterKind.NUMBER), value) is None


@pytest.mark.parametrize("value", ["5e-2", "0,05", ".5", "1.", "007", "abc", "1 000", "NaN"])
def test_anything_but_a_plain_decimal_is_refused_naming_the_parameter(value):
    error = value_error(_param(ParameterKind.NUMBER), value)
    assert error is not None
    assert "equivalence margin ε" in error
    assert repr(value) in error


def test_integers_refuse_fractions():
    assert value_error(_param(ParameterKind.INTEGER, label="n per cell"), "5") is None
    assert "n per cell must be a whole number" in value_error(
        _param(ParameterKind.INTEGER, label="n per cell"), "5.0"
    )


def test_bounds_are_enforced_with_the_bound_in_the_message():
    n = _param(ParameterKind.INTEGER, minimum="5", label="n per cell")
    assert value_error(n, "4") == "the n per cell must be at least 5, not 4"
    coverage = _param(ParameterKind.NUMBER, maximum="0.999", label="interval coverage")
    assert value_error(coverage, "1") == "the interval coverage must be at most 0.999, not 1"


def test_choices_and_interval_methods_must_be_members():
    statistic = _param(ParameterKind.CHOICE, choices=["krippendorff_alpha_interval"])
    assert value_error(statistic, "krippendorff_alpha_interval") is None
    assert "must be one of krippendorff_alpha_interval" in value_error(statistic, "kappa")
    method = _param(ParameterKind.INTERVAL_METHOD, label="interval method")
    assert value_error(method, "analytic") is None
    assert "interval method must be one of bootstrap, analytic" in value_error(method, "bayes")


def test_an_empty_value_is_not_an_error_here_the_gate_decides():
    assert value_error(_param(ParameterKind.NUMBER), "  ") is None


def test_decimal_text_has_no_trailing_zeros():
    assert decimal_text(Decimal("5.0000000000")) == "5"
    assert decimal_text(Decimal("0.9990000000")) == "0.999"
    assert decimal_text(None) is None


def test_opb_template_declares_section_7_and_what_rating_needs():
    names = [spec.name for spec in OPB.parameter_specs()]
    for name in (
        "epsilon",
        "interval_method",
        "interval_coverage",
        "beta_positive_criterion",
        "agreement_statistic",
        "agreement_minimum",
        "absent_cell_handling",
        "aggregation_level",
        "n_per_cell",
        "n_per_surface_min",
        "bootstrap_replicates",
        "seed",
        "scores_per_response",
        "adjudication_delta",
        "reservation_minutes",
        "repetitions",
    ):
        assert name in names
    assert len(OPB.decision_table) == 8  # the five rows and the three disclosure outcomes


@pytest.mark.django_db
def test_protocol_create_seeds_draft_1_0_from_the_template(creator):
    protocol = protocol_create(user=creator, code="OPB-X", title="T", template="opb")
    draft = protocol.versions.get()
    assert (draft.label, draft.state) == ("1.0", "draft")
    values = dict(draft.parameters.values_list("name", "value"))
    assert values["epsilon"] == ""  # the protocol must instantiate it
    assert values["scores_per_response"] == "2"  # the template's default
    n = draft.parameters.get(name="n_per_cell")
    assert (n.kind, n.minimum) == ("integer", Decimal(5))
    assert draft.decision_table[0]["id"] == "OPB01-8.1"
    assert draft.hypotheses.startswith("### Under test")


def test_every_kind_registers_its_preset_and_the_dropdown_lists_generic_last():
    # OPB's and XSTest's presets live in their kinds' packages since issue #30, as the others'
    # do: every built-in kind's is registered by the time the apps are ready.
    codes = [code for code, _ in plan_template_choices()]
    assert codes == [
        "opb",
        "crucible",
        "route_choice",
        "fidelity",
        "xstest",
        "comparison",
        "generic",
    ]
    assert sorted(codes) == sorted(PLAN_TEMPLATES)
    assert PLAN_TEMPLATES["opb"] is OPB  # the one in apps/studies/opb/pipeline.py
    # The API's create serializer reads them when it is built, not when it was imported.
    choices = ProtocolListCreateApi.InputSerializer().fields["template"].choices
    assert list(choices) == codes
    assert ProtocolCreateForm().fields["template"].choices == plan_template_choices()


@pytest.mark.django_db
@pytest.mark.parametrize("code", sorted(PLAN_TEMPLATES))
def test_every_template_makes_a_draft(creator, code):
    protocol = protocol_create(user=creator, code=f"T-{code}", title="T", template=code)
    names = set(protocol.versions.get().parameters.values_list("name", flat=True))
    # The schedule the freeze generates needs a seed and a number of repetitions; a template
    # without them would leave its PI a gate problem no field on the page can fix.
    assert {"seed", "repetitions", "scores_per_response", "reservation_minutes"} <= names


@pytest.mark.django_db
def test_unknown_template_and_reserved_code_are_refused(creator):
    with pytest.raises(ValidationError) as error:
        protocol_create(user=creator, code="A-1", title="T", template="nope")
    assert "template" in error.value.message_dict
    with pytest.raises(ValidationError) as error:
        protocol_create(user=creator, code="new", title="T")
    assert "code" in error.value.message_dict
