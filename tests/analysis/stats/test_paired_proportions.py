"""Newcombe's paired score interval against published values (issue #36 §4)."""

import pytest

from apps.analysis.stats.paired import newcombe_paired_interval


def test_newcombes_interval_reproduces_the_published_cavo_example():
    # Complete response before (rows) and after (columns) consolidation therapy, Cavo et al.
    # 2012: a=59, b=6, c=16, d=80. Fagerland, Lydersen & Laake, *Statistical Analysis of
    # Contingency Tables* (2017), ch. 8 (the paired 2×2 table), Newcombe square-and-add
    # interval: −0.0621 (95 % CI −0.1186 to −0.0046).
    low, high = newcombe_paired_interval(59, 6, 16, 80, confidence=0.95)
    estimate = (6 - 16) / 161  # θ̂ = (b − c)/n
    assert estimate == pytest.approx(-0.0621, abs=5e-5)
    assert low < estimate < high
    assert low == pytest.approx(-0.1186, abs=5e-5)
    assert high == pytest.approx(-0.0046, abs=5e-5)


def test_a_table_with_no_event_gives_a_symmetric_interval_of_positive_width():
    # Both Wilson limits at a count of 0 are (0, z²/(n + z²)); φ = 0 with an empty margin,
    # so the square-and-add limits are ±z²/(n + z²) (Newcombe 1998, method 10).
    z2 = 1.959963984540054**2
    low, high = newcombe_paired_interval(0, 0, 0, 256, confidence=0.95)
    assert high == pytest.approx(z2 / (256 + z2))
    assert low == pytest.approx(-high)


def test_the_interval_narrows_when_the_pairs_are_correlated():
    # Same marginals (p₁ = 0.4, p₂ = 0.3): strongly concordant pairs (φ > 0) give a narrower
    # interval than pairs with no association, the point of pairing (Newcombe 1998 §2).
    concordant = newcombe_paired_interval(30, 10, 0, 60)
    independent = newcombe_paired_interval(12, 28, 18, 42)
    assert concordant[1] - concordant[0] < independent[1] - independent[0]


@pytest.mark.parametrize(
    ("counts", "confidence", "message"),
    [
        ((1, -1, 0, 0), 0.95, "must be >= 0"),
        ((0, 0, 0, 0), 0.95, "no pairs"),
        ((1, 1, 1, 1), 1.0, "confidence"),
    ],
)
def test_bad_tables_are_refused_with_what_is_wrong(counts, confidence, message):
    with pytest.raises(ValueError, match=message):
        newcombe_paired_interval(*counts, confidence=confidence)
