"""Start-up cost: `kireme chunk` on a 1 KB file against `python -c "import numpy, regex, click"`.

The target (issue #11) is a ratio of at most 1.5: a small file should cost about what importing the three
libraries the command cannot do without costs. Runs alternate between the two commands so that load on
the machine hits both alike; the table reports medians.

With the ``index`` extra installed, also `kireme search` on a small index (`examples/`, the
``hash`` embedder: no model to load, so what is left is start-up and the store), against importing LanceDB
plainly and as kireme imports it (`kireme.index.lancedb_import`: the REST client's validators deferred).
Run it in a venv with only ``kireme[index]`` to see what a user of that extra waits for.

    python benchmarks/startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def elapsed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def search_commands(tmp: Path) -> dict[str, list[str]]:
    """`kireme search` on a small index built here (untimed), and the two ways of importing LanceDB."""
    db = tmp / "index"
    subprocess.run(
        [str(BIN / "kireme"), "index", str(ROOT / "examples"), "--db", str(db), "--embedder", "hash"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    search = [str(BIN / "kireme"), "search", "役員の宿泊費", "--db", str(db), "--format", "jsonl"]
    deferred = "from kireme.index.lancedb_import import import_lancedb; import_lancedb()"
    return {
        "python -c 'import lancedb'": [sys.executable, "-c", "import lancedb"],
        "import_lancedb() (kireme's import)": [sys.executable, "-c", deferred],
        "kireme search QUERY (hash index of examples/)": search,
        "kireme search QUERY --mode bm25": [*search, "--mode", "bm25"],
        "kireme search QUERY --budget 800": [*search, "--budget", "800"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    text = (ROOT / "examples" / "travel-rules.txt").read_text(encoding="utf-8")[:1000]
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "small.txt"
        small.write_text(text, encoding="utf-8")
        commands = {
            "python -c 'import numpy, regex, click'": [sys.executable, "-c", "import numpy, regex, click"],
            "kireme chunk small.txt (1 KB)": [str(BIN / "kireme"), "chunk", str(small)],
            "kireme chunk small.txt --unit tokens": [
                str(BIN / "kireme"),
                "chunk",
                str(small),
                "--unit",
                "tokens",
            ],
            "kireme chunk small.txt --strategy markdown": [
                str(BIN / "kireme"),
                "chunk",
                str(small),
                "--strategy",
                "markdown",
            ],
            "kireme --help": [str(BIN / "kireme"), "--help"],
        }
        if importlib.util.find_spec("lancedb") is not None:
            commands.update(search_commands(Path(tmp)))
        for cmd in commands.values():  # warm the file cache and the bytecode
            elapsed(cmd)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, cmd in commands.items():
                times[name].append(elapsed(cmd))
    base = statistics.median(next(iter(times.values())))
    print(f"| command | median s | ratio to the imports |  ({args.runs} runs each)")
    print("|---|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.3f} | {median / base:.2f} |")


if __name__ == "__main__":
    main()
