"""``kireme chunk``: cut files into chunks, JSONL or a readable listing."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click

from kireme.boundaries.presets import PRESETS
from kireme.chunkers import DEFAULT_MAX_SIZE, Chunker
from kireme.cli.common import (
    SEMANTIC_DEFAULTS,
    Failures,
    exit_quietly_on_broken_pipe,
    expand_paths,
    input_options,
    load_documents,
    semantic_options,
    semantic_settings,
    write,
)
from kireme.context import CONTEXT_MODES
from kireme.document import Chunk, ConfigError, KiremeError
from kireme.strategies import STRATEGIES, make_chunker

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
  kireme chunk report.txt --strategy semantic --max-size 600      # bundled model, cut at topic changes
  kireme chunk report.txt --strategy semantic --similarity bigram --threshold percentile:90
  kireme chunk manual.md guide.html spec.docx --strategy markdown --unit tokens --max-size 512
  kireme chunk 料金表.csv --strategy markdown --table group-by:区分 | jq -r .embed_text
  kireme chunk analysis.ipynb --strategy markdown --outputs text

\b
Strategies:
  recursive  separators strongest first (paragraphs, lines, sentences, clauses, spaces), pieces merged
             up to --max-size; the general default. --preset markdown|python|javascript|typescript|sql
             (a comment or decorator stays with the declaration below it), or --separators.
  sentence   whole sentences packed up to --max-size (Japanese 。！？ and English rules).
  paragraph  whole paragraphs packed (--no-merge: one per chunk); long ones cut between sentences.
  semantic   cut where adjacent sentences stop being similar (--similarity, --threshold; see
             `kireme inspect` to choose a threshold); topics over --max-size split at their weakest gaps.
  fixed      windows of --max-size units cut between grapheme clusters; a baseline.
  markdown   (alias structure) along the document's structure: a heading's section whole when it fits,
             lists, code blocks and table rows never cut while they fit; big tables split between rows
             with the header repeated in embed_text (--table); title and heading path in embed_text
             (--context). For Markdown, HTML, notebooks, PDF, Word and CSV alike.

Each JSONL row: id, doc_id, index, start, end, text, size, unit, headings, metadata (page, pages, cell,
cell_type, table where known), title, embed_text (text plus context; equal to text when none).
doc.text[start:end] == text, where doc.text is what `kireme load PATH` prints (HTML, PDF, notebooks and
.docx are read as the Markdown/text kireme extracts from them).
"""


def format_text_chunk(chunk: Chunk) -> str:
    header = f"── {chunk.doc_id} #{chunk.index} [{chunk.start}:{chunk.end}] {chunk.size} {chunk.unit} "
    if chunk.headings:
        header += "· " + " > ".join(chunk.headings) + " "
    return header + "─" * max(3, 72 - len(header)) + "\n" + chunk.text + "\n"


@click.command(epilog=CHUNK_EXAMPLES)
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
@semantic_options
@click.option(
    "--context",
    type=click.Choice(CONTEXT_MODES),
    default=None,
    help="What goes in front of embed_text: the document title, or title and heading path "
    "[default: headings for markdown/structure, none otherwise]. text and offsets never change.",
)
@click.option(
    "--context-in-budget/--no-context-in-budget",
    default=None,
    help="Count the context toward --max-size, so embed_text fits it [default: on for --unit tokens].",
)
@click.option(
    "--table",
    "table_mode",
    default=None,
    metavar="MODE",
    help="markdown/structure: rows (default: split between rows, header repeated), fill-down (blank "
    "cells filled from above), group-by:COLUMN (one table per value), records (one row per chunk as "
    "'column: value' lines). Changes embed_text only.",
)
@input_options
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
    context: str | None,
    context_in_budget: bool | None,
    table_mode: str | None,
    encoding: str | None,
    format_in: str | None,
    outputs: str,
    fmt: str | None,
    **semantic: Any,
) -> None:
    """Cut files into chunks. PATH may be a file, a directory (its readable files, recursively) or - for stdin.

    Reads text, Markdown, HTML, Jupyter notebooks, PDF, Word .docx and CSV/TSV. Every JSONL row has the
    exact text with its offsets, and embed_text: the text to embed (with --context, table headers...).
    """
    chunker = build_chunker(
        strategy,
        max_size,
        min_size,
        overlap,
        unit,
        separators,
        preset,
        no_merge,
        semantic,
        structure={"context": context, "context_in_budget": context_in_budget, "table": table_mode},
    )
    fmt = fmt or ("text" if sys.stdout.isatty() else "jsonl")
    failures = Failures()
    files = expand_paths(paths, failures)
    n_docs = n_chunks = total = largest = 0
    try:
        for doc in load_documents(files, encoding, failures, format=format_in, outputs=outputs):
            try:
                chunks = chunker.chunk(doc)
            except KiremeError as exc:  # an embedder that cannot be reached, a model that is missing
                failures.report(f"{doc.id}: {exc}", usage=False)
                continue
            n_docs += 1
            for c in chunks:
                n_chunks += 1
                total += c.size
                largest = max(largest, c.size)
                write(
                    json.dumps(c.to_dict(), ensure_ascii=False) + "\n"
                    if fmt == "jsonl"
                    else format_text_chunk(c)
                )
        sys.stdout.flush()
    except BrokenPipeError:
        exit_quietly_on_broken_pipe(failures.exit_code)
    if fmt == "text" or n_docs > 1:
        avg = total / n_chunks if n_chunks else 0
        click.echo(
            f"{n_docs} document(s), {n_chunks} chunks, average {avg:.1f} {chunker.measure.name}, "
            f"max {largest} {chunker.measure.name}",
            err=True,
        )
    sys.exit(failures.exit_code)


def build_chunker(
    strategy: str,
    max_size: int,
    min_size: int,
    overlap: int,
    unit: str,
    separators: Sequence[str],
    preset: str | None,
    no_merge: bool,
    semantic: dict[str, Any],
    structure: dict[str, Any] | None = None,
) -> Chunker:
    """The chunker the options describe; options that do not apply to the strategy are usage errors."""
    options: dict[str, object] = {
        "max_size": max_size,
        "min_size": min_size,
        "overlap": overlap,
        "unit": unit,
    }
    for key, value in (structure or {}).items():
        if value is None:
            continue
        if key == "table" and strategy not in ("markdown", "structure"):
            raise click.UsageError("--table applies to --strategy markdown (or structure)")
        if key == "context_in_budget" and (structure or {}).get("context") == "none":
            continue
        options[key] = value
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
    changed = [k for k, v in semantic.items() if v != SEMANTIC_DEFAULTS[k]]
    if strategy == "semantic":
        options.update(semantic_settings(**semantic))
    elif changed:
        flags = ", ".join("--" + k.replace("_", "-") for k in changed)
        raise click.UsageError(f"{flags} apply to --strategy semantic")
    try:
        return make_chunker(strategy, **options)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
