"""Recognise a heading line in plain text, so that no chunk ends with a heading cut off from its body."""

from __future__ import annotations

import re
from collections.abc import Callable

from kireme._native import native
from kireme.text.markdown import MARKDOWN_FORMATS
from kireme.text.marks import BULLETS, CLAUSE_MARKS, CLOSERS, FULL_STOPS, TERMINATORS
from kireme.text.openers import UNDERLINE_MARKS
from kireme.text.paragraphs import ends_sentence
from kireme.text.patterns import lazy_re, lazy_regex

_MARKDOWN_HEADING = lazy_regex(r"#{1,6}[ \t]")
# The word that closes a notice's 記 block (``以上``, ``以　上``) and the spaces after it, alone on its line
_CLOSING_TEXT = "以[ \u3000]*上[ \u3000]*"
_CLOSING = lazy_regex(_CLOSING_TEXT + "$")
# An item's start that no heading has: the numbered items of rules (``①``, ``⑴``, ``⒈``, ``❶``) and the
# 号 of laws and rules (``一　嘱託社員``: kanji numerals, then a space), whose short lines have no full stop
_ITEM_START = "[\u2460-\u249b\u3251-\u325f\u32b1-\u32bf\u2776-\u2793]|[一二三四五六七八九十]+[\u3000 ]"
_BULLET = lazy_regex(rf"[{BULLETS}\-*+>|]|{_ITEM_START}")
# A line ending in one of these is prose or a list entry, not a title.
_PROSE_END = TERMINATORS + FULL_STOPS + CLAUSE_MARKS + "…"
MAX_HEADING_CHARS = 40

# `is_heading_line` as one pattern, matched on a line that ends at its last non-space character (the stdlib
# engine's ``\s`` is ``str.isspace``, as ``strip`` is): leading space, then a Markdown heading, or a
# line of at most MAX_HEADING_CHARS characters that starts with no bullet nor ``</``, holds a letter or a
# digit, and whose last character before any closing brackets is no prose punctuation. tests/test_core_guards.py checks the two agree.
_CLOSER_CLASS = re.escape(CLOSERS)
_BULLET_CLASS = re.escape(BULLETS + "-*+>|")
# The closing word alone on its line: it ends what is above it
_CLOSING_WORD = _CLOSING_TEXT + "\\Z"
_HEADING_LINE = lazy_re(
    r"\s*(?:#{1,6}[ \t]"
    rf"|(?![{_BULLET_CLASS}]|</|{_ITEM_START}|{_CLOSING_WORD})(?=\S.{{0,{MAX_HEADING_CHARS - 1}}}\Z)(?=.*?[^\W_])"
    rf"(?:.*[^{re.escape(_PROSE_END)}{_CLOSER_CLASS}])?[{_CLOSER_CLASS}]*\Z)",
    re.DOTALL,
)
# A title with a full stop (`titled_paragraph_line`): at most MAX_HEADING_CHARS characters after its leading
# space, no bullet, item number or ``</`` first, a letter or a digit first, a full stop right after a letter
# or a digit last, no prose punctuation before it but a period inside a word or number (``2.2``, ``U.S``)
# and none of the marks of code (``= < > { } ` ``: ``const a = { /* ...``): one sentence of a few words
_NOT_IN_TITLE = "=<>{}`"
_TITLE_WITH_STOP = lazy_re(
    rf"\s*(?![{_BULLET_CLASS}]|</|{_ITEM_START})(?=\S.{{0,{MAX_HEADING_CHARS - 1}}}\Z)[^\W_]"
    rf"(?:[^{re.escape(_PROSE_END + _NOT_IN_TITLE)}]|\.(?=\S))*(?<=[^\W_])[.．]\Z",
    re.DOTALL,
)
# A section number, then a space: ``2.1 ``, ``3. ``, ``１．２ `` (`run_in_title_start`)
_SECTION_NUMBER = lazy_re(r"\s*[0-9０-９]{1,3}(?:[.．][0-9０-９]{1,3})*[.．]?[ \t\u3000]")
# What pads a line: no text (`_ends_line`)
_LINE_PAD = " \t\u3000\r"


