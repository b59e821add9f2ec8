"""Sentence and paragraph boundaries for Japanese and English, without configuration.

Rules (measured against the libraries in ``benchmarks/sentence_segmenters.py``, see the README):

* ``。！？!?｡`` end a sentence even when no space follows; ``．`` does too unless it sits between digits.
* Closing brackets and quotes after the terminator stay with their sentence (``…です。」``).
* Inside ``「…」『…』（…）`` nothing ends a sentence, as long as the bracket closes within the paragraph.
* A single line break is not a sentence end (hard-wrapped text); a blank line is, and so is a line break
  followed by an item marker (``・``, ``1.``, ``（1）``, ``第3条``, ``【…】``, ``- ``).
* ``.`` ends an English sentence when whitespace and a plausible sentence start follow and the word before
  it is not a known abbreviation (``Dr.``, ``e.g.``, ``U.S.``), a single initial or a number.

Those rules are the ``"auto"`` sentence mode. Text that comes one sentence a line (Choi's segmentation
benchmark, transcripts with one utterance a line, subtitles, many corpora) says where its sentences end
by itself, and lower-case tokenised lines defeat any punctuation rule: the ``"lines"`` mode makes every
non-blank line one sentence (`line_spans`), whatever its punctuation.

Every function returns offsets into the text it was given; nothing is copied or re-joined.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from functools import lru_cache
from itertools import compress, repeat
from operator import eq, itemgetter, methodcaller, sub
from typing import NamedTuple, cast

from kireme._native import native
from kireme.errors import ConfigError
from kireme.text.marks import BULLETS, CLOSERS, ITEM_MARKER, OPEN_TO_CLOSE, TERMINATORS
from kireme.text.patterns import lazy_re, lazy_regex

# The shared vocabulary (`kireme.text.marks`): terminators, closing brackets/quotes, item markers.
_HARD_END = TERMINATORS
_CLOSERS = CLOSERS
_OPEN_TO_CLOSE = OPEN_TO_CLOSE

_BLANK_LINE = r"\r?\n[ \t\u3000]*\r?\n"
PARAGRAPH_BREAK = lazy_regex(rf"{_BLANK_LINE}|\r?\n(?={ITEM_MARKER})")
# The same breaks, found fast: the stdlib engine jumps from one "\n" to the next (a pattern that starts
# with "\r?" defeats that), and a cheap look at the first character after the indent runs the full
# item-marker pattern only where an item can start. A "\r" before the "\n" is added back by the caller.
# tests/test_core_guards.py checks the two agree.
_ITEM_FIRST = "[ \t\u3000]*[【第0-9０-９（(①-⑳" + BULLETS + "*+\\-]"
# The lookahead group of a blank line reaches over the whitespace after it: where the next block starts.
_FAST_PARAGRAPH_BREAK = lazy_re(rf"\n(?:[ \t\u3000]*\r?\n(?=(\s*))|(?={_ITEM_FIRST})(?={ITEM_MARKER}))")

# How sentence ends are found: kireme's rules, or one sentence per non-blank line.
SENTENCE_MODES = ("auto", "lines")

_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "mt",
        "vs",
        "v",  # versus, as in case names: "Roe v. Wade" (an upper-case "V." is an initial already)
        "etc",
        "e.g",
        "i.e",
        "cf",
        "al",
        "fig",
        "figs",
        "no",
        "nos",
        "vol",
        "vols",
        "pp",
        "ed",
        "eds",
        "approx",
        "dept",
        "ste",  # suite, in an address: "Harbor Blvd., Ste. 400"
        "blvd",
        "est",
        "inc",
        "ltd",
        "co",
        "corp",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "mon",
        "tue",
        "wed",
        "thu",
        "fri",
        "sat",
        "sun",
        "u.s",
        "u.k",
        "u.n",
        "a.m",
        "p.m",
        "ph.d",
        "b.a",
        "m.a",
        "gen",
        "col",
        "lt",
        "sgt",
        "rev",
        "hon",
        "gov",
        "sen",
        "rep",
    ]
)
# Abbreviations that often end a sentence too: they end one when a capitalised word follows.
_MAY_END = frozenset(["etc", "al", "a.m", "p.m"])
# Words that name a numbered place in a text: before a number or a bracket their dot ends nothing
# (``Sec. 4.2``, ``Eq. (3)``, ``Art. 12``, ``p. 12``), though ``modern art.`` ends a sentence.
_REFERENCE_WORDS = frozenset(
    [
        "sec",
        "secs",
        "eq",
        "eqs",
        "art",
        "arts",
        "ch",
        "chap",
        "ref",
        "refs",
        "para",
        "paras",
        "tel",
        "ext",
        "fig",
        "figs",
        "tab",
        "no",
        "nos",
        "vol",
        "vols",
        "p",
        "pp",
        "ex",
        "cl",
        "sch",
        "reg",
        "ll",
        "l",
    ]
)
# What starts a number or a reference after such a word (`_REFERENCE_WORDS`, ``et al. (2020)``)
_REFERENCE_NEXT = "0123456789([§#"

# Whitespace as the `regex` engine's ``\s`` has it (stdlib syntax): ``str.isspace`` less the four
# information separators U+001C..U+001F. tests/test_sentence_speed_equivalence.py checks every code point.
_RX_SPACE = r"[^\S\x1c-\x1f]"
_RX_INK = r"[\S\x1c-\x1f]"  # the `regex` engine's ``\S``
_RX_SPACE_RUN = cast(Callable[[str, int], re.Match[str]], re.compile(_RX_SPACE + "*").match)
# Sentence ends other than line breaks (those are decided line by line, see _line_break_cuts):
#   a run of terminators;  "．" not after a digit;  dots after a non-space, before a space or the end;
#   and, in tokenised text, a lone "." between a word and a capital ("games . When", `_TOKENISED_DOT`).
# Each alternative starts with the character it consumes first, so the pattern opens with their class
# and tells the alternatives apart by looking back at it: a pattern that starts with one character class
# lets the stdlib engine skip every other character without entering the matcher (about twice as fast
# as `regex`). The last alternative is a superset, ". " after a space or tab; `_TOKENISED_DOT` decides.
# Footnote markers right after a sentence's end belong to it: "開業した。[1]従業員は", "in 1998.[2][3] It",
# "です。[^1]" (a Markdown footnote); not a link or a definition ("[1](url)", "[1]: ...")
_FOOTNOTES = r"(?:(?:\[\^?[0-9]{1,3}\])+(?![(:]))?"
_CANDIDATE = lazy_re(
    rf"[{re.escape(_HARD_END)}．.](?:"
    rf"(?<=[{re.escape(_HARD_END)}])(?:(?!!\[)[{re.escape(_HARD_END)}])*[{re.escape(_CLOSERS)}]*{_FOOTNOTES}"
    rf"|(?<=．)(?<![0-9０-９]．)[{re.escape(_CLOSERS)}]*{_FOOTNOTES}"
    rf"|(?<={_RX_INK}\.)\.*[{re.escape(_CLOSERS)}]*{_FOOTNOTES}(?={_RX_SPACE}|$)"
    rf"|(?<=[ \t]\.)(?=[ \t])"
    rf")"
)
_TOKENISED_DOT = lazy_regex(r"(?<=\w[ \t])\.(?=[ \t]+[\p{Lu}\"'“(\[])")  # "games . When"
_WORD_BEFORE = lazy_regex(r"(?r)([\p{Latin}\p{N}.]+)\Z")  # searched backwards from the dot
_SPACE_THEN_LOWER = lazy_regex(r"\s+\p{Ll}")
_LABEL_GAP = (" ", "\t", "\r", "\n")  # after the dot of a letter label at a line start ("A. ", "Q.\n")
# A line that is an item, a bracketed title or a "label: value" line ends its sentence even without a
# terminator; any other single line break is a hard wrap inside a sentence.
_ITEM_LINE = (
    rf"(?:{ITEM_MARKER}|[ \t\u3000]*【[^】\n]*】[ \t\u3000]*(?=\r?\n|\Z)|[ \t\u3000]*[^\s：:]{{1,12}}[：:])"
)
# Item, title and label lines, found in one pass: a pattern that starts with "\n" lets the stdlib engine
# jump from line break to line break (a line-start anchor is tried at every position).
_ITEM_LINE_START = lazy_re(_ITEM_LINE)
_ITEM_LINE_AFTER_BREAK = lazy_re(rf"\n(?={_ITEM_LINE})")
# An English line that looks like "label: value" by its first word but may be a hard wrap: a lower-case
# ASCII word of up to 12 characters and a colon then a space ("problem: when `s2` and `s1` go out of
# scope, they will both try to free the"; `_label_wrap`)
_LOWER_LABEL = lazy_re(r"[ \t]*[a-z][A-Za-z0-9_-]{0,11}:[ \t]")
# the last character of a line that ends inside a sentence (a hard wrap): a letter, a digit or a comma
_WRAP_END = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,")
_WRAPPED_LINE_MIN = 40  # a line shorter than this is a title or a lead-in, not a line of wrapped prose
_LABEL_BEFORE_DOT = lazy_regex(r"(?:^|\n)[ \t\u3000]*[\p{L}\p{N}]$")
# What may follow a closing quote inside the same sentence: particles and quotative verbs, and a comma (a
# law's ``同条第二項（第三号ハに係る部分を除く。）、第六項…``: no sentence opens with ``、``).
_QUOTE_CONTINUES = lazy_regex(
    r"(?:と|って|という|の|が|を|は|に|で|も|や|より|から|まで|など|か[、。]|[、，,])"
)
# the quotation marks a sentence end may close without ending the sentence, when a particle or a comma
# follows (`_QUOTE_CONTINUES`): straight, and the curly closing marks (“…”, ‘…’ in Japanese text too);
# the brackets (「…」) are read as quotations apart (`_quoted_spans`)
_QUOTE_MARKS = frozenset('"\u201d\u2019')
_NEXT_START = lazy_regex(r"\s*([\p{Lu}\p{N}\"'“‘(\[「『（]|[^\p{L}\p{N}\s]|[^\p{Latin}\s])")
_LOWER_NEXT = lazy_regex(r"\s*\p{Ll}")


def _period_ends(text: str, dot: int, after: int, caseless: bool = False) -> bool:
    """Decide an English '.' at ``dot`` (the candidate match ends at ``after``).

    ``caseless``: the text has (almost) no capitals, as in lower-cased corpora, so a lower-case word
    after the period may start a sentence.
    """
    ink = _RX_SPACE_RUN(text, after).end()  # the first character after the whitespace that follows
    if ink == len(text):  # only whitespace left
        return True
    m = _WORD_BEFORE.search(text, max(0, dot - 40), dot)
    word = m.group(1).lower() if m else ""
    word_start = m.start(1) if m else dot
    if word.isdigit() and len(word) <= 3 and _at_line_start(text, word_start):  # "1. " list marker
        return False
    if ((word.isdigit() and len(word) <= 3) or _ROMAN.fullmatch(word)) and _numbered_label(text, word_start):
        return False  # "ARTICLE 5. CONFIDENTIALITY", "PART II. DEFINITIONS": a heading's number
    if (
        len(word) == 1
        and word.isalpha()
        and text[dot + 1 : dot + 2] in _LABEL_GAP
        and _at_line_start(text, word_start)
    ):
        return False  # "A. " label, "b. " item
    if (
        2 <= len(word) <= 4
        and word[0].isalpha()
        and word[1:].isdigit()
        and text[dot + 1 : dot + 2] in _LABEL_GAP
        and _at_line_start(text, word_start)
    ):
        return False  # "Q3. " / "A12. ": a numbered FAQ label, not a sentence of its own
    starts, lower = _next_kind(text[ink])
    if not ((starts or lower) if caseless else (starts and not lower)):
        return False
    if not word:
        return True
    if text[ink] in _REFERENCE_NEXT and (word in _MAY_END or word in _REFERENCE_WORDS):
        return False  # "Smith et al. (2020)", "Sec. 4.2", "Eq. (3)", "p. 12": a citation, not an end
    if word in _MAY_END:
        return True
    if word in _ABBREVIATIONS or word.rstrip(".") in _ABBREVIATIONS:
        return False
    if len(word) == 1 and word.isalpha() and _is_initial(text, word_start):  # "J. R. Smith"
        return False
    # "U.S." style acronyms do not end a sentence; "$6.25." does
    letters = word.replace(".", "")
    return not ("." in word and letters.isalpha() and len(letters) <= 3)


def _is_ascii_word(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _inside_token(text: str, s: int, e: int, a: int, b: int) -> bool:
    """Whether the ASCII ``!``/``?`` run ``text[s:e]`` (judged within ``text[a:b]``) is part of markup,
    code or a URL rather than the end of a sentence: ``<!--`` and ``<!DOCTYPE``, the operators ``!=``,
    ``!==``, ``?=`` and ``!done``, a Markdown image ``![alt](…)``, the end of a code span (``panic!``` ``),
    a macro (``println!(``), an optional field (``name?: string``), and a mark between ASCII characters
    with no space (``p?id=3``, ``a?.b``, ``f()?;``, ``[!NOTE]``). A run with a closer in it, or with
    Japanese text or a space after it (``本当?はい``, ``Really? Yes``), still ends its sentence."""
    if text[s:e].strip("!?"):
        return False  # closers or full-width marks in the run
    before = text[s - 1] if s > a else ""  # nothing known before the span judged
    after = text[e] if e < b else " "
    if text[s] == "!" and before == "<":
        return True
    if after in "=`" or (after == "[" and text[e - 1] == "!"):  # an operator, the end of a code span
        return True
    if before in (" ", "\t") and text[s:e] == "!" and _is_ascii_word(after):  # the operator: x = !done
        return True
    if not ("!" <= before <= "~"):  # a space, a line break or a non-ASCII character before the run
        return False
    if _in_code_span(text, s, e):  # `? :`, `foo!`
        return True
    if after in "(;:{":  # a macro (println!(…), ident!{…}), f()?;, an optional field (name?: string)
        return True
    if after == "." and e + 1 < b:
        after = text[e + 1]
    return _is_ascii_word(after)


def _in_code_span(text: str, s: int, e: int) -> bool:
    """Whether ``text[s:e]`` lies inside an inline code span: an odd number of backticks before it on its
    line, and one after it there (a line read up to `_CODE_SPAN_REACH` characters either side: a longer
    one is not taken for code)."""
    lo = max(0, s - _CODE_SPAN_REACH)
    line_start = text.rfind("\n", lo, s) + 1 or lo
    if line_start == lo and lo > 0 and text[lo - 1] != "\n":
        return False
    hi = min(len(text), e + _CODE_SPAN_REACH)
    line_end = text.find("\n", e, hi)
    return (
        text.count("`", line_start, s) % 2 == 1 and text.find("`", e, line_end if line_end >= 0 else hi) >= 0
    )


_CODE_SPAN_REACH = 400


# the words that number a heading at a line's start: "ARTICLE 5.", "Section 2.", "PART II."
_LABEL_WORDS = frozenset(
    [
        "article",
        "section",
        "part",
        "chapter",
        "appendix",
        "annex",
        "schedule",
        "exhibit",
        "clause",
        "rule",
        "item",
        "step",
        "book",
        "title",
    ]
)
_ROMAN = re.compile(r"[ivxlc]{1,6}")  # a lower-cased Roman numeral (the word is lower-cased)


def _numbered_label(text: str, word_start: int) -> bool:
    """Whether only a heading's label word (``ARTICLE``, ``Section``, ``PART``; after the marks of a Markdown
    heading or quote) comes before the number at ``word_start`` on its line."""
    line = text[text.rfind("\n", 0, word_start) + 1 : word_start]
    if len(line) < 2 or line[-1] not in " \t" or not (line[-2].isascii() and line[-2].isalpha()):
        return False  # one space or tab between the word and the number (the C scan asks only then)
    words = line.strip(" \t#>").split()
    return len(words) == 1 and words[0].lower() in _LABEL_WORDS


def _at_line_start(text: str, position: int) -> bool:
    """Whether only whitespace, or the marks of a Markdown heading or quote (``## 2. Indexing``,
    ``> 1. Run it``), come before ``position`` on its line."""
    before = text[text.rfind("\n", 0, position) + 1 : position]
    return not before or all(c.isspace() or c in "#>" for c in before)


@lru_cache(maxsize=4096)
def _next_kind(char: str) -> tuple[bool, bool]:
    """Whether a sentence may start at ``char`` (`_NEXT_START`) and whether it is lower case (`_LOWER_NEXT`).

    Both patterns skip whitespace and then test one character, so they are asked once per character
    (cached) about the first character after the whitespace instead of twice per period.
    """
    return _NEXT_START.match(char) is not None, _LOWER_NEXT.match(char) is not None


# another initial right after an initial's dot: "J. R. Martinez" (a name, whatever the word before "J.")
_NEXT_INITIAL = re.compile(r"\.[ \t]+[A-Z]\.")


def _is_initial(text: str, letter: int) -> bool:
    """A single capital after a capitalised word, another initial or a sentence start, or before another
    initial (not 'method B.')."""
    if not text[letter].isupper():
        return False
    if letter > 0 and not text[letter - 1].isspace():
        return False  # "°C." is a unit, not an initial
    if _NEXT_INITIAL.match(text, letter + 1):
        return True  # "by J. R. Martinez"
    before = text[max(0, letter - 30) : letter].rstrip()
    if not before or before[-1] in ".!?":
        return True
    prev_word = before.split()[-1]
    return prev_word[:1].isupper()


_OPENERS = "".join(_OPEN_TO_CLOSE)
_CLOSER_OF = _OPEN_TO_CLOSE
_CLOSING_SET = frozenset(_OPEN_TO_CLOSE.values())
# The brackets alone: a pattern that is one character class lets the stdlib engine test each character
# against the class without entering the matcher (a class or a blank line runs the matcher everywhere,
# four times slower). Blank lines, where the bracket stack is dropped, are the block starts of `_breaks`.
_BRACKETS = lazy_re("[" + re.escape(_OPENERS + "".join(sorted(_CLOSING_SET))) + "]")
_QUOTE_SPAN_LIMIT = 2000  # a "quote" longer than this is treated as unbalanced text
_MAX_DEPTH = 32


def _quoted_spans(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """Outermost balanced brackets ``(open, close)`` that close within their paragraph.

    One pass with a bounded stack: a bracket that never closes (or closes more than
    ``_QUOTE_SPAN_LIMIT`` characters later) protects nothing, so unbalanced text cannot swallow the
    rest of a document into one sentence. A blank line between two brackets drops the stack: the text
    holds one exactly when a block start (`_breaks`, cached per text) lies after the first bracket and
    at or before the second, since only whitespace separates a blank line from its block start.
    """
    spans: list[tuple[int, int]] = []
    positions = list(map(_START, _BRACKETS.finditer(text, a, b)))  # read off in bulk, as the characters
    if not positions:
        return spans
    blocks = _breaks(text).block_starts  # ends with len(text): a block start always follows a bracket
    next_block = blocks[bisect_right(blocks, positions[0])]
    stack: list[tuple[int, str]] = []
    for pos, ch in zip(positions, _chars_at(text, positions), strict=True):
        if pos >= next_block:  # a blank line since the bracket before
            stack.clear()
            next_block = blocks[bisect_right(blocks, pos)]
        if ch in _CLOSER_OF:
            if len(stack) >= _MAX_DEPTH:
                del stack[0]
            stack.append((pos, _CLOSER_OF[ch]))
        else:
            for depth in range(len(stack) - 1, -1, -1):
                if stack[depth][1] == ch:
                    opened = stack[depth][0]
                    del stack[depth:]
                    if not stack and pos - opened <= _QUOTE_SPAN_LIMIT:
                        spans.append((opened, pos))
                    break
    return spans


def bracket_pairs(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """Every balanced bracket or quotation (`OPEN_TO_CLOSE`) inside ``[a, b)``, nested ones too, as
    ``(opening, after closing)`` in the order they close: ``有価証券（特定有価証券を除く。）`` holds one. A
    closer pairs with the nearest open bracket of its kind (those opened after it and still open are
    dropped, as `_quoted_spans` reads them); one that never closes pairs with nothing."""
    positions = list(map(_START, _BRACKETS.finditer(text, a, b)))
    pairs: list[tuple[int, int]] = []
    stack: list[tuple[int, str]] = []
    for pos, ch in zip(positions, _chars_at(text, positions), strict=True):
        if ch in _CLOSER_OF:
            if len(stack) >= _MAX_DEPTH:
                del stack[0]
            stack.append((pos, _CLOSER_OF[ch]))
            continue
        for depth in range(len(stack) - 1, -1, -1):
            if stack[depth][1] == ch:
                pairs.append((stack[depth][0], pos + 1))
                del stack[depth:]
                break
    return pairs


def _line_break_cuts(text: str, a: int, b: int, items: list[int] | None = None) -> list[int]:
    """Sentence starts after the single line breaks inside ``[a, b)`` that end a sentence.

    A line break is a hard wrap inside a sentence unless the line it ends is an item, a bracketed
    title or a "label: value" line (not a wrapped English line that only looks like one: `_label_wrap`),
    or the next line starts an item. Both kinds of line are found by
    one pattern each over the whole span, not by a check at every line break (in C where kireme's
    extension is built: `kireme._speedups.line_break_cuts`, the same answers).
    """
    if items is None:  # the "\n" (or "\r\n") before each item line, whole text
        items = _breaks(text).item_breaks
    if _NATIVE_LINE_BREAKS is not None:
        cuts: list[int] | None = _NATIVE_LINE_BREAKS(text, a, b, items)
        if cuts is not None:
            return cuts
    ends: set[int] = set()  # positions of the "\n" of sentence-ending line breaks
    for p in items[bisect_left(items, a) : bisect_left(items, b)]:
        q = p + 1 if text[p] == "\r" else p
        if q + 1 < b:
            ends.add(q)
    line_start = text.rfind("\n", 0, a) + 1
    item_lines = _item_line_starts(text, line_start, b)
    find = text.find
    for start in item_lines:
        q = find("\n", start, b)
        if (
            q >= 0
            and (q - 1 if q > 0 and text[q - 1] == "\r" else q) >= a
            and not _label_wrap(text, start, q, b)
        ):
            ends.add(q)
    cuts = []
    for q in sorted(ends):
        e = q + 1
        while e < b and text[e].isspace():
            e += 1
        if a < e < b:
            cuts.append(e)
    return cuts


def _label_wrap(text: str, p: int, q: int, b: int) -> bool:
    """Whether the label line at ``p`` (its line feed at ``q``) is a hard wrap of English prose that only
    looks like a "label: value" line, so that it does not end its sentence: its first word is lower-case
    ASCII (``[a-z][A-Za-z0-9_-]{0,11}``, a colon and a space), it and the line above it (at least
    `_WRAPPED_LINE_MIN` characters, not an item, title or label line) both end inside a sentence (a letter,
    a digit or a comma). ``problem: when `s2` and `s1` go out of scope, they will both try to free the``
    under ``… this is a`` goes on with its sentence; ``name: kireme`` under ``Configuration`` (a short line)
    or under another label line stays a line of its own. The reference for the C test (`label_wrap_at` in
    `kireme._speedups`)."""
    if _LOWER_LABEL.match(text, p, q) is None:
        return False
    line = text[p:q].rstrip()
    if not line or line[-1] not in _WRAP_END or p < 1 or text[p - 1] != "\n":
        return False
    above_end = p - 1  # the line feed ending the line above
    above_start = text.rfind("\n", 0, above_end) + 1
    above = text[above_start:above_end].strip()
    if len(above) < _WRAPPED_LINE_MIN or above[-1] not in _WRAP_END:
        return False
    return _ITEM_LINE_START.match(text, above_start, b) is None


def _item_line_starts_python(text: str, start: int, b: int) -> list[int]:
    """The line starts in ``[start, b)`` (``start`` itself, and after each ``\\n``) where an item, bracketed
    title or "label: value" line begins (`_ITEM_LINE`), judged as if the text ended at ``b``: the
    reference for the C loop (`kireme._speedups.item_line_starts`)."""
    item_lines = [m.start() + 1 for m in _ITEM_LINE_AFTER_BREAK.finditer(text, start, b)]
    if _ITEM_LINE_START.match(text, start, b):
        item_lines.insert(0, start)
    return item_lines


_CAPITAL = lazy_regex(r"\p{Lu}|\p{Lt}")
_LOWER = lazy_regex(r"\p{Ll}")
# The same two in ASCII text, where they are exactly these letters.
_ASCII_CAPITALS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ASCII_LOWERS = _ASCII_CAPITALS.lower()


def _is_caseless(text: str, a: int, b: int) -> bool:
    """Lower-cased text (a corpus that was lower-cased): cased letters, but not a single capital.

    Cased text is recognised at its first capital, so the usual answer costs a few characters.
    """
    if b - a < 200:
        return False
    if text.isascii():  # known without reading the text; then a search for each letter is the fastest scan
        return not _has_any(text, _ASCII_CAPITALS, a, b) and _has_any(text, _ASCII_LOWERS, a, b)
    return _CAPITAL.search(text, a, b) is None and _LOWER.search(text, a, b) is not None


def _has_any(text: str, chars: str, a: int, b: int) -> bool:
    """Whether one of ``chars`` occurs in ``text[a:b]`` (`str.find` per character: a memory scan each)."""
    find = text.find
    return any(find(c, a, b) >= 0 for c in chars)


def _scan_sentence_cuts(text: str, a: int, b: int, caseless: bool) -> tuple[list[int], list[tuple[int, int]]]:
    """Sentence starts strictly inside ``(a, b)``, judged from ``text[a:b]`` alone, and the protected
    quotations found there (outermost balanced brackets that close within their paragraph).

    The inner loop runs in C when kireme's extension is built (`kireme._speedups`: the quotations, the
    candidate ends, the quotation rule, `_judged_end` for "." where the word before it and the character
    after are plain, and `_line_break_cuts`); the other candidates the rules below judge are decided by
    `_judged_end` here either way."""
    scan = _NATIVE_SCAN
    if scan is None:
        return _scan_sentence_cuts_python(text, a, b, caseless)
    breaks = _breaks(text)
    cuts, quoted, pending = scan(text, a, b, breaks.block_starts)
    more = _line_break_cuts(text, a, b, breaks.item_breaks)
    if pending:
        if _NATIVE_PERIODS is not None:  # the plain "." candidates in C too; the others come back
            judged, pending = _NATIVE_PERIODS(text, pending, a, b, caseless, _ABBREVIATIONS, _MAY_END)
            more += judged
        more += [cut for s, e in pending if (cut := _judged_end(text, s, e, a, b, caseless)) is not None]
    if more:  # one merge for the judged ends and the line breaks
        cuts = sorted({*cuts, *more})
    return cuts, quoted


def _scan_sentence_cuts_python(
    text: str, a: int, b: int, caseless: bool
) -> tuple[list[int], list[tuple[int, int]]]:
    """`_scan_sentence_cuts` in Python alone: the reference the C loop is tested against, and the path
    taken where the extension is not built (or ``KIREME_PURE_PYTHON=1``)."""
    quoted = _quoted_spans(text, a, b)
    qi = 0
    nq = len(quoted)
    cuts: list[int] = []
    matches = list(_CANDIDATE.finditer(text, a, b))
    starts = list(map(_START, matches))
    ends = list(map(_END, matches))
    del matches
    space_run = _SPACE_RUN_MATCH
    for s, e, first in zip(starts, ends, _chars_at(text, starts), strict=True):
        e = _closing_quotes_end(text, s, e, b)  # a '"' after the terminators may open the next sentence
        if text[e - 1] in _QUOTE_MARKS and e < b and _QUOTE_CONTINUES.match(text, e):
            continue  # a quote it closes, and the sentence goes on: 彼は"行こう。"と言った, 彼は“行く。”と
        while qi < nq and quoted[qi][1] < s:
            qi += 1
        if qi < nq and quoted[qi][0] < s <= quoted[qi][1]:
            # Inside a balanced quote: only a terminator that closes the whole quote can end the
            # sentence, and not when the sentence goes on (「行こう。」と言った).
            closes_quote = e == quoted[qi][1] + 1
            if not closes_quote or (e < b and _QUOTE_CONTINUES.match(text, e)):
                continue
        if first in _JUDGED:
            judged = _judged_end(text, s, e, a, b, caseless)
            if judged is not None and (not cuts or cuts[-1] != judged):
                cuts.append(judged)
            continue
        if e < b and text[e].isspace():
            e = space_run(text, e, b).end()
        if a < e < b and (not cuts or cuts[-1] != e):
            cuts.append(e)
    lines = _line_break_cuts(text, a, b)
    if lines:
        cuts = sorted(set(cuts).union(lines))
    return cuts, quoted


_QUOTE_REACH = 400  # how far back on its line a straight quote is counted


def _closing_quotes_end(text: str, s: int, e: int, b: int) -> int:
    """The end of a candidate ``text[s:e]`` (judged within ``text[:b]``) without the straight double quotes
    after its terminators that open the next sentence rather than close this one: a ``"`` that closes no
    quote opened before it on its line (an even number of ``"`` from the line's start, read up to
    `_QUOTE_REACH` characters back) and has text right after it opens one, so ``あります。"Star" を押すと``
    ends before the quote, and ``He said "Stop." Then`` after it."""
    i = text.find('"', s, e)
    if i < 0:
        return e
    lo = max(0, s - _QUOTE_REACH)
    line = text.rfind("\n", lo, s) + 1 or lo
    opened = text.count('"', line, s) % 2 == 1
    while i >= 0:
        if not opened and i + 1 < b and not text[i + 1].isspace():
            return i
        opened = not opened  # this one closes the quote (or, at a line's end, is a stray one)
        i = text.find('"', i + 1, e)
    return e


def _judged_end(text: str, s: int, e: int, a: int, b: int, caseless: bool) -> int | None:
    """Where the sentence after the candidate end ``text[s:e]`` starts (past the whitespace), when the
    candidate's first character (``.``, ``．``, ``!?！？``) ends a sentence by the rules; ``None`` when it
    does not or the start falls outside ``(a, b)``."""
    first = text[s]
    if first == "." and text[s - 1] in " \t" and _TOKENISED_DOT.match(text, s, b) is None:
        return None  # found by the loose last alternative of `_CANDIDATE` only: no candidate
    if first == "." and not _period_ends(text, s, e, caseless):
        return None
    if first == "．" and _LABEL_BEFORE_DOT.search(text, max(0, s - 2), s):
        return None  # "Ｑ．" / "A．" labels at a line start
    if first in "!?！？" and text[e - 1] in _CLOSERS and _SPACE_THEN_LOWER.match(text, e):
        return None  # '"Are you sure?" he asked.'
    if first in "!?" and _inside_token(text, s, e, a, b):
        return None  # "<!--", "a != b", "![図](a.png)", "p?id=3": markup, code and URLs
    if e < b and text[e].isspace():
        e = _SPACE_RUN_MATCH(text, e, b).end()
    return e if a < e < b else None


_NativeScan = Callable[
    [str, int, int, list[int]], tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]]
]


_NATIVE_SCAN: _NativeScan | None = native("scan_sentence_cuts")
_NATIVE_LINE_BREAKS: Callable[[str, int, int, list[int]], list[int] | None] | None = native("line_break_cuts")
_NATIVE_PERIODS: (
    Callable[
        [str, list[tuple[int, int]], int, int, bool, frozenset[str], frozenset[str]],
        tuple[list[int], list[tuple[int, int]]],
    ]
    | None
) = native("judge_periods")
_NATIVE_BREAKS: Callable[[str], tuple[list[int], list[int], list[int]]] | None = native("paragraph_breaks")
# `SentenceIndex._scan`'s work on one run of blocks in one C call: the scan, the plain "." candidates judged,
# the line breaks and the block starts merged (a Markdown file's paragraphs ask a sentence level many times)
_NATIVE_RUN: (
    Callable[
        [str, int, int, list[int], list[int], bool, frozenset[str], frozenset[str]],
        tuple[list[int], list[tuple[int, int]], list[tuple[int, int]]] | None,
    ]
    | None
) = native("scan_run")
_item_line_starts: Callable[[str, int, int], list[int]] = (
    native("item_line_starts") or _item_line_starts_python
)


class SentenceIndex:
    """The sentence starts and protected quotations of one text, computed once and bisected.

    Whether a position starts a sentence must not depend on which span is asked about (a window that
    begins inside ``「…」`` cannot see the opening bracket). Quotes never reach across a blank line and
    a blank line always ends a sentence, so the text is judged block by block (blocks end at blank
    lines), each block once, and only the blocks a query touches are ever scanned: the work stays
    linear in the text however many windows the packer asks about.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        n = len(text)
        breaks = _breaks(text)
        self._block_starts = breaks.block_starts
        self._item_breaks = breaks.item_breaks
        # only an ASCII full stop is judged by case (`_period_ends`): a text without one is never scanned for it
        self._caseless = "." in text and _is_caseless(text, 0, n)
        self._scanned = bytearray(len(self._block_starts) - 1)  # 1: block i has been scanned
        self._cuts: list[int] = []  # sentence starts of every scanned block, sorted
        self._quotes: list[tuple[int, int]] = []  # protected quotations of every scanned block, sorted
        self._scanned_end = 0  # the end of the last block scanned so far

    def _block_range(self, a: int, b: int) -> tuple[int, int]:
        starts = self._block_starts
        first = max(0, bisect_right(starts, a) - 1)
        last = max(first, bisect_left(starts, b) - 1)
        return first, min(last, len(starts) - 2)

    def _scan(self, first: int, last: int) -> None:
        """Scan the blocks ``first..last`` not scanned yet; each run of them in one pass.

        A run of blocks scans like each block alone: quotes are dropped at blank lines, and a cut that
        the run finds at a block start is the block boundary's own cut.
        """
        scanned, starts = self._scanned, self._block_starts
        i = scanned.find(0, first, last + 1)
        while i != -1:
            j = scanned.find(1, i, last + 1)
            j = last if j == -1 else j - 1
            a, b = starts[i], starts[j + 1]
            cuts, quotes = self._scan_run(i, j)
            if a >= self._scanned_end:  # the usual order: left to right
                self._cuts.extend(cuts)
                self._quotes.extend(quotes)
            else:  # scanned out of order (a window before text already scanned)
                self._insert(a, cuts, quotes)
            scanned[i : j + 1] = b"\x01" * (j + 1 - i)
            self._scanned_end = max(self._scanned_end, b)
            i = scanned.find(0, j + 1, last + 1)

    def _insert(self, a: int, cuts: list[int], quotes: list[tuple[int, int]]) -> None:
        """The cuts and quotations of a run of blocks starting at ``a``, scanned after blocks further on:
        spliced in where they belong (a run's cuts lie after ``a`` and up to its end, the quotations
        inside it, so they fall between those of the blocks before and after it). Sorting the whole list
        again for each run made a text whose blocks are asked about out of order quadratic (a 740k-
        character file took 0.2 s more in `markdown`)."""
        known = self._cuts
        k = bisect_right(known, a)
        if cuts and k < len(known) and known[k] == cuts[-1]:
            cuts = cuts[:-1]  # the run's end, a block start, found again (never, as the scans go)
        if cuts and k < len(known) and known[k] < cuts[-1]:
            self._cuts = sorted(set(known).union(cuts))  # not apart from the rest: merged (never, as above)
        else:
            known[k:k] = cuts
        spans = self._quotes
        q = bisect_left(spans, (a, -1))
        if quotes and q < len(spans) and spans[q] < quotes[-1]:
            self._quotes = sorted([*spans, *quotes])
        else:
            spans[q:q] = quotes

    def _scan_run(self, i: int, j: int) -> tuple[list[int], list[tuple[int, int]]]:
        """The sentence starts and quotations of blocks ``i..j``, the starts of the blocks after the first
        among them (a blank line ends a sentence): in one C call where the extension is built."""
        text, caseless, starts = self.text, self._caseless, self._block_starts
        a, b = starts[i], starts[j + 1]
        run = _NATIVE_RUN
        made = None
        if run is not None:
            made = run(text, a, b, starts, self._item_breaks, caseless, _ABBREVIATIONS, _MAY_END)
        if made is None:
            cuts, quotes = _scan_sentence_cuts(text, a, b, caseless)
            # the block starts after a (never 0), up to b unless b is the text's end
            inner = starts[i + 1 : j + 2] if b < len(text) else starts[i + 1 : j + 1]
            return (sorted({*cuts, *inner}) if inner else cuts), quotes
        cuts, quotes, pending = made
        if pending:  # what only Python judges
            judged = [cut for s, e in pending if (cut := _judged_end(text, s, e, a, b, caseless)) is not None]
            if judged:
                cuts = sorted({*cuts, *judged})
        return cuts, quotes

    def cuts(self, a: int, b: int) -> list[int]:
        """Sentence starts strictly inside ``(a, b)``."""
        if a >= b:
            return []
        self._scan(*self._block_range(a, b))
        cuts = self._cuts
        return cuts[bisect_right(cuts, a) : bisect_left(cuts, b)]

    def first_cut(self, a: int, b: int) -> int | None:
        """The first sentence start strictly inside ``(a, b)`` (``None``: none), scanning no more than the
        block ``a`` lies in: the start of the block after it is a sentence start (a blank line ends a
        sentence), so the first cut is in that block or at its end. `cuts` over a long span scans and
        copies all of it for the one position."""
        if a >= b:
            return None
        first, _ = self._block_range(a, a + 1)
        self._scan(first, first)
        cuts = self._cuts
        k = bisect_right(cuts, a)
        if k < len(cuts) and cuts[k] < b:
            return cuts[k]
        return None

    def inside_quote(self, position: int) -> bool:
        """True when ``position`` lies inside a protected quotation (after its opener, up to its closer)."""
        self._scan(*self._block_range(position, position + 1))
        spans = self._quotes
        k = bisect_left(spans, (position, -1)) - 1
        return k >= 0 and spans[k][0] < position <= spans[k][1]


@lru_cache(maxsize=8)
def sentence_index(text: str) -> SentenceIndex:
    """The (cached) `SentenceIndex` of ``text``: the last few texts are kept, like the Markdown outline."""
    return SentenceIndex(text)


def first_sentence_cut(text: str, a: int, b: int) -> int | None:
    """The first position strictly inside ``(a, b)`` where a new sentence starts (`sentence_cuts`' first,
    without scanning the rest of the span); ``None`` when there is none."""
    return sentence_index(text).first_cut(a, b)


def sentence_cuts(text: str, a: int = 0, b: int | None = None) -> list[int]:
    """Positions strictly inside ``(a, b)`` where a new sentence starts (after any whitespace).

    The answer is the whole text's: a window never changes whether a position starts a sentence.
    """
    b = len(text) if b is None else b
    return sentence_index(text).cuts(a, b)


def check_sentence_mode(mode: object) -> str:
    """``mode`` when it is one of `SENTENCE_MODES`, else a `ConfigError` naming them."""
    if mode not in SENTENCE_MODES:
        raise ConfigError(f"sentences must be one of {', '.join(SENTENCE_MODES)}, not {mode!r}")
    return str(mode)


def sentence_spans(text: str, mode: str = "auto") -> list[tuple[int, int]]:
    """``(start, end)`` of every sentence, whitespace at either side excluded.

    ``mode="lines"``: every non-blank line is one sentence (`line_spans`)."""
    if check_sentence_mode(mode) == "lines":
        return line_spans(text)
    return _spans_from_cuts(text, sentence_cuts(text))


def line_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every non-blank line, whitespace at either side excluded (``"\\n"`` ends a line,
    as for the ``line`` level; a ``"\\r"`` before it is whitespace; U+2028 and friends do not)."""
    spans = []
    start = 0
    n = len(text)
    while start < n:
        end = text.find("\n", start)
        end = n if end == -1 else end
        a, b = start, end
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            spans.append((a, b))
        start = end + 1
    return spans


def paragraph_cuts(text: str, a: int = 0, b: int | None = None) -> list[int]:
    """Positions inside ``(a, b)`` where a paragraph starts: blank lines and item-marker lines.

    Found once per text (cached) and bisected, so the answer never depends on the window.
    """
    cuts = _breaks(text).paragraphs
    return list(cuts[bisect_right(cuts, a) : bisect_left(cuts, len(text) if b is None else b)])


class _Breaks(NamedTuple):
    paragraphs: tuple[int, ...]  # where paragraphs start: blank lines and item lines (the break's start)
    block_starts: list[int]  # 0, the first character after each blank-line run, len(text)
    item_breaks: list[int]  # the line breaks (their start) that come right before an item line


_START = cast(Callable[[re.Match[str]], int], re.Match.start)
# A run of whitespace: the stdlib engine's ``\s`` is ``str.isspace``.
_SPACE_RUN_MATCH = cast(Callable[[str, int, int], re.Match[str]], re.compile(r"\s*").match)
# Candidate sentence ends whose first character needs more than the pattern to decide.
_JUDGED = frozenset(".．!?！？")


def _chars_at(text: str, positions: list[int]) -> tuple[str, ...]:
    """``text[p]`` for every position, in one C-level call."""
    if len(positions) > 1:
        chars: tuple[str, ...] = itemgetter(*positions)(text)
        return chars
    return tuple(text[p] for p in positions)


_END = cast(Callable[[re.Match[str]], int], re.Match.end)
_GROUP_END = cast(Callable[[re.Match[str]], int], methodcaller("end", 1))


_new_breaks = cast(
    Callable[[type[_Breaks], tuple[tuple[int, ...], list[int], list[int]]], _Breaks], tuple.__new__
)


@lru_cache(maxsize=8)
def _breaks(text: str) -> _Breaks:
    """Paragraph breaks and the blocks between blank lines, from one scan of the text (cached): in C where
    kireme's extension is built (`kireme._speedups.paragraph_breaks`), else `_breaks_python`."""
    if _NATIVE_BREAKS is not None:
        starts, blocks, items = _NATIVE_BREAKS(text)
        # the named tuple made as a tuple of its class, without its Python-level __new__ (once per text)
        return _new_breaks(_Breaks, (tuple(starts), blocks, items))
    return _breaks_python(text)


def _breaks_python(text: str) -> _Breaks:
    """`_breaks` in Python: the reference. The offsets are read off the matches in bulk (``map`` of the
    match methods), with no Python code run per line or per break."""
    n = len(text)
    matches = list(_FAST_PARAGRAPH_BREAK.finditer(text))
    starts = list(map(_START, matches))
    if "\r" in text:  # a break's start is the "\r" of its "\r\n"
        starts = [p - 1 if p and text[p - 1] == "\r" else p for p in starts]
    # an item line's break is the "\n" alone; a blank line's lookahead group ends where its next block starts
    lengths = list(map(sub, map(_END, matches), map(_START, matches)))
    items = list(compress(starts, map(eq, lengths, repeat(1))))
    after = [e for e in map(_GROUP_END, matches) if 0 < e < n]  # -1: no blank line
    blocks = [0, *dict.fromkeys(after), n]
    return _Breaks(tuple(starts), blocks, items)


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every paragraph, whitespace at either side excluded."""
    return _spans_from_cuts(text, paragraph_cuts(text))


def sentence_spans_in(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """``(start, end)`` of the sentences inside ``[a, b)``, whitespace at either side excluded, by the whole
    text's rules (a window never changes where a sentence starts); the first and last may be partial."""
    return _spans_from_cuts(text, sentence_cuts(text, a, b), a, b)


def _spans_from_cuts(text: str, cuts: list[int], a: int = 0, b: int | None = None) -> list[tuple[int, int]]:
    spans = []
    bounds = [a, *cuts, len(text) if b is None else b]
    for s, e in itertools.pairwise(bounds):
        # a line break or two steps past; a longer run of white space (a text whose hidden parts are
        # blanked out: `kireme.assemble`) is skipped at C speed (``\s`` and `str.isspace` agree)
        if s < e and text[s].isspace():
            s += 1
            if s < e and text[s].isspace():
                first = _NOT_SPACE.search(text, s, e)
                s = e if first is None else first.start()
        if e > s and text[e - 1].isspace():
            e -= 1
            if e > s and text[e - 1].isspace():
                e = s + len(text[s:e].rstrip())
        if s < e:
            spans.append((s, e))
    return spans


_NOT_SPACE = re.compile(r"\S")
