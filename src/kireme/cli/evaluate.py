"""``kireme eval`` and ``kireme compare``: measure chunkings on your own documents and questions."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kireme.cli.common import (
    Failures,
    expand_paths,
    known_encoding,
    load_documents,
    on_command_line,
    packing_options,
    positive_budget,
    require_plot_extra,
    semantic_options,
    semantic_settings,
    sentences_option,
    token_unit,
    tokenizer_option,
    warn_unused_without_budget,
    widen_option,
    write,
)
from kireme.cli.progress import ProgressDisplay, quiet_option
from kireme.context import CONTEXT_MODES
from kireme.errors import ConfigError, KiremeError
from kireme.evaluate.retrievers import RETRIEVER_HELP, RETRIEVERS, Retriever, make_retriever
from kireme.evaluate.runner import (
    RetrievalRow,
    SegmentationRow,
    evaluate_budgets,
    evaluate_retrieval,
    evaluate_segmentation,
    fit_corpus,
)
from kireme.strategies import SEMANTIC_DEFAULTS, STRATEGIES, make_chunker
from kireme.text.terms import DEFAULT_KEYWORDS, KEYWORDS, check_keywords

if TYPE_CHECKING:
    from kireme.chunkers import Chunker
    from kireme.document import Document
    from kireme.evaluate.datasets import Question, SegmentedDocument

EVAL_EXAMPLES = """
\b
Examples:
  kireme eval 規程.txt --questions qa.jsonl                          # recursive 512, terms retriever, k=1
  kireme eval docs/ --questions qa.jsonl -s paragraph -s fixed --max-size 40 --max-size 200 --show-misses
  kireme eval docs/ --questions qa.jsonl --retriever bm25 -k 3 --format csv > results.csv
  kireme eval --segments topics.jsonl -s semantic -s fixed --max-size 300
  kireme eval --segments choi/3-11/ -s semantic --similarity bigram
  kireme eval --squad jsquad/valid-v1.3.json --limit 10 -s paragraph -s semantic --retriever bm25 -k 5
  kireme eval --chroma chroma-chunking-eval/ --max-size 400 --max-size 800
  kireme eval --squad jsquad/valid-v1.3.json --retriever bm25 --max-size 200 --budget 300 --budget 1500

\b
questions JSONL: {"question", "answer", "doc"?, "terms"?, "answer_start"?} per line. A question hits when one
of the top-k chunks holds the answer (its exact span when answer_start is given, else the answer text).
segments JSONL: {"id", "segments": ["topic 1 text", "topic 2 text", ...]} per line (concatenated, nothing
added); a folder of Choi .ref files works too (one sentence a line: chunked with --sentences lines unless
--sentences is given, boundaries measured in lines).
Rows: strategy, max_size, chunks, avg_chars, hits, questions, hit_rate, chars_passed (mean characters
handed to the reader per question), tokens_passed; with --segments: strategy, chunks, topics,
pure_topics, mixed_chunks, pk, windowdiff, boundary_f1.
With --budget N (repeatable, in --unit): one row per configuration and budget; hit_at_budget is the share of
questions whose answer lies whole inside the context assembled within N (the retrieved chunks merged and
grown at sentence boundaries: --assembly spans; or whole chunks in rank order: --assembly chunks), and
chars_passed/tokens_passed measure that context.
"""

RETRIEVAL_COLUMNS = [
    "strategy",
    "max_size",
    "chunks",
    "avg_chars",
    "hits",
    "questions",
    "hit_rate",
    "chars_passed",
    "tokens_passed",
]
BUDGET_COLUMNS = [
    "strategy",
    "max_size",
    "budget",
    "assembly",
    "chunks",
    "hits",
    "questions",
    "hit_at_budget",
    "chars_passed",
    "tokens_passed",
]
SEGMENT_COLUMNS = [
    "strategy",
    "max_size",
    "chunks",
    "topics",
    "pure_topics",
    "mixed_chunks",
    "pk",
    "windowdiff",
    "boundary_f1",
]


def _chunker_grid(
    strategies: Sequence[str],
    sizes: Sequence[int],
    unit: str,
    semantic: dict[str, Any],
    shared: dict[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Chunker]:
    """One chunker per (strategy, size); ``shared`` options (packing, context, tokenizer) go to every one;
    ``progress(done, total)`` is told of the texts semantic chunkers embed."""
    grid: list[Chunker] = []
    for strategy in strategies:
        for size in sizes:
            options: dict[str, Any] = {"max_size": size, "unit": unit}
            options.update({key: value for key, value in (shared or {}).items() if value is not None})
            if strategy == "semantic":
                options.update(semantic_settings(progress=progress, **semantic))
            try:
                grid.append(make_chunker(strategy, **options))
            except ConfigError as exc:
                raise click.UsageError(f"--strategy {strategy} --max-size {size}: {exc}") from None
    return grid


def keywords_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--keywords``: how the bm25 and hybrid retrievers split Japanese (as ``kireme index --keywords``)."""
    return click.option(
        "--keywords",
        type=click.Choice(KEYWORDS),
        default=DEFAULT_KEYWORDS,
        show_default=True,
        help="How --retriever bm25/hybrid split Japanese: bigrams (no dictionary), sudachi or "
        "sudachi+bigrams (SudachiPy's words; pip install 'kireme[ja]') — measure before you index.",
    )(func)