def next_line_span(text: str, pos: int) -> tuple[int, int]:
    """Where the first non-blank line from ``pos`` on starts and ends (at its line feed or the text's end);
    ``(len(text), len(text))`` when there is none."""
    start = pos
    while start < len(text) and text[start].isspace():
        start += 1
    stop = text.find("\n", start)
    return start, len(text) if stop < 0 else stop


def line_after(text: str, pos: int) -> str:
    """The first non-blank line from ``pos`` on (without its line break; ``""`` when there is none)."""
    start, end = next_line_span(text, pos)
    return text[start:end]


def line_before(text: str, pos: int) -> str:
    """The last non-blank line that ends at or before ``pos`` (without its line break)."""
    end = pos
    while end > 0 and text[end - 1].isspace():
        end -= 1
    start = text.rfind("\n", 0, end) + 1
    return text[start:end]


# What may stand right before a speaker's name on a chat or transcript line (`speaker_turn`)
_NAME_BOUNDS = "])】）」>"


def speaker_turn(line: str) -> bool:
    """Whether a (stripped) line is a whole turn of a chat or a transcript: a speaker's name — the word right
    before a colon, letters last, no digit in it, not ``第…`` — then the colon and something said on the
    same line (``田中：了解です``, ``[10:17] Yamada: thanks``). Short and without a full stop, such a line
    looked like a heading, so no chunk ended with it and the next speaker's name was pulled in, cut from
    what they said. ``第1条：目的``, ``Step 1: Install`` and ``Chapter 2: Results`` stay headings.
    (`kireme._speedups` has the same rule in C: `speaker_turn`.)"""
    return speaker_name(line) is not None


def speaker_name(line: str) -> str | None:
    """The name of the speaker whose whole turn a (stripped) line is (`speaker_turn`): the word right
    before the colon (``Yamada`` of ``[10:17] Yamada: thanks``); ``None`` when the line is no turn.
    (`kireme._speedups` has the same rule in C: `speaker_name`.)"""
    colon = speaker_colon(line)
    return None if colon is None else line[_name_start(line, colon) : colon]


def _name_start(line: str, colon: int) -> int:
    """Where the word right before the colon at ``colon`` starts (after a space or one of `_NAME_BOUNDS`)."""
    s = colon
    while s > 0 and not line[s - 1].isspace() and line[s - 1] not in _NAME_BOUNDS:
        s -= 1
    return s


def speaker_colon(line: str) -> int | None:
    """Where in a (stripped) line the colon after a speaker's name stands (`speaker_name`), else ``None``."""
    for p, char in enumerate(line):
        if char not in ":：" or p == 0 or not line[p - 1].isalpha():
            continue
        if not any(c.isalnum() for c in line[p + 1 :]):
            continue
        name = line[_name_start(line, p) : p]
        if not name.startswith("第") and not any(c.isdigit() for c in name):
            return p
    return None


def after_speaker_label(text: str, pos: int) -> bool:
    """Whether ``pos`` is right after the colon that ends a speaker's name at the start of its line, in a
    dialogue (`in_dialogue`: ``Bob Lee:|`` of ``Bob Lee: yes, and…`` under ``Alice: thanks``): a cut there
    leaves the name alone in a chunk."""
    if pos <= 0 or text[pos - 1] not in ":：":
        return False
    start = text.rfind("\n", 0, pos) + 1
    while start < pos and text[start].isspace():
        start += 1
    stop = text.find("\n", pos)
    end = len(text) if stop < 0 else stop
    line = text[start:end].rstrip()
    # in a dialogue only: ``Note: …`` alone over a body may be cut there as any clause
    return speaker_colon(line) == pos - 1 - start and in_dialogue(text, start, end)


