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
import re

from kireme.document import Document, Region
from kireme.errors import DecodeError, LoadError
from kireme.load.encoding import decode
from kireme.text.headings import speaker_turn

# A timing line: a start, the arrow, an end (SubRip uses a comma before the milliseconds, WebVTT a dot;
# hours are optional in WebVTT), then WebVTT's cue settings
_TIMING = re.compile(
    r"^\s*((?:\d+:)?\d{1,2}:\d{2}[,.]\d{1,3})\s*-->\s*((?:\d+:)?\d{1,2}:\d{2}[,.]\d{1,3})(?:[ \t].*)?$"
)
_VOICE = re.compile(r"<v(?:\.[^ \t>]*)?[ \t]+([^>]*)>")
_TAG = re.compile(r"</?[A-Za-z0-9.:_-]+(?:[ \t][^>]*)?>|<\d+:\d{2}(?::\d{2})?[.,]\d{3}>")
_BLOCK_BREAK = re.compile(r"\n[ \t]*\n")


def load_subtitles(data: bytes, id: str, format: str, *, encoding: str | None = None) -> Document:
    """A ``.srt`` or ``.vtt`` file (``format``: ``"srt"`` or ``"vtt"``) as what was said (above), with a
    ``"time"`` region per cue. A file without a single timing line is a `LoadError`: it is not subtitles."""
    try:
        decoded = decode(data, encoding)
    except DecodeError as exc:
        raise LoadError(id, str(exc)) from None
    cues = _cues(decoded.text.replace("\r\n", "\n").replace("\r", "\n"))
    if not cues and decoded.text.strip():
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
    """``(start, text)`` of each cue, in the file's order; blocks without a timing line (a WebVTT header,
    ``NOTE``, ``STYLE``, ``REGION``) and cues with no text are left out."""
    out: list[tuple[str, str]] = []
    for block in _BLOCK_BREAK.split(text):
        lines = block.strip("\n").split("\n")
        timing = next((k for k, line in enumerate(lines) if _TIMING.match(line)), None)
        if timing is None or timing > 1:  # a cue's timing is its first line, or the second after its id
            continue
        match = _TIMING.match(lines[timing])
        assert match is not None
        said = " ".join(_plain(line) for line in lines[timing + 1 :] if _plain(line))
        if said:
            out.append((match.group(1), said))
    return out


def _plain(line: str) -> str:
    """A cue line without its tags (a voice tag becomes ``Name: ``), entities read, spaces squeezed."""
    line = _VOICE.sub(lambda m: m.group(1).strip() + ": ", line)
    return " ".join(html.unescape(_TAG.sub("", line)).split())


def _speaker(said: str) -> tuple[str | None, str]:
    """The speaker a cue names at its start (``Bob: …``, ``佐藤：…``), and the cue."""
    if not speaker_turn(said):
        return None, said
    colon = min((i for i in (said.find(":"), said.find("：")) if i > 0), default=-1)
    name = said[:colon].strip() if colon > 0 else ""
    return (name if 0 < len(name) <= _NAME_CHARS else None), said


_NAME_CHARS = 30  # a longer "name" before a colon is a sentence, not a speaker


def _clock(stamp: str) -> str:
    """``HH:MM:SS.mmm`` for a SubRip or WebVTT time stamp (``1:02,5`` → ``00:01:02.500``)."""
    clock, _, millis = stamp.replace(",", ".").partition(".")
    fields = [int(f) for f in clock.split(":")]
    while len(fields) < 3:
        fields.insert(0, 0)
    hours, minutes, seconds = fields
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}.{millis.ljust(3, '0')[:3]}"
