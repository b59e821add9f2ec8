"""Search an index: dense (embeddings), BM25 (keywords) or hybrid (the two fused).

BM25 tokenises like the evaluation retriever (`kireme.text.terms`), with the index's recorded *keywords*
setting: by default words for spaced scripts and overlapping character bigrams for Japanese (no
morphological analyser needed), or a morphological analyser's words (``kireme index --keywords sudachi``,
the ``ja`` extra). Its index is built from the stored chunks' ``embed_text`` (so the title and heading
path count) and kept in the index directory, rebuilt only when the manifest (or the keywords setting)
changed. Hybrid fuses each side's best candidates by `kireme.fusion.DEFAULT_FUSION`, the setting measured
to lose to neither side (docs/benchmarks.md "Search modes").
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kireme.embed.base import Embedder
from kireme.errors import (
    FULL,
    ConfigError,
    IndexDamagedError,
    IndexNotFoundError,
    KiremeError,
    full_disk_error,
    read_only_media,
    rebuild_hint,
    storage_failure,
    unreadable,
)
from kireme.fusion import DEFAULT_FUSION, RRF, Fusion, fuse_scores
from kireme.index.manifest import (
    DocumentEntry,
    Manifest,
    is_remote,
    manifest_lost,
    store_directory,
    store_location,
    stores_without_manifest,
)
from kireme.index.store import (
    FILTER_FIELDS,
    POST_FILTER_FIELDS,
    Hit,
    StoredChunk,
    VectorStore,
    matches,
    open_store,
    split_filter,
    store_state,
)
from kireme.text.terms import keyword_tokenizer

log = logging.getLogger(__name__)

MODES = ("dense", "bm25", "hybrid")
FILTER_ALIASES = {"path": "source"}  # --filter path=docs/規程.md
RRF_K = RRF.k  # the usual constant of reciprocal rank fusion (`fuse` with fusion=RRF)
_UNWRITTEN: set[str] = set()  # index directories whose BM25 cache a full disk kept from being written
LEGACY_KEYWORDS = "bigrams"  # what an index that records no keywords setting was built with


def parse_filters(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``["source=規程.md", "format=pdf"]`` → a filter; unknown keys are a `ConfigError`."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = FILTER_ALIASES.get(key.strip(), key.strip())
        if not sep or key not in FILTER_FIELDS + POST_FILTER_FIELDS:
            raise ConfigError(
                f"filter {item!r}: use KEY=VALUE with KEY one of {', '.join(FILTER_FIELDS + POST_FILTER_FIELDS)}"
            )
        out[key] = value
    return out


class Searcher:
    """Search one index directory with the embedder it was built with."""

    def __init__(self, db: str | os.PathLike[str], embedder: Embedder | None = None) -> None:
        self.db = Path(db)
        manifest_path = self.db / "manifest.sqlite"
        if not manifest_path.exists():
            lost = stores_without_manifest(self.db, {})
            if lost:
                raise manifest_lost(self.db, lost)
            raise IndexNotFoundError(
                f"{self.db}: no index here (create one with: kireme index PATH --db {self.db})"
            )
        self._given_embedder = embedder
        self._open()

    def _open(self) -> None:
        """Read the manifest in one transaction, then open its store for reading only (a search never
        creates or changes anything in the index)."""
        for attempt in range(2):
            manifest = Manifest(self.db / "manifest.sqlite")
            try:
                meta, entries = manifest.snapshot()
            finally:
                manifest.close()
            if not meta.get("embedder"):  # an emptied manifest, or a first run killed before it began
                lost = stores_without_manifest(self.db, meta)
                if lost:
                    raise manifest_lost(self.db, lost)
                raise IndexNotFoundError(
                    f"{self.db}: nothing indexed here yet (create the index with: kireme index PATH --db {self.db})"
                )
            folder = store_location(self.db, meta)
            if not entries or is_remote(folder) or Path(folder).is_dir():
                break
            if attempt:  # not a re-embed swapping folders under us: the store is gone
                raise IndexDamagedError(
                    f"{folder}: the store is missing but the manifest names {len(entries)} document(s); "
                    f"{rebuild_hint(self.db)}"
                )
        self.info: dict[str, Any] = meta.get("embedder") or {}
        self.store_kind: str = meta.get("store") or "lancedb"
        self.store_dir = store_directory(meta)
        self.store_uri: str | None = meta.get("store_uri")
        self.location = store_location(self.db, meta)
        # Only documents the manifest names are committed: rows of others are leftovers of a killed
        # run (or of a run still writing) and are never returned.
        self.documents: set[str] = set(entries)
        # each document's version in this snapshot: a hit is checked against the text of that version
        self._versions: dict[str, str] = {doc_id: e.content_hash for doc_id, e in entries.items()}
        self.keywords: str = recorded_keywords(meta)
        self.generation = keyword_generation(entries, self.store_dir, self.keywords)
        try:
            self.store: VectorStore = open_store(
                self.store_kind,
                self.db,
                self.info,
                directory=self.store_dir,
                create=False,
                base=self.store_uri,
            )
            rows = self.store.count()
        except Exception as exc:
            raise self._unreadable(exc) from None
        self._embedder = self._given_embedder
        self._bm25: tuple[Any, list[str]] | None = None
        self._bm25_lock = threading.Lock()
        # A search answers from the whole index or not at all: rows missing (files removed, a version
        # rolled back) or rows whose entries were lost would give answers that look right and are not.
        expected = sum(e.chunks for e in entries.values())
        self.missing_rows = max(0, expected - rows)
        if self.missing_rows and not self._recount():
            raise IndexDamagedError(
                f"{self.location}: {self.missing_rows} chunk(s) the manifest lists are missing "
                f"from the store; run 'kireme index PATH... --db {self.db}' to index those documents again"
            )
        if rows > expected and meta.get("clean") is True:  # no writer is running, none was killed
            raise IndexDamagedError(
                f"{self.db / 'manifest.sqlite'}: {rows - expected} stored chunk(s) have no manifest entry; "
                f"run 'kireme check --repair --db {self.db}' (or 'kireme index PATH... --db {self.db}')"
            )

    def _unreadable(self, exc: Exception) -> Exception:
        return unreadable(exc, self.location, self.db)

    def _recount(self) -> bool:
        """Whether the shortfall was only a writer replacing documents meanwhile (entries are removed
        before their rows and written after them, so a fresh look at the manifest explains it)."""
        manifest = Manifest(self.db / "manifest.sqlite")
        try:
            entries = manifest.documents()
        finally:
            manifest.close()
        self.missing_rows = max(0, sum(e.chunks for e in entries.values()) - self.store.count())
        return self.missing_rows == 0

    def _swapped(self) -> bool:
        """Whether a re-embed swapped a new index in since this searcher opened (then it reopens)."""
        manifest = Manifest(self.db / "manifest.sqlite")
        try:
            current = store_directory(manifest.meta())
        finally:
            manifest.close()
        if current == self.store_dir:
            return False
        log.info("%s: the index was re-embedded meanwhile; searching the new one", self.db)
        self.store.close()
        self._open()
        return True

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from kireme.index.embedders import embedder_for_index

            recorded = self.info.get("embedder", "")
            embedder = embedder_for_index(recorded, self.db)
            if embedder.name != recorded:  # e.g. an http embedder whose URL now comes from elsewhere
                from kireme.errors import IndexMismatchError

                raise IndexMismatchError(
                    f"{self.db}: built with embedder {recorded}, but queries would be embedded by "
                    f"{embedder.name}; point KIREME_EMBED_BASE_URL (and KIREME_EMBED_MODEL) at the "
                    "server the index was built with"
                )
            self._embedder = embedder
        return self._embedder

    def adopt_embedder(self, embedder: Embedder) -> None:
        """Use an embedder already loaded (a server hands it from one searcher to the next) when it is the
        one this index records; otherwise keep the recorded one (loaded on first use)."""
        if embedder.name == self.info.get("embedder", ""):
            self._embedder = embedder

    def close(self) -> None:
        self.store.close()

    def search(
        self,
        query: str,
        k: int = 5,
        mode: str = "hybrid",
        where: Mapping[str, str] | None = None,
        *,
        exact: bool = False,
        fusion: Fusion | None = None,
    ) -> list[Hit]:
        """The ``k`` best chunks for ``query``; scores are cosine (dense), BM25 or fused (hybrid).

        ``exact``: the dense part scans every row instead of reading the store's vector index (LanceDB
        builds one past `kireme.index.ann.ANN_MIN_ROWS` rows): slower, never misses a neighbour.
        ``fusion``: how hybrid fuses the two sides (default `kireme.fusion.DEFAULT_FUSION`; `RRF` is the
        equal-weight reciprocal rank fusion of earlier versions).
        """
        if mode not in MODES:
            raise ConfigError(f"unknown search mode {mode!r}: choose one of {', '.join(MODES)}")
        if k < 1:
            raise ConfigError("k must be at least 1")
        if not query.strip():
            raise ConfigError("the query is empty")
        self._swapped()  # one small manifest read: a long-lived searcher follows a finished re-embed
        fusion = fusion or DEFAULT_FUSION
        try:
            hits = self._search(query, k, mode, where, exact, fusion)
        except KiremeError:
            raise
        except Exception as exc:
            # the store folder this searcher opened was removed by a re-embed that just finished
            if not self._swapped():
                raise self._unreadable(exc) from None
            try:
                hits = self._search(query, k, mode, where, exact, fusion)
            except KiremeError:
                raise
            except Exception as again:
                raise self._unreadable(again) from None
        self._verify(hits)
        return hits

    def _verify(self, hits: list[Hit]) -> None:
        """Each hit's text must be the slice of its document that its offsets name (the text kept when it
        was indexed): a row changed inside the store since is refused rather than passed to a reader."""
        if not hits:
            return
        manifest = Manifest(self.db / "manifest.sqlite")
        try:
            kept = manifest.kept_slices(
                ((h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in hits), self._versions
            )
        finally:
            manifest.close()
        for hit, text in zip(hits, kept, strict=True):
            if text is not None and text != hit.chunk.text:
                c = hit.chunk
                raise IndexDamagedError(
                    f"{self.location}: chunk {c.index} of {c.doc_id} is not the text [{c.start}:{c.end}] it was "
                    f"indexed from (changed inside the store); run 'kireme check --deep --repair --db {self.db}', "
                    f"then 'kireme index PATH... --db {self.db}'"
                )

    def _search(
        self, query: str, k: int, mode: str, where: Mapping[str, str] | None, exact: bool, fusion: Fusion
    ) -> list[Hit]:
        if mode == "dense":
            return self.dense(query, k, where, exact=exact)
        if mode == "bm25":
            return self.keyword(query, k, where)
        wide = fusion.wide(k)  # lexical first, then dense: the order of the fusion's weights
        return fuse(
            [self.keyword(query, wide, where), self.dense(query, wide, where, exact=exact)], k, fusion
        )

    def dense(
        self, query: str, k: int, where: Mapping[str, str] | None = None, *, exact: bool = False
    ) -> list[Hit]:
        vector = self.embedder.embed([query], "query")[0]
        store_where, post = split_filter(where)
        want = k if not post else 4 * k
        while True:
            hits = self.store.search(vector, want, store_where, exact=exact)
            kept = [h for h in hits if h.chunk.doc_id in self.documents and matches(h.chunk, post)]
            if len(kept) >= k or len(hits) < want:  # enough, or the store has no more
                return kept[:k]
            want *= 4

    def keyword(self, query: str, k: int, where: Mapping[str, str] | None = None) -> list[Hit]:
        hits = self._keyword(query, k, where)
        if hits is None:  # the cache scored rows by words they do not hold: built again from the rows
            log.warning(
                "%s: the BM25 cache does not match the stored rows; building it again", self.db / "bm25"
            )
            with self._bm25_lock:
                model, ids = self.build_keyword_index()
                self._save(self.db / "bm25", model, ids)
                self._bm25 = model, ids
            hits = self._keyword(query, k, where)
            if hits is None:
                raise IndexDamagedError(
                    f"{self.location}: keyword search scores rows by words they do not hold, even from a "
                    f"BM25 index built now; run 'kireme check --deep --db {self.db}'"
                )
        return hits

    def _keyword(self, query: str, k: int, where: Mapping[str, str] | None) -> list[Hit] | None:
        """The ``k`` best rows by BM25, or ``None`` when a row the cache scored does not hold the query
        words the cache credits it with (an id list out of step with the model: wrong answers)."""
        model, ids = self.keyword_index()
        tokens = [t for t in self.tokenizer(query) if t in model.vocab_dict]
        if not ids or not tokens:
            return []
        postings = _Postings(model, tokens)
        tokenize = self.tokenizer
        scores = np.asarray(model.get_scores(tokens), dtype=float)
        order = np.lexsort((np.arange(len(scores)), -scores))
        order = order[scores[order] > 0]
        hits: list[Hit] = []
        step = max(4 * k, 50)  # rows are read from the store only for the best candidates
        for lo in range(0, len(order), step):
            batch = order[lo : lo + step]
            # by id, not by position: a row gone since the BM25 index was made (a writer replacing a
            # document meanwhile) must not shift the scores onto the chunks after it
            found = {c.id: c for c in self.store.get([ids[i] for i in batch])}
            for i in batch:
                chunk = found.get(ids[i])
                if chunk is not None and chunk.doc_id in self.documents and matches(chunk, where):
                    if postings.held_by(int(i)) != set(tokenize(chunk.embed_text)) & postings.terms:
                        return None
                    hits.append(Hit(chunk, float(scores[i])))
                    if len(hits) == k:
                        return hits
        return hits

    @property
    def tokenizer(self) -> Any:
        """The index's keywords tokeniser (a `MissingExtraError` naming the extra when its analyser is
        not installed here)."""
        return keyword_tokenizer(self.keywords)

    def keyword_index(self) -> tuple[Any, list[str]]:
        """The BM25 index over the committed chunks (and their ids), from the index directory's cache.

        The cache is a memory-mapped bm25s index plus the chunk ids, valid while the manifest is unchanged;
        `kireme index` builds it after every change, so searches do not wait for it.
        """
        if self._bm25 is not None:
            return self._bm25
        with self._bm25_lock:  # threads sharing a searcher (a server) build it once
            if self._bm25 is None:
                self._bm25 = self._keyword_index()
            return self._bm25

    def _keyword_index(self) -> tuple[Any, list[str]]:

        tokenize = self.tokenizer  # before anything is read: a missing analyser is said at once
        folder = self.db / "bm25"
        quiet = logging.getLogger("bm25s")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # bm25s announces every build and load
        try:
            status, cached = read_keyword_cache(folder, self.generation, store_stamp(self.store))
            if cached is not None:
                return cached
            log.debug("BM25 cache %s; building it", status)
            model, ids = self.build_keyword_index(tokenize)
            self._save(folder, model, ids)
        finally:
            quiet.setLevel(level)
        return model, ids

    def build_keyword_index(
        self, tokenize: Callable[[str], list[str]] | None = None
    ) -> tuple[Any, list[str]]:
        """A BM25 index built now from the committed rows, in (document, position) order, and their ids;
        nothing is read from or written to the cache (``kireme check --deep`` compares the two)."""
        import bm25s

        tokenize = tokenize or self.tokenizer
        rows = sorted(
            (c for c in self.store.chunks() if c.doc_id in self.documents),
            key=lambda c: (c.doc_id, c.index),
        )
        quiet = logging.getLogger("bm25s")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # bm25s announces every build
        try:
            model = bm25s.BM25()
            model.index([tokenize(c.embed_text) or ["\x00"] for c in rows] or [["\x00"]], show_progress=False)
        finally:
            quiet.setLevel(level)
        return model, [c.id for c in rows]

    def _save(self, folder: Path, model: Any, ids: list[str]) -> None:
        """Write the cache beside the old one, then swap it in (readers see the old or the new)."""
        import shutil

        if read_only_media(self.db):  # a read-only index: searched with the index built in memory
            log.debug("BM25 cache not written: %s is read-only", self.db)
            return
        fresh = folder.with_name(f"bm25.building-{os.getpid()}")  # per process: searches may race
        stale = folder.with_name(f"bm25.stale-{os.getpid()}")
        try:
            for path in (fresh, stale):
                if path.exists():
                    shutil.rmtree(path)
            model.save(str(fresh), show_progress=False)
            raw = json.dumps(ids).encode("utf-8")
            (fresh / "ids.json").write_bytes(raw)
            stamp = [self.generation, store_stamp(self.store), hashlib.sha256(raw).hexdigest()]
            (fresh / "generation").write_text("\n".join(stamp), encoding="utf-8")
            if folder.exists():
                os.replace(folder, stale)
            os.replace(fresh, folder)
            shutil.rmtree(stale, ignore_errors=True)
            (self.db / "bm25.pickle").unlink(missing_ok=True)  # the cache of earlier versions
        except OSError as exc:  # another process swapped its own in first: keep that one
            shutil.rmtree(fresh, ignore_errors=True)
            full = storage_failure(exc) == FULL
            if full and str(self.db) not in _UNWRITTEN:  # a full disk must not stop a search: said once
                _UNWRITTEN.add(str(self.db))
                then = (
                    "the BM25 keyword cache is not written: built in memory for this search (one after "
                    "space is freed writes it)"
                )
                log.warning("%s", full_disk_error(folder, then))
            else:
                log.debug("BM25 cache not written: %s", exc)


class _Postings:
    """Which of a query's terms a BM25 model credits each row with: what a keyword hit's own text must
    hold, so that a cache out of step with the rows is caught before its answer is returned."""

    def __init__(self, model: Any, tokens: list[str]) -> None:
        self.terms = set(tokens)
        indptr, indices = model.scores["indptr"], model.scores["indices"]
        self._rows: dict[str, np.ndarray] = {}
        for term in self.terms:
            column = model.vocab_dict[term]
            if 0 <= column < len(indptr) - 1:
                rows = np.asarray(indices[int(indptr[column]) : int(indptr[column + 1])])
                self._rows[term] = rows if bool(np.all(rows[1:] >= rows[:-1])) else np.sort(rows)

    def held_by(self, row: int) -> set[str]:
        held = set()
        for term, rows in self._rows.items():
            at = int(np.searchsorted(rows, row))
            if at < len(rows) and rows[at] == row:
                held.add(term)
        return held


def store_stamp(store: VectorStore) -> str:
    """The store's state as the BM25 cache records it (its row count and version)."""
    return json.dumps(store_state(store), sort_keys=True)


