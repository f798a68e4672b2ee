import numpy as np
import pytest

from apps.analysis.stats.canonical import canonical_json, sha256_hex


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
        b'{"a":[0.3,0.0,true,null],"b":1,"i":7,"n":0.333333333333,"t":[1,2.5],'
        b'"\xc3\xa9":"\xc3\xbc"}'
    )
    assert canonical_json(document) == expected


def test_canonical_json_rounds_floats_to_twelve_significant_digits():
    assert canonical_json([123456789.123456789, 1e20, 2.0e-7]) == b"[123456789.123,1e+20,2e-07]"


def test_floats_that_differ_in_the_last_bits_serialise_identically():
    a = sum([0.1] * 10)  # 0.9999999999999999
    assert canonical_json({"x": a}) == canonical_json({"x": 1.0})


def test_canonical_json_refuses_nan_and_names_where_it_is():
    with pytest.raises(ValueError, match=r"\$\.estimates\.beta_A\[1\]: nan"):
        canonical_json({"estimates": {"beta_A": [0.1, float("nan")]}})
    with pytest.raises(ValueError, match="inf"):
        canonical_json([float("inf")])


def test_canonical_json_refuses_non_string_keys_and_unknown_types():
    with pytest.raises(ValueError, match="key 1 is not a string"):
        canonical_json({1: "a"})
    with pytest.raises(ValueError, match="type set"):
        canonical_json({"a": {1, 2}})


def test_numpy_arrays_become_lists():
    assert canonical_json({"m": np.array([[1, 2], [3, 4]])}) == b'{"m":[[1,2],[3,4]]}'


def test_sha256_hex_matches_the_fips_180_2_test_vector():
    # FIPS 180-2, Appendix B.1: SHA-256("abc").
    expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert sha256_hex(b"abc") == expected


def test_sha256_hex_refuses_text():
    with pytest.raises(ValueError, match="needs bytes"):
        sha256_hex("abc")
