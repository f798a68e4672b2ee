"""``structure_summary``: a large structured part of a version is summarised in a few lines."""

from apps.protocols.diffs import structure_summary


def test_a_list_is_counted_and_its_entries_matched_by_their_identity():
    old = {"cells": [{"code": f"c{i}", "absent": False} for i in range(120)], "seed": 1}
    new = {"cells": [dict(c) for c in old["cells"]], "seed": 2}
    for i in (3, 50, 99):
        new["cells"][i]["absent"] = True
    new["cells"].reverse()  # order alone is no change when entries carry a code
    lines = structure_summary(old, new, "design")
    assert lines[0] == {
        "path": "design › cells",
        "kind": "list",
        "from": 120,
        "to": 120,
        "added": 0,
        "removed": 0,
        "changed": 3,
        "matched_by": "code",
        "text": "design › cells: 120 → 120 entries; 3 changed",
    }
    assert lines[1]["text"] == "design › seed: 1 → 2"
    assert len(lines) == 2


def test_a_list_that_appears_counts_every_entry_as_added():
    new = {"administrations": [{"id": i} for i in range(920)]}
    (line,) = structure_summary({"administrations": None}, new, "schedule")
    assert line["text"] == "schedule › administrations: 0 → 920 entries; 920 added"
    (line,) = structure_summary(None, [[1, 2]] * 5, "schedule")
    assert (line["from"], line["to"], line["added"], line["matched_by"]) == (0, 5, 5, "position")


def test_equal_values_give_nothing_and_long_values_are_shortened():
    assert structure_summary({"a": [1]}, {"a": [1]}) == []
    (line,) = structure_summary({"note": "x" * 500}, {"note": "y"})
    assert len(line["text"]) < 100 and line["text"].endswith('→ "y"')