def read_keyword_cache(folder: Path, generation: str, state: str) -> tuple[str, tuple[Any, list[str]] | None]:
    """The BM25 cache in ``folder`` if it can be trusted: ``("current", (model, ids))``; else
    ``("absent" | "stale" | "damaged", None)``. Current: made for this manifest (``generation``) and this
    ``state`` of the store (`store_stamp`), with the id list that was written (its checksum) and as many
    documents in the model as ids. Stale: made for another manifest or store state. Damaged: the rest."""
    import bm25s

    if not folder.exists():
        return "absent", None
    try:
        stamp = (folder / "generation").read_text(encoding="utf-8").split("\n")
        raw = (folder / "ids.json").read_bytes()
        if len(stamp) != 3 or stamp[2] != hashlib.sha256(raw).hexdigest():
            return "damaged", None
        if stamp[:2] != [generation, state]:
            return "stale", None
        ids = json.loads(raw)
        model = bm25s.BM25.load(str(folder), mmap=True, show_progress=False)
        # an index of no chunks is built over one placeholder document (`build_keyword_index`)
        if int(model.scores.get("num_docs", len(ids))) != (len(ids) or 1):
            return "damaged", None
    except (
        OSError,
        ValueError,
        KeyError,
        IndexError,
        TypeError,
        EOFError,
    ):  # rebuilt, never fatal (an empty .npy file: EOFError)
        return "damaged", None
    return "current", (model, ids)


