"""The log's Merkle tree (RFC 6962 / RFC 9162 section 2.1) in ``chain.py``, checked against the
published RFC 6962 reference vectors of the Certificate Transparency project and against an
independent implementation, the pymerkle package, never against its own output alone."""

import hashlib
import random

import pytest
from pymerkle import InmemoryTree

from apps.deviations import chain

# The Certificate Transparency project's RFC 6962 test data (certificate-transparency-go,
# merkle/testonly): eight leaf inputs, the root for every size 0..8, and audit paths.
LEAF_INPUTS = [
    bytes.fromhex(h)
    for h in ("", "00", "10", "2021", "3031", "40414243", "5051525354555657",
              "606162636465666768696a6b6c6d6e6f")
]  # fmt: skip
LEAVES = [hashlib.sha256(b"\x00" + data).digest() for data in LEAF_INPUTS]
ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
# (leaf index from 0, tree size, audit path)
INCLUSION = [
    (0, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (5, 8, ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (1, 5, ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
]  # fmt: skip
CONSISTENCY = [
    (1, 1, []),
    (1, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (6, 8, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 5, ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
]  # fmt: skip


def mth(start: int, end: int, leaves: list[bytes]) -> bytes:
    """MTH(D[start:end]) through the module's subtree decomposition."""
    nodes = [
        chain.merkle_root(leaves[i << level : (i + 1) << level])
        for level, i in chain.subtree_ranges(start, end)
    ]
    return chain.fold_subtrees(nodes)


def proof_of(ranges, leaves):
    return [mth(start, end, leaves) for start, end in ranges]


@pytest.mark.parametrize("size", range(9))
def test_roots_match_the_rfc_6962_reference_vectors(size):
    assert chain.merkle_root(LEAVES[:size]).hex() == ROOTS[size]


@pytest.mark.parametrize(("index", "size", "path"), INCLUSION)
def test_inclusion_proofs_match_the_reference_and_verify(index, size, path):
    proof = proof_of(chain.inclusion_ranges(index, size), LEAVES)
    assert [p.hex() for p in proof] == path
    root = bytes.fromhex(ROOTS[size])
    assert chain.verify_inclusion(LEAVES[index], index, size, proof, root)
    assert not chain.verify_inclusion(LEAVES[index], index, size, proof, bytes.fromhex(ROOTS[0]))
    other = (index + 1) % size
    assert not chain.verify_inclusion(LEAVES[other], index, size, proof, root) or other == index


@pytest.mark.parametrize(("first", "second", "path"), CONSISTENCY)
def test_consistency_proofs_match_the_reference_and_verify(first, second, path):
    proof = proof_of(chain.consistency_ranges(first, second), LEAVES)
    assert [p.hex() for p in proof] == path
    first_root, second_root = bytes.fromhex(ROOTS[first]), bytes.fromhex(ROOTS[second])
    assert chain.verify_consistency(first, second, proof, first_root, second_root)
    if first != second:
        assert not chain.verify_consistency(first, second, proof, second_root, second_root)


def test_roots_agree_with_pymerkle_for_every_size_up_to_300():
    rng = random.Random(6962)
    data = [rng.randbytes(32) for _ in range(300)]
    reference = InmemoryTree(algorithm="sha256")
    tree = chain.CompactRange()
    for n, item in enumerate(data, start=1):
        reference.append_entry(item)
        tree.append(hashlib.sha256(b"\x00" + item).digest())
        assert tree.root() == reference.get_root(n), n
        leaves = [reference.get_leaf(i) for i in range(1, n + 1)]
        assert chain.merkle_root(leaves) == reference.get_root(n)


def test_every_proof_verifies_and_a_changed_leaf_or_root_never_does():
    rng = random.Random(9162)
    leaves = [rng.randbytes(32) for _ in range(70)]
    roots = [chain.merkle_root(leaves[:n]) for n in range(71)]
    for size in range(1, 71):
        for index in range(size):
            proof = proof_of(chain.inclusion_ranges(index, size), leaves)
            assert len(proof) <= size.bit_length()
            assert chain.verify_inclusion(leaves[index], index, size, proof, roots[size])
            assert not chain.verify_inclusion(b"\x00" * 32, index, size, proof, roots[size])
            if proof:
                assert not chain.verify_inclusion(
                    leaves[index], index, size, proof[:-1], roots[size]
                )
        for first in range(0, size + 1):
            proof = proof_of(chain.consistency_ranges(first, size), leaves)
            assert chain.verify_consistency(first, size, proof, roots[first], roots[size])
            if 0 < first < size:
                forged = chain.merkle_root([*leaves[: first - 1], b"\x01" * 32])
                assert not chain.verify_consistency(first, size, proof, forged, roots[size])


def test_a_rewritten_prefix_has_no_consistency_proof_to_the_old_root():
    leaves = [hashlib.sha256(bytes([n])).digest() for n in range(20)]
    old_root = chain.merkle_root(leaves[:13])
    rewritten = [*leaves[:5], b"\x07" * 32, *leaves[6:]]
    proof = proof_of(chain.consistency_ranges(13, 20), rewritten)
    assert not chain.verify_consistency(13, 20, proof, old_root, chain.merkle_root(rewritten))


def test_the_compact_range_reports_each_completed_subtree():
    leaves = [hashlib.sha256(bytes([n])).digest() for n in range(16)]
    tree = chain.CompactRange()
    completed = {}
    for leaf in leaves:
        for level, index, digest in tree.append(leaf):
            completed[(level, index)] = digest
    assert completed[(4, 0)] == chain.merkle_root(leaves)
    assert completed[(2, 3)] == chain.merkle_root(leaves[12:16])
    assert len(completed) == 8 + 4 + 2 + 1
