"""Decode bytes to text without ever replacing a character silently.

Order: an explicit encoding; a byte-order mark; strict UTF-8; ISO-2022-JP when its escape sequences are
present; UTF-16 without BOM when every other byte is zero; then the Japanese legacy encodings (CP932,
EUC-JP) that decode strictly, ranked by charset-normalizer when more than one does; finally
charset-normalizer's best guess among other encodings. A file with NUL bytes that is not UTF-16/32 is
binary and is refused.
"""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import dataclass, replace

from kireme.errors import DecodeError, LoadError

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_JAPANESE_LEGACY = ("cp932", "euc_jp")
_HIRAGANA = re.compile("[\u3041-\u309f]")
# charset-normalizer's "chaos" (how garbled a decoding looks, 0 to 1) within which another encoding that
# reads the bytes differently makes the guess a close call worth a warning
_CLOSE_CALL = 0.1


@dataclass(frozen=True)
class DecodedText:
    """The decoded text and its encoding; ``alternatives``: for a guess among single-byte code pages, the
    encodings the detector rated nearly as well that decode the bytes into a *different* text (cp1252
    French read as cp1257 gives ``trčs`` for ``très``: only the reader can tell); for a short Japanese text
    valid as both CP932 and EUC-JP with nothing to tell them apart, the other one (``山田太郎`` in EUC-JP
    reads as ``ｻｳﾅﾄﾂﾀﾏｺ`` in CP932), whose reading starts ``alternative_text``; ``eof_marks``: how many
    DOS end-of-file marks (Ctrl-Z) ended the bytes and are not in ``text``; ``cr_line_ends``: how many lone
    ``\r`` line ends ``text`` reads as ``\n``."""

    text: str
    encoding: str
    bom: bool = False
    alternatives: tuple[str, ...] = ()
    alternative_text: str = ""
    eof_marks: int = 0
    cr_line_ends: int = 0
    # a kana-less reading of Korean or Chinese bytes as Japanese: what they read as in those (`_OTHER_CJK`),
    # the likeliest first, as (encoding, the reading's start)
    readings: tuple[tuple[str, str], ...] = ()

    def guess_warning(self, name: str) -> str | None:
        """The warning for a loader to give about ``name``, or None when the encoding was no close call."""
        if not self.alternatives:
            return None
        if self.encoding in _JAPANESE_LEGACY:  # a short text both read as Japanese: 山田太郎 or ｻｳﾅﾄﾂﾀﾏｺ
            others = [(self.alternatives[0], self.alternative_text)] + [
                r for r in self.readings if r[0] != self.alternatives[0]
            ]
            said = "; ".join(f"as {enc} it reads {text!r}" for enc, text in others[:3])
            return (
                f"{name}: decoded as {self.encoding} ({self.text[:20].strip()!r}), a guess: {said}; check the "
                f"text (kireme load) or pass --encoding {'/'.join(enc for enc, _ in others[:3])}"
            )
        return (
            f"{name}: decoded as {self.encoding}, a guess: {', '.join(self.alternatives)} would read its "
            "accented letters differently; check them (kireme load) or pass --encoding"
        )


