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
