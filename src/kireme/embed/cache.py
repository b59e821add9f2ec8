"""Never embed a text twice: an in-process memo plus an on-disk SQLite cache keyed by content hash.

The key is SHA-256 of (embedder name, kind, text), so re-chunking unchanged documents embeds nothing,
and a changed model never returns stale vectors. SQLite is in the standard library, safe with several
processes, and one file (``~/.cache/kireme/embeddings.sqlite`` by default; ``KIREME_CACHE_DIR`` or
``cache_dir`` moves it; ``cache_dir=False`` keeps it in memory only).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kireme.embed.base import Embedder, Kind, check_vectors
from kireme.errors import EmbeddingError

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]


def default_cache_dir() -> Path:
    env = os.environ.get("KIREME_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kireme"


def _key(name: str, kind: str, text: str) -> bytes:
    return hashlib.sha256(f"{name}\x1f{kind}\x1f{text}".encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """Vectors by content hash, in memory and (unless disabled) in one SQLite file."""

    def __init__(self, cache_dir: str | os.PathLike[str] | bool | None = None) -> None:
        self._memory: dict[bytes, np.ndarray] = {}
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if cache_dir is False:
            self.path: Path | None = None
            return
        directory = default_cache_dir() if cache_dir is None or cache_dir is True else Path(cache_dir)
        self.path = directory / "embeddings.sqlite"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)"
            )
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:  # read-only home, full disk: work without the disk cache
            chosen = not (cache_dir is None or cache_dir is True) or bool(os.environ.get("KIREME_CACHE_DIR"))
            # a folder the user named is said; the default one quietly (a read-only home is common)
            (log.warning if chosen else log.debug)(
                "embedding cache %s cannot be used (%s); embedding without it, so nothing is kept for the "
                "next run",
                directory,
                exc,
            )
            self._db = None
            self.path = None

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found = {k: self._memory[k] for k in keys if k in self._memory}
        missing = [k for k in keys if k not in found]
        if missing and self._db is not None:
            with self._lock:
                try:
                    for start in range(0, len(missing), 500):
                        part = missing[start : start + 500]
                        marks = ",".join("?" * len(part))
                        rows = self._db.execute(
                            f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part
                        )
                        for key, blob in rows:
                            vector = np.frombuffer(blob, dtype=np.float32)
                            self._memory[key] = vector
                            found[key] = vector
                except (OSError, sqlite3.Error) as exc:
                    self._disable("read", exc)
        return found

    def put_many(self, items: dict[bytes, np.ndarray]) -> None:
        self._memory.update(items)
        if self._db is not None and items:
            with self._lock:
                try:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)",
                        [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
                    )
                    self._db.commit()
                except (OSError, sqlite3.Error) as exc:  # a full disk, a damaged file
                    self._disable("write", exc)

    def _disable(self, action: str, exc: BaseException) -> None:
        """The disk cache is only a saving: a failure turns it off for this run, with one warning."""
        db, self._db = self._db, None
        log.warning(
            "embedding cache %s: cannot %s it (%s); going on without it for this run", self.path, action, exc
        )
        if db is not None:
            try:
                db.rollback()
                db.close()
            except sqlite3.Error:
                pass


@dataclass
class EmbedStats:
    """What a `CachedEmbedder` did: texts asked for, found in the cache, and actually embedded."""

    requested: int = 0
    cached: int = 0
    embedded: int = 0


@dataclass
class CachedEmbedder:
    """Wraps any embedder: de-duplicates, reads the cache, embeds the rest in length-sorted batches.

    Sorting by length keeps texts of similar length in one batch, which wastes less padding in
    transformer models. ``progress(done, total)`` is called after each batch (the CLI draws a bar).
    Every vector, from the model or the cache, must have the dimension of the first one seen: a model
    changed behind the same name is an `EmbeddingError` before its vectors are cached or returned.
    """

    inner: Embedder
    cache: EmbeddingCache = field(default_factory=lambda: EmbeddingCache(False))
    batch_size: int = 32
    progress: ProgressCallback | None = None
    stats: EmbedStats = field(default_factory=EmbedStats)
    _dimension: int | None = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.inner.name

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        texts = list(texts)
        self.stats.requested += len(texts)
        keys = [_key(self.inner.name, kind, t) for t in texts]
        unique = dict(zip(keys, texts, strict=True))
        found = self.cache.get_many(list(unique))
        for size in {vector.shape[-1] for vector in found.values()}:
            self._one_dimension(size, f"in the embedding cache {self.cache.path}")
        todo = sorted((k for k in unique if k not in found), key=lambda k: len(unique[k]))
        self.stats.cached += len(unique) - len(todo)
        done = 0
        for start in range(0, len(todo), self.batch_size):
            batch_keys = todo[start : start + self.batch_size]
            batch_texts = [unique[k] for k in batch_keys]
            vectors = check_vectors(self.inner.name, batch_texts, self.inner.embed(batch_texts, kind))
            self._one_dimension(vectors.shape[1], "from the model")
            fresh = dict(zip(batch_keys, vectors, strict=True))
            self.cache.put_many(fresh)
            found.update(fresh)
            self.stats.embedded += len(batch_keys)
            done += len(batch_keys)
            if self.progress is not None:
                self.progress(done, len(todo))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def _one_dimension(self, size: int, source: str) -> None:
        """Refuse vectors of ``size`` unless it is the dimension of the first vectors seen."""
        if self._dimension is None:
            self._dimension = size
        elif size != self._dimension:
            raise EmbeddingError(
                f"embedder {self.inner.name!r}: vectors of dimension {size} {source}, after {self._dimension}; "
                "one model gives one size, so the model behind this name changed: nothing of them was kept"
            )

    def remember(self, texts: Sequence[str], vectors: np.ndarray, kind: Kind = "passage") -> None:
        """Keep vectors of ``texts`` made elsewhere (by the same model, on a Ray cluster, say), so they are
        never embedded again here."""
        if len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} texts but {len(vectors)} vectors")
        self.cache.put_many(
            {
                _key(self.inner.name, kind, t): np.asarray(v, dtype=np.float32)
                for t, v in zip(texts, vectors, strict=True)
            }
        )
