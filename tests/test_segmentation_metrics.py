"""Boundary metrics checked against values computed by hand."""

import pytest

from kireme.evaluate import boundary_scores, pk, windowdiff


def test_perfect_and_empty_segmentations() -> None:
    assert pk({3, 7}, {3, 7}, 12) == 0.0
    assert windowdiff({3, 7}, {3, 7}, 12) == 0.0


def test_pk_by_hand() -> None:
    # 8 units, reference boundary after unit 3 (gap 3): segments [0-3] [4-7]; k = round(8/2/2) = 2.
    # hypothesis boundary at gap 4. Windows (i, i+2) for i = 0..5:
    # i=2: ref (2,4) differ, hyp (2,4) same -> error; i=3: ref (3,5) differ, hyp (3,5) differ -> ok
    # i=4: ref (4,6) same, hyp (4,6) differ -> error. Others agree. Pk = 2/6.
    assert pk({3}, {4}, 8) == pytest.approx(2 / 6)


def test_windowdiff_counts_boundaries_in_each_window() -> None:
    # same case: windows where the number of boundaries in (i, i+2] differs: i=2 (ref 1, hyp 0),
    # i=4 (ref 0, hyp 1) -> 2/6; and a doubled hypothesis boundary is punished by WindowDiff, not Pk.
    assert windowdiff({3}, {4}, 8) == pytest.approx(2 / 6)
    assert pk({3}, {2, 3}, 8) == pytest.approx(pk({3}, {2, 3}, 8))
    assert windowdiff({3}, {2, 3}, 8) > 0


def test_boundary_f1_with_tolerance() -> None:
    exact = boundary_scores({3, 7}, {3, 8})
    assert (exact.precision, exact.recall, exact.f1) == (0.5, 0.5, 0.5)
    near = boundary_scores({3, 7}, {3, 8}, tolerance=1)
    assert near.f1 == 1.0
    # one reference boundary cannot be matched twice
    assert boundary_scores({5}, {4, 6}, tolerance=1).precision == 0.5


def test_out_of_range_boundaries_are_rejected() -> None:
    with pytest.raises(ValueError, match="boundary gap indices"):
        pk({9}, {1}, 5)