def fuse(rankings: list[list[Hit]], k: int, fusion: Fusion = DEFAULT_FUSION) -> list[Hit]:
    """The ``k`` best of several rankings (hybrid: lexical, then dense) by ``fusion``
    (`kireme.fusion.fuse_scores` on each hit's score); ties go to the earlier chunk of a document."""
    chunks: dict[str, StoredChunk] = {}
    for ranking in rankings:
        for hit in ranking:
            chunks.setdefault(hit.chunk.id, hit.chunk)
    scores = fuse_scores([[(h.chunk.id, h.score) for h in ranking] for ranking in rankings], fusion)
    best = sorted(scores, key=lambda cid: (-scores[cid], chunks[cid].doc_id, chunks[cid].index))
    return [Hit(chunks[cid], scores[cid]) for cid in best[:k]]


def recorded_keywords(meta: Mapping[str, Any]) -> str:
    """The keywords setting an index records (`kireme.text.terms.KEYWORDS`); an index made before the
    setting existed was built with bigrams."""
    return str(meta.get("keywords") or LEGACY_KEYWORDS)


def keyword_generation(
    entries: Mapping[str, DocumentEntry], store_dir: str, keywords: str = LEGACY_KEYWORDS
) -> str:
    """A fingerprint of the indexed documents, their store and the keywords setting: the BM25 cache is
    valid while it holds (bigrams add nothing to it, so caches written before the setting stay valid)."""
    head = store_dir if keywords == LEGACY_KEYWORDS else f"{store_dir}\x1f{keywords}"
    digest = hashlib.sha256(f"{head}\x1e".encode())
    for doc_id, entry in sorted(entries.items()):
        digest.update(
            f"{doc_id}\x1f{entry.content_hash}\x1f{entry.config_hash}\x1e".encode("utf-8", "surrogatepass")
        )
    return digest.hexdigest()
