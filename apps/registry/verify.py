#!/usr/bin/env python3
"""Check a published preregistration offline, from the files its public pages serve.

Standard library only, plus the `cryptography` package for the checkpoints' Ed25519 signatures
(required here: an unsigned claim proves nothing about when). It imports nothing from Django or
from Preregistry except the log's own verifier, ``apps/deviations/chain.py``, which the registry
serves next to this file as ``verify_log.py``; put both in one folder. Offline::

    python3 verify_registration.py --document OPB-01-v1.1.json --address <sha256> \\
        --log OPB-01-log.jsonl --checkpoints OPB-01-checkpoints.json \\
        --public-key signing-key.json

proves three things and prints one line for each, exiting 0 only when all hold:

1. the document hashes to its address (its SHA-256 is the one the page gives, which is the
   blob's address ``/api/v1/blob/<sha256>``);
2. the log is an intact hash chain that extends every signed checkpoint, each checkpoint is
   signed by a trusted key, and the entry that froze this document (a ``freeze`` or
   ``amendment`` entry naming its SHA-256) lies at or before a signed checkpoint;
3. that freeze came before the protocol's first outcome unsealing (an ``outcome_unsealed``
   entry later in the chain), or no outcome was unsealed by the end of the log; and the freeze
   entry itself says outcomes had not been seen.

Exit 1 when a proof fails, 2 when a file cannot be read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # inside the project
    from apps.deviations import chain
except ImportError:  # offline: the registry serves chain.py as verify_log.py, next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import verify_log as chain  # type: ignore[import-not-found, no-redef]

FREEZE_KINDS = ("freeze", "amendment")
UNSEAL_KIND = "outcome_unsealed"


@dataclass
class Proof:
    """The outcome of ``verify_registration``: each step's line, and whether all hold."""

    lines: list[str] = field(default_factory=list)
    ok: bool = True
    freeze_seq: int | None = None
    unseal_seq: int | None = None

    def holds(self, line: str) -> None:
        self.lines.append(f"ok: {line}")

    def fails(self, line: str) -> None:
        self.ok = False
        self.lines.append(f"FAILED: {line}")


def _names_document(entry: Mapping[str, Any], sha256: str) -> bool:
    return any(
        isinstance(ref, Mapping) and ref.get("type") == "version" and ref.get("sha256") == sha256
        for ref in entry.get("refs") or []
    )


def _prove_log(
    proof: Proof,
    entries: Iterable[Any],
    checkpoints: list[Mapping[str, Any]],
    public_keys: list[str],
) -> tuple[chain.ChainReport, int, list[Mapping[str, Any]]]:
    """Proof 2's first half: the chain and its checkpoints. Returns the chain's report, the
    number of entries a valid signed checkpoint covers, and the entries' fields proof 3 reads."""
    kept: list[Mapping[str, Any]] = []

    def remember(items: Iterable[Any]) -> Iterable[Any]:
        for item in items:
            if (
                isinstance(item, Mapping)
                and item.get("type") not in (chain.CHECKPOINT_TYPE, chain.NOTE_CHECKPOINT_TYPE)
                and not item.get("withheld")
            ):
                kept.append(
                    {
                        k: item.get(k)
                        for k in ("seq", "kind", "refs", "outcome_visible", "recorded_at")
                    }
                )
            yield item

    # The pinned keys: a C2SP checkpoint (a signed note on the Merkle tree's root) not signed by
    # one of them breaks the chain as it is read; an older JSON checkpoint is checked below.
    log_keys = []
    for key in public_keys:
        try:
            log_keys.append(chain.parse_verifier_key(key))
        except ValueError:
            proof.fails(f"the public key {key[:60]!r} is not an Ed25519 key")
    report = chain.verify_chain(
        remember(entries), checkpoints=checkpoints, log_keys=log_keys, allow_withheld=True
    )
    signed_through = 0
    all_checkpoints = report.checkpoints
    if not report.ok:
        proof.fails(f"the log is broken at entry {report.broken_at}: {report.reason}")
    elif not all_checkpoints:
        proof.fails("no signed checkpoint of the log was given")
    else:
        proof.holds(
            f"the log is an intact chain: {report.summary()}"
            + (
                f"; {report.withheld} entries withheld (linked and in the signed tree, their "
                "content not public)"
                if report.withheld
                else ""
            )
        )
        seen: set[str] = set()
        for checkpoint in all_checkpoints:
            # The same checkpoint given twice (the log export's first line and the checkpoints
            # file) is one proof, said once.
            if (text := json.dumps(checkpoint, sort_keys=True)) in seen:
                continue
            seen.add(text)
            if checkpoint.get("type") == chain.NOTE_CHECKPOINT_TYPE:
                # Its signature was checked against the pinned keys as the chain was read, and
                # the first ``size`` entries give the tree root it signs.
                size = int(checkpoint["size"])
                signed_through = max(signed_through, size)
                proof.holds(
                    f"checkpoint of the first {size} entries ({checkpoint['origin']}): signed "
                    "by a pinned key, and the log's Merkle root at that size is the one signed"
                )
                continue
            valid, why = chain.checkpoint_signature(checkpoint, public_keys)
            if valid:
                signed_through = max(signed_through, int(checkpoint["seq"]))
                proof.holds(f"checkpoint at entry {checkpoint['seq']}: {why}")
            else:
                proof.fails(f"checkpoint at entry {checkpoint['seq']}: {why}")

    return report, signed_through, kept


