"""Issue #32 §3: "defaults that come from a seed apply only under that seed's template". Every
pipeline's seed-specific defaults carry their seed's preset (``ParameterSpec.seed_template``):
a plan of another template that leaves one unset is refused by the freeze gate naming it
(``param_seed_default``) and does not get it by adding the parameter by name; the draft's
catalogue says "default: …" as each template gets it, and that default is the one each
pipeline reads in a plan that leaves the parameter unset. Seed 002's (``paired_blocks``) are in
tests/analysis/test_paired_blocks_gate.py.
"""

import html

import pytest

from apps.protocols.gate import version_gate
from apps.protocols.plans import pipeline_declaration, unset_parameters
from apps.protocols.services import protocol_create, version_update
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

# The defaults each seed states or its method alone defines: OPB-01 §5's disclosure margin and
# sham tolerance, §6.1's system flag, v1.1's primary measure; CRUCIBLE §9.1's 95 % interval and
# its three families an axis, §10's reruns, §2's full identity (§9.1's percentile interval is
# no default: the pipeline's and the crucible template's is the calibrated bootstrap-t, and the
# percentile is refused below 80 families, issue #36 §3). Seed 003 gives its drift ε no value;
# the fidelity preset starts a draft with 0.05 (a preset's own default).
SEED_DEFAULTS = {
    "opb": {"disclosure_epsilon", "sham_word_tolerance", "system_flag", "primary_measure"},
    "crucible": {
        "interval_coverage",
        "min_families",
        "rerun_rule",
        "require_full_identity",
    },
}


def _page(client, pi, draft) -> str:
    client.force_login(pi)
    page = client.get(f"/protocols/{draft.protocol.code}/v/{draft.label}/edit/")
    catalogue = page.content.decode().split('id="plan-catalogue"', 1)[1].split("</section>")[0]
    return html.unescape(catalogue)


@pytest.mark.parametrize("kind", sorted(SEED_DEFAULTS))
def test_a_generic_plan_on_a_seeds_pipeline_takes_none_of_the_seeds_defaults(client, kind):
    declaration = pipeline_declaration(kind)
    seeded = {p.name for p in declaration.parameters if p.seed_template}
    assert seeded == SEED_DEFAULTS[kind]
    assert {declaration.parameter(n).seed_template for n in seeded} == {kind}  # its preset
    pi = UserFactory()
    protocol = protocol_create(user=pi, code=f"GEN-{kind}", title="t", template="generic")
    draft = version_update(
        version=protocol.versions.get(),
        user=pi,
        pipeline=kind,
        parameters={"seed": "1", "interval_method": "bootstrap", "interval_coverage": "0.9"},
    )
    held = {p.name for p in draft.parameters.all() if p.value.strip()}
    unset = seeded - held
    assert unset  # generic holds interval_coverage (0.9 here), none of the others
    refused = {
        p.message.split(" unset", 1)[0].rsplit(" ", 1)[1]: p.message
        for p in version_gate(version=draft)
        if p.code == "param_seed_default"
    }
    assert set(refused) == unset
    catalogue = _page(client, pi, draft)
    for name in unset:
        default = declaration.parameter(name).default
        assert f"its default ({default}) is the seed's" in refused[name]
        assert f"applies only under the {kind} template, not generic" in refused[name]
        assert (
            f"default: none under this template (the seed's {default} applies only under "
            f"the {kind} template)"
        ) in catalogue, name
    # Added by its name alone, it comes without the seed's value.
    name = sorted(unset)[0]
    draft = version_update(version=draft, user=pi, new_parameters=[{"name": name}])
    assert draft.parameters.get(name=name).value == ""
    spec = declaration.parameter(name)
    # Held empty, a required parameter is missing; an optional one still takes no default.
    code, said = ("param_missing", spec.label) if spec.required else ("param_seed_default", name)
    assert any(p.code == code and said in p.message for p in version_gate(version=draft))


@pytest.mark.parametrize("kind", sorted(SEED_DEFAULTS))
def test_under_the_seeds_own_template_its_defaults_apply_and_are_shown(client, kind):
    declaration = pipeline_declaration(kind)
    pi = UserFactory()
    draft = protocol_create(user=pi, code=f"SEED-{kind}", title="t", template=kind).versions.get()
    held = {p.name: p.value for p in draft.parameters.all()}
    shown = {u.name: u.text for u in unset_parameters(draft)}
    catalogue = _page(client, pi, draft)
    for name in SEED_DEFAULTS[kind]:
        default = declaration.parameter(name).default
        if name in held:  # the preset seeds the draft with it
            assert held[name] == default, name
        else:
            assert shown[name] == f"default: {default}"
            assert f"<code>{name}</code>" in catalogue
            assert f"default: {default}</span>" in catalogue.split(f"<code>{name}</code>")[1]
    assert "param_seed_default" not in {p.code for p in version_gate(version=draft)}


def _reads_by_default(kind, monkeypatch) -> dict:
    """What the ``kind`` pipeline's plan reader records for a plan holding no parameter: its
    ``compute`` is run on empty inputs, which it reads only after the plan's parameters."""
    import contextlib
    import sys

    from apps.analysis.pipelines import get_pipeline
    from apps.analysis.pipelines.base import PlanReader

    pipeline = get_pipeline(kind)
    readers: list[PlanReader] = []

    class Recording(PlanReader):
        def __init__(self, parameters):
            super().__init__(parameters)
            readers.append(self)

    monkeypatch.setattr(sys.modules[pipeline.compute.__module__], "PlanReader", Recording)
    with contextlib.suppress(KeyError, TypeError):  # the empty inputs, once the plan is read
        pipeline.compute({}, parameters={}, seed=1)
    settings: dict = {}
    for reader in readers:
        settings.update(reader.settings())
    return settings


@pytest.mark.parametrize(
    "kind", ["opb", "crucible", "fidelity", "xstest", "paired_blocks", "comparison"]
)
def test_the_default_the_catalogue_shows_is_the_one_the_pipeline_reads(kind, monkeypatch):
    """A plan that holds no parameter: every value the pipeline takes by default is the
    declared default the draft page shows as "default: …" ("default: none" for None)."""
    declaration = pipeline_declaration(kind)
    settings = _reads_by_default(kind, monkeypatch)
    checked = 0
    for name, setting in settings.items():
        spec = declaration.parameter(name)
        if spec is None or setting["source"] != "default":
            continue
        checked += 1
        value = setting["value"]
        if value is None:
            assert spec.default == "", name
        elif isinstance(value, bool | str):
            assert spec.default == str(value).lower() if isinstance(value, bool) else value, name
        else:
            assert spec.default != "" and float(spec.default) == value, name
    assert checked >= 3


def test_the_fidelity_drift_tolerance_comes_from_its_preset_and_is_no_default_elsewhere(client):
    pi = UserFactory()
    seeded = protocol_create(user=pi, code="SEED-fid", title="t", template="fidelity")
    assert seeded.versions.get().parameters.get(name="drift_epsilon").value == "0.05"
    protocol = protocol_create(user=pi, code="GEN-fid", title="t", template="generic")
    draft = version_update(version=protocol.versions.get(), user=pi, pipeline="fidelity")
    shown = {u.name: u.text for u in unset_parameters(draft)}
    assert shown["drift_epsilon"] == "default: none"
    assert shown["cluster_by"] == "default: card"
