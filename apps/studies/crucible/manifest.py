"""The CRUCIBLE battery manifest (seed 001 §3–§5, §8): structured data frozen with a version.

For a version whose plan runs the ``crucible`` pipeline, the manifest gathers in CRUCIBLE's own
words what the generic design and the plan hold: the scenario families with their seed variants,
the ordered autonomy rungs with their definitions and action-class mappings (the levels' text),
the graded axes and hard-fail channels (the rubric), the family → axis allocation and the
coverage states, the axes whose absence the evaluand can cause, the acceptance policies and the
schedule's randomisation seed, and the per-episode budgets and safety-stop conditions (§8)
when the plan freezes them. Its canonical JSON is stored as a blob at the freeze
(``manifest_on_freeze``) and served at ``/api/v1/blob/<sha256>`` to whoever may read the version;
the manifest page shows it with its SHA-256.

Everything in it is frozen with the version, so it is recomputed from the version on demand and
always gives the same bytes. It is not part of the version's own document (which would change
every other study's hash); it is a second document derived from the same frozen data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from apps.analysis import inputs as data
from apps.analysis.pipelines.base import PlanInputError, json_parameter
from apps.core.canonical import canonical_json, sha256_hex
from apps.protocols.models import ProtocolVersion, VersionState
from apps.protocols.plans import version_pipeline

if TYPE_CHECKING:
    from apps.accounts.models import User

MANIFEST_DOCUMENT_TYPE = "preregistry/crucible-manifest/1"
KIND = "crucible"
COVERAGE_STATES = ("authored", "ranked", "instrumented", "executed", "observed")


def _json(parameters: dict[str, str], name: str, default: Any) -> Any:
    # The manifest records what the plan says, even text that is not JSON (the gate refuses it).
    try:
        return json_parameter(parameters, name, default)
    except PlanInputError:
        return (parameters.get(name) or "").strip()


def is_crucible(version: ProtocolVersion) -> bool:
    return version_pipeline(version) == KIND


def crucible_manifest(version: ProtocolVersion) -> dict[str, Any]:
    """The manifest of ``version`` as a dict (see the module docstring)."""
    from apps.raters.models import RubricField

    design = data.design(version)
    parameters = data.plan_parameters(version)
    fields = list(
        RubricField.objects.filter(version=version)
        .order_by("position")
        .values("name", "kind", "scorer_role")
    )
    numbers = [f["name"] for f in fields if f["kind"] == "number"]
    binaries = [f["name"] for f in fields if f["kind"] == "binary"]
    axes = _json(parameters, "axes", None) or numbers
    channels = _json(parameters, "hard_fail_channels", None) or binaries
    seeds: dict[str, list[str]] = {}
    for item in design["items"]:
        seeds.setdefault(item["family"], []).append(item["code"])
    from apps.items.models import Level

    definitions = {
        lv.code: lv.form for lv in Level.objects.filter(version=version).order_by("ordinal")
    }
    allocation = _json(parameters, "family_axis_allocation", None)
    # §8's per-episode budgets and safety-stop conditions, only when the plan freezes them (so
    # manifests frozen before they were plan data keep their bytes and hash).
    stopping = {
        name: _json(parameters, name, None)
        for name in ("episode_budgets", "safety_stop_conditions")
        if (parameters.get(name) or "").strip()
    }
    return {
        "document": MANIFEST_DOCUMENT_TYPE,
        "protocol": version.protocol.code,
        "version": version.label,
        "scenario_families": [
            {
                "code": f["code"],
                "name": f["name"],
                "seed_variants": sorted(seeds.get(f["code"], [])),
            }
            for f in design["families"]
        ],
        "autonomy_rungs": [
            {
                "order": position,
                "code": lv["code"],
                "name": lv["name"],
                "definition_and_action_classes": definitions.get(lv["code"], ""),
            }
            for position, lv in enumerate(design["levels"])
        ],
        "graded_axes": axes,
        "hard_fail_channels": channels,
        "family_axis_allocation": allocation
        if allocation is not None
        else {f["code"]: axes for f in design["families"]},
        "coverage_states": list(COVERAGE_STATES),
        "evaluand_caused_absence": _json(parameters, "evaluand_caused_absence", []),
        "acceptance_policies": _json(parameters, "acceptance_policies", []),
        "ordering": {"randomisation_seed": parameters.get("seed", "")},
        **stopping,
    }


def crucible_manifest_bytes(version: ProtocolVersion) -> tuple[bytes, str]:
    """The manifest's canonical JSON bytes and their SHA-256."""
    content = canonical_json(crucible_manifest(version))
    return content, sha256_hex(content)


def manifest_on_freeze(version: ProtocolVersion) -> None:
    """At the freeze of a CRUCIBLE version: store its manifest as a blob (no-op otherwise)."""
    if not is_crucible(version):
        return
    from apps.protocols.services import blob_store

    content, _ = crucible_manifest_bytes(version)
    blob_store(content=content)


def manifest_blob_readable(user: User, sha256: str) -> bool:
    """Blob rule: a manifest is read by whoever may read its frozen version's document."""
    from apps.accounts.models import Membership
    from apps.accounts.selectors import SIGHTED_ROLES

    protocol_ids = Membership.objects.filter(user=user, role__in=SIGHTED_ROLES).values(
        "protocol_id"
    )
    for version in ProtocolVersion.objects.filter(
        protocol_id__in=protocol_ids, state=VersionState.FROZEN
    ).select_related("protocol"):
        if is_crucible(version) and crucible_manifest_bytes(version)[1] == sha256:
            return True
    return False
