"""Compare sentence segmenters on Japanese and English: kireme's rules vs. pysbd, sentencex, bunkai, ja-sentence-segmenter.

The gold set ``benchmarks/data/sentences_gold.jsonl`` is original text written for kireme (not copied from
any dataset or website). Each line is ``{"lang", "kind", "text", "sentences"}``; ``text`` contains the gold
sentences in order, joined by "", " ", "\\n" or a blank line (a single "\\n" may also sit inside a sentence).

Metrics, per language, ignoring whitespace everywhere:

* boundary precision / recall / F1: a boundary is the offset (in the text with all whitespace removed) where a
  gold sentence ends, the document end excluded; micro-averaged over documents;
* exact-sentence accuracy: share of gold sentences that come out as exactly one predicted sentence;
* throughput: the gold documents of the language repeated to ~1 MB of UTF-8 and segmented one by one.

``--corpus PATH`` (a SQuAD-format file such as JSQuAD valid-v1.3.json) reports, for the Japanese segmenters,
only throughput and how many contexts come out as exactly one sentence (there is no gold there).

Libraries that are not installed are reported as skipped, so this runs in the main venv (kireme only) as well
as in ``.venv-seg`` (where the libraries are installed)::

    PYTHONPATH=src python benchmarks/sentence_segmenters.py [--markdown] [--errors kireme] [--corpus PATH]
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _corpora import CORPORA, DEFAULT_CORPORA
from _peers import versions

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "benchmarks" / "data" / "sentences_gold.jsonl"
DEFAULT_CORPUS = DEFAULT_CORPORA / CORPORA["jsquad-valid"]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

Result = list  # list[str] (sentences) or list[tuple[int, int]] (offsets into the text)


@dataclass
class Segmenter:
    name: str
    version: str
    langs: tuple[str, ...]
    fn: Callable[[str, str], Result]
    note: str = ""


def _version(dist: str) -> str:
    return versions(dist)[dist]  # "?" when not installed


def _kireme() -> Segmenter:
    from kireme.text.sentences import sentence_spans

    version = _version("kireme")
    return Segmenter(
        "kireme",
        "working tree" if version == "?" else version,
        ("ja", "en"),
        lambda text, lang: sentence_spans(text),
        "rules, no config",
    )


def _pysbd() -> Segmenter:
    import pysbd

    cache: dict[str, object] = {}

    def run(text: str, lang: str) -> Result:
        seg = cache.get(lang)
        if seg is None:
            seg = cache[lang] = pysbd.Segmenter(language=lang, clean=False)
        return seg.segment(text)

    return Segmenter("pysbd", _version("pysbd"), ("ja", "en"), run, "clean=False")


def _sentencex() -> Segmenter:
    import sentencex

    return Segmenter(
        "sentencex",
        _version("sentencex"),
        ("ja", "en"),
        lambda text, lang: list(sentencex.segment(lang, text)),
    )


def _bunkai() -> Segmenter:
    from bunkai import Bunkai

    bunkai = Bunkai()  # rule-based default; the line-break model (extra "lb") needs torch and is not used
    return Segmenter(
        "bunkai", _version("bunkai"), ("ja",), lambda text, lang: list(bunkai(text)), "no lb model (no torch)"
    )


def _ja_sentence_segmenter() -> Segmenter:
    import functools

    from ja_sentence_segmenter.common.pipeline import make_pipeline
    from ja_sentence_segmenter.concatenate.simple_concatenator import concatenate_matching
    from ja_sentence_segmenter.split.simple_splitter import split_newline, split_punctuation

    # The README pipeline without `normalize` (which rewrites characters, so its output could not be mapped
    # back); full-width ！？ are added to the punctuation because normalize would have made them half-width.
    split_punc = functools.partial(split_punctuation, punctuations=r"。!?！？")
    concat_tail_te = functools.partial(
        concatenate_matching, former_matching_rule=r"^(?P<result>.+)(て)$", remove_former_matched=False
    )
    pipeline = make_pipeline(split_newline, concat_tail_te, split_punc)
    return Segmenter(
        "ja-sentence-segmenter",
        _version("ja-sentence-segmenter"),
        ("ja",),
        lambda text, lang: list(pipeline(text)),
        "README pipeline minus normalize",
    )


FACTORIES = {
    "kireme": _kireme,
    "pysbd": _pysbd,
    "sentencex": _sentencex,
    "bunkai": _bunkai,
    "ja-sentence-segmenter": _ja_sentence_segmenter,
}


def load_segmenters(names: list[str]) -> tuple[list[Segmenter], list[str]]:
    ready, skipped = [], []
    for name in names:
        try:
            seg = FACTORIES[name]()
            seg.fn("テスト。動作確認です。", "ja") if "ja" in seg.langs else seg.fn("A test. Another.", "en")
            ready.append(seg)
        except Exception as exc:  # ImportError, or a model that cannot be loaded offline
            skipped.append(
                f"{name}: skipped ({type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''})"
            )
    return ready, skipped


# ---------------------------------------------------------------- offsets in whitespace-free coordinates


def squeeze(text: str) -> str:
    return "".join(text.split())


def boundaries(text: str, result: Result) -> tuple[set[int], int]:
    """Boundary offsets (whitespace ignored, document end and start excluded) and how many pieces did not map."""
    nows = squeeze(text)
    n = len(nows)
    out: set[int] = set()
    misses = 0
    if result and isinstance(result[0], tuple):
        cum = [0] * (len(text) + 1)
        for i, ch in enumerate(text):
            cum[i + 1] = cum[i] + (0 if ch.isspace() else 1)
        ends = [cum[end] for _, end in result]
    else:
        ends, pos = [], 0
        for piece in result:
            s = squeeze(piece)
            if not s:
                continue
            if nows.startswith(s, pos):
                pos += len(s)
            else:
                j = nows.find(s, pos)
                misses += 1
                pos = j + len(s) if j >= 0 else min(n, pos + len(s))
            ends.append(pos)
    out = {e for e in ends if 0 < e < n}
    return out, misses


def gold_boundaries(doc: dict) -> list[int]:
    b, pos = [], 0
    for s in doc["sentences"]:
        pos += len(squeeze(s))
        b.append(pos)
    return b[:-1]


def exact_correct(gold: list[int], pred: set[int], n: int) -> int:
    edges = [0, *gold, n]
    ps = sorted(pred)
    ok = 0
    for a, b in itertools.pairwise(edges):
        if (a == 0 or a in pred) and (b == n or b in pred) and not any(a < p < b for p in ps):
            ok += 1
    return ok


# ---------------------------------------------------------------- evaluation


def evaluate(seg: Segmenter, docs: list[dict]) -> dict:
    tp = fp = fn = exact = total = misses = 0
    wrong = []
    for doc in docs:
        gold = gold_boundaries(doc)
        pred, miss = boundaries(doc["text"], seg.fn(doc["text"], doc["lang"]))
        misses += miss
        g = set(gold)
        tp += len(g & pred)
        fp += len(pred - g)
        fn += len(g - pred)
        n = len(squeeze(doc["text"]))
        exact += exact_correct(gold, pred, n)
        total += len(doc["sentences"])
        if pred != g:
            wrong.append((doc, pred))
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {
        "P": p,
        "R": r,
        "F1": f,
        "exact": exact / total,
        "fp": fp,
        "fn": fn,
        "misses": misses,
        "wrong": wrong,
    }


def throughput(seg: Segmenter, texts: list[str], lang: str, target_bytes: int, time_limit: float) -> dict:
    size = sum(len(t.encode("utf-8")) for t in texts)
    reps = max(1, round(target_bytes / size)) if size else 1
    work = texts * reps
    chars = done = 0
    start = time.perf_counter()
    for t in work:
        seg.fn(t, lang)
        chars += len(t)
        done += 1
        if time.perf_counter() - start > time_limit:
            break
    dt = time.perf_counter() - start
    return {"chars_s": chars / dt, "docs_s": done / dt, "partial": done < len(work), "chars": chars}


def show_errors(seg: Segmenter, wrong: list) -> None:
    print(f"\n## Documents {seg.name} gets wrong ({len(wrong)})")
    for doc, pred in wrong:
        nows = squeeze(doc["text"])
        edges = [0, *sorted(pred), len(nows)]
        pieces = [nows[a:b] for a, b in itertools.pairwise(edges)]
        g = set(gold_boundaries(doc))
        print(f"- [{doc['lang']}/{doc['kind']}] missed={len(g - pred)} extra={len(pred - g)}")
        print("    gold: " + " | ".join(squeeze(s) for s in doc["sentences"]))
        print("    pred: " + " | ".join(pieces))


def fmt_rate(x: float) -> str:
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:.0f} k" if x >= 1e3 else f"{x:.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gold", type=Path, default=GOLD)
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument(
        "--errors",
        metavar="NAME",
        action="append",
        default=[],
        help="list the gold documents NAME gets wrong",
    )
    ap.add_argument(
        "--corpus",
        type=Path,
        nargs="?",
        const=DEFAULT_CORPUS,
        default=None,
        help=f"SQuAD-format corpus for throughput / one-sentence counts (default {DEFAULT_CORPUS})",
    )
    ap.add_argument("--only", nargs="+", choices=list(FACTORIES), default=list(FACTORIES))
    ap.add_argument(
        "--bytes", type=int, default=1_000_000, help="throughput input size per language (default 1 MB)"
    )
    ap.add_argument(
        "--time-limit", type=float, default=30.0, help="seconds per throughput run before it is cut short"
    )
    args = ap.parse_args()

    segs, skipped = load_segmenters(args.only)
    for line in skipped:
        print(line)
    print(f"python {sys.version.split()[0]}; " + ", ".join(f"{s.name} {s.version}" for s in segs))

    if not args.gold.exists():
        print(f"gold set {args.gold} not found; skipping the gold evaluation")
        docs = []
    else:
        docs = [
            json.loads(line) for line in args.gold.read_text(encoding="utf-8").splitlines() if line.strip()
        ]

    for lang in ("ja", "en"):
        ldocs = [d for d in docs if d["lang"] == lang]
        if not ldocs:
            continue
        nsent = sum(len(d["sentences"]) for d in ldocs)
        ratio = nsent / sum(len(d["text"]) for d in ldocs)
        rows = []
        for seg in segs:
            if lang not in seg.langs:
                continue
            ev = evaluate(seg, ldocs)
            tp = throughput(seg, [d["text"] for d in ldocs], lang, args.bytes, args.time_limit)
            rows.append((seg, ev, tp))
        title = (
            f"{lang}: {len(ldocs)} documents, {nsent} gold sentences, {nsent - len(ldocs)} gold boundaries"
        )
        if args.markdown:
            print(f"\n**{title}**\n")
            print(
                "| segmenter | version | precision | recall | F1 | exact sentences | chars/s | sentences/s |"
            )
            print("|---|---|---:|---:|---:|---:|---:|---:|")
            for seg, ev, tp in rows:
                star = "*" if tp["partial"] else ""
                print(
                    f"| {seg.name} | {seg.version} | {ev['P']:.3f} | {ev['R']:.3f} | {ev['F1']:.3f} | {ev['exact']:.3f} "
                    f"| {fmt_rate(tp['chars_s'])}{star} | {fmt_rate(tp['chars_s'] * ratio)}{star} |"
                )
        else:
            print(f"\n{title}")
            print(
                f"{'segmenter':24} {'P':>6} {'R':>6} {'F1':>6} {'exact':>6} {'FP':>4} {'FN':>4} {'chars/s':>10} {'sent/s':>9}"
            )
            for seg, ev, tp in rows:
                star = "*" if tp["partial"] else ""
                print(
                    f"{seg.name:24} {ev['P']:6.3f} {ev['R']:6.3f} {ev['F1']:6.3f} {ev['exact']:6.3f} {ev['fp']:4d} {ev['fn']:4d} "
                    f"{fmt_rate(tp['chars_s']):>10}{star} {fmt_rate(tp['chars_s'] * ratio):>8}{star}"
                )
        for seg, ev, _ in rows:
            if ev["misses"]:
                print(
                    f"  note: {ev['misses']} pieces from {seg.name} did not match the text verbatim (mapped by search)"
                )
        if any(tp["partial"] for _, _, tp in rows):
            print(f"  * cut short after {args.time_limit:.0f} s; rate measured on the part done")
        print(
            f"  throughput: gold {lang} documents repeated to ~{args.bytes / 1e6:g} MB UTF-8, one call per document; "
            "sentences/s = chars/s x gold sentence density"
        )
        for seg, ev, _ in rows:
            if seg.name in args.errors:
                show_errors(seg, ev["wrong"])

    if args.corpus is not None:
        run_corpus(args.corpus, segs, args.markdown)


def run_corpus(path: Path, segs: list[Segmenter], markdown: bool) -> None:
    if not path.exists():
        print(f"\ncorpus {path} not found; skipping")
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    # JSQuAD contexts start with "title [SEP] "; drop that prefix.
    contexts = [re.sub(r"^.*? \[SEP\] ", "", p["context"]) for a in data["data"] for p in a["paragraphs"]]
    chars = sum(map(len, contexts))
    title = f"corpus {path.name}: {len(contexts)} contexts, {chars} chars (no gold: throughput and single-sentence contexts only)"
    rows = []
    for seg in segs:
        if "ja" not in seg.langs:
            continue
        one = nsent = 0
        start = time.perf_counter()
        results = [seg.fn(c, "ja") for c in contexts]
        dt = time.perf_counter() - start
        for c, res in zip(contexts, results, strict=True):
            b, _ = boundaries(c, res)
            nsent += len(b) + 1
            one += not b
        rows.append((seg, chars / dt, one, nsent / len(contexts)))
    if markdown:
        print(f"\n**{title}**\n")
        print("| segmenter | chars/s | contexts left as one sentence | sentences per context |")
        print("|---|---:|---:|---:|")
        for seg, rate, one, mean in rows:
            print(f"| {seg.name} | {fmt_rate(rate)} | {one} ({one / len(contexts):.1%}) | {mean:.2f} |")
    else:
        print(f"\n{title}")
        for seg, rate, one, mean in rows:
            print(
                f"{seg.name:24} {fmt_rate(rate):>10} chars/s   one-sentence contexts {one:5d} ({one / len(contexts):.1%})"
                f"   sentences/context {mean:.2f}"
            )


if __name__ == "__main__":
    main()
