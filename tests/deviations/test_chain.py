"""The pure chain functions: the payload's bytes, the hash and the verifier's verdicts."""

import copy
import hashlib
import random

import pytest

from apps.core.canonical import canonical_json as core_canonical_json
from apps.deviations import chain
from apps.deviations.chain import (
    GENESIS_HASH,
    PAYLOAD_FIELDS,
    entry_hash,
    entry_payload,
    verify_chain,
)
from tests.factories import make_chain

# The worked example in docs/deviation-log.md: if this changes, the document is wrong.
DOC_EXAMPLE = {
    "protocol": "OPB-01",
    "seq": 1,
    "recorded_at": "2026-11-30T01:50:00.000123Z",
    "occurred_on": None,
    "actor": "alice",
    "kind": "freeze",
    "rationale": "Froze v1.1: §7 complete — «ε = 0.05»",
    "refs": [{"type": "version", "id": 3, "label": "OPB-01 v1.1"}],
    "outcome_visible": False,
    "prev_hash": GENESIS_HASH,
}
DOC_EXAMPLE_PAYLOAD = (
    '{"actor":"alice","kind":"freeze","occurred_on":null,"outcome_visible":false,'
    '"prev_hash":"0000000000000000000000000000000000000000000000000000000000000000",'
    '"protocol":"OPB-01","rationale":"Froze v1.1: §7 complete — «ε = 0.05»",'
    '"recorded_at":"2026-11-30T01:50:00.000123Z",'
    '"refs":[{"id":3,"label":"OPB-01 v1.1","type":"version"}],"seq":1}'
)
DOC_EXAMPLE_HASH = "a10b694454d801f7f9d64cbb7090a3b9e7c700080e9bbf090415d86caed1178d"


def test_the_documented_example_payload_and_hash():
    assert entry_payload(DOC_EXAMPLE) == DOC_EXAMPLE_PAYLOAD.encode("utf-8")
    expected = hashlib.sha256(DOC_EXAMPLE_PAYLOAD.encode("utf-8")).hexdigest()
    assert entry_hash(DOC_EXAMPLE) == expected == DOC_EXAMPLE_HASH


def _random_text(rng: random.Random) -> str:
    alphabet = [
        '"',
        "\\",
        "\n",
        "\r",
        "\t",
        "\x01",
        "\x1f",
        "\x7f",
        "\u2028",
        "é",
        "ε",
        "€",
        "𝔸",
        "🧪",
        "a",
        "Z",
        " ",
        "/",
        "<",
        "&",
        "'",
        "\ufeff",
    ]
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


def _random_value(rng: random.Random):
    return rng.choice(
        [_random_text(rng), rng.randint(-(2**63), 2**63), True, False, None, 0.1, 1.0, 2.5e-7]
    )


def test_the_fast_payload_gives_the_same_bytes_as_the_projects_canonical_json():
    rng = random.Random(20261130)
    for _ in range(3000):
        refs = []
        for _ in range(rng.randint(0, 3)):
            shape = rng.random()
            if shape < 0.6:
                refs.append(
                    {
                        "type": _random_text(rng),
                        "id": rng.choice([rng.randint(0, 10**9), _random_text(rng)]),
                        "label": _random_text(rng),
                    }
                )
            elif shape < 0.9:
                refs.append({_random_text(rng) or "k": _random_value(rng) for _ in range(3)})
            else:
                refs.append({"nested": [1, {"b": 2.0}], "type": "x"})
        entry = {
            "protocol": _random_text(rng),
            "seq": rng.randint(1, 10**7),
            "recorded_at": _random_text(rng),
            "occurred_on": rng.choice([None, "2026-01-02", _random_text(rng)]),
            "actor": _random_text(rng),
            "kind": _random_text(rng),
            "rationale": _random_text(rng),
            "refs": refs,
            "outcome_visible": rng.random() < 0.5,
            "prev_hash": rng.choice([GENESIS_HASH, "ab" * 32]),
        }
        expected = core_canonical_json({name: entry[name] for name in PAYLOAD_FIELDS})
        assert entry_payload(entry) == expected, entry
        # The duplicated encoder in chain.py agrees with apps.core.canonical too.
        assert chain.canonical_json(entry) == core_canonical_json(entry)


@pytest.mark.parametrize("field", PAYLOAD_FIELDS)
@pytest.mark.parametrize("odd", [7, True, None, ["x"], {"k": "v"}, 2.5, "ß"])
def test_oddly_typed_fields_take_the_canonical_path(field, odd):
    entry = make_chain(1)[0]
    entry[field] = odd
    expected = core_canonical_json({name: entry[name] for name in PAYLOAD_FIELDS})
    assert entry_payload(entry) == expected


def test_the_payload_holds_every_field_but_the_hash():
    entry = make_chain(1)[0]
    assert set(PAYLOAD_FIELDS) == set(entry) - {"hash"}
    for name in PAYLOAD_FIELDS:
        changed = dict(entry)
        changed[name] = "x" if not isinstance(entry[name], str) else entry[name] + "x"
        assert entry_hash(changed) != entry["hash"], name


