"""The outcome seal, readable from any app: have a version's (or a protocol's) outcomes been
unsealed?

The seal itself (``OutcomeUnsealing``) belongs to the deviation log, which comes after the apps
that must respect it (responses records whether outcomes were visible at an exclusion; raters
and analysis hide results while sealed). So they import this module, and ``apps.deviations``
registers the reads from ``DeviationsConfig.ready()`` — the same inversion as the freeze gate's
``VersionComponent``s. Until it has, a read raises ``RuntimeError`` rather than guess.
"""

from collections.abc import Callable

from apps.protocols.models import ProtocolVersion

VersionSealRead = Callable[[ProtocolVersion | int], bool]
ProtocolSealRead = Callable[[int], bool]

_reads: dict[str, Callable[..., bool]] = {}


def register_seal_reads(*, version: VersionSealRead, protocol: ProtocolSealRead) -> None:
    """Install the reads behind ``outcomes_visible`` and ``protocol_outcomes_visible``."""
    _reads["version"] = version
    _reads["protocol"] = protocol


def _read(name: str) -> Callable[..., bool]:
    try:
        return _reads[name]
    except KeyError:
        raise RuntimeError(
            "no outcome-seal reader registered (is apps.deviations installed?)"
        ) from None


def outcomes_visible(version: ProtocolVersion | int) -> bool:
    """Whether the outcomes of ``version`` (a ProtocolVersion or its id) have been unsealed."""
    return _read("version")(version)


def protocol_outcomes_visible(*, protocol_id: int) -> bool:
    """Whether any version of the protocol has had its outcomes unsealed."""
    return _read("protocol")(protocol_id)
