"""Stored subtree roots from 16 entries up (tree.STORED_LEVEL 8 → 4): the roots of the perfect
subtrees of 16, 32, 64 and 128 entries of every existing log, computed from its entries, so that
an inclusion proof reads at most two blocks of 16 entry hashes (docs/performance.md). Like every
stored root, a cache nothing trusts: proofs are checked against signed roots."""

from django.db import migrations

NEW_LEVELS = range(4, 8)


def store_lower_roots(apps, schema_editor):
    from apps.deviations import chain  # pure functions, no models

    LogEntry = apps.get_model("deviations", "LogEntry")
    LogTreeNode = apps.get_model("deviations", "LogTreeNode")
    protocols = LogEntry.objects.values_list("protocol_id", flat=True).distinct().order_by()
    for protocol_id in protocols:
        tree, batch = chain.CompactRange(), []
        hashes = (
            LogEntry.objects.filter(protocol_id=protocol_id)
            .order_by("seq")
            .values_list("hash", flat=True)
            .iterator(chunk_size=10_000)
        )
        for digest in hashes:
            for level, index, node in tree.append(chain.leaf_hash(digest)):
                if level in NEW_LEVELS:
                    batch.append(
                        LogTreeNode(
                            protocol_id=protocol_id, level=level, index=index, hash=node.hex()
                        )
                    )
            if len(batch) >= 5_000:
                LogTreeNode.objects.bulk_create(batch, ignore_conflicts=True)
                batch = []
        LogTreeNode.objects.bulk_create(batch, ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [("deviations", "0006_log_tree_node")]

    operations = [migrations.RunPython(store_lower_roots, migrations.RunPython.noop)]
