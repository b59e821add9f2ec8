"""``kireme check``: does an index directory hold together, and what can be repaired from the store alone?

Verifies, in order, what every later part depends on: the lock file, the manifest (readable, its metadata
valid JSON), the store (present, readable, vectors of the recorded dimension, rows per document equal to
the manifest's counts), the BM25 cache (for this manifest and this state of the store, its id list the one
written) and the embedding cache (a readable SQLite file). `repair` fixes what the store alone allows:
rows that no entry owns get an entry back when they look complete (indexes 0..n-1; the next ``kireme
index`` re-reads their file and keeps or replaces them) and are dropped otherwise; an entry whose rows are
not all there is removed with what is left of them (the next ``kireme index`` indexes that file again);
the BM25 cache is rebuilt and a damaged embedding cache deleted (it is only a saving). A damaged manifest
or store cannot be repaired from itself: the report says to run ``kireme index --rebuild``.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kireme.errors import (
    DiskFullError,
    IndexDamagedError,
    IndexNotFoundError,
    ReadOnlyError,
    StoreError,
    free_space,
    mounted_read_only,
    rebuild_hint,
    shown_size,
    unreadable,
)
from kireme.index.ann import ANN_MIN_ROWS
from kireme.index.manifest import (
    DocumentEntry,
    Manifest,
    is_remote,
    manifest_lost,
    store_directory,
    store_location,
    stores_without_manifest,
)
from kireme.index.media import connect_reader
from kireme.index.store import StoredChunk, VectorStore, open_store, rows_digest, same_state, store_state


@dataclass
class Finding:
    """One thing found: ``level`` is ``ok``, ``fixable`` (``repair`` fixes it) or ``damaged`` (it needs
    ``kireme index --rebuild``); ``repaired`` says whether this run fixed it."""

    part: str
    level: str
    detail: str
    repaired: bool = False


@dataclass
class CheckReport:
    """What `check_index` found; healthy when nothing is fixable or damaged (after repairs)."""

    db: str
    documents: int = 0
    chunks_recorded: int = 0
    rows: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return all(f.level == "ok" or f.repaired for f in self.findings)

    @property
    def needs_rebuild(self) -> bool:
        return any(f.level == "damaged" for f in self.findings)

    def add(self, part: str, level: str, detail: str, repaired: bool = False) -> None:
        self.findings.append(Finding(part, level, detail, repaired))

    def to_dict(self) -> dict[str, Any]:
        return {
            "db": self.db,
            "healthy": self.healthy,
            "needs_rebuild": self.needs_rebuild,
            "documents": self.documents,
            "chunks_recorded": self.chunks_recorded,
            "rows": self.rows,
            "findings": [asdict(f) for f in self.findings],
        }


def check_index(db: str | os.PathLike[str], *, repair: bool = False, deep: bool = False) -> CheckReport:
    """Check (and with ``repair``, fix what the store allows) the index in ``db``.

    ``deep`` also reads every row: its ids, offsets, ``text`` and ``embed_text`` against the digest the
    manifest recorded when they were written (and ``text`` against the document text kept for it), and
    the BM25 cache against a keyword index built afresh from the rows. With ``repair``, the documents
    whose rows changed are dropped (the next ``kireme index`` indexes them again) and the BM25 cache is
    rebuilt.
    """
    folder = Path(db)
    report = CheckReport(str(folder))
    if not (folder / "manifest.sqlite").exists():
        lost = stores_without_manifest(folder, {})
        if lost:
            report.add("manifest", "damaged", str(manifest_lost(folder, lost)))
            return report
        raise IndexNotFoundError(
            f"{folder}: no index here (create one with: kireme index PATH --db {folder})"
        )
    rebuild = rebuild_hint(folder)
    lock = folder / "kireme.lock"
    if lock.exists() and not lock.is_file():
        report.add("lock", "damaged", f"{lock} is not a lock file; remove it")
    try:
        manifest = Manifest(folder / "manifest.sqlite")
    except IndexDamagedError as exc:
        report.add("manifest", "damaged", f"{exc}")
        return report
    try:
        try:
            meta, entries = manifest.snapshot()
        except IndexDamagedError as exc:
            report.add("manifest", "damaged", str(exc))
            return report
        except (ValueError, sqlite3.DatabaseError) as exc:
            report.add(
                "manifest", "damaged", f"{folder / 'manifest.sqlite'}: unreadable metadata ({exc}); {rebuild}"
            )
            return report
        lost = stores_without_manifest(folder, meta)
        if lost:
            report.add("manifest", "damaged", str(manifest_lost(folder, lost)))
            return report
        report.documents = len(entries)
        report.chunks_recorded = sum(e.chunks for e in entries.values())
        report.add("manifest", "ok", f"{len(entries)} document(s), {report.chunks_recorded} chunk(s)")
        if manifest.refused is not None:  # a read-only file system or a full disk: nothing is written
            report.add("disk", "ok", _read_only_note(folder, manifest.refused))
        store = _open_store(folder, meta, entries, report, rebuild)
        if store is None:
            return report
        try:
            dimension = int((meta.get("embedder") or {}).get("dimension") or 1)
            _check_rows(manifest, store, entries, report, repair, rebuild, dimension)
            if deep and not report.needs_rebuild:
                _check_contents(manifest, store, report, repair)
            _check_vector_index(store, report, repair, rebuild)
            _check_bm25(folder, meta, entries, store, report, repair, deep and not report.needs_rebuild)
        finally:
            store.close()
    finally:
        manifest.close()
    _check_embedding_cache(folder, report, repair)
    return report


def _open_store(
    folder: Path, meta: dict[str, Any], entries: dict[str, DocumentEntry], report: CheckReport, rebuild: str
) -> VectorStore | None:
    kind = meta.get("store") or "lancedb"
    path = store_location(folder, meta)
    if not is_remote(path) and not Path(path).is_dir():
        level = "damaged" if entries else "ok"
        report.add(
            "store", level, f"{path} is missing" + (f"; {rebuild}" if entries else " (nothing indexed yet)")
        )
        return None
    info = meta.get("embedder") or {}
    try:
        store = open_store(
            kind, folder, info, directory=store_directory(meta), create=False, base=meta.get("store_uri")
        )
        report.rows = store.count()
        stored = getattr(store, "dimension", None)
        if isinstance(stored, int) and info.get("dimension") not in (None, stored):
            report.add(
                "store",
                "damaged",
                f"{path} holds vectors of dimension {stored}, not {info['dimension']}; {rebuild}",
            )
            store.close()
            return None
    except StoreError:
        raise  # a database server that cannot be reached: nothing can be checked, nothing is damaged
    except Exception as exc:  # any reader error of the store's own files
        failure = unreadable(exc, path, folder)
        if isinstance(failure, StoreError):
            raise failure from None
        report.add("store", "damaged", str(failure))
        return None
    if meta.get("store_uri"):
        report.add("store", "ok", f"kept in {path}")
    return store


def _check_rows(
    manifest: Manifest,
    store: VectorStore,
    entries: dict[str, DocumentEntry],
    report: CheckReport,
    repair: bool,
    rebuild: str,
    dimension: int,
) -> None:
    path = report.db
    try:
        counts = store.doc_counts()
        rows = list(store.chunks()) if repair else []
    except Exception as exc:
        report.add(
            "store", "damaged", f"{path}: rows cannot be read ({type(exc).__name__}: {exc}); {rebuild}"
        )
        return
    try:  # what a search reads besides the rows: the vector scan and the chunk-id index
        if rows or report.rows:
            first = next(iter(rows), None) or next(iter(store.chunks()))
            store.get([first.id])
            store.search(np.ones(dimension, dtype=np.float32), 1)
    except Exception as exc:
        report.add("store", "damaged", f"{path}: a search fails ({type(exc).__name__}: {exc}); {rebuild}")
        return
    missing = sorted(d for d, e in entries.items() if counts.get(d, 0) != e.chunks)
    orphans = sorted(set(counts) - set(entries))
    if not missing and not orphans:
        report.add("store", "ok", f"{report.rows} row(s), every document complete")
        recorded, current = manifest.get_meta("store_state"), store_state(store)
        if recorded is not None and not same_state(recorded, current):
            report.add(
                "store",
                "fixable",
                f"the store is not in the state the manifest recorded ({recorded} → {current}): changed "
                "outside kireme (a version removed or restored?); every document was counted and is complete",
                repaired=repair,
            )
            if repair:
                manifest.set_meta("store_state", current)
        return
    if missing:
        report.add(
            "store",
            "fixable",
            f"{len(missing)} document(s) lost some or all of their rows (e.g. {missing[0]}); "
            "'kireme index PATH...' indexes them again",
        )
    if orphans:
        report.add(
            "store",
            "fixable",
            f"rows of {len(orphans)} document(s) have no manifest entry (e.g. {orphans[0]})",
        )
    if not repair:
        return
    by_doc: dict[str, list[Any]] = {}
    for row in rows:
        by_doc.setdefault(row.doc_id, []).append(row)
    kept, dropped = [], list(missing)
    for doc_id in orphans:
        indexes = sorted(r.index for r in by_doc.get(doc_id, []))
        if indexes == list(range(len(indexes))):
            source = by_doc[doc_id][0].source
            kept.append(DocumentEntry(doc_id, "", "", len(indexes), source))
        else:
            dropped.append(doc_id)
    manifest.remove(missing)
    if dropped:
        writable = _writable(store)
        writable.delete_documents(dropped)
        if writable is not store:
            writable.close()
    for entry in kept:  # an empty content hash: the next `kireme index` re-reads the file
        manifest.put(entry)
    manifest.set_meta("store_state", store_state(store))
    for finding in report.findings:
        if finding.part == "store" and finding.level == "fixable":
            finding.repaired = True
    report.add(
        "store",
        "ok",
        f"repaired: {len(kept)} entr(ies) rebuilt from stored rows, {len(dropped)} document(s) dropped"
        + (" — run 'kireme index PATH...' to index them again" if dropped else ""),
        repaired=True,
    )


def _check_vector_index(store: VectorStore, report: CheckReport, repair: bool, rebuild: str) -> None:
    """Report the ANN index (LanceDB); said only where one exists or the store is large enough for one."""
    read = getattr(store, "vector_index", None)
    if read is None:
        return
    try:
        index = read()
    except Exception as exc:
        report.add("vector index", "damaged", f"unreadable ({type(exc).__name__}: {exc}); {rebuild}")
        return
    if index is None:
        if report.rows >= ANN_MIN_ROWS:
            report.add(
                "vector index",
                "ok",
                f"none: every dense search scans all {report.rows:,} rows "
                "('kireme index PATH... --optimize' builds one)",
            )
        return
    if index.ours:
        since = f", {index.unindexed_rows:,} added since (scanned exactly)" if index.unindexed_rows else ""
        report.add(
            "vector index",
            "ok",
            f"{index.kind}: {index.indexed_rows:,} rows in {index.partitions} partition(s), "
            f"{index.probes} read per query{since}",
        )
        return
    detail = f"{index.kind} made outside kireme: searches scan every row instead of reading it"
    if not repair:
        report.add("vector index", "fixable", detail + " ('kireme check --repair' trains it again)")
        return
    writable = _writable(store)
    try:
        writable.optimize(ann="always")  # type: ignore[attr-defined]
        trained = writable.vector_index()  # type: ignore[attr-defined]
    finally:
        writable.close()
    report.add("vector index", "fixable", detail, repaired=bool(trained and trained.ours))
    if trained and trained.ours:
        report.add("vector index", "ok", "repaired: trained again by kireme", repaired=True)


def _writable(store: VectorStore) -> VectorStore:
    """The same store opened for writing (check opens read-only; only `repair` writes)."""
    base, _, directory = str(getattr(store, "path", "")).rstrip("/").rpartition("/")
    if is_remote(base):
        return open_store(store.name, Path(), {}, directory=directory, base=base)
    return open_store(store.name, Path(base or "."), {}, directory=directory)


def _check_bm25(
    folder: Path,
    meta: dict[str, Any],
    entries: dict[str, DocumentEntry],
    store: VectorStore,
    report: CheckReport,
    repair: bool,
    deep: bool = False,
) -> None:
    from kireme.index.search import (
        Searcher,
        keyword_generation,
        read_keyword_cache,
        recorded_keywords,
        store_stamp,
    )

    cache = folder / "bm25"
    generation = keyword_generation(entries, store_directory(meta), recorded_keywords(meta))
    status, cached = read_keyword_cache(cache, generation, store_stamp(store))
    if cached is not None:
        try:  # the scores can be computed from its files (read lazily: garbage shows only here)
            # an index of no chunks (empty files, PDFs without a text layer) has nothing to score
            intact = not cached[1] or cached[0].get_scores(["x"]).shape == (len(cached[1]),)
        except Exception:
            intact = False
        status = "current" if intact else "damaged"
    if status == "absent":
        report.add("bm25", "ok", "no keyword cache yet (built by the next search)")
        return
    if status == "current" and deep and cached is not None:
        mismatch = _keyword_mismatch(folder, cached)
        if mismatch:
            status = "damaged"
            report.add("bm25", "fixable", f"{cache}: {mismatch}", repaired=repair)
            if repair:
                _rebuild_keywords(folder)
                report.add("bm25", "ok", f"{cache}: rebuilt from the rows", repaired=True)
            return
    if status == "current":
        report.add(
            "bm25", "ok", f"{cache}: current" + (", equal to an index built from the rows" if deep else "")
        )
        return
    level = (
        "ok" if status == "stale" else "fixable"
    )  # stale is normal after a change: rebuilt on the next search
    detail = (
        "stale (rebuilt by the next search)"
        if status == "stale"
        else "damaged (unreadable, or its id list is not the one written)"
    )
    repaired = False
    if repair:
        searcher = Searcher(folder)
        try:
            searcher.keyword_index()
        finally:
            searcher.close()
        repaired, detail = True, detail + "; rebuilt"
    report.add("bm25", level, f"{cache}: {detail}", repaired=repaired and level != "ok")


def _check_contents(manifest: Manifest, store: VectorStore, report: CheckReport, repair: bool) -> None:
    """``--deep``: every committed document's rows as they were written (`rows_digest`), and every row's
    ``text`` the slice of the kept document text its offsets name."""
    entries = manifest.documents()
    by_doc: dict[str, list[StoredChunk]] = {}
    for row in store.chunks():
        if row.doc_id in entries:
            by_doc.setdefault(row.doc_id, []).append(row)
    changed: dict[str, str] = {}
    unverified = 0
    for doc_id, entry in sorted(entries.items()):
        rows = by_doc.get(doc_id, [])
        why = _changed(entry, rows, manifest.current_text(doc_id))
        if why:
            changed[doc_id] = why
        elif not entry.rows_digest:
            unverified += 1
    if not changed:
        note = (
            f"; {unverified} document(s) written before digests were recorded were checked against their text "
            "only ('kireme index --rebuild' records them)"
            if unverified
            else ""
        )
        report.add("rows", "ok", f"{sum(map(len, by_doc.values()))} row(s) as written{note}")
        return
    first = next(iter(changed))
    report.add(
        "rows",
        "fixable",
        f"the rows of {len(changed)} document(s) changed after they were written (e.g. {first}: {changed[first]}); "
        "'kireme check --deep --repair' drops them and the next 'kireme index PATH...' indexes them again",
        repaired=repair,
    )
    if not repair:
        return
    dropped = sorted(changed)
    manifest.remove(dropped)
    writable = _writable(store)
    try:
        writable.delete_documents(dropped)
    finally:
        if writable is not store:
            writable.close()
    manifest.set_meta("store_state", store_state(store))
    report.add(
        "rows",
        "ok",
        f"repaired: {len(dropped)} document(s) dropped — run 'kireme index PATH...' to index them again",
        repaired=True,
    )


def _changed(entry: DocumentEntry, rows: list[StoredChunk], text: str | None) -> str:
    """What is wrong with one document's rows ("" when nothing is)."""
    if entry.rows_digest and rows_digest(rows) != entry.rows_digest:
        return "ids, offsets, text or embed_text differ from the recorded digest"
    if text is not None:
        for row in sorted(rows, key=lambda r: r.index):
            if text[row.start : row.end] != row.text:
                return f"chunk {row.index}'s text is not the document's [{row.start}:{row.end}]"
    return ""