def _retriever_factory(
    name: str,
    display: ProgressDisplay,
    embedding: Callable[[int, int], None],
    keywords: str = DEFAULT_KEYWORDS,
) -> Callable[[], Retriever]:
    """``make_retriever(name)`` for each configuration; its dense embedder reports to ``embedding`` (the
    row the semantic chunkers use too), its sparse encoder to a row of its own."""
    from kireme.evaluate.retrievers import default_embedder, default_sparse_encoder

    encoding = display.tracker("sparse encoding", "texts", restarts=True)

    def make() -> Retriever:
        embedder = sparse = None
        if name in ("dense", "hybrid", "hybrid-sparse"):
            embedder = default_embedder()
            embedder.progress = embedding
        if name in ("sparse", "hybrid-sparse"):
            sparse = default_sparse_encoder()
            sparse.progress = encoding
        return make_retriever(name, embedder=embedder, sparse_encoder=sparse, keywords=keywords)

    return make


def _format_rows(rows: Sequence[RetrievalRow | SegmentationRow], columns: list[str], fmt: str) -> str:
    dicts = [r.to_dict() for r in rows]
    if fmt == "jsonl":
        return "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dicts)
    if fmt == "csv":  # one header for every row: the columns of all of them, in the order first seen
        buf = io.StringIO()
        fields = list(dict.fromkeys(key for d in dicts for key in d)) if dicts else columns
        writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(dicts)
        return buf.getvalue()

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.3f}" if value < 10 else f"{value:.1f}"
        return str(value)

    table = [columns] + [[cell(d[c]) for c in columns] for d in dicts]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
    lines = [
        "  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(row, widths, strict=True)))
        for row in table
    ]
    return "\n".join(lines) + "\n"


def _load_questions(paths: Sequence[Path], documents: list[Document]) -> list[Question]:
    """The questions of every file given (``--questions`` repeated), in order."""
    from kireme.evaluate.datasets import load_questions_jsonl

    return [question for path in paths for question in load_questions_jsonl(path, documents)]


def _documents_and_questions(
    paths: Sequence[str],
    questions: Sequence[Path],
    encoding: str | None,
    failures: Failures,
    display: ProgressDisplay,
    strategies: Sequence[str],
) -> tuple[list[Document], list[Question]]:
    """The documents of ``paths`` and the questions about them; no readable document ends the command.
    A folder gives the files some strategy reads (`walked_suffixes`: source files for ``code``, JSON for
    ``json``, the documents for the others)."""
    from kireme.load.registry import walked_suffixes

    suffixes = frozenset().union(*(walked_suffixes(s) for s in strategies))
    documents = list(
        load_documents(
            expand_paths(paths, failures, suffixes), encoding, failures, label="loading", display=display
        )
    )
    if not documents:
        sys.exit(failures.exit_code or 2)
    return documents, _load_questions(questions, documents)