def _strict(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def _best_utf16(data: bytes) -> DecodedText | None:
    """UTF-16 without a BOM: the byte order whose strict decode reads as text, if either does."""
    if len(data) % 2:
        return None
    best: DecodedText | None = None
    best_score = 0.0
    for enc in ("utf-16-le", "utf-16-be"):
        text = _strict(data, enc)
        if text is None:
            continue
        score = _japanese_score(text) - _control_share(text)
        if score > best_score:
            best, best_score = DecodedText(text, enc), score
    return best if best_score >= 0.9 else None


def _japanese_score(text: str) -> float:
    """Share of characters that are kana, common kanji, ASCII or Japanese punctuation."""
    if not text:
        return 0.0
    good = 0
    for ch in text:
        o = ord(ch)
        if o < 0x80 or 0x3000 <= o <= 0x30FF or 0x4E00 <= o <= 0x9FFF or 0xFF00 <= o <= 0xFFEF:
            good += 1
    return good / len(text)


def decode_file(data: bytes, id: str, encoding: str | None, log: logging.Logger) -> DecodedText:
    """`decode` for a loader: a `LoadError` naming ``id`` when the bytes do not decode, and the warning of
    a guess (`DecodedText.guess_warning`) given to ``log`` (the loader's logger)."""
    try:
        decoded = decode(data, encoding)
    except DecodeError as exc:
        raise LoadError(id, str(exc)) from None
    if (warning := decoded.guess_warning(id)) is not None:
        log.warning("%s", warning)
    return decoded


def decode(data: bytes, encoding: str | None = None) -> DecodedText:
    """Decode ``data``; raise `DecodeError` with a reason a person can act on.

    DOS end-of-file marks (Ctrl-Z, ``\x1a``) at the end are no text and are left out (`eof_marks` counts
    them); so is a byte-order mark under the encoding given that it marks (``--encoding utf-8`` on a file
    Notepad saved with one). A line end of a lone ``\r`` (classic Mac OS) becomes ``\n`` — one character
    for one, so offsets do not move — or no line, paragraph or heading of the file would be seen
    (`cr_line_ends` counts them); ``\r\n`` stays as it is."""
    decoded = _decode(data, encoding)
    text = decoded.text.rstrip(_EOF)
    eof_marks = len(decoded.text) - len(text)
    lone = 0
    if "\r" in text:  # one character for one: every offset stays where it was
        text, lone = _LONE_CR.subn("\n", text)
    if not eof_marks and not lone:
        return decoded
    return replace(decoded, text=text, eof_marks=eof_marks, cr_line_ends=lone)


_EOF = "\x1a"  # Ctrl-Z: DOS editors and old Excel ended a text file with it
_LONE_CR = re.compile(r"\r(?!\n)")  # a classic Mac OS line end: read as the line end it is


def _decode_as(data: bytes, encoding: str) -> DecodedText:
    """``data`` decoded as the ``encoding`` given (a BOM of that encoding is no text)."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise DecodeError(f"unknown encoding {encoding!r}") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise DecodeError(
            f"not valid {encoding} at byte {exc.start} (leave the encoding out to detect it)"
        ) from None
    except LookupError:  # a codec that is no text encoding: rot13, base64, hex
        raise DecodeError(f"{encoding!r} is not a text encoding") from None
    if text.startswith("\ufeff") and name.startswith("utf"):
        return DecodedText(text[1:], name, bom=True)
    return DecodedText(text, name)


def _decode(data: bytes, encoding: str | None) -> DecodedText:
    if encoding:
        return _decode_as(data, encoding)
    for bom, name in _BOMS:
        if data.startswith(bom):
            text = _strict(data, name)
            if text is None:
                raise DecodeError(f"starts with a {name} byte-order mark but is not valid {name}")
            return DecodedText(text, name, bom=True)
    if (b"\x1b$" in data or b"\x1b(" in data) and data.isascii():
        text = _strict(data, "iso2022_jp")  # 7-bit, so it also "decodes" as UTF-8: check it first
        if text is not None:
            return DecodedText(text, "iso2022_jp")
    text = _strict(data, "utf-8")
    if text is not None and "\x00" not in text:
        return DecodedText(text, "utf-8")
    if b"\x00" in data:
        utf16 = _best_utf16(data)
        if utf16 is not None:
            return utf16
        raise DecodeError("binary file (contains NUL bytes)")
    candidates = {enc: t for enc in _JAPANESE_LEGACY if (t := _strict(data, enc)) is not None}
    if len(candidates) == 1:
        ((enc, t),) = candidates.items()
        return _not_japanese_after_all(data, DecodedText(t, enc))
    if len(candidates) > 1:
        # prose has hiragana: EUC-JP text read as CP932 has none (its bytes become half-width kana and
        # kanji), while CP932 prose with hiragana is no valid EUC-JP at all
        def rank(enc: str) -> tuple[float, bool]:
            text = candidates[enc]
            return _japanese_score(text), _HIRAGANA.search(text) is not None

        best = max(candidates, key=lambda enc: (*rank(enc), enc == "cp932"))
        close = tuple(
            e for e in candidates if e != best and rank(e) == rank(best) and candidates[e] != candidates[best]
        )
        other = candidates[close[0]][:20].strip() if close else ""
        return _not_japanese_after_all(
            data, DecodedText(candidates[best], best, alternatives=close, alternative_text=other)
        )
    return _guess_other(data)


# Kana a Japanese text holds (half-width katakana aside: Korean or Chinese bytes read as CP932 give those)
_KANA = re.compile("[\u3041-\u309f\u30a1-\u30ff]")
_HANGUL = re.compile("[\uac00-\ud7a3]")
_OTHER_CJK = ("euc_kr", "gb18030", "big5")  # what a legacy CJK file that is not Japanese may be
_KOREAN_MIN = 8  # Hangul syllables enough to take a file for Korean (with charset-normalizer agreeing)


def _not_japanese_after_all(data: bytes, decoded: DecodedText) -> DecodedText:
    """A CP932 or EUC-JP reading without a single kana is suspect: Korean (EUC-KR) and Chinese (GBK,
    Big5) bytes are valid Japanese too, and read as strings of kanji. Korean is taken when the bytes read
    as mostly Hangul and charset-normalizer agrees; otherwise, for a text with several non-ASCII
    characters, the Japanese reading stays with a warning naming what it reads as in the others."""
    text = decoded.text
    if _KANA.search(text) is not None or len(_letters(text)) < 4:  # kana first: most files stop there
        return decoded
    readings = {enc: t for enc in _OTHER_CJK if (t := _strict(data, enc)) is not None and t != text}
    korean = readings.get("euc_kr")
    if korean is not None:
        hangul = len(_HANGUL.findall(korean))
        if hangul >= _KOREAN_MIN and hangul >= 0.5 * len(_letters(korean)):
            from charset_normalizer import from_bytes

            match = from_bytes(data).best()
            if match is not None and match.encoding in ("cp949", "euc_kr", "johab"):
                return DecodedText(korean, "euc_kr")
    if not readings:
        return decoded
    ranked = sorted(readings, key=lambda enc: _cjk_share(readings[enc]), reverse=True)  # the likeliest first
    found = tuple((enc, readings[enc][:20].strip()) for enc in ranked)
    if decoded.alternatives:  # the Japanese close call (CP932 or EUC-JP) stays first
        return replace(decoded, readings=found)
    return replace(decoded, alternatives=tuple(ranked), alternative_text=found[0][1], readings=found)


def _letters(text: str) -> list[str]:
    """The characters of ``text`` outside ASCII, white space aside."""
    return [ch for ch in text if ord(ch) > 0x7F and not ch.isspace()]


def _cjk_share(text: str) -> float:
    """How much of a reading is one script — Chinese characters or Hangul, with CJK punctuation — less
    what is private-use (bytes of another encoding land there): Korean or Chinese read right is the one,
    not a mix of the two."""
    letters = _letters(text)
    if not letters:
        return 0.0
    punct = sum(1 for ch in letters if "\u3000" <= ch <= "\u303f" or "\uff00" <= ch <= "\uffef")
    han = sum(1 for ch in letters if "\u4e00" <= ch <= "\u9fff")
    hangul = sum(1 for ch in letters if "\uac00" <= ch <= "\ud7a3")
    private = sum(1 for ch in letters if "\ue000" <= ch <= "\uf8ff")
    return (max(han, hangul) + punct - private) / len(letters)


def _guess_other(data: bytes) -> DecodedText:
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    match = matches.best()
    if match is None or match.encoding is None:
        raise DecodeError("not valid UTF-8, CP932, EUC-JP, ISO-2022-JP or UTF-16; pass --encoding")
    text = _strict(data, match.encoding)
    if text is None:  # pragma: no cover - charset-normalizer only returns strict decodes
        raise DecodeError("could not decode strictly; pass --encoding")
    if _control_share(text) > 0.05:
        raise DecodeError("binary file (mostly control bytes)")
    close: list[str] = []
    seen = {text}
    for other in matches:  # ranked best first
        if other.encoding in (None, match.encoding) or other.chaos > match.chaos + _CLOSE_CALL:
            continue
        read = _strict(data, other.encoding)
        if read is not None and read not in seen:  # a different text, rated nearly as well
            seen.add(read)
            close.append(other.encoding)
    return DecodedText(text, match.encoding, alternatives=tuple(close[:3]))


def _control_share(text: str) -> float:
    if not text:
        return 0.0
    bad = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f\v")
    return bad / len(text)
