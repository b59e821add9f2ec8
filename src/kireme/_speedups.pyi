"""Types of the optional C extension `kireme._speedups` (src/kireme/_speedups.c)."""

from typing import Any

def scan_sentence_cuts(
    text: str, a: int, b: int, block_starts: list[int], /
) -> tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]]:
    """Sentence starts decided in C, the protected quotations, and the candidates Python must judge."""

def reference_words() -> frozenset[str]: ...
def label_words() -> frozenset[str]: ...
def vocabulary() -> tuple[str, str, str, str]:
    """The marks compiled in: terminators, closers, opening brackets and their closing brackets."""

def make_chunks(
    cls: type,
    text: str,
    spans: list[Any],
    ids: Any,
    unit: str,
    title: str,
    headings: Any,
    metadata: Any,
    embeds: list[str] | None,
    /,
) -> list[Any]:
    """Every span of a plan as a chunk of ``cls`` holding ``ids`` (the document's ``ChunkIds``) as ``_ids``: its
    ``id`` and ``doc_id`` are worked out when first asked for (``IdField``). ``headings`` and ``metadata`` one
    shared value or a list per span, ``embeds`` a list per span or ``None`` (the text itself)."""

class IdField:
    """A chunk's ``id`` or ``doc_id`` (``name``), worked out from the ``ChunkIds`` it holds as ``_ids`` the first
    time either is read: the first 32 hex digits of SHA-256 of the ids' ``prefix`` and ``"start\\x1fend"``, and
    its ``_doc_id``; both written into the chunk, ``_ids`` let go. The prefix's hashing state is kept as the ids'
    ``_sha``. A non-data descriptor."""

    def __init__(self, name: str, /) -> None: ...
    def __get__(self, chunk: Any, owner: type | None = None, /) -> Any: ...

def char_packed(cls: type, spans: list[tuple[int, int]], budget: int, /) -> list[Any] | None:
    """Each ``(start, end)`` as ``cls(start, end, end - start)`` (a tuple class), or ``None`` when a span is longer
    than ``budget`` or is not a pair of ints (then Python makes them)."""

def pair_cuts(text: str, a: int, b: int, first: bytes, second: bytes, /) -> list[int] | None:
    """Every p in (a, b) with text[p - 1] in the bitmap ``first`` and text[p] in ``second``; ``None``
    when [a, b) holds a character beyond the Basic Multilingual Plane."""

def line_cuts(text: str, a: int, b: int, /) -> list[int]:
    """The starts of the line breaks (``\\r?\\n``) found in [a, b), strictly inside (a, b)."""

def plain_paragraph_starts(text: str, /) -> list[int] | None:
    """The paragraph starts of a text with no Markdown block syntax and no lone ``\\r``, else ``None``."""

def line_starts(text: str, /) -> list[int]:
    """0 and the offset after every ``\\n``: where each line of ``text`` starts."""

def char_windows(
    text: str, start: int, b: int, budget: int, simple: set[str], out: list[tuple[int, int]], numbers: bool, /
) -> int:
    """Windows of ``budget`` characters from ``start`` appended to ``out`` (trimmed), each cut between two
    characters of ``simple`` and, with ``numbers``, not after a digit or number separator: -1 when
    ``[start, b)`` is done, else the window start Python goes on from."""

def sha256_extensions(on: bool, /) -> bool:
    """Hash chunk ids with the processor's SHA extensions (``on``, where it has them) or the portable loop;
    whether the extensions are in use now (for the tests, which hash with both)."""

def clause_cuts(text: str, a: int, b: int, labels: bool = False, /) -> list[int]:
    """The cuts of the clause level (``[、;；]|[，,：](?![0-9０-９])|:(?![0-9０-９/\\])``, after each match) strictly inside (a, b);
    ``labels``: none right after the colon that ends a speaker's name in a dialogue (`after_speaker_label`)."""

def quoted_ends(text: str, a: int, b: int, /) -> list[int]:
    """The cuts of the quoted sentence level (the end of each ``[。！？｡]+(?![closers, terminators])[ \\t\\u3000]*``) strictly inside (a, b)."""

def kept_brackets(text: str, limit: int, /) -> tuple[list[int], list[int]]:
    """The outermost balanced brackets of the whole text at most ``limit`` characters long (an inner one
    where the outer is longer), as (starts, ends after the closing bracket): `KeptBrackets.spans`."""

def word_cuts(text: str, a: int, b: int, /) -> list[int]:
    """The cuts of the word level (where each ``[ \\t\\u3000]+`` run starts) strictly inside (a, b)."""

def scan_blocks(text: str, pos: int, /) -> tuple[list[int], list[int], list[int], int, bool]:
    """`_scanned_outline`'s simple blocks from ``pos`` on (paragraphs, comments, ATX headings, closed fences):
    their starts, four ints per heading (start, marks end, content end, title end), six per fence (start,
    closing line start and end, marker length, info start and end), where the block left to Python starts,
    and whether only blank lines are left."""

def line_end_marks(text: str, lo: int, hi: int, marks: str, /) -> list[int]:
    """Where a character of ``marks`` ends its line in ``[lo, hi)`` (only blanks after it to a line feed or ``hi``)."""

def heading_lines(text: str, /) -> list[int]:
    """The start of each line whose first character after spaces, tabs and ideographic spaces is 第, 附,
    ``=`` or ``§``, or that opens there with an English division keyword (``Part``, ``SECTION``…) and a
    space or tab (`kireme.text.openers`)."""

def delimiter_lines(text: str, /) -> list[int]:
    """The line feed before each line that may be a pipe table's delimiter row: where each match of
    ``kireme.text.markdown._DELIMITER_LINE`` starts."""

def line_marks(text: str, lo: int, hi: int, closers: bool, /) -> list[int]:
    """With ``closers``: the start and end (flat) of each ``_CLOSER_LINE`` match of ``finditer(text, lo, hi)``;
    without: the start of each line ``_OPENER_HINT`` finds there."""