def _load_segments(path: Path, encoding: str | None = None) -> list[SegmentedDocument]:
    from kireme.evaluate.datasets import load_choi, load_segments_jsonl

    return load_choi(path, encoding) if path.is_dir() or path.suffix == ".ref" else load_segments_jsonl(path)


def budget_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--budget N`` (repeatable) and ``--assembly``: measure the context a reader gets within a budget."""
    func = click.option(
        "--assembly",
        type=click.Choice(["spans", "chunks"]),
        default="spans",
        show_default=True,
        help="With --budget: spans = kireme's context (hits merged, grown at sentence boundaries, the budget "
        "shared by the best hits); chunks = the retrieved chunks whole, in rank order, until the budget is "
        "full (what a list of chunk strings gives a reader).",
    )(func)
    func = widen_option("With --budget: ")(func)
    func = click.option(
        "--comments",
        is_flag=True,
        help="With --budget: pass the HTML comments of Markdown documents too (left out by default, as "
        "kireme search --budget and kireme ask leave them out: a reader of the page never sees them).",
    )(func)
    return click.option(
        "--budget",
        "budgets",
        multiple=True,
        type=int,
        metavar="N",
        help="Context budget in --unit (repeatable): report hit_at_budget, chars_passed and tokens_passed of "
        "the context assembled within N per question.",
    )(func)


def _check_keywords(keywords: str, retriever: str) -> None:
    """A keywords setting whose analyser is not installed is a usage error before anything is chunked."""
    if keywords != DEFAULT_KEYWORDS and retriever not in ("bm25", "hybrid"):
        raise click.UsageError(f"--keywords applies to --retriever bm25 or hybrid, not {retriever}")
    try:
        check_keywords(keywords)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


def _warn_k_with_budgets(budgets: Sequence[int], shown: str) -> None:
    """``-k`` given with ``--budget``: the budget rows pass what fits the budget, however many hits that is;
    ``shown``: what -k still sets in this command's output."""
    if budgets and on_command_line("k"):
        click.echo(
            f"kireme: warning: -k {shown}; a --budget row passes what fits the budget, from as many ranked "
            "chunks as it needs",
            err=True,
        )


def _check_budgets(budgets: Sequence[int]) -> list[int]:
    for budget in budgets:
        positive_budget(None, None, budget)
    return sorted(set(budgets))


def _evaluate_grid(
    grid: Sequence[Chunker],
    documents: Sequence[Document],
    qs: Sequence[Question],
    make: Callable[[], Retriever],
    k: int,
    budgets: Sequence[int],
    assembly: str,
    widen: float,
    display: ProgressDisplay,
    comments: bool = False,
) -> list[RetrievalRow]:
    """One top-k row per configuration, then (with budgets) one row per configuration and budget; each
    configuration chunks and indexes the corpus once."""
    rows: list[RetrievalRow] = []
    at_budget: list[RetrievalRow] = []
    for ch in display.iterate(grid, "evaluating", "configurations"):
        fitted = fit_corpus(ch, documents, make)
        rows.append(evaluate_retrieval(ch, documents, qs, make, k=k, fitted=fitted))
        if budgets:
            at_budget.extend(
                evaluate_budgets(
                    ch,
                    documents,
                    qs,
                    make,
                    budgets,
                    assembly=assembly,
                    widen=widen,
                    fitted=fitted,
                    comments=comments,
                )
            )
    return rows + at_budget


