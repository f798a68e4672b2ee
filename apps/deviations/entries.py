"""The fields of a log entry, once: what is hashed, exported and verified.

``ENTRY_FIELDS`` is the reading order (the CSV's columns); ``PAYLOAD_FIELDS`` are the fields the
hash is taken over (all but ``hash``; canonical JSON sorts them, so their order does not change a
hash). ``ENTRY_COLUMNS`` names the ``LogEntry`` column each field after ``protocol`` is read from.

The offline verifier ``apps/deviations/chain.py`` runs without Django, so it keeps its own copy;
``tests/deviations/test_entries.py`` holds the two equal.
"""

ENTRY_FIELDS: tuple[str, ...] = (
    "protocol",
    "seq",
    "recorded_at",
    "occurred_on",
    "actor",
    "kind",
    "rationale",
    "refs",
    "outcome_visible",
    "prev_hash",
    "hash",
)
PAYLOAD_FIELDS: tuple[str, ...] = tuple(name for name in ENTRY_FIELDS if name != "hash")

# The protocol is exported by its code (one per chain); the actor by the name the entry recorded.
_COLUMN_OF = {"actor": "actor_name"}
ENTRY_COLUMNS: tuple[str, ...] = tuple(_COLUMN_OF.get(name, name) for name in ENTRY_FIELDS[1:])
