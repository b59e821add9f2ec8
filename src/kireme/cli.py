"""The ``kireme`` command. Data goes to stdout, messages and progress to stderr.

Exit codes: 0 success; 1 some input could not be read or decoded (the rest still finished);
2 usage error (bad option, missing file, a directory with no readable files).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import click

from kireme.boundaries.presets import PRESETS
from kireme.chunkers import DEFAULT_MAX_SIZE, STRATEGIES, Chunker, make_chunker
from kireme.document import Chunk, ConfigError, Document, LoadError
from kireme.load import SUPPORTED_SUFFIXES, iter_paths, load, load_bytes

STDIN = "-"
EXIT_FAILURE = 1
EXIT_USAGE = 2

log = logging.getLogger("kireme")

CHUNK_EXAMPLES = """
\b
Examples:
  kireme chunk 規程.txt                                # recursive, 512 chars, JSONL
  kireme chunk docs/ --strategy sentence --max-size 300 --format text
  kireme chunk manual.md --unit tokens --max-size 256 --overlap 32
  kireme chunk schema.sql --separators '\\n *CREATE ' '\\n *INSERT ' '\\n'
  kireme chunk notes.txt --preset markdown --min-size 100
  kireme chunk old.txt --encoding cp932 | jq -r .text
  cat memo.txt | kireme chunk - --strategy paragraph

\b
Strategies:
  recursive  separators strongest first (paragraphs, lines, sentences, clauses, spaces), pieces merged
             up to --max-size; the general default. --preset markdown|python|sql, or --separators.
  sentence   whole sentences packed up to --max-size (Japanese 。！？ and English rules).
  paragraph  whole paragraphs packed (--no-merge: one per chunk); long ones cut between sentences.
  fixed      windows of --max-size units cut between grapheme clusters; a baseline.

Each JSONL row: id, doc_id, index, start, end, text, size, unit, headings, metadata.
doc.text[start:end] == text, where doc.text is what `kireme load PATH` prints.
"""


class _Failures:
    """Counts what went wrong per input so that the exit code can say so at the end."""

    def __init__(self) -> None:
        self.usage = 0
        self.failed = 0

    def report(self, message: str, *, usage: bool) -> None:
        click.echo(f"kireme: error: {message}", err=True)
        if usage:
            self.usage += 1
        else:
            self.failed += 1

    @property
    def exit_code(self) -> int:
        if self.usage:
            return EXIT_USAGE
        if self.failed:
            return EXIT_FAILURE
        return 0


def _expand_paths(paths: Sequence[str], failures: _Failures) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        if raw == STDIN:
            files.append(Path(STDIN))
            continue
        p = Path(raw)
        if not p.exists():
            failures.report(f"{raw}: no such file or directory", usage=True)
            continue
        found = list(iter_paths(p))
        if p.is_dir() and not found:
            suffixes = ", ".join(sorted(SUPPORTED_SUFFIXES))
            failures.report(f"{raw}: directory has no files to read ({suffixes})", usage=True)
        files.extend(found)
    return files


def _load_documents(files: Sequence[Path], encoding: str | None, failures: _Failures) -> Iterable[Document]:
    show_progress = len(files) > 1 and sys.stderr.isatty()
    with click.progressbar(
        files, label="chunking", file=sys.stderr, hidden=not show_progress, show_pos=True
    ) as bar:
        for path in bar:
            try:
                if str(path) == STDIN:
                    yield load_bytes(sys.stdin.buffer.read(), "<stdin>", encoding)
                else:
                    yield load(path, encoding=encoding)
            except LoadError as exc:
                failures.report(str(exc), usage=False)


def _write(text: str) -> None:
    sys.stdout.write(text)


def _format_text_chunk(chunk: Chunk) -> str:
    header = f"── {chunk.doc_id} #{chunk.index} [{chunk.start}:{chunk.end}] {chunk.size} {chunk.unit} "
    return header + "─" * max(3, 72 - len(header)) + "\n" + chunk.text + "\n"


def _separators_from_argv(argv: list[str]) -> list[str]:
    """Let ``--separators A B C`` take several values, as the usage line promises (click takes one)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        out.append(arg)
        i += 1
        if arg == "--separators":
            taken = 0
            while i < len(argv):
                nxt = argv[i]
                if taken and (nxt.startswith("--") or Path(nxt).exists()):
                    break
                if taken:
                    out.append("--separators")
                out.append(nxt)
                taken += 1
                i += 1
    return out


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="kireme")
@click.option("-v", "--verbose", count=True, help="More messages on stderr (-vv for debug).")
def cli(verbose: int) -> None:
    """kireme (切れ目): cut documents into chunks for RAG at the right places.

    \b
    Start with:
      kireme chunk FILE --format text      see how a document is cut
      kireme load FILE                     the decoded text all offsets refer to
    """
    level = logging.WARNING - 10 * verbose
    logging.basicConfig(level=max(level, logging.DEBUG), format="kireme: %(message)s", stream=sys.stderr)