# The labels of a FAQ's questions and answers (``Q: …?`` / ``A: …``): no speaker's name
FAQ_LABELS = frozenset(
    [
        "Q",
        "A",
        "q",
        "a",
        "Ｑ",
        "Ａ",
        "Question",
        "Answer",
        "QUESTION",
        "ANSWER",
        "質問",
        "回答",
        "問",
        "問い",
        "答",
        "答え",
    ]
)


def speaker_line(line: str) -> bool:
    """A (stripped) line that is a speaker's turn whose name is no FAQ label."""
    name = speaker_name(line)
    return name is not None and name not in FAQ_LABELS


def in_dialogue(text: str, start: int, end: int) -> bool:
    """Whether the line ``text[start:end]`` is a speaker's whole turn in a dialogue: a turn
    (`speaker_name`, no FAQ label) next to another one — the nearest non-blank line above or below it
    is a turn too (``[10:17] Yamada: thanks`` over ``[10:31] Kobayashi: found it…``). Short and without a
    full stop, such a line looks like a heading; one alone is read as one (``Chapter Three: The Return``,
    ``はじめに：本書について`` over their body). (`kireme._speedups` has the same rule in C.)"""
    if not speaker_line(text[start:end].strip()):
        return False
    if speaker_line(line_before(text, start).strip()):
        return True
    below = line_after(text, end)
    return bool(below) and speaker_line(below.strip())


def prose_headings(fmt: str, sentences: str) -> bool:
    """Whether a short line without a full stop may be read as a heading kept with its body, in a document
    of format ``fmt`` chunked in the sentence mode ``sentences``. Not where the user said every line is a
    sentence (``"lines"``: a chat log, a transcript, one sentence a line) in a text whose headings nothing
    marks: there ``the office moves in may this year`` is a sentence, and as a "heading" it took the start
    of the next line with it, cut in the middle though each line fit. Markdown's headings are parsed, and a
    PDF's hard-wrapped lines keep the heuristic for its titles."""
    return sentences != "lines" or fmt in MARKDOWN_FORMATS or fmt == "pdf"


def stage_direction(text: str, start: int, end: int) -> bool:
    """Whether the line ``text[start:end]`` is a stage direction in a transcript: wholly in brackets
    (``（一同うなずく）``, ``(laughter)``) under a speaker's turn (`speaker_line`, the nearest non-blank line
    above). Short and without a full stop, it looked like a heading — the caption of an article
    (``（目的）`` over ``第1条``) is one — so no chunk ended with it and the next speaker's name was cut from
    what they said. (`kireme._speedups` has the same rule in C.)"""
    line = text[start:end].strip()
    if len(line) < 3 or line[0] not in "（(" or line[-1] not in "）)":
        return False
    return speaker_line(line_before(text, start).strip())


# The number of a list item that a heading may carry too (``（1）目的``, ``2. Scope``): 1 parenthesised
# (a number, a letter, a katakana or a kanji numeral in ``（）`` or ``()``), 2 a number and a mark
# (``1.``, ``２．``, ``3)``, not ``3.14``). (`kireme._speedups` reads the same in C: `enumerator_kind`.)
_ENUMERATOR = lazy_re(
    r"\s*(?:([（(])[0-9０-９a-zA-Zａ-ｚＡ-Ｚア-ンｱ-ﾝ一二三四五六七八九十]{1,3}[）)]"
    r"|[0-9０-９]{1,3}[.．)）](?![0-9０-９]))"
)


def _enumerator_kind(line: str) -> int:
    """1 or 2 where ``line`` opens with a list item's number (`_ENUMERATOR`), 0 where it does not."""
    found = _ENUMERATOR.match(line)
    return 0 if found is None else 1 if found.group(1) else 2


def in_list(text: str, start: int, end: int) -> bool:
    """Whether the line ``text[start:end]``, opening with a number (``（2）その他会社が指定する日``), is an item of
    a list: the nearest non-blank line above or below it opens with a number of the same kind. Short and
    without a full stop, such a line looks like a heading, and the list was cut from what introduced it to
    go with the next article; a numbered heading has its body next to it (``（1）目的`` over ``本規程は…。``).
    (`kireme._speedups` has the same rule in C.)"""
    kind = _enumerator_kind(text[start:end])
    if not kind:
        return False
    return kind in (_enumerator_kind(line_before(text, start)), _enumerator_kind(line_after(text, end)))


