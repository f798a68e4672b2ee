"""Canonical JSON: the one encoding behind every hash (frozen documents, the log, analyses).

These began as the statistics branch's tests of its own copy; the copy is gone and the tests
now hold ``apps.core.canonical`` to the same promises. Where the two copies differed, the core
rule won because hashes already depend on it: a float with an integral value is written as an
integer (RFC 8785 writes ``1.0`` as ``1``), and a value of the wrong type is a TypeError.
"""

import numpy as np
import pytest

from apps.core.canonical import canonical_json, sha256_hex


def test_canonical_json_gives_the_exact_bytes_of_a_small_document():
    document = {
        "é": "ü",
        "b": 1,
        "a": [0.1 + 0.2, -0.0, True, None],
        "n": np.float64(1 / 3),
        "i": np.int64(7),
        "t": (1, 2.5),
    }
    expected = (
        b'{"a":[0.3,0,true,null],"b":1,"i":7,"n":0.333333333333,"t":[1,2.5],"\xc3\xa9":"\xc3\xbc"}'
    )
    assert canonical_json(document) == expected


def test_canonical_json_rounds_floats_to_twelve_significant_digits():
    assert canonical_json([123456789.123456789, 1e20, 2.0e-7]) == b"[123456789.123,1e+20,2e-07]"


def test_integral_floats_are_written_as_integers():
    assert canonical_json({"x": 2.0, "y": -0.0, "z": 35.5}) == b'{"x":2,"y":0,"z":35.5}'


def test_floats_that_differ_in_the_last_bits_serialise_identically():
    a = sum([0.1] * 10)  # 0.9999999999999999
    assert canonical_json({"x": a}) == canonical_json({"x": 1.0})
    assert canonical_json({"x": 0.1 + 0.2}) == canonical_json({"x": 0.3})


def test_canonical_json_refuses_nan_and_names_where_it_is():
    with pytest.raises(ValueError, match=r"\$\.estimates\.beta_A\[1\]: .*nan"):
        canonical_json({"estimates": {"beta_A": [0.1, float("nan")]}})
    with pytest.raises(ValueError, match="inf"):
        canonical_json([float("inf")])
    with pytest.raises(ValueError, match="nan"):
        canonical_json({"m": np.array([1.0, np.nan])})


def test_canonical_json_refuses_unusable_keys_and_unknown_types():
    with pytest.raises(TypeError, match=r"key \(1, 2\) is not a string"):
        canonical_json({(1, 2): "a"})
    with pytest.raises(TypeError, match="type set"):
        canonical_json({"a": {1, 2}})
    with pytest.raises(ValueError, match="appears twice"):
        canonical_json({1: "a", "1": "b"})


def test_integer_keys_are_written_as_strings_as_json_does():
    assert canonical_json({2: "b", 10: "a"}) == b'{"10":"a","2":"b"}'


def test_numpy_arrays_and_scalars_become_plain_json():
    assert canonical_json({"m": np.array([[1, 2], [3, 4]])}) == b'{"m":[[1,2],[3,4]]}'
    assert canonical_json([np.bool_(True), np.float32(0.5)]) == b"[true,0.5]"


def test_sha256_hex_matches_the_fips_180_2_test_vector():
    # FIPS 180-2, Appendix B.1: SHA-256("abc").
    expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert sha256_hex(b"abc") == expected


def test_sha256_hex_refuses_text():
    with pytest.raises(TypeError, match="needs bytes"):
        sha256_hex("abc")