@cli.command(epilog=CHUNK_EXAMPLES)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--strategy",
    "-s",
    type=click.Choice(sorted(STRATEGIES)),
    default="recursive",
    show_default=True,
    help="How boundaries are found (see below).",
)
@click.option(
    "--max-size",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_SIZE,
    show_default=True,
    help="Largest chunk, in --unit (overlap included).",
)
@click.option(
    "--min-size",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="A smaller piece joins a neighbour when the limit allows.",
)
@click.option(
    "--overlap",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Units each chunk repeats from the end of the previous one.",
)
@click.option(
    "--unit",
    type=click.Choice(["chars", "tokens"]),
    default="chars",
    show_default=True,
    help="chars = code points; tokens = cl100k_base (offline).",
)
@click.option(
    "--separators",
    multiple=True,
    metavar="REGEX ...",
    help="recursive: your own separator regexes, strongest first; a match stays with the text after it.",
)
@click.option(
    "--preset",
    type=click.Choice(["auto", *sorted(PRESETS)]),
    default=None,
    help="recursive: built-in separator list [default: auto = markdown for .md files, prose otherwise].",
)
@click.option("--no-merge", is_flag=True, help="paragraph: one paragraph per chunk.")
@click.option(
    "--encoding",
    default=None,
    metavar="NAME",
    help="Decode input with this encoding instead of detecting it (e.g. cp932, euc_jp).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "text"]),
    default=None,
    help="Output format [default: jsonl when piped, text on a terminal].",
)
def chunk(
    paths: tuple[str, ...],
    strategy: str,
    max_size: int,
    min_size: int,
    overlap: int,
    unit: str,
    separators: tuple[str, ...],
    preset: str | None,
    no_merge: bool,
    encoding: str | None,
    fmt: str | None,
) -> None:
    """Cut files into chunks. PATH may be a file, a directory (its .txt/.md files, recursively) or - for stdin."""
    chunker = _build_chunker(strategy, max_size, min_size, overlap, unit, separators, preset, no_merge)
    fmt = fmt or ("text" if sys.stdout.isatty() else "jsonl")
    failures = _Failures()
    files = _expand_paths(paths, failures)
    n_docs = n_chunks = total = largest = 0
    try:
        for doc in _load_documents(files, encoding, failures):
            chunks = chunker.chunk(doc)
            n_docs += 1
            for c in chunks:
                n_chunks += 1
                total += c.size
                largest = max(largest, c.size)
                if fmt == "jsonl":
                    _write(json.dumps(c.to_dict(), ensure_ascii=False) + "\n")
                else:
                    _write(_format_text_chunk(c))
        sys.stdout.flush()
    except BrokenPipeError:  # `kireme chunk ... | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(failures.exit_code)
    if fmt == "text" or n_docs > 1:
        avg = total / n_chunks if n_chunks else 0
        click.echo(
            f"{n_docs} document(s), {n_chunks} chunks, average {avg:.1f} {chunker.measure.name}, "
            f"max {largest} {chunker.measure.name}",
            err=True,
        )
    sys.exit(failures.exit_code)


def _build_chunker(
    strategy: str,
    max_size: int,
    min_size: int,
    overlap: int,
    unit: str,
    separators: Sequence[str],
    preset: str | None,
    no_merge: bool,
) -> Chunker:
    options: dict[str, object] = {
        "max_size": max_size,
        "min_size": min_size,
        "overlap": overlap,
        "unit": unit,
    }
    if separators or preset:
        if strategy != "recursive":
            raise click.UsageError("--separators and --preset apply to --strategy recursive")
        if separators and preset:
            raise click.UsageError("use either --separators or --preset, not both")
        if separators:
            options["separators"] = list(separators)
        else:
            options["preset"] = preset
    if no_merge:
        if strategy != "paragraph":
            raise click.UsageError("--no-merge applies to --strategy paragraph")
        options["merge_paragraphs"] = False
    try:
        return make_chunker(strategy, **options)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


@cli.command(
    "load",
    epilog="""
\b
Examples:
  kireme load 規程.txt > decoded.txt
  kireme load old.txt --encoding cp932
  kireme load notes.md --info        # also print the detected encoding to stderr
""",
)
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option(
    "--encoding", default=None, metavar="NAME", help="Decode with this encoding instead of detecting it."
)
@click.option("--info", is_flag=True, help="Print the document id and detected encoding to stderr.")
def load_command(path: Path, encoding: str | None, info: bool) -> None:
    """Print the decoded text of PATH exactly (line endings kept): what chunk offsets refer to."""
    try:
        if str(path) == STDIN:
            doc = load_bytes(sys.stdin.buffer.read(), "<stdin>", encoding)
        else:
            doc = load(path, encoding=encoding)
    except LoadError as exc:
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(EXIT_USAGE if exc.reason == "no such file" else EXIT_FAILURE)
    sys.stdout.buffer.write(doc.text.encode("utf-8"))
    sys.stdout.flush()
    if info:
        click.echo(
            f"{doc.id}: encoding={doc.metadata['encoding']} chars={len(doc.text)} bytes={doc.metadata['bytes']}",
            err=True,
        )


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``kireme`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    cli.main(args=_separators_from_argv(args), prog_name="kireme")


if __name__ == "__main__":  # pragma: no cover
    main()
