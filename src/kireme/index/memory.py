"""An in-memory `VectorStore` for tests and small experiments (nothing is written to disk)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from kireme.index.store import Hit, StoredChunk, check_rows, matches


class MemoryStore:
    """Rows in a list and vectors in a matrix; exact cosine search."""

    name = "memory"

    def __init__(self) -> None:
        self._rows: list[StoredChunk] = []
        self._vectors = np.zeros((0, 0), dtype=np.float32)

    def add(self, chunks: Sequence[StoredChunk], vectors: np.ndarray) -> None:
        vectors = check_rows(chunks, vectors)
        if not chunks:
            return
        self._vectors = vectors.copy() if not self._rows else np.vstack([self._vectors, vectors])
        self._rows.extend(chunks)

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        drop = set(doc_ids)
        keep = [i for i, c in enumerate(self._rows) if c.doc_id not in drop]
        self._rows = [self._rows[i] for i in keep]
        self._vectors = self._vectors[keep] if keep else np.zeros((0, 0), dtype=np.float32)

    def doc_counts(self) -> dict[str, int]:
        return dict(Counter(c.doc_id for c in self._rows))

    def doc_ids(self) -> set[str]:
        return set(self.doc_counts())

    def count(self) -> int:
        return len(self._rows)

    def search(
        self, vector: np.ndarray, k: int, where: Mapping[str, str] | None = None, *, exact: bool = False
    ) -> list[Hit]:
        """Always exact (``exact`` changes nothing)."""
        if not self._rows:
            return []
        scores = self._vectors @ np.asarray(vector, dtype=np.float32)
        order = np.argsort(-scores, kind="stable")
        hits = []
        for i in order:
            if matches(self._rows[i], where):
                hits.append(Hit(self._rows[i], float(scores[i])))
                if len(hits) == k:
                    break
        return hits

    def chunks(self, where: Mapping[str, str] | None = None) -> Iterator[StoredChunk]:
        return (c for c in list(self._rows) if matches(c, where))

    def get(self, ids: Sequence[str]) -> list[StoredChunk]:
        by_id = {c.id: c for c in self._rows}
        return [by_id[i] for i in ids if i in by_id]

    def close(self) -> None:
        pass
