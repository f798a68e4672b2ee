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