def _keyword_mismatch(folder: Path, cached: tuple[Any, list[str]]) -> str:
    """``--deep``: how the BM25 cache differs from a keyword index built now from the rows ("" if not)."""
    from kireme.index.search import Searcher

    searcher = Searcher(folder)
    try:
        fresh_model, fresh_ids = searcher.build_keyword_index()
    finally:
        searcher.close()
    model, ids = cached
    if list(ids) != fresh_ids:
        return "its id list is not the rows' (reordered, or other chunks)"
    try:
        same = _postings(model) == _postings(fresh_model)
    except (ValueError, TypeError, KeyError, IndexError):  # files that load but do not hold together
        same = False
    return "" if same else "its scores are not those of the rows' text"


def _postings(model: Any) -> dict[str, tuple[tuple[int, float], ...]]:
    """A BM25 model's scores by term: (document, score) pairs, whatever numbers its vocabulary gave the
    terms (bm25s numbers them in set order, which differs from one process to the next)."""
    data, indices, indptr = (np.asarray(model.scores[key]) for key in ("data", "indices", "indptr"))
    postings: dict[str, tuple[tuple[int, float], ...]] = {}
    for term, column in model.vocab_dict.items():
        if not 0 <= column < len(indptr) - 1:  # the empty token bm25s adds has no column
            postings[term] = ()
            continue
        lo, hi = int(indptr[column]), int(indptr[column + 1])
        order = np.argsort(indices[lo:hi], kind="stable")
        postings[term] = tuple(zip(indices[lo:hi][order].tolist(), data[lo:hi][order].tolist(), strict=True))
    return postings


