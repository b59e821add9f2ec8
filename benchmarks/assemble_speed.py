"""How long kireme takes to assemble the context for one question, at users' chunk sizes and budgets.

What `kireme search --budget`, `kireme ask` and the server's ``/search`` spend after retrieval: the
ranked hits of one question turned into passages within the budget (`kireme.assemble.Assembler`).
One BM25 index of JSQuAD valid's articles per chunk size (`recursive`); for each sampled question the
hits are ranked once, untimed, as deep as `kireme search` ranks them for the budget
(`kireme.index.passages.candidates_for`); then, with kireme's per-text caches cleared (a question's
hits lie in documents no earlier question read), the assembly is timed once per budget. Prints the
median, 95th percentile and largest time per question in milliseconds.

Large chunks are where the cost grew with the cut: a hit cut to fit what is left of the budget was
chosen by measuring and tokenising every run of its sentences (cubic in its sentences); since 117ff64
each sentence is read once. Run it with ``--unit tokens`` to time what cl100k_base counting costs too.

    python benchmarks/assemble_speed.py                       # sizes 400 1500 4000, budgets 700 3000 8000
    python benchmarks/assemble_speed.py --unit tokens --sizes 320 1500 --budgets 1000 6000
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from _corpora import add_corpora_argument, corpora_present, corpus_path  # noqa: E402
from _report import print_table  # noqa: E402
from kireme.assemble import Assembler  # noqa: E402
from kireme.evaluate.datasets import load_squad  # noqa: E402
from kireme.evaluate.retrievers import BM25Retriever  # noqa: E402
from kireme.evaluate.runner import fit_corpus, ranked_units  # noqa: E402
from kireme.index.passages import candidates_for, measure_for  # noqa: E402
from kireme.strategies import make_chunker  # noqa: E402
from kireme.text.caches import clear_text_caches  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpora_argument(ap)
    ap.add_argument("--sizes", nargs="+", type=int, default=[400, 1500, 4000], help="chunk sizes in --unit")
    ap.add_argument("--budgets", nargs="+", type=int, default=[700, 3000, 8000], help="budgets in --unit")
    ap.add_argument("--unit", choices=("chars", "tokens"), default="chars")
    ap.add_argument("--questions", type=int, default=200, help="questions sampled (default 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    args = ap.parse_args()
    if not corpora_present(args.corpora, "the assembly speed benchmark"):
        return 0
    path = corpus_path(args.corpora, "jsquad-valid")
    if path is None:
        return 0
    qa = load_squad(path, name="jsquad")
    questions = random.Random(args.seed).sample(qa.questions, min(args.questions, len(qa.questions)))
    texts = {d.id: d.text for d in qa.documents}
    measure = measure_for(args.unit)
    rows: list[dict[str, object]] = []
    for size in args.sizes:
        chunker = make_chunker("recursive", max_size=size, unit=args.unit)
        fitted = fit_corpus(chunker, qa.documents, BM25Retriever)
        for budget in args.budgets:
            depth = candidates_for(budget, args.unit)
            times: list[float] = []
            for q in questions:
                ranked = ranked_units(fitted.chunks, fitted.retriever.search(q.question, depth, q.terms))
                clear_text_caches()
                assembler = Assembler(texts.get, measure, unit=args.unit)
                start = time.perf_counter()
                assembler.assemble(ranked, budget, q.question)
                times.append((time.perf_counter() - start) * 1000)
            times.sort()
            rows.append(
                {
                    "size": size,
                    "budget": budget,
                    "unit": args.unit,
                    "chunks": len(fitted.chunks),
                    "median_ms": round(statistics.median(times), 2),
                    "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2),
                    "max_ms": round(times[-1], 2),
                }
            )
            print(f"# size {size} budget {budget}: median {rows[-1]['median_ms']} ms", file=sys.stderr)
    header = ["size", "budget", "unit", "chunks", "median_ms", "p95_ms", "max_ms"]
    title = f"context assembly per question, JSQuAD valid, {len(questions)} questions (ms)"
    print_table(title, header, [[str(r[k]) for k in header] for r in rows], args.markdown)
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "questions": len(questions)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
