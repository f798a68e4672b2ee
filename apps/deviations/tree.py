"""The deviation log's Merkle tree on the server: stored subtree roots, proofs, and verification
from the last checkpoint (issue 33, "A transparency log with witnesses").

The tree is RFC 6962's over each protocol's entries in ``seq`` order; its hashing and the proof
algorithms are in ``chain.py`` (shared with the offline verifier), this module reads what they
need from the database. Subtrees of ``2**STORED_LEVEL`` entries and more have their roots stored
(``LogTreeNode``), so a proof for any entry of a log of n entries reads O(log n) stored roots and
at most two blocks of ``2**STORED_LEVEL`` entry hashes: one query, whatever n is.

Nothing here trusts the stored roots: a proof built from them is checked by whoever receives it
against a signed root, and ``verify_since`` checks the roots it uses against the signed root of
the checkpoint it starts from, falling back to the entries themselves when they disagree.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import connection

from apps.deviations import chain
from apps.deviations.models import LogEntry, LogTreeNode

# Subtrees of 16 entries and more are stored: ~2 rows per 16 entries (about 125,000 rows per
# million entries), and a proof reads at most 2 x 16 entry hashes besides ~log2(n) - 4 stored
# roots. (At 256, a proof hashed two blocks of 256 in Python: half its CPU; docs/performance.md.)
STORED_LEVEL = 4


class TreeReader:
    """MTH of any range of one protocol's tree, from stored roots and entry hashes.

    ``use_stored=False`` ignores the stored roots and computes everything from the entries'
    hashes (the fallback when a stored root turns out wrong).
    """

    def __init__(self, protocol_id: int, *, use_stored: bool = True) -> None:
        self.protocol_id = protocol_id
        self.use_stored = use_stored
        self.nodes: dict[tuple[int, int], bytes] = {}
        self.leaves: dict[int, bytes] = {}  # leaf index (seq - 1) -> leaf hash

    # -- reading in bulk ---------------------------------------------------------------

    def prefetch(self, ranges: Iterable[tuple[int, int]]) -> None:
        """Read, in one query, what the MTHs of ``ranges`` need: stored roots and the entry
        hashes of the blocks below ``STORED_LEVEL``."""
        wanted_nodes: set[tuple[int, int]] = set()
        spans: set[tuple[int, int]] = set()
        for start, end in ranges:
            for level, index in chain.subtree_ranges(start, end):
                if (level, index) in self.nodes:
                    continue
                if level >= STORED_LEVEL and self.use_stored:
                    wanted_nodes.add((level, index))
                else:
                    spans.add((index << level, (index + 1) << level))
        parts = [q for q in (self._nodes_query(wanted_nodes), self._leaves_query(spans)) if q]
        if parts:
            # A proof's stored roots and entry hashes in one round trip (UNION ALL): an entry's
            # row has level -1 and its seq as the index.
            sql = " UNION ALL ".join(q[0] for q in parts)
            self._read(sql, [param for q in parts for param in q[1]])

    def load_nodes(self, positions: Iterable[tuple[int, int]]) -> None:
        """The stored roots at these (level, index) positions, in one query."""
        query = self._nodes_query(positions)
        if query:
            self._read(*query)

    def load_leaves(self, spans: Iterable[tuple[int, int]]) -> None:
        """The leaf hashes of entries in the leaf ranges [start, end) (seq start+1 .. end), in
        one query."""
        query = self._leaves_query(spans)
        if query:
            self._read(*query)

    def _nodes_query(self, positions: Iterable[tuple[int, int]]) -> tuple[str, list[int]] | None:
        pairs = sorted(set(positions))
        if not pairs:
            return None
        # OR-ed equalities, which PostgreSQL answers with one index probe each on the unique
        # (protocol, level, index) index (a row-value IN list may scan the protocol's rows).
        return self._or_query(
            'SELECT level, "index", hash FROM deviations_logtreenode',
            '(level = %s AND "index" = %s)',
            pairs,
        )

    def _leaves_query(self, spans: Iterable[tuple[int, int]]) -> tuple[str, list[int]] | None:
        # Touching ranges merged: a proof's fall in at most two 16-entry blocks.
        merged: list[list[int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        if not merged:
            return None
        return self._or_query(
            "SELECT -1 AS level, seq, hash FROM deviations_logentry",
            "(seq > %s AND seq <= %s)",
            merged,
        )

    def _or_query(
        self, select: str, match: str, pairs: Sequence[Sequence[int]]
    ) -> tuple[str, list[int]]:
        """``select`` over this protocol's rows matching any of ``pairs``: ``match`` (a condition
        with two placeholders) OR-ed once a pair, and its parameters."""
        where = " OR ".join([match] * len(pairs))
        sql = f"{select} WHERE protocol_id = %s AND ({where})"
        return sql, [self.protocol_id, *(n for pair in pairs for n in pair)]

    def _read(self, sql: str, params: list[int]) -> None:
        leaf, fromhex = chain.leaf_hash, bytes.fromhex
        nodes, leaves = self.nodes, self.leaves
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            while rows := cursor.fetchmany(10_000):
                for level, index, digest in rows:
                    if level < 0:  # an entry (index: its seq)
                        leaves[index - 1] = leaf(digest)
                    else:
                        nodes[(level, index)] = fromhex(digest)

    # -- computing ---------------------------------------------------------------------

    def subtree(self, level: int, index: int) -> bytes:
        """The root of the perfect subtree ``index`` at ``level``. KeyError when the log does
        not hold all its entries."""
        known = self.nodes.get((level, index))
        if known is not None:
            return known
        if level == 0:
            return self.leaves[index]
        start, end = index << level, (index + 1) << level
        if level > STORED_LEVEL and self.use_stored:
            # Not stored (not yet, or removed): from the stored roots of its 16-entry blocks
            # when they are all there, in one query, else from its entries.
            shift = level - STORED_LEVEL
            blocks = LogTreeNode.objects.filter(
                protocol_id=self.protocol_id,
                level=STORED_LEVEL,
                index__gte=index << shift,
                index__lt=(index + 1) << shift,
            ).order_by("index")
            found = list(blocks.values_list("hash", flat=True))
            if len(found) == 1 << shift:
                digest = chain.merkle_root(bytes.fromhex(h) for h in found)
                self.nodes[(level, index)] = digest
                return digest
        if not all(i in self.leaves for i in (start, end - 1)):
            self.load_leaves([(start, end)])
        digest = chain.merkle_root(self.leaves[i] for i in range(start, end))
        self.nodes[(level, index)] = digest
        return digest

    def mth(self, start: int, end: int) -> bytes:
        """MTH(D[start:end]) for a range of RFC 6962's recursion."""
        if start == end:
            return chain.EMPTY_ROOT
        return chain.fold_subtrees(
            [self.subtree(level, index) for level, index in chain.subtree_ranges(start, end)]
        )

    def hashes(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        self.prefetch(ranges)
        return [self.mth(start, end) for start, end in ranges]


def log_size(*, protocol_id: int) -> int:
    """The number of entries (leaves) in the protocol's log."""
    last = (
        LogEntry.objects.filter(protocol_id=protocol_id)
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
    )
    return last or 0


def tree_root(*, protocol_id: int, size: int) -> bytes:
    """The Merkle root of the protocol's first ``size`` entries."""
    return TreeReader(protocol_id).hashes([(0, size)])[0]


def inclusion_proof(*, protocol_id: int, seq: int, tree_size: int) -> list[bytes]:
    """The RFC 9162 inclusion proof of entry ``seq`` in the tree of ``tree_size`` entries.
    ValueError when the entry is not in that tree."""
    return TreeReader(protocol_id).hashes(chain.inclusion_ranges(seq - 1, tree_size))


def consistency_proof(*, protocol_id: int, first: int, second: int) -> list[bytes]:
    """The RFC 9162 consistency proof from the tree of ``first`` entries to ``second``'s.
    ValueError unless 0 <= first <= second."""
    return TreeReader(protocol_id).hashes(chain.consistency_ranges(first, second))


def consistency_proof_to(
    *, protocol_id: int, first: int, second: int, second_root: bytes
) -> list[bytes]:
    """A consistency proof from ``first`` entries to the tree of ``second`` whose (signed) root
    is ``second_root``: from the stored roots when the proof they give leads to that root, else
    from the entries alone (a wrong stored root must not make a good log look forked)."""
    ranges = chain.consistency_ranges(first, second)
    reader = TreeReader(protocol_id)
    proof = reader.hashes(ranges)
    first_root = reader.hashes([(0, first)])[0]
    if chain.verify_consistency(first, second, proof, first_root, second_root):
        return proof
    return TreeReader(protocol_id, use_stored=False).hashes(ranges)


def store_nodes(*, protocol_id: int, nodes: Iterable[tuple[int, int, bytes]]) -> int:
    """Keep the perfect subtrees' roots from ``STORED_LEVEL`` up (existing ones are left as they
    are: the same position always has the same root in an append-only log). Returns how many
    were offered."""
    rows = [
        LogTreeNode(protocol_id=protocol_id, level=level, index=index, hash=digest.hex())
        for level, index, digest in nodes
        if level >= STORED_LEVEL
    ]
    LogTreeNode.objects.bulk_create(rows, ignore_conflicts=True, batch_size=5_000)
    return len(rows)


class LogRewritten(Exception):
    """The log no longer holds the tree a checkpoint signed: it was rewritten or cut short."""


@dataclass
class VerifiedHead:
    """What ``verify_since`` found: the chain and tree verified from a signed (size, root)."""

    report: chain.ChainReport
    since: int
    size: int
    root: bytes
    new_nodes: list[tuple[int, int, bytes]] = field(default_factory=list)


def _compact_range(protocol_id: int, size: int, root: bytes) -> chain.CompactRange:
    """The compact range of the first ``size`` entries, checked against the signed ``root``:
    first from the stored roots, then, if they disagree, from the entries alone."""
    positions = chain.subtree_ranges(0, size)
    for use_stored in (True, False):
        reader = TreeReader(protocol_id, use_stored=use_stored)
        reader.prefetch([(i << level, (i + 1) << level) for level, i in positions])
        try:
            hashes = [reader.subtree(level, i) for level, i in positions]
        except KeyError:
            continue  # entries missing: the log was cut short (said below)
        if chain.fold_subtrees(hashes) == root:
            return chain.CompactRange(size, hashes)
    last = log_size(protocol_id=protocol_id)
    if last < size:
        raise LogRewritten(f"the log ends at entry {last}, but a checkpoint signed {size} entries")
    raise LogRewritten(
        f"its first {size} entries no longer give the tree root signed for them: the log was "
        "rewritten after the checkpoint"
    )


def verify_since(
    *, protocol, size: int, root: bytes, code: str | None = None, stop_at: int | None = None
) -> VerifiedHead:
    """Verify the protocol's log from a signed (``size``, ``root``): the entries after it chain
    on, hash right, and extend the signed tree. O(new entries + log n) reads.

    Checks, in order: the stored subtree roots of the first ``size`` entries fold to ``root``
    (else they are recomputed from the entries, and a mismatch then is a rewrite); entry
    ``size``'s hash is the last leaf of that tree (an O(log n) inclusion proof, read from the
    entries themselves); then every later entry through ``stop_at`` (default: the head), as
    ``chain.verify_chain`` does. Raises LogRewritten when the log does not extend the signed
    tree; a break after it is in the returned report (``report.ok`` false).
    """
    protocol_id = protocol.pk
    previous = chain.GENESIS_HASH
    tree = chain.CompactRange()
    if size:
        tree = _compact_range(protocol_id, size, root)
        head = (
            LogEntry.objects.filter(protocol_id=protocol_id, seq=size)
            .values_list("hash", flat=True)
            .first()
        )
        if head is None:
            raise LogRewritten(f"entry {size}, the last one a checkpoint signed, is missing")
        leaf = chain.leaf_hash(head)
        ranges = chain.inclusion_ranges(size - 1, size)
        # From the stored roots first; a wrong one there must not pass for a rewrite, so the
        # proof is built again from the entries alone before anything is said.
        if not any(
            chain.verify_inclusion(
                leaf, size - 1, size, TreeReader(protocol_id, use_stored=s).hashes(ranges), root
            )
            for s in (True, False)
        ):
            raise LogRewritten(
                f"entry {size} is not the entry the checkpoint of {size} entries signed: the "
                "log was rewritten after the checkpoint"
            )
        previous = head
    from apps.deviations.selectors import entry_dicts

    nodes: list[tuple[int, int, bytes]] = []
    report = chain.verify_chain(
        entry_dicts(protocol=protocol, after=size, through=stop_at),
        protocol=code,
        after=(size, previous, tree),
        nodes_out=nodes,
        nodes_min_level=STORED_LEVEL,
    )
    new_root = base64.b64decode(report.root_hash) if report.root_hash else chain.EMPTY_ROOT
    return VerifiedHead(report, size, report.tree_size, new_root, nodes)


def bulk_store_tree(*, protocol_id: int, entry_hashes: Iterable[str]) -> chain.CompactRange:
    """Compute and store every subtree root of a whole log from its entry hashes in order (a
    rebuild, or a benchmark's bulk load). Returns the tree's compact range."""
    tree = chain.CompactRange()
    batch: list[tuple[int, int, bytes]] = []
    for digest in entry_hashes:
        batch.extend(n for n in tree.append(chain.leaf_hash(digest)) if n[0] >= STORED_LEVEL)
        if len(batch) >= 5_000:
            store_nodes(protocol_id=protocol_id, nodes=batch)
            batch = []
    store_nodes(protocol_id=protocol_id, nodes=batch)
    return tree
