"""Unpunctuated Japanese: the worst case for boundary search, timed for this checkout and a baseline.

Japanese text with every punctuation mark and space removed has no sentence, clause or word boundary:
every strategy falls back to script changes and grapheme clusters, which is where a boundary check that
reads too much shows (it once read up to 4,096 characters per check). Run on demand, not a test::

    .venv/bin/python benchmarks/unpunctuated.py                        # this checkout
    git worktree add /tmp/kireme-base 7b31507                            # an older commit, for comparison
    .venv/bin/python benchmarks/unpunctuated.py --baseline /tmp/kireme-base/src

The text is JSQuAD valid contexts (``../shared/corpora``) with everything but kana and kanji removed, cut to
``--chars`` characters. Each strategy is timed best of ``--runs`` in a fresh process per checkout, so
the two checkouts never share a module cache. MB = 10^6 UTF-8 bytes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _corpora import add_corpora_argument, corpora_present, corpus_path

REPO = Path(__file__).resolve().parent.parent
STRATEGIES = ("fixed", "recursive", "sentence", "paragraph")

# Runs inside the measured checkout: it imports whichever kireme is first on sys.path.
_TIMER = r"""
import json, sys, time
import kireme
text = open(sys.argv[1], encoding="utf-8").read()
out = {}
for strategy in sys.argv[3].split(","):
    best = None
    for _ in range(int(sys.argv[2])):
        start = time.perf_counter()
        chunks = kireme.chunk(text, strategy, max_size=400)
        took = time.perf_counter() - start
        best = took if best is None else min(best, took)
    out[strategy] = {"seconds": best, "chunks": len(chunks)}
print(json.dumps(out))
"""


def unpunctuate(text: str) -> str:
    """``text`` reduced to kana and kanji: no punctuation, no spaces, no ASCII (digits and Latin words give
    the old boundary search a pair of simple characters to stop at; pure Japanese gave it none)."""
    import regex

    return regex.sub(r"[^\p{Han}\p{Hiragana}\p{Katakana}ー]+", "", text)


def unpunctuated_text(root: Path, chars: int) -> str | None:
    path = corpus_path(root, "jsquad-valid")
    if path is None:
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    contexts = dict.fromkeys(p["context"] for a in data["data"] for p in a["paragraphs"])
    text = unpunctuate("".join(contexts))
    while len(text) < chars:
        text += text
    return text[:chars]


def time_checkout(src: Path | None, text_path: Path, runs: int) -> dict[str, dict[str, float]]:
    env_path = [str(src)] if src is not None else []
    code = "import sys; sys.path[:0] = " + repr(env_path) + "\n" + _TIMER
    done = subprocess.run(
        [sys.executable, "-c", code, str(text_path), str(runs), ",".join(STRATEGIES)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_corpora_argument(ap)
    ap.add_argument("--chars", type=int, default=1_000_000, help="text length (default %(default)s)")
    ap.add_argument("--runs", type=int, default=3, help="best of N (default %(default)s)")
    ap.add_argument("--baseline", type=Path, help="the src/ folder of another kireme checkout")
    args = ap.parse_args(argv)
    if not corpora_present(args.corpora, "the unpunctuated benchmark"):
        return 0
    text = unpunctuated_text(args.corpora, args.chars)
    if text is None:
        return 0
    mb = len(text.encode("utf-8")) / 1e6
    tmp = REPO / "benchmarks" / "results"
    tmp.mkdir(parents=True, exist_ok=True)
    text_path = tmp / "unpunctuated.txt"
    text_path.write_text(text, encoding="utf-8")
    now = time_checkout(REPO / "src", text_path, args.runs)
    base = time_checkout(args.baseline, text_path, args.runs) if args.baseline else None
    print(
        f"{len(text):,} characters ({mb:.2f} MB) of unpunctuated Japanese, max_size 400 chars, best of {args.runs}"
    )
    print()
    head = "| strategy | chunks | s | MB/s |" + (" baseline s | baseline MB/s | speed-up |" if base else "")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    total = base_total = 0.0
    for strategy in STRATEGIES:
        row = now[strategy]
        total += row["seconds"]
        cells = [strategy, str(row["chunks"]), f"{row['seconds']:.3f}", f"{mb / row['seconds']:.2f}"]
        if base:
            b = base[strategy]
            base_total += b["seconds"]
            cells += [
                f"{b['seconds']:.3f}",
                f"{mb / b['seconds']:.2f}",
                f"{b['seconds'] / row['seconds']:.1f}x",
            ]
        print("| " + " | ".join(cells) + " |")
    print()
    print(f"all four strategies: {total:.2f} s" + (f" (baseline {base_total:.2f} s)" if base else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
