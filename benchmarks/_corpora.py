"""Where the benchmarks find their corpora, and a clean skip when they are not there.

The corpora live outside the repository, in ``../shared/corpora`` (every benchmark takes ``--corpora`` to
point elsewhere); they are read, never written. A benchmark whose corpora are absent says so and exits 0,
and one corpus that is absent is reported and left out while the others are measured.

    ap = argparse.ArgumentParser()
    add_corpora_argument(ap)
    args = ap.parse_args()
    if not corpora_present(args.corpora, "the throughput benchmark"):
        return 0
    path = corpus_path(args.corpora, "jsquad-valid")  # None (and a note on stderr) when absent
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPORA = REPO.parent / "shared" / "corpora"
RESULTS = REPO / "benchmarks" / "results"  # JSON results (gitignored)

# name -> path under the corpora root (a file or a folder)
CORPORA: dict[str, str] = {
    "jsquad-valid": "jsquad/valid-v1.3.json",  # JSQuAD v1.3 valid (the test file is reserved: never read)
    "jaquad-dev": "jaquad/dev",  # JaQuAD dev, a folder of SQuAD-format JSON files
    "chroma": "chroma-chunking-eval",  # Chroma's chunking-evaluation corpora and questions (English)
    "choi-1": "choi-segmentation/data/choi/1/3-11",  # Choi's 3-11 sets, two folders of .ref files
    "choi-2": "choi-segmentation/data/choi/2/3-11",
    "ja-techdocs-md": "ja-techdocs-md",  # Markdown: rust-book-ja, react-dev-ja, vite-docs-ja
    "ja-techdocs-html": "ja-techdocs-html",  # HTML: rust-book-ja-html
    "notebooks": "notebooks",  # .ipynb: tensorflow-docs-ja, langchain-docs
}
CHOI = ("choi-1", "choi-2")


def add_corpora_argument(ap: argparse.ArgumentParser) -> None:
    """The ``--corpora`` option every benchmark takes."""
    ap.add_argument(
        "--corpora", type=Path, default=DEFAULT_CORPORA, help="corpora root (default: %(default)s)"
    )


def corpora_present(root: Path, benchmark: str) -> bool:
    """Whether the corpora root exists; when it does not, says the benchmark is skipped."""
    if root.is_dir():
        return True
    print(f"corpora not found at {root}: skipping {benchmark}", file=sys.stderr)
    return False


def corpus_path(root: Path, name: str, *, quiet: bool = False) -> Path | None:
    """The path of the named corpus under ``root``, or None (with a note on stderr) when it is absent."""
    path = root / CORPORA[name]
    if path.exists():
        return path
    if not quiet:
        print(f"# {name}: not found at {path}, skipped", file=sys.stderr)
    return None


def choi_folders(root: Path, *, quiet: bool = False) -> list[Path] | None:
    """Choi's two 3-11 folders (``1/3-11``, ``2/3-11``), or None when either is absent."""
    folders = [corpus_path(root, name, quiet=quiet) for name in CHOI]
    return None if None in folders else folders  # type: ignore[return-value]
