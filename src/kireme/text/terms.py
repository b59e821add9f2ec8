"""Search terms: words for spaced scripts; for Japanese, character bigrams or a morphological analyser's words.

One tokeniser for every keyword match in kireme: the ``terms`` and ``bm25`` evaluation retrievers
(`kireme.evaluate.retrievers`) and BM25 search of an index (`kireme.index.search`), so a question is
tokenised the same way wherever it is asked. Which one is the index's *keywords* setting (`KEYWORDS`):

* ``bigrams`` (the default) — lower-cased words for spaced scripts, overlapping character bigrams for each
  Japanese run (a single character stays whole). No dictionary, no extra package.
* ``sudachi`` — SudachiPy with sudachidict-core (the optional ``kireme[ja]`` extra, about 200 MB of
  dictionary), split mode C (the longest units: ``宿泊費``), each Japanese word's normalised form
  (``附属`` and ``付属`` match), other words lower-cased and width-folded (``ＡＢＣ`` is ``abc``);
  punctuation, symbols and white space dropped.
* ``sudachi+bigrams`` — both lists: the analyser's words and the bigrams (the best of the analyser
  settings measured).

An index records its setting (`kireme index --keywords`), so its searches tokenise queries as it did.
Which one is the default was measured (``benchmarks/fusion.py``, docs/benchmarks.md "Search modes").
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import regex

from kireme.errors import ConfigError, MissingExtraError

__all__ = ["DEFAULT_KEYWORDS", "KEYWORDS", "analyser_words", "keyword_tokenizer", "tokenize"]

KEYWORDS = ("bigrams", "sudachi", "sudachi+bigrams")
DEFAULT_KEYWORDS = "bigrams"

_WORD = regex.compile(r"[\p{Latin}\p{N}]+|[\p{Han}\p{Hiragana}\p{Katakana}ー々]+|[^\s\p{P}\p{S}]+")
_CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}ー々]")
_TERM = regex.compile(r"[^\s\p{P}\p{S}]")  # a token holding none of these is punctuation or space
_PIECE = 2000  # characters per analyser call (SudachiPy refuses inputs over ~49 kB)


def tokenize(text: str, keywords: str = DEFAULT_KEYWORDS) -> list[str]:
    """The search terms of ``text`` under the ``keywords`` setting (`KEYWORDS`).

    >>> tokenize("Hotel rates: 宿泊費の上限")
    ['hotel', 'rates', '宿泊', '泊費', '費の', 'の上', '上限']
    """
    if keywords == DEFAULT_KEYWORDS:
        return bigrams(text)
    return keyword_tokenizer(keywords)(text)


def bigrams(text: str) -> list[str]:
    """Words for spaced scripts, character bigrams (and single characters) for Japanese runs."""
    tokens: list[str] = []
    for m in _WORD.finditer(text.lower()):
        word = m.group()
        if _CJK.match(word):
            if len(word) == 1:
                tokens.append(word)
            else:
                tokens.extend(word[i : i + 2] for i in range(len(word) - 1))
        else:
            tokens.append(word)
    return tokens


def keyword_tokenizer(keywords: str) -> Callable[[str], list[str]]:
    """The tokeniser of a `KEYWORDS` setting; an unknown name is a `ConfigError`, an analyser that is not
    installed a `MissingExtraError` naming the ``ja`` extra (raised here, before any text is read)."""
    if keywords == "bigrams":
        return bigrams
    if keywords == "sudachi":
        return analyser_words("sudachi", mode="C")
    if keywords == "sudachi+bigrams":
        return analyser_words("sudachi", mode="C", with_bigrams=True)
    raise ConfigError(f"unknown keywords {keywords!r}: choose one of {', '.join(KEYWORDS)}")


def check_keywords(keywords: str) -> str:
    """``keywords`` when it names a `KEYWORDS` setting whose analyser is installed; else the error."""
    keyword_tokenizer(keywords)
    return keywords


@cache
def analyser_words(
    analyser: str = "sudachi",
    *,
    mode: str = "A",
    form: str = "normalized",
    content_only: bool = False,
    with_bigrams: bool = False,
) -> Callable[[str], list[str]]:
    """Words of a morphological analyser, lower-cased, punctuation and space dropped.

    ``analyser``: ``sudachi`` (SudachiPy + sudachidict-core; ``mode`` A, B or C) or ``mecab`` (fugashi +
    unidic-lite); ``form``: ``surface`` or ``normalized`` (Sudachi's normalised form, UniDic's written base form);
    ``content_only``: drop particles and auxiliary verbs; ``with_bigrams``: the bigrams of `bigrams` too.
    The analyser runs in pieces of at most 2,000 characters cut at white space where there is some, one
    instance per thread (neither library's tagger may be shared between threads).
    """
    if analyser not in ("sudachi", "mecab") or form not in ("surface", "normalized"):
        raise ConfigError(f"unknown analyser setting {analyser!r} / {form!r}")
    local = threading.local()
    make = _sudachi(mode) if analyser == "sudachi" else _mecab()
    skip = ("助詞", "助動詞") if content_only else ()

    def words(text: str) -> list[str]:
        tagger = getattr(local, "tagger", None)
        if tagger is None:
            tagger = local.tagger = make()
        out: list[str] = []
        for piece in _pieces(text):
            for surface, normalized, pos in tagger(piece):
                if pos in skip or not _TERM.search(surface):
                    continue
                if form == "normalized" and _CJK.search(surface):
                    out.append(normalized.lower())
                else:  # Latin words and numbers as written, width folded (no ホテル for Hotel)
                    out.append(unicodedata.normalize("NFKC", surface).lower())
        if with_bigrams:
            out.extend(bigrams(text))
        return out

    return words


def _sudachi(mode: str) -> Callable[[], Callable[[str], Iterator[tuple[str, str, str]]]]:
    try:
        from sudachipy import Dictionary, SplitMode
    except ImportError as exc:
        raise MissingExtraError("keywords 'sudachi'", "ja", "sudachipy") from exc
    try:
        dictionary = Dictionary(dict="core")
    except Exception as exc:  # sudachipy without sudachidict-core
        raise MissingExtraError("keywords 'sudachi'", "ja", "sudachidict-core") from exc
    split = {"A": SplitMode.A, "B": SplitMode.B, "C": SplitMode.C}[mode]

    def make() -> Callable[[str], Iterator[tuple[str, str, str]]]:
        create = getattr(dictionary, "tokenizer", None) or dictionary.create  # 0.7 renamed create
        tokenizer = create(mode=split)

        def tag(text: str) -> Iterator[tuple[str, str, str]]:
            for m in tokenizer.tokenize(text):
                yield m.surface(), m.normalized_form(), m.part_of_speech()[0]

        return tag

    return make


def _mecab() -> Callable[[], Callable[[str], Iterator[tuple[str, str, str]]]]:
    try:
        import fugashi
        import unidic_lite  # noqa: F401  (the dictionary fugashi finds by itself)
    except ImportError as exc:
        raise MissingExtraError("the mecab analyser", None, "fugashi unidic-lite") from exc

    def make() -> Callable[[str], Iterator[tuple[str, str, str]]]:
        tagger: Any = fugashi.Tagger()

        def tag(text: str) -> Iterator[tuple[str, str, str]]:
            for word in tagger(text):
                feature = word.feature
                base = getattr(feature, "orthBase", None)
                yield (
                    word.surface,
                    base if base and base != "*" else word.surface,
                    getattr(feature, "pos1", ""),
                )

        return tag

    return make


def _pieces(text: str) -> Iterator[str]:
    """``text`` in pieces of at most `_PIECE` characters, cut after white space where there is some."""
    start = 0
    while len(text) - start > _PIECE:
        end = start + _PIECE
        space = max(text.rfind(c, start + 1, end) for c in ("\n", " ", "\u3000", "\t"))
        end = space + 1 if space > start else end
        yield text[start:end]
        start = end
    if start < len(text):
        yield text[start:]