def is_heading_line(line: str) -> bool:
    """Markdown ``#`` headings, and short lines without closing punctuation (``第2条（宿泊費）``) that hold a
    letter or a digit and are no closing tag, nor a bullet or numbered item (``①　…``, ``一　嘱託社員``).
    (In a text, a speaker's turn in a dialogue is none either, nor a stage direction under one: `in_dialogue`
    and `stage_direction`, asked by `ends_with_heading`.)"""
    line = line.strip()
    if not line:
        return False
    if _MARKDOWN_HEADING.match(line):
        return True
    if len(line) > MAX_HEADING_CHARS:
        return False
    if line.startswith("</") or not any(c.isalnum() for c in line) or _CLOSING.match(line):
        return False  # a closing fence or tag (```, </Note>), a brace: what it closes is above it
    body = line.rstrip(CLOSERS) or line  # 「はい。」 ends in a full stop inside its quote: prose
    if body[-1] in _PROSE_END:
        return False
    return not _BULLET.match(line)


# A lead-in line (`is_lead_in_line`) ends with one of these (the line test decides)
_LEAD_IN_MARKS = ":：?？"
_LEAD_IN_LINE = lazy_re(r"(?=.*?[^\W_]).*[:：?？]\s*\Z", re.DOTALL)


def is_lead_in_line(line: str) -> bool:
    """A line that introduces what follows it, so no chunk ends with it while more follows, as none ends
    with a heading: one that ends with a colon (``日当の上限は次のとおりです：``, ``limits below:``, ``・対象者：``)
    or a question (``Q: パスワードを忘れました。どうすればよいですか？`` over its answer), with a letter or a
    digit in it. Any length, a bullet first too. (A sentence announcing a list, ``次のとおりとする。``, was
    tried as one too and left out: its words drew keyword searches to the table or code it went with.)"""
    return _LEAD_IN_LINE.match(line) is not None


# The closing word of a notice's 記 block alone on the next non-blank line (`_ends_with_heading_python`)
_CLOSING_NEXT = lazy_re(r"\s*" + _CLOSING_TEXT + r"\r?(?:\n|\Z)")


# The characters a title's underline (and overline) may be made of: reStructuredText's recommended
# adornments, which setext titles (``=``, ``-``) share. Not ``.`` or ``:`` (dot leaders, directives), nor
# a backtick (a code fence's).
ADORNMENTS = "=" + UNDERLINE_MARKS
ADORNMENT_PAD = " \t\r"
# a line that ends so is a sentence over a rule, not a title (a question or an exclamation may be one)
_NO_TITLE_END = ".。．,、，;；…"


def adornment(text: str, start: int, end: int) -> str:
    """The character the line ``text[start:end]`` repeats when it is a title's underline or overline (three
    or more of one adornment character from its first column, trailing blanks aside), else ``""``."""
    line = text[start:end].rstrip(ADORNMENT_PAD)
    if len(line) < 3 or line[0] not in ADORNMENTS or line.strip(line[0]):
        return ""
    return line[0]


def underlined_title(text: str, start: int) -> bool:
    """Whether the line starting at ``start`` is a title underlined on the next line, as reStructuredText
    and setext write a section title in plain text (``Hotels`` over ``~~~~~~``, an overline above it too):
    not indented, a letter or a digit in it, no full stop, comma or semicolon at its end (a sentence over a
    rule), an underline of one adornment character at least as long as the title, and a blank line, the
    text's start or an overline of the same character right above it. The underline is no sentence
    punctuation and the title may be long, so the prose heuristic read neither as a heading, and a chunk
    ended with the next section's title and underline."""
    title_end = text.find("\n", start)
    if title_end < 0 or title_end + 1 >= len(text) or text[title_end + 1] not in ADORNMENTS:
        return False  # most lines have no underline: the next line's first character tells
    under_end = text.find("\n", title_end + 1)
    under_end = len(text) if under_end < 0 else under_end
    mark = adornment(text, title_end + 1, under_end)
    title = text[start:title_end].rstrip(ADORNMENT_PAD)
    if not mark or len(text[title_end + 1 : under_end].rstrip(ADORNMENT_PAD)) < len(title):
        return False
    if not title or title[0].isspace() or title[-1] in _NO_TITLE_END or not any(c.isalnum() for c in title):
        return False
    if start == 0:
        return True
    above_start = text.rfind("\n", 0, start - 1) + 1
    above = text[above_start : start - 1].rstrip(ADORNMENT_PAD)
    if not above.strip():
        return True
    return adornment(text, above_start, start - 1) == mark and len(above) >= len(title)