def _show_misses(rows: Sequence[RetrievalRow]) -> None:
    for row in rows:
        if not row.misses:
            continue
        at = f" budget={row.budget}" if row.budget is not None else ""
        click.echo(f"\nmisses of {row.strategy} max_size={row.max_size}{at} ({len(row.misses)}):", err=True)
        for miss in row.misses:
            click.echo(f"  Q: {miss.question}", err=True)
            click.echo(f"     expected: {miss.answer}", err=True)
            click.echo(f"     returned: {' '.join(miss.returned.split())[:160]}", err=True)
            if miss.answer_chunk:
                where = " ".join(miss.answer_chunk.split())[:160]
            elif miss.not_found:  # no chunking could have held it: the question's answer or doc
                where = f"(no chunk can hold it: {miss.not_found})"
            else:
                where = "(no chunk holds it whole)"
            click.echo(f"     answer is in: {where}", err=True)


@click.command("eval", epilog=EVAL_EXAMPLES)
@click.argument("paths", nargs=-1, metavar="[PATH...]")
@click.option(
    "--questions",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Questions JSONL (repeatable: the questions of every file).",
)
@click.option("--segments", type=click.Path(exists=True, path_type=Path), help="Gold-segmented documents.")
@click.option(
    "--squad",
    type=click.Path(exists=True, path_type=Path),
    help="A SQuAD-format file or folder (JSQuAD, JaQuAD): articles are the documents.",
)
@click.option(
    "--chroma",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Chroma's chunking-evaluation folder (corpora/ + questions_df.csv).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="--squad: first N articles only; --segments: first N documents.",
)
@click.option(
    "--strategy",
    "-s",
    "strategies",
    multiple=True,
    type=click.Choice(sorted(STRATEGIES)),
    help="Strategies to compare (repeatable) [default: recursive].",
)
@click.option(
    "--max-size",
    "sizes",
    multiple=True,
    type=click.IntRange(min=1),
    help="Size limits to compare (repeatable) [default: 512].",
)
@click.option("--unit", type=click.Choice(["chars", "tokens"]), default="chars", show_default=True)
@tokenizer_option
@click.option(
    "--retriever",
    type=click.Choice(RETRIEVERS),
    default="terms",
    show_default=True,
    help=RETRIEVER_HELP,
)
@keywords_option
@click.option(
    "-k", "k", type=click.IntRange(min=1), default=1, show_default=True, help="Chunks handed to the reader."
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "jsonl", "csv"]), default="table", show_default=True
)
@click.option(
    "--show-misses", is_flag=True, help="For every miss: the question, the answer, what was returned."
)
@budget_options
@semantic_options
@sentences_option
@click.option("--encoding", default=None, metavar="NAME", callback=known_encoding)
@quiet_option
def eval_command(
    paths: tuple[str, ...],
    questions: tuple[Path, ...],
    segments: Path | None,
    squad: Path | None,
    chroma: Path | None,
    limit: int | None,
    strategies: tuple[str, ...],
    sizes: tuple[int, ...],
    unit: str,
    tokenizer: str | None,
    retriever: str,
    keywords: str,
    k: int,
    fmt: str,
    show_misses: bool,
    budgets: tuple[int, ...],
    assembly: str,
    widen: float,
    comments: bool,
    sentences: str | None,
    encoding: str | None,
    quiet: bool,
    **semantic: Any,
) -> None:
    """Measure chunkings: answer hit rate on questions (at a context budget with --budget), or boundaries and
    topic purity on gold segments."""
    budget_list = _check_budgets(budgets)
    _warn_k_with_budgets(budget_list, "does not apply with --budget (only budget rows are printed)")
    warn_unused_without_budget(bool(budget_list), ("assembly", "widen", "comments"))
    _check_keywords(keywords, retriever)
    sources = [
        name
        for name, given in (
            ("--questions", questions),
            ("--segments", segments),
            ("--squad", squad),
            ("--chroma", chroma),
        )
        if given
    ]
    if len(sources) != 1:
        raise click.UsageError(
            "give exactly one of --questions Q.jsonl (with PATH...), --segments FILE, --squad FILE, --chroma DIR"
        )
    if (squad or chroma) and paths:
        raise click.UsageError(f"{sources[0]} brings its own documents: drop PATH")
    if "semantic" not in (strategies or ()) and any(v != SEMANTIC_DEFAULTS[n] for n, v in semantic.items()):
        raise click.UsageError("--similarity/--threshold/... apply when -s semantic is compared")
    display = ProgressDisplay(quiet=quiet)
    embedding = display.tracker("embedding", "texts", restarts=True)
    grid = _chunker_grid(
        strategies or ("recursive",),
        sizes or (512,),
        token_unit(unit, tokenizer),
        semantic,
        {"tokenizer": tokenizer, "sentences": sentences},
        progress=embedding,
    )
    failures = Failures()
    try:
        if segments:
            if paths:
                raise click.UsageError("--segments brings its own documents: drop PATH")
            if budget_list:
                raise click.UsageError(
                    "--budget measures answers to questions: it does not apply to --segments"
                )
            segmented = _load_segments(segments, encoding)
            segmented = segmented[:limit] if limit else segmented
            if sentences is None and segmented:  # Choi: the lines are the sentences, by the format
                modes = {sd.document.metadata.get("sentence_mode", "auto") for sd in segmented}
                if modes == {"lines"}:
                    grid = [replace(ch, sentences="lines") for ch in grid]
            with display:
                configurations = display.iterate(grid, "evaluating", "configurations")
                rows_s = [evaluate_segmentation(ch, segmented) for ch in configurations]
            write(_format_rows(rows_s, SEGMENT_COLUMNS, fmt if fmt != "csv" else "csv"))
            sys.exit(failures.exit_code)
        with display:
            if squad or chroma:
                from kireme.evaluate.datasets import load_chroma, load_squad

                if squad:
                    qaset = load_squad(squad, limit_articles=limit)
                else:
                    assert chroma is not None  # squad or chroma, by the test above
                    if limit is not None:
                        raise click.UsageError("--limit applies to --squad and --segments, not --chroma")
                    qaset = load_chroma(chroma)
                documents, qs = qaset.documents, qaset.questions
            else:
                assert questions  # the one source left: exactly one was given
                if limit is not None:
                    raise click.UsageError(
                        "--limit applies to --squad and --segments: with --questions, name fewer PATHs"
                    )
                if not paths:
                    raise click.UsageError(
                        "--questions needs the documents: kireme eval PATH... --questions Q.jsonl"
                    )
                documents, qs = _documents_and_questions(
                    paths, questions, encoding, failures, display, strategies or ("recursive",)
                )
            make = _retriever_factory(retriever, display, embedding, keywords)
            rows = _evaluate_grid(
                grid, documents, qs, make, k, budget_list, assembly, widen, display, comments
            )
            if budget_list:  # the rows asked for: at each budget
                rows = [r for r in rows if r.budget is not None]
    except KiremeError as exc:
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(1)
    write(_format_rows(rows, BUDGET_COLUMNS if budget_list else RETRIEVAL_COLUMNS, fmt))
    if show_misses:
        _show_misses(rows)
    sys.exit(failures.exit_code)


