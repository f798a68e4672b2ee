"""One list of log-entry fields (``apps.deviations.entries``), and the offline verifier's own
copy in ``chain.py`` (which runs without Django), held equal."""

from apps.deviations import chain, entries, exports


def test_the_offline_verifier_hashes_and_exports_the_same_fields():
    # Canonical JSON sorts keys, so the order of the hashed fields does not matter; the set does.
    assert set(chain.PAYLOAD_FIELDS) == set(entries.PAYLOAD_FIELDS)
    assert set(chain.ENTRY_FIELDS) == set(entries.ENTRY_FIELDS)
    assert len(chain.ENTRY_FIELDS) == len(entries.ENTRY_FIELDS)


def test_the_csv_has_a_column_for_every_field_in_reading_order():
    assert exports.CSV_COLUMNS == entries.ENTRY_FIELDS
    assert entries.ENTRY_FIELDS[0] == "protocol"
    assert entries.ENTRY_FIELDS[-1] == "hash"