def _in_underlined_title(text: str, start: int, end: int) -> bool:
    """Whether the line ``text[start:end]`` (``end`` after its last non-space character) is an underlined
    title (`underlined_title`), its underline, or its overline: no chunk ends with one."""
    mark = adornment(text, start, end)
    if not mark:
        return underlined_title(text, start)
    if start > 0 and underlined_title(text, text.rfind("\n", 0, start - 1) + 1):
        return True  # the underline of the title above it
    # the overline of the title below it (`underlined_title` holds the line above a title to its mark)
    below = text.find("\n", end)
    return below >= 0 and underlined_title(text, below + 1)


def _ends_with_heading_python(text: str, pos: int) -> bool:
    """True when a cut at ``pos`` would leave a heading line or a lead-in line at the end of a chunk.

    The same answer as ``is_heading_line(line) or is_lead_in_line(line)`` for ``line_before(text, pos)`` at
    a line end, without copying the line.
    The packer asks it at every tentative chunk end, so where kireme's C extension is built `ends_with_heading`
    is its C twin (`kireme._speedups.ends_with_heading`, the same answers: tests/test_speedups.py).
    """
    if pos <= 0 or pos > len(text) or ("\n" not in text[pos - 1 : pos + 1] and not _ends_line(text, pos)):
        return False
    if _CLOSING_NEXT.match(text, pos):
        return True  # ``以上`` closes the block above it: no chunk ends before it (it would open the next)
    end = pos
    while end > 0 and text[end - 1].isspace():
        end -= 1
    if end <= 0:
        return False
    start = text.rfind("\n", 0, end) + 1
    if _in_underlined_title(text, start, end):
        return True
    if _HEADING_LINE.match(text, start, end) is not None:
        line = text[start:end].strip()
        if _MARKDOWN_HEADING.match(line) is not None:
            return True
        return not (
            in_dialogue(text, start, end) or in_list(text, start, end) or stage_direction(text, start, end)
        )
    if text[end - 1] in ".．" and titled_paragraph_line(text, start, end):
        return not in_list(text, start, end)  # no colon in it: never a speaker's turn
    return text[end - 1] in _LEAD_IN_MARKS and _LEAD_IN_LINE.match(text, start, end) is not None


def _opens_paragraph(text: str, start: int) -> bool:
    """Whether the line starting at ``start`` is the text's first or has a blank line above it."""
    above = start - 2  # ``text[start - 1]`` is the line feed that ends the line above
    while above >= 0 and text[above] in _LINE_PAD:
        above -= 1
    return start <= 0 or above < 0 or text[above] == "\n"


def titled_paragraph_line(text: str, start: int, end: int) -> bool:
    """Whether the line ``text[start:end]`` (``end`` after its last non-space character) is the title of the
    paragraph it opens, written with a full stop: a few words of one sentence (`_TITLE_WITH_STOP`:
    ``Cell culture.``, ``2.2 Requests.``) on the first line of a paragraph (a blank line or nothing above
    it) whose body goes on, on the very next line. A paper's or a specification's run-in section titles
    are written so; with the stop they looked like prose, and a chunk ended with ``Samples.`` while what it
    titles began the next one. A one-line sentence over the rest of its paragraph reads the same way: the
    packer treats the line as a soft heading (`ends_with_titled_line`).
    (`kireme._speedups` has the same rule in C: `titled_line`.)"""
    if _TITLE_WITH_STOP.match(text, start, end) is None:
        return False
    if not _opens_paragraph(text, start):
        return False
    below = end
    while below < len(text) and text[below] in _LINE_PAD:
        below += 1
    if below >= len(text) or text[below] != "\n":
        return False
    below += 1
    while below < len(text) and text[below] in _LINE_PAD:
        below += 1
    return below < len(text) and text[below] != "\n"


