"""Drafts the computability gate's tests and benchmark share (issue #32)."""

from tests.factories import UserFactory


def xstest_shaped_draft(prompts: int, *, code: str = "XS-BENCH", evaluands: int = 2):
    """An XSTest-shaped refusal-study draft (the ``xstest`` preset): ``prompts`` single-level
    items alternating between the safe (S) and unsafe (U) families, ``evaluands`` models, the
    xstest rubric; items, cells and keys bulk-inserted (12,500 prompts in seconds)."""
    from apps.demo.xstest import _SECTIONS, XSTEST_KEY, XSTEST_PARAMETERS
    from apps.items.models import Cell, Family, Item, KeyUnit, Level
    from apps.protocols.services import protocol_create, version_update
    from apps.raters.services import rubric_apply_template
    from apps.responses.services import evaluand_register, roster_enroll

    pi = UserFactory()
    protocol = protocol_create(user=pi, code=code, title="XSTest-shaped", template="xstest")
    version = version_update(
        version=protocol.versions.get(label="1.0"),
        user=pi,
        sections=_SECTIONS,
        parameters=XSTEST_PARAMETERS,
    )
    level = Level.objects.create(version=version, ordinal=0, code="L0", name="prompt")
    families = [
        Family.objects.create(version=version, code="S", name="Safe", role="harm_constant"),
        Family.objects.create(
            version=version, code="U", name="Unsafe", role="discrimination_control"
        ),
    ]
    items = Item.objects.bulk_create(
        [
            Item(version=version, family=families[n % 2], code=f"xs-{n:05d}", domain="t")
            for n in range(1, prompts + 1)
        ],
        batch_size=5000,
    )
    cells = Cell.objects.bulk_create(
        [Cell(version=version, item=i, level=level, prompt=f"Prompt {i.code}") for i in items],
        batch_size=5000,
    )
    KeyUnit.objects.bulk_create(
        [KeyUnit(version=version, cell=c, position=1, text=XSTEST_KEY) for c in cells],
        batch_size=5000,
    )
    for n in range(evaluands):
        evaluand, _ = evaluand_register(user=pi, label=f"{code} {n}", model=f"{code}-model-{n}")
        roster_enroll(version=version, evaluand=evaluand, code=f"m{n}", user=pi)
    rubric_apply_template(version=version, template="xstest")
    return version


_OPB_DEMO: dict[str, tuple] = {}


def opb_shaped_draft(
    monkeypatch,
    *,
    code: str,
    harm_constant: int,
    controls: int,
    pairs: int,
    force: int,
    evaluands: int,
    parameters: dict[str, str],
    decision_table: list | None = None,
):
    """An OPB-01-shaped draft ready for the gate: the demo's design (``apps.demo.design``) cut
    to ``harm_constant`` Family A items (at least 1), ``controls`` Family B items (stopping at
    L3), ``pairs`` C_SPXI/C₀ disclosure pairs on the first Family A items and ``force`` force-
    control items (with their absent cells), its harm-constancy review completed, ``evaluands``
    of the demo's surfaces, the OPB rubric and v1.1's §7 values over ``parameters``. The
    template's §8 decision table unless ``decision_table`` is given."""
    from apps.accounts.models import Role
    from apps.accounts.services import membership_grant
    from apps.demo import design, responses
    from apps.demo.opb01 import V1_1_PARAMETERS, V1_1_SECTIONS, opb01_v1_0_draft
    from apps.protocols.services import version_update
    from apps.raters.services import rubric_apply_template

    # From the demo's own lists, never from what an earlier example of the test left patched.
    whole = _OPB_DEMO.setdefault(
        "lists",
        (
            design.FAMILY_A,
            design.FAMILY_B,
            design.INSCRIPTIONS,
            design.FAMILY_F,
            responses.DEMO_EVALUANDS,
        ),
    )
    family_a, family_b, inscriptions, family_f, surfaces = whole
    kept = family_a[:harm_constant]
    bases = [c for c, _, _ in kept][:pairs]
    monkeypatch.setattr(design, "FAMILY_A", kept)
    monkeypatch.setattr(design, "FAMILY_B", family_b[:controls])
    monkeypatch.setattr(
        design, "INSCRIPTIONS", {c: t for c, t in inscriptions.items() if c in bases}
    )
    monkeypatch.setattr(design, "FAMILY_F", family_f[:force])
    monkeypatch.setattr(design, "_DISPUTED", kept[-1][0])
    monkeypatch.setattr(responses, "DEMO_EVALUANDS", dict(list(surfaces.items())[:evaluands]))
    pi = UserFactory()
    draft = opb01_v1_0_draft(pi=pi, code=code)
    for _ in range(3):
        membership_grant(user=UserFactory(), protocol_id=draft.protocol_id, role=Role.REVIEWER)
    design.demo_design_build(draft)
    design.demo_harm_review_complete(draft)
    responses.demo_roster_enroll(version=draft, user=pi)
    rubric_apply_template(version=draft, template="opb")
    held = {p.name for p in draft.parameters.all()}
    values = {**V1_1_PARAMETERS, **parameters}
    return version_update(
        version=draft,
        user=pi,
        sections=V1_1_SECTIONS,
        parameters={k: v for k, v in values.items() if k in held},
        new_parameters=[{"name": k, "value": v} for k, v in values.items() if k not in held],
        decision_table=decision_table,
    )