def test_an_intact_chain_is_verified_through_its_last_entry():
    entries = make_chain(25)
    report = verify_chain(iter(entries))
    assert report.ok
    assert report.verified_through == 25
    assert report.verified_through_at == entries[-1]["recorded_at"]
    assert report.head_hash == entries[-1]["hash"]
    assert report.summary().startswith("verified through entry 25 at 2026-11-30T01:50:25")


def test_an_empty_log_is_intact_and_says_so():
    report = verify_chain([])
    assert report.ok and report.verified_through is None
    assert report.summary() == "no entries yet"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("rationale", "Entry 7: “quoted”, tab\there, newline\nthere, 🧫"),
        ("actor", "zoe"),
        ("kind", "freezE"),
        ("recorded_at", "2026-11-30T01:50:07.000008Z"),
        ("occurred_on", "2026-11-28"),
        ("refs", [{"type": "item", "id": 8, "label": "Item №7"}]),
        ("outcome_visible", False),
        ("hash", "one hex digit changed"),
    ],
)
def test_a_changed_field_is_named_at_its_entry(field, value):
    entries = make_chain(12)
    if field == "hash":
        stored = entries[6]["hash"]
        value = ("0" if stored[0] != "0" else "1") + stored[1:]
    assert entries[6][field] != value
    entries[6][field] = value
    report = verify_chain(entries)
    assert not report.ok
    assert report.broken_at == 7
    assert report.verified_through == 6
    assert "hash does not match" in report.reason


def test_a_gap_in_seq_names_the_missing_entry():
    entries = make_chain(10)
    del entries[4]
    report = verify_chain(entries)
    assert report.broken_at == 5
    assert report.reason == "entry 5 is missing (the next entry is 6)"


def test_a_repeated_entry_breaks_the_chain():
    entries = make_chain(5)
    report = verify_chain([*entries, entries[2]])
    assert report.broken_at == 6
    assert "entry 3 appears again" in report.reason


def test_a_wrong_prev_hash_link_is_named_even_when_the_entry_hash_was_recomputed():
    entries = make_chain(10)
    # A forger rewrites entry 4's link and recomputes its own hash to match.
    entries[3]["prev_hash"] = "1" * 64
    entries[3]["hash"] = entry_hash(entries[3])
    report = verify_chain(entries)
    assert report.broken_at == 4
    assert report.reason.startswith("prev_hash does not match the hash of entry 3")


def test_a_first_entry_that_does_not_start_from_the_genesis_hash_is_broken():
    entries = make_chain(3)
    entries[0]["prev_hash"] = "a" * 64
    entries[0]["hash"] = entry_hash(entries[0])
    report = verify_chain(entries)
    assert report.broken_at == 1
    assert report.reason == "prev_hash of the first entry is not the genesis hash"


def test_a_log_that_starts_after_entry_one_is_broken_at_one():
    report = verify_chain(make_chain(5)[2:])
    assert report.broken_at == 1
    assert report.reason == "entry 1 is missing (the next entry is 3)"


def test_an_entry_of_another_protocol_breaks_the_chain():
    entries = make_chain(4)
    entries[2] = make_chain(3, protocol="OTHER")[2]
    report = verify_chain(entries)
    assert report.broken_at == 3
    assert "belongs to protocol 'OTHER'" in report.reason
    assert verify_chain(make_chain(2), protocol="OTHER").broken_at == 1


def test_a_missing_field_is_reported_not_raised():
    entries = make_chain(4)
    del entries[1]["rationale"]
    report = verify_chain(entries)
    assert report.broken_at == 2
    assert report.reason == "entry 2 lacks rationale"
    assert verify_chain([make_chain(1)[0], "not an object"]).broken_at == 2


def test_a_wrongly_typed_field_is_reported_not_raised():
    entries = make_chain(3)
    entries[1]["refs"] = [{"type": "x", "id": float("nan"), "label": "x"}]
    report = verify_chain(entries)
    assert report.broken_at == 2
    assert "cannot be encoded" in report.reason


def test_anchors_catch_a_rewritten_or_shortened_log():
    entries = make_chain(10)
    seen = {5: entries[4]["hash"], 10: entries[9]["hash"]}
    assert verify_chain(entries, expect=seen).ok
    # The tail was cut off: each entry left is intact, but the log no longer reaches entry 10.
    report = verify_chain(entries[:8], expect=seen)
    assert report.broken_at == 10
    assert report.reason == "entry 10 was seen before, but the log ends at entry 8"
    # The whole log was rebuilt from entry 5 on: internally consistent, but not what was seen.
    rebuilt = copy.deepcopy(entries)
    previous = rebuilt[3]["hash"]
    for entry in rebuilt[4:]:
        entry["rationale"] += " (rewritten)"
        entry["prev_hash"] = previous
        entry["hash"] = previous = entry_hash(entry)
    assert verify_chain(rebuilt).ok
    report = verify_chain(rebuilt, expect=seen)
    assert report.broken_at == 5
    assert "when seen before" in report.reason


def test_the_verifier_reads_each_entry_once_and_keeps_none():
    consumed = []

    def stream():
        for entry in make_chain(50):
            consumed.append(entry["seq"])
            yield entry

    assert verify_chain(stream()).verified_through == 50
    assert consumed == list(range(1, 51))