def ends_with_titled_line(text: str, pos: int) -> bool:
    """Whether the text before ``pos`` (trailing whitespace aside) ends with a paragraph's title written with
    a full stop (`titled_paragraph_line`). Such a line is a heading, but a soft one, as a lead-in: where
    its body's first sentence does not fit with it, it goes alone rather than take the start of that
    sentence cut between words (``Chunking guide.`` over ``Split at``), since it may as well be a one-line
    sentence over the rest of its paragraph."""
    end = pos
    while end > 0 and text[end - 1].isspace():
        end -= 1
    if end <= 0 or text[end - 1] not in ".．":
        return False
    return titled_paragraph_line(text, text.rfind("\n", 0, end) + 1, end)


def run_in_title_start(text: str, pos: int) -> int:
    """Where the paragraph starts when ``pos`` falls right after its run-in title: a numbered title with a
    full stop (a section number first, then as `titled_paragraph_line` reads one: ``2.1 Sessions.``,
    ``3. Results.``) that opens the paragraph's first line, whose body goes on, on the same line
    (``2.1 Sessions. A session starts when…``); -1 otherwise. A topic cut there (`kireme.semantic`) left
    the title alone as a chunk of a dozen characters. Without the number a short first sentence is as
    likely prose (``Answers for staff who travel abroad.``), and its topic cut is left where it is."""
    start = text.rfind("\n", 0, pos) + 1
    end = pos
    while end > start and text[end - 1] in _LINE_PAD:
        end -= 1
    rest = pos
    while rest < len(text) and text[rest] in _LINE_PAD:
        rest += 1
    if (
        end <= start
        or rest >= len(text)
        or text[rest] == "\n"
        or _TITLE_WITH_STOP.match(text, start, end) is None
        or _SECTION_NUMBER.match(text, start, end) is None
    ):
        return -1
    if not _opens_paragraph(text, start):
        return -1
    while start < end and text[start].isspace():
        start += 1
    return start


ends_with_heading: Callable[[str, int], bool] = native("ends_with_heading") or _ends_with_heading_python


def at_line_edge(text: str, pos: int) -> bool:
    """Whether a cut at ``pos`` falls between lines: at the text's start, right after a line feed, or at a
    line's end (blanks before the line feed aside), not inside a line."""
    return pos <= 0 or text[pos - 1] == "\n" or _ends_line(text, pos)


def lead_in_line_start(text: str, pos: int, wrapped: bool = True) -> int:
    """Where the line the text before ``pos`` ends with (trailing whitespace aside) starts, when it is a
    lead-in (`is_lead_in_line`: a colon or a question mark at its end) and no ``#`` heading; -1 otherwise.
    ``wrapped``: prose, where the lead-in takes the lines of a hard-wrapped sentence it ends along
    (`lead_in_sentence_start`); not code, whose block openers (``elif x:``) are read as lead-ins too.
    Where `ends_with_heading` is true, such a line is a lead-in, not a heading: the packer lets a lead-in
    end a chunk when what it introduces fits a chunk alone but not with it (a code block is not cut to go
    with its ``To check a claim:``); a heading never does."""
    end = pos
    while end > 0 and text[end - 1].isspace():
        end -= 1
    if end <= 0 or text[end - 1] not in _LEAD_IN_MARKS:
        return -1
    start = text.rfind("\n", 0, end) + 1
    line = text[start:end]
    if _MARKDOWN_HEADING.match(line.lstrip()) is not None or not is_lead_in_line(line):
        return -1
    return lead_in_sentence_start(text, start) if wrapped else start