COMPARE_EXAMPLES = """
\b
Examples:
  kireme compare 規程/ --questions qa.jsonl                      # every strategy x 100,200,400,800 chars
  kireme compare docs/ --questions qa.jsonl --budget 600 --plot pareto.png
  kireme compare docs/ --questions qa.jsonl --sizes 256,512 --unit tokens --retriever bm25 -k 3
  kireme compare docs/ --questions qa.jsonl --retriever bm25 --budget 300 --budget 1500 --assembly chunks

The Pareto front holds the configurations that no other beats on both hit rate (higher) and characters
passed (fewer). With `--budget N` (repeatable, in --unit) every configuration is measured at each budget
(hit_at_budget: the answer lies whole inside the context assembled within N) and the best configuration
at each budget is named.
"""


def pareto_front(rows: Sequence[RetrievalRow]) -> list[RetrievalRow]:
    """Rows not dominated: no other row has a hit rate at least as high with fewer characters passed
    (or a higher hit rate with as few)."""
    front = []
    for r in rows:
        dominated = any(
            (o.hit_rate >= r.hit_rate and o.chars_passed < r.chars_passed)
            or (o.hit_rate > r.hit_rate and o.chars_passed <= r.chars_passed)
            for o in rows
        )
        if not dominated:
            front.append(r)
    return sorted(front, key=lambda r: r.chars_passed)