def fidelity_shaped_draft(
    *, code: str, cards: list[str], evaluands: int, parameters: dict[str, str], broken: str = ""
):
    """A seed 003 draft ready for the gate, as the fidelity demo builds it before its freeze:
    one level, one family of PolicyCards (the demo's ``cards``, each a cell carrying its card),
    ``evaluands`` of its user-simulators, the fidelity rubric and its LLM judge; the demo's
    parameters over ``parameters``. ``broken`` names a card whose PolicyCard loses its
    ``axis_levels`` (a card no judge could be judged against)."""
    from apps.demo import fidelity as demo
    from apps.items.models import FamilyRole
    from apps.items.services import KeyUnitSpec, cell_save, family_create, item_create, level_create
    from apps.protocols.services import protocol_create, version_update
    from apps.raters.rubric_templates import fidelity_fields
    from apps.raters.services import rubric_create
    from apps.raters.services.rubric_text import rubric_text_set
    from apps.raters.services.scorers import scorer_register, scorer_roster_enroll
    from apps.responses.services import evaluand_register, roster_enroll

    pi = UserFactory()
    protocol = protocol_create(user=pi, code=code, title="Fidelity-shaped", template="fidelity")
    version = version_update(
        version=protocol.versions.get(label="1.0"),
        user=pi,
        sections=demo._SECTIONS,
        parameters={**demo._PARAMETERS, **parameters},
    )
    level = level_create(version=version, ordinal=0, code="L0", name="dialogue")
    family = family_create(version=version, code="C", name="PolicyCards", role=FamilyRole.OTHER)
    for card in cards:
        item = item_create(version=version, family=family, code=card, domain=demo.TOPICS[card])
        expected = demo.card_of(card)
        if card == broken:
            del expected["axis_levels"]
        cell_save(
            item=item,
            level=level,
            prompt=f"A dialogue about {demo.TOPICS[card]}.",
            key=[KeyUnitSpec("Judge the user turns of the pressure window, one by one.")],
            expected_kind="json",
            expected_output=expected,
        )
    for evaluand_code, (label, identity) in list(demo.EVALUANDS.items())[:evaluands]:
        evaluand, _ = evaluand_register(
            user=pi, label=f"{code} {label}", harness_version="demo", **identity
        )
        roster_enroll(version=version, evaluand=evaluand, code=evaluand_code, user=pi)
    rubric_create(
        version=version,
        name="Injection fidelity (loss-1)",
        template="fidelity",
        instructions="Judge the user-simulator's turns in the pressure window.",
        fields=fidelity_fields("judge"),
    )
    text = rubric_text_set(version=version, text=demo.RUBRIC_TEXT)
    scorer, _ = scorer_register(
        user=pi, label=f"{code} judge", prompt_sha256=text.sha256, **demo.JUDGE_IDENTITY
    )
    scorer_roster_enroll(version=version, scorer=scorer, code="judge", role="judge", user=pi)
    return version