# A lead-in line may end a hard-wrapped sentence (``…を使用すると、`` over ``コンパイルエラーが発生します:``,
# ``…are given in the`` over ``following table:``): the lines above it that it goes on from go with it, up
# to this many of them (a longer run keeps the line alone, as before)
LEAD_IN_LINES_MAX = 8
_INDENT = " \t\u3000"  # what may open a line before its first letter (`_opens_with_letter`)


def _ends_a_sentence(text: str, start: int, end: int) -> bool:
    """Whether the line ``text[start:end]`` ends a sentence (`kireme.text.paragraphs.ends_sentence`: a full
    stop, question or exclamation mark, or a closing Japanese quote, then closing marks) or a lead-in of its
    own (a colon, then closing marks)."""
    line = text[start:end]
    return ends_sentence(line) or line.rstrip().rstrip(CLOSERS).endswith((":", "："))


def _opens_with_letter(text: str, start: int, end: int) -> bool:
    """Whether the line ``text[start:end]`` starts (after its indent) with a letter: prose, not an item
    (``・``, ``1.``, ``（1）``, ``-``), a heading mark, markup or a table row."""
    while start < end and text[start] in _INDENT:
        start += 1
    return start < end and text[start].isalpha()


def lead_in_sentence_start(text: str, start: int) -> int:
    """Where the sentence that the lead-in line starting at ``start`` ends begins, by whole lines: the lines
    right above it that it goes on from — prose lines (a letter first) that end no sentence, in one
    paragraph — up to `LEAD_IN_LINES_MAX` lines above it; ``start`` itself where there are none or more. The packer
    moves a lead-in to the chunk of what it introduces: a hard-wrapped sentence moved from its last line
    was cut in two (``…を使用すると、`` | ``コンパイルエラーが発生します:``). (`kireme._speedups` has the
    same rule in C.)"""
    line = start
    for moved in range(LEAD_IN_LINES_MAX + 1):
        if line <= 0 or not _opens_with_letter(text, line, len(text)):
            return line
        above = text.rfind("\n", 0, line - 1) + 1
        if not _opens_with_letter(text, above, line - 1) or _ends_a_sentence(text, above, line - 1):
            return line
        if moved == LEAD_IN_LINES_MAX:
            break
        line = above
    return start  # a longer run of lines than a lead-in has: the line alone


class HeadingEnds:
    """`ends_with_heading` for a text whose headings are known (parsed Markdown): a cut leaves a heading
    line at the end of a chunk when the text before it, trailing whitespace aside, ends where a heading
    line ends (``ends``; the lead-in lines outside code and tables too, `kireme.text.leads.kept_line_ends`).
    A ``# comment`` in a code block is no heading. Callable as ``(text, pos)`` like
    `ends_with_heading`; the packer's C loop reads ``ends`` itself (`kireme._speedups.merge_run`).
    ``find`` finds them, when they are first read (a document that fits one chunk whole is never cut, and
    never asks)."""

    __slots__ = ("_ends", "_find", "text")

    def __init__(self, text: str, find: Callable[[], frozenset[int]]) -> None:
        self.text = text
        self._find = find
        self._ends: frozenset[int] | None = None

    @property
    def ends(self) -> frozenset[int]:
        """Where the heading and lead-in lines end, found when first read."""
        if self._ends is None:
            self._ends = self._find()
        return self._ends

    def __call__(self, _text: str, pos: int) -> bool:
        text = self.text
        while pos > 0 and text[pos - 1].isspace():
            pos -= 1
        return pos in self.ends


def _ends_line(text: str, pos: int) -> bool:
    """The cut sits at a line end (possibly after trailing spaces)."""
    i = pos - 1
    while i >= 0 and text[i] in " \t\u3000\r":
        i -= 1
    if i >= 0 and text[i] == "\n":
        return True
    j = pos
    while j < len(text) and text[j] in " \t\u3000\r":
        j += 1
    return j < len(text) and text[j] == "\n"