def _rebuild_keywords(folder: Path) -> None:
    """A BM25 cache written afresh from the rows (the one there cannot be trusted, whatever it says)."""
    import shutil

    from kireme.index.search import Searcher

    shutil.rmtree(folder / "bm25", ignore_errors=True)
    searcher = Searcher(folder)
    try:
        searcher.keyword_index()
    finally:
        searcher.close()


def _read_only_note(folder: Path, refused: DiskFullError | ReadOnlyError) -> str:
    """What a check on a disk it cannot write says: everything was read, nothing could be repaired."""
    if isinstance(refused, ReadOnlyError):
        why = (
            "is on a read-only file system"
            if mounted_read_only(folder)
            else "cannot be written (permission denied)"
        )
        return f"{folder} {why}: every part was checked by reading it; 'kireme check --repair' needs a writable --db"
    free = free_space(folder)
    left = f" ({shown_size(free)} free)" if free is not None else ""
    return (
        f"{folder}: no space left on the device{left}: every part was checked by reading it; "
        "'kireme check --repair' needs some free space"
    )


def _check_embedding_cache(folder: Path, report: CheckReport, repair: bool) -> None:
    path = folder / "cache" / "embeddings.sqlite"
    if not path.exists():
        return
    try:
        reader = connect_reader(path)  # read-only media and full disks too
        db = reader.db
        try:
            ok = db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
            bad = db.execute("SELECT count(*) FROM vectors WHERE length(vector) % 4 != 0").fetchone()[0]
        finally:
            reader.close()
    except (DiskFullError, ReadOnlyError) as exc:
        report.add("embedding cache", "ok", f"{path}: not verified ({exc})")
        return
    except sqlite3.DatabaseError as exc:
        ok, bad = False, str(exc)
    if ok and not bad:
        report.add("embedding cache", "ok", f"{path}: readable")
        return
    repaired = False
    if repair:
        for leftover in path.parent.glob("embeddings.sqlite*"):
            leftover.unlink(missing_ok=True)
        repaired = True
    report.add(
        "embedding cache",
        "fixable",
        f"{path}: damaged ({bad or 'quick_check failed'}); it is only a saving and can be deleted",
        repaired,
    )
