"""The local grapheme-boundary check agrees with a full UAX #29 scan."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.strategies import texts

from kireme.text.graphemes import CutFilter, boundaries, ceil_boundary, floor_boundary, is_boundary


@pytest.mark.slow  # every position of every example: a long property run
@settings(max_examples=60)
@given(texts)
def test_local_check_matches_full_scan(text: str) -> None:
    full = set(boundaries(text))
    for p in range(len(text) + 1):
        assert is_boundary(text, p) == (p in full)
        f = floor_boundary(text, p)
        c = ceil_boundary(text, p)
        assert f in full and c in full and f <= p <= c


@given(texts, st.data())
def test_cut_filter_keeps_exactly_the_boundaries(text: str, data) -> None:
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=20))))
    cuts = [c for c in cuts if 0 < c < len(text)]
    full = set(boundaries(text))
    assert CutFilter(text).keep(cuts) == [c for c in cuts if c in full]


def test_known_clusters() -> None:
    family = "👨\u200d👩\u200d👧"
    text = f"a\r\n{family}🇯🇵か\u3099"
    assert boundaries(text) == [0, 1, 3, 3 + len(family), 5 + len(family), 7 + len(family)]
    assert not is_boundary(text, 2)  # inside CRLF
    assert not is_boundary(text, 4)  # inside the ZWJ family


@pytest.mark.parametrize("strategy", ["recursive", "sentence", "paragraph", "fixed"])
@pytest.mark.parametrize(
    ("text", "cluster", "max_size", "overlap", "unit"),
    [
        ("家族👨\u200d👩\u200d👧と旅行。", "👨\u200d👩\u200d👧", 8, 4, "chars"),
        (
            "第5条（福利厚生）\n　家族👨\u200d👩\u200d👧の同伴旅行は年1回まで認める。\n",
            "👨\u200d👩\u200d👧",
            24,
            12,
            "tokens",
        ),
        ("評価は👍🏽でした。次回も同じ形式で行う。", "👍🏽", 10, 5, "tokens"),
    ],
)
def test_a_cluster_that_fits_max_size_is_whole_with_an_overlap(
    strategy: str, text: str, cluster: str, max_size: int, overlap: int, unit: str
) -> None:
    """With an overlap the packer's budget is max_size less the overlap, and a cluster larger than that
    was cut between its code points with a warning that it was larger than the limit — though it fits
    max_size alone. It goes whole, without an overlap where none fits beside it."""
    from kireme import make_chunker

    chunks = make_chunker(strategy, max_size=max_size, overlap=overlap, unit=unit).chunk(text)
    at = text.index(cluster)
    assert any(c.start <= at and at + len(cluster) <= c.end for c in chunks), [c.text for c in chunks]
    assert all(c.size <= max_size for c in chunks)
    cuts = {c.start for c in chunks} | {c.end for c in chunks}
    assert not any(at < cut < at + len(cluster) for cut in cuts)
