"""SubRip (``.srt``) and WebVTT (``.vtt``) subtitles and transcripts as text that reads as what was said.

Read as plain text, a subtitle file is mostly numbers and timings: a cue number or a timing line stood
alone as a "sentence", ended chunks, and a semantic chunker compared ``1`` with ``00:00:02,150 -->``.
Loaded here, the document's text is what was said, one cue per line; a new speaker (a WebVTT voice tag
``<v Bob>``, or a name and a colon at the start of a cue: ``Priya Patel: …``) starts a new paragraph, so
the chunkers keep a turn together and never cut a name from its words. Where each cue lies in time is
not lost: every cue is a ``"time"`` region (its start, ``"00:01:02.500"``), so each chunk carries the
``time`` it starts at (and ``times``, every cue start it holds), as PDF chunks carry their pages.

WebVTT's ``NOTE``, ``STYLE`` and ``REGION`` blocks and cue settings are left out; inline tags
(``<i>``, ``<c.yellow>``, ``<00:00:01.000>``) are dropped, their text kept; HTML entities are read.
"""

from __future__ import annotations

import html
import logging
import re

from kireme.document import Document, Region
from kireme.errors import LoadError
from kireme.load.encoding import decode_file

logger = logging.getLogger(__name__)

# A timing line: a start, the arrow (``->`` too, a common slip), an end (SubRip uses a comma before the
# milliseconds, WebVTT a dot; hours are optional in WebVTT, milliseconds in hand-written files), then
# WebVTT's cue settings
_TIMING = re.compile(
    r"^\s*((?:\d+:)?\d{1,2}:\d{2}(?:[,.]\d{1,3})?)\s*-{1,2}>\s*((?:\d+:)?\d{1,2}:\d{2}(?:[,.]\d{1,3})?)(?:[ \t].*)?$"
)
# WebVTT's blocks that hold no cue text: a comment, a style sheet, a region definition (after a blank line)
_NON_CUE_BLOCK = re.compile(
    r"(?:\A|\n[ \t]*\n)(?:NOTE|STYLE|REGION)(?=[ \t\n]|\Z)[^\n]*(?:\n[^\n]*\S[^\n]*)*"
)
# SubRip's override tags of ASS renderers (``{\an8}``, ``{\i1}``): no text
_ASS_TAG = re.compile(r"\{\\[^}]*\}")
# A speaker's name at the start of a cue: up to three words before a colon, no sentence mark in them
_NAME_AT_START = re.compile(r"([^\s:：。、，,.!?！？][^:：。、，,!?！？\n]{0,29}?)[ \t]*[:：][ \t]*(?=\S)")
_NAME_WORDS = 3
_CJK = "\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_CJK_SEAM = re.compile(rf"(?<=[{_CJK}]) (?=[{_CJK}])")
_VOICE = re.compile(r"<v(?:\.[^ \t>]*)?[ \t]+([^>]*)>")
_TAG = re.compile(r"</?[A-Za-z0-9.:_-]+(?:[ \t][^>]*)?>|<\d+:\d{2}(?::\d{2})?[.,]\d{3}>")
_BLOCK_BREAK = re.compile(r"\n[ \t]*\n")


def load_subtitles(data: bytes, id: str, format: str, *, encoding: str | None = None) -> Document:
    """A ``.srt`` or ``.vtt`` file (``format``: ``"srt"`` or ``"vtt"``) as what was said (above), with a
    ``"time"`` region per cue. A file without a single timing line is a `LoadError`: it is not subtitles."""
    decoded = decode_file(data, id, encoding, logger)
    raw = decoded.text.replace("\r\n", "\n").replace("\r", "\n")
    cues = _cues(raw)
    if not cues and raw.strip() and not (format == "vtt" and raw.lstrip().startswith("WEBVTT")):
        raise LoadError(id, f"no subtitle cue (no 'start --> end' timing line): not {format.upper()}")
    parts: list[str] = []
    regions: list[Region] = []
    pos = 0
    speaker: str | None = None
    for start, said in cues:
        voice, said = _speaker(said)
        if parts:
            gap = "\n\n" if voice is not None and voice != speaker else "\n"
            parts.append(gap)
            pos += len(gap)
        if voice is not None:
            speaker = voice
        regions.append(Region(pos, pos + len(said), "time", {"time": _clock(start)}))
        parts.append(said)
        pos += len(said)
    text = "".join(parts) + ("\n" if parts else "")
    metadata = {
        "source": id,
        "encoding": decoded.encoding,
        "bom": decoded.bom,
        "format": format,
        "bytes": len(data),
        "cues": len(cues),
    }
    return Document(text=text, id=id, metadata=metadata, regions=tuple(regions))


def _cues(text: str) -> list[tuple[str, str]]:
    """``(start, text)`` of each cue, in the file's order. A cue is the lines after its timing line up to
    the next cue: its identifier (the line right before that timing, when it is a number or stands after a
    blank line) and WebVTT's ``NOTE``/``STYLE``/``REGION`` blocks are left out, and so are cues with no
    text; a blank line inside a cue or a missing one between two cues loses no word. A line a cue repeats
    from the end of the cue before (captions that roll up, as video sites write them) is read once."""
    lines = _NON_CUE_BLOCK.sub("\n", text).split("\n")
    timings = [k for k, line in enumerate(lines) if _TIMING.match(line)]
    out: list[tuple[str, str]] = []
    shown: list[str] = []  # the previous cue's lines
    for n, k in enumerate(timings):
        body = lines[k + 1 : timings[n + 1] if n + 1 < len(timings) else len(lines)]
        if n + 1 < len(timings) and body and body[-1].strip():  # right above the next timing: its id?
            last = body[-1].strip()
            if last.isdigit() or (len(body) > 1 and not body[-2].strip()):
                body.pop()
        said = [line for line in (_plain(line) for line in body) if line]
        while said and shown and said[0] == shown[-1]:
            said.pop(0)
        if said:
            shown = said
            match = _TIMING.match(lines[k])
            assert match is not None
            out.append((match.group(1), _CJK_SEAM.sub("", " ".join(said))))
    return out


def _plain(line: str) -> str:
    """A cue line without its tags (a voice tag becomes ``Name: ``), entities read, spaces squeezed."""
    line = _VOICE.sub(lambda m: m.group(1).strip() + ": ", _ASS_TAG.sub("", line))
    return " ".join(html.unescape(_TAG.sub("", line)).split())


def _speaker(said: str) -> tuple[str | None, str]:
    """The speaker a cue names at its start (``Bob: …``, ``佐藤：…``, ``Speaker 1: …``, ``田中（司会）：…``;
    up to three words, no sentence mark), and the cue."""
    match = _NAME_AT_START.match(said)
    if match is None:
        return None, said
    name = match.group(1).strip()
    if len(name.split()) > _NAME_WORDS or name.lower().startswith(("http", "ftp", "www")):
        return None, said
    return name, said


def _clock(stamp: str) -> str:
    """``HH:MM:SS.mmm`` for a SubRip or WebVTT time stamp (``1:02,5`` → ``00:01:02.500``)."""
    clock, _, millis = stamp.replace(",", ".").partition(".")
    fields = [int(f) for f in clock.split(":")]
    while len(fields) < 3:
        fields.insert(0, 0)
    hours, minutes, seconds = fields
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}.{millis.ljust(3, '0')[:3]}"