def passed(row: RetrievalRow, unit: str = "chars") -> float:
    """The context a row passes per question, in characters or (``"tokens"``) cl100k_base tokens."""
    return row.tokens_passed if unit == "tokens" else row.chars_passed


def best_within(rows: Sequence[RetrievalRow], budget: float, unit: str = "chars") -> RetrievalRow | None:
    """The highest hit rate among rows passing at most ``budget`` characters (``unit="tokens"``: tokens),
    fewer passed on ties."""
    fitting = [r for r in rows if passed(r, unit) <= budget]
    return max(fitting, key=lambda r: (r.hit_rate, -passed(r, unit))) if fitting else None


def best_at_budget(rows: Sequence[RetrievalRow], budget: int, unit: str = "chars") -> RetrievalRow | None:
    """The highest hit_at_budget among rows measured at ``budget`` (less context passed on ties)."""
    at = [r for r in rows if r.budget == budget]
    return max(at, key=lambda r: (r.hit_rate, -passed(r, unit))) if at else None


@click.command("compare", epilog=COMPARE_EXAMPLES)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--questions",
    required=True,
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Questions JSONL (repeatable: the questions of every file).",
)
@click.option(
    "--strategy",
    "-s",
    "strategies",
    multiple=True,
    type=click.Choice(sorted(STRATEGIES)),
    help="Strategies (repeatable) [default: fixed, recursive, sentence, paragraph, semantic].",
)
@click.option("--sizes", default="100,200,400,800", show_default=True, metavar="N,N,...", help="Size limits.")
@click.option("--unit", type=click.Choice(["chars", "tokens"]), default="chars", show_default=True)
@tokenizer_option
@click.option(
    "--retriever", type=click.Choice(RETRIEVERS), default="terms", show_default=True, help=RETRIEVER_HELP
)
@keywords_option
@click.option("-k", "k", type=click.IntRange(min=1), default=1, show_default=True)
@budget_options
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    callback=require_plot_extra,
    help="A plot of hit rate vs characters passed, the Pareto front marked: PNG, or SVG, PDF, JPEG, WebP by the file name's suffix (pip install 'kireme[plot]').",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "jsonl", "csv"]), default="table", show_default=True
)
@click.option(
    "--context",
    type=click.Choice(CONTEXT_MODES),
    default=None,
    help="What every configuration puts in front of embed_text, which the retriever indexes (the "
    "characters passed count the text only): compare runs with and without it to see whether it helps.",
)
@packing_options
@sentences_option
@semantic_options
@click.option("--encoding", default=None, metavar="NAME", callback=known_encoding)
@quiet_option
def compare_command(
    paths: tuple[str, ...],
    questions: tuple[Path, ...],
    strategies: tuple[str, ...],
    sizes: str,
    unit: str,
    tokenizer: str | None,
    retriever: str,
    keywords: str,
    k: int,
    budgets: tuple[int, ...],
    assembly: str,
    widen: float,
    comments: bool,
    plot_path: Path | None,
    fmt: str,
    context: str | None,
    packing: str | None,
    target_size: int | None,
    sentences: str | None,
    encoding: str | None,
    quiet: bool,
    **semantic: Any,
) -> None:
    """Run every strategy over a grid of sizes on your questions; show the table, the Pareto front and the
    best configuration at each of your budgets."""
    budget_list = _check_budgets(budgets)
    _warn_k_with_budgets(budget_list, "sets the top-k table only")
    warn_unused_without_budget(bool(budget_list), ("assembly", "widen", "comments"))
    _check_keywords(keywords, retriever)
    try:
        size_list = sorted({int(s) for s in sizes.split(",") if s.strip()})
    except ValueError:
        raise click.UsageError(f"--sizes must be numbers separated by commas, not {sizes!r}") from None
    if not size_list or min(size_list) < 1:
        raise click.UsageError("--sizes needs positive numbers")
    chosen = strategies or ("fixed", "recursive", "sentence", "paragraph", "semantic")
    if target_size is not None and packing != "optimal":
        raise click.UsageError("--target-size needs --packing optimal")
    if target_size is not None and target_size > min(size_list):
        raise click.UsageError(f"--target-size ({target_size}) cannot exceed the smallest of --sizes")
    shared = {
        "context": context,
        "packing": packing,
        "target_size": target_size,
        "tokenizer": tokenizer,
        "sentences": sentences,
    }
    display = ProgressDisplay(quiet=quiet)
    embedding = display.tracker("embedding", "texts", restarts=True)
    grid = _chunker_grid(chosen, size_list, token_unit(unit, tokenizer), semantic, shared, progress=embedding)
    failures = Failures()
    try:
        with display:
            documents, qs = _documents_and_questions(paths, questions, encoding, failures, display, chosen)
            make = _retriever_factory(retriever, display, embedding, keywords)
            rows = _evaluate_grid(
                grid, documents, qs, make, k, budget_list, assembly, widen, display, comments
            )
    except KiremeError as exc:
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(1)
    at_budget = [r for r in rows if r.budget is not None]
    rows = [r for r in rows if r.budget is None]
    front = pareto_front(rows)
    # CSV is one table: the budget rows go in it too (a second header made it unreadable to a spreadsheet)
    one_table = fmt == "csv" and bool(at_budget)
    write(_format_rows([*rows, *at_budget] if one_table else rows, RETRIEVAL_COLUMNS, fmt))

    def out(line: str) -> None:
        """The Pareto summary: on stderr when stdout carries machine-readable rows."""
        click.echo(line, err=fmt != "table")

    out("\nPareto front (hit rate up, characters passed down):")
    for r in front:
        out(
            f"  {r.strategy:<10} max_size={r.max_size:<6} hit_rate={r.hit_rate:.3f} chars_passed={r.chars_passed:.1f}"
        )
    # the budget's unit: a top-k row's context is measured in it too (tokens: cl100k_base, as tokens_passed)
    in_tokens = unit == "tokens" or bool(tokenizer)
    unit_name, measured = ("tokens", "tokens") if in_tokens else ("characters", "chars")
    for budget in budget_list:  # what a top-k row passes, against the budget
        best = best_within(rows, budget, measured)
        if best is None:
            out(f"no configuration passes at most {budget} {unit_name} per question at k={k}")
        elif best.hits == 0:
            out(f"no configuration within {budget} {unit_name} answers any question at k={k}")
        else:
            out(
                f"best within {budget} {unit_name}: --strategy {best.strategy} --max-size {best.max_size} "
                f"(hit rate {best.hit_rate:.3f}, {passed(best, measured):.1f} {unit_name})"
            )
    if at_budget:
        out(f"\nAt each budget ({unit_name}; --assembly {assembly}):")
        if not one_table:
            write(_format_rows(at_budget, BUDGET_COLUMNS, fmt))
        for budget in budget_list:
            best = best_at_budget(at_budget, budget, measured)
            if best is not None and best.hits == 0:
                out(f"no configuration answers any question within {budget} {unit_name}")
            elif best is not None:
                out(
                    f"best at {budget} {unit_name}: --strategy {best.strategy} --max-size {best.max_size} "
                    f"(hit_at_budget {best.hit_rate:.3f}, {passed(best, measured):.1f} {unit_name} passed)"
                )
    if plot_path:
        from kireme.report.compare_plot import save_pareto_plot

        try:
            save_pareto_plot(rows, front, plot_path)
        except KiremeError as exc:  # matplotlib present but broken: still one line, not a traceback
            click.echo(f"kireme: error: {exc}", err=True)
            sys.exit(1)
        click.echo(f"kireme: wrote {plot_path}", err=True)
    sys.exit(failures.exit_code)