def verify_registration(
    *,
    document: bytes,
    address: str,
    entries: Iterable[Any],
    checkpoints: list[Mapping[str, Any]],
    public_keys: list[str],
) -> Proof:
    """The three proofs of the module docstring over what the public pages serve.

    ``document``: the frozen document's bytes; ``address``: its SHA-256 (64 lowercase hex) as
    published; ``entries``: the log's JSONL lines decoded (a leading checkpoint line allowed);
    ``checkpoints``: signed checkpoints; ``public_keys``: the base64 Ed25519 keys trusted.
    """
    proof = Proof()
    address = address.strip().lower()
    digest = hashlib.sha256(document).hexdigest()
    if digest == address:
        proof.holds(f"the document hashes to its address {address}")
    else:
        proof.fails(f"the document hashes to {digest}, not to its address {address}")

    report, signed_through, kept = _prove_log(proof, entries, checkpoints, public_keys)

    freeze = next(
        (e for e in kept if e["kind"] in FREEZE_KINDS and _names_document(e, address)), None
    )
    if freeze is None:
        proof.fails("no freeze entry in the log names this document's SHA-256")
        return proof
    proof.freeze_seq = freeze["seq"]
    if report.ok and signed_through >= freeze["seq"]:
        proof.holds(
            f"the freeze is entry {freeze['seq']} ({freeze['recorded_at']}), covered by a "
            f"checkpoint signed at entry {signed_through}"
        )
    else:
        proof.fails(
            f"the freeze (entry {freeze['seq']}) is not covered by a valid signed checkpoint"
        )

    unsealing = next((e for e in kept if e["kind"] == UNSEAL_KIND), None)
    if freeze["outcome_visible"]:
        proof.fails("the freeze entry says outcome data had already been seen")
    elif unsealing is None:
        last = kept[-1]["seq"] if kept else 0
        proof.holds(f"no outcome was unsealed through entry {last}: outcomes not yet seen")
    elif unsealing["seq"] > freeze["seq"]:
        proof.unseal_seq = unsealing["seq"]
        proof.holds(
            f"the freeze (entry {freeze['seq']}, {freeze['recorded_at']}) came before the first "
            f"unsealing (entry {unsealing['seq']}, {unsealing['recorded_at']})"
        )
    else:
        proof.unseal_seq = unsealing["seq"]
        proof.fails(
            f"outcomes were first unsealed at entry {unsealing['seq']}, before the freeze "
            f"(entry {freeze['seq']})"
        )
    return proof


def _read_checkpoints(path: str) -> list[Mapping[str, Any]]:
    value = json.loads(Path(path).read_text(encoding="utf-8"))
    return list(value) if isinstance(value, list) else [value]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--document", required=True, help="the frozen document (JSON) as served")
    parser.add_argument("--address", required=True, help="its SHA-256 as the page gives it")
    parser.add_argument("--log", required=True, help="the public log (JSONL)")
    parser.add_argument("--checkpoints", required=True, help="the signed checkpoints (JSON)")
    parser.add_argument(
        "--public-key", required=True, help="the signing key (JSON of signing-key, or base64)"
    )
    args = parser.parse_args(argv)
    try:
        document = Path(args.document).read_bytes()
        checkpoints = _read_checkpoints(args.checkpoints)
        keys = chain.read_public_keys([args.public_key])
        entries = list(chain.read_jsonl(args.log))
    except (OSError, ValueError) as error:
        print(f"cannot be read: {error}", file=sys.stderr)
        return 2
    proof = verify_registration(
        document=document,
        address=args.address,
        entries=entries,
        checkpoints=checkpoints,
        public_keys=keys,
    )
    print("\n".join(proof.lines))
    print("VERIFIED" if proof.ok else "NOT VERIFIED")
    return 0 if proof.ok else 1


if __name__ == "__main__":
    sys.exit(main())
