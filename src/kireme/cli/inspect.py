"""``kireme inspect``: the similarity of every pair of adjacent sentences, before choosing a threshold."""

from __future__ import annotations

import json
import math
import sys
import unicodedata
from pathlib import Path
from typing import Any

import click

from kireme.chunkers import DEFAULT_MAX_SIZE
from kireme.cli.common import (
    EXIT_FAILURE,
    EXIT_USAGE,
    exit_quietly_on_broken_pipe,
    known_encoding,
    load_one,
    require_plot_extra,
    semantic_options,
    semantic_settings,
    sentences_option,
    token_unit,
    tokenizer_option,
    writable_output,
    write,
)
from kireme.cli.progress import ProgressDisplay, quiet_option
from kireme.errors import ConfigError, KiremeError, LoadError
from kireme.semantic.chunker import SemanticAnalysis, SemanticChunker
from kireme.semantic.thresholds import Threshold

COMPARED_RULES = [
    "auto:depth",
    "auto:kcpd",  # compared only where the analysis has the sentence vectors (not with bigrams)
    "auto:otsu",
    "auto:gap",
    "percentile:95",
    "percentile:90",
    "stddev:3",
    "stddev:1",
    "interquartile:1.5",
    "gradient:95",
]

INSPECT_EXAMPLES = """
\b
Examples:
  kireme inspect 議事録.txt                          # table: every gap, its distance, where auto cuts
  kireme inspect 議事録.txt --similarity bigram --threshold percentile:90
  kireme inspect report.md --html report.html         # interactive page: drag the threshold
  kireme inspect report.md --plot distances.png --format jsonl > gaps.jsonl

\b
JSONL rows: {"i", "similarity", "distance", "cut", "left", "right", "position"}: gap i lies between
sentence i (left) and sentence i+1 (right), which starts at character offset `position`.
Then choose: kireme chunk FILE --strategy semantic --threshold TYPE[:VALUE]
"""


def _cells(ch: str) -> int:
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def _preview(text: str, width: int = 24) -> str:
    """The start of ``text`` in at most ``width`` terminal cells (kanji take two), padded to it."""
    out, used = [], 0
    for ch in " ".join(text.split()):
        if used + _cells(ch) > width - 1:
            out.append("…")
            used += 1
            break
        out.append(ch)
        used += _cells(ch)
    return "".join(out) + " " * max(0, width - used)


@click.command("inspect", epilog=INSPECT_EXAMPLES)
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@semantic_options
@sentences_option
@click.option(
    "--max-size",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_SIZE,
    show_default=True,
    help="Size limit used to count the chunks each rule gives.",
)
@click.option("--unit", type=click.Choice(["chars", "tokens"]), default="chars", show_default=True)
@tokenizer_option
@click.option("--format", "fmt", type=click.Choice(["table", "jsonl"]), default="table", show_default=True)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    callback=require_plot_extra,
    help="Write a plot: PNG, or SVG/PDF/JPEG by the file's suffix (pip install 'kireme[plot]').",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    callback=writable_output,
    help="Write an interactive page.",
)
@click.option(
    "--encoding",
    default=None,
    metavar="NAME",
    callback=known_encoding,
    help="Decode with this encoding instead of detecting it.",
)
@quiet_option
def inspect_command(
    path: Path,
    max_size: int,
    unit: str,
    tokenizer: str | None,
    fmt: str,
    plot_path: Path | None,
    html_path: Path | None,
    encoding: str | None,
    quiet: bool,
    sentences: str | None,
    **semantic: Any,
) -> None:
    """Show the similarity between every pair of adjacent sentences of PATH and where each rule would cut."""
    display = ProgressDisplay(quiet=quiet)
    progress = display.tracker("embedding", "texts", restarts=True)
    try:
        chunker = SemanticChunker(
            max_size=max_size,
            unit=token_unit(unit, tokenizer),
            tokenizer=tokenizer,
            sentences=sentences or "auto",
            **semantic_settings(progress=progress, **semantic),
        )
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        doc = load_one(path, encoding)
    except LoadError as exc:
        click.echo(f"kireme: error: {exc}", err=True)
        sys.exit(EXIT_USAGE if exc.reason == "no such file" else EXIT_FAILURE)
    try:
        with display:
            analysis = chunker.analyze(doc)
            rules = _compare_rules(chunker, doc, analysis)
        if plot_path:
            from kireme.report.plot import save_distance_plot

            save_distance_plot(analysis, plot_path, title=doc.id)
            click.echo(f"kireme: wrote {plot_path}", err=True)
        if html_path:
            from kireme.report.html import render_inspection_html

            levels = {name: level for name, (_, _, level, _) in rules.items() if level is not None}
            html_path.write_text(
                render_inspection_html(
                    analysis, title=doc.id, thresholds=levels, max_size=max_size, unit=chunker.measure.name
                ),
                encoding="utf-8",
            )
            click.echo(f"kireme: wrote {html_path}", err=True)
    except KiremeError as exc:
        click.echo(f"kireme: error: {doc.id}: {exc}", err=True)
        sys.exit(EXIT_FAILURE)
    try:
        if fmt == "jsonl":
            _write_jsonl(analysis)
            _summary(analysis, rules, err=True)
        else:
            _write_table(doc.id, analysis)
            _summary(analysis, rules, err=False)
        sys.stdout.flush()
    except BrokenPipeError:
        exit_quietly_on_broken_pipe(0)


def _compare_rules(
    chunker: SemanticChunker, doc: Any, analysis: SemanticAnalysis
) -> dict[str, tuple[int, int, float | None, str | None]]:
    """rule -> (topic cuts, chunks within the size limit, distance level and that level as printed —
    both ``None`` where no single level gives the rule's cuts)."""
    out = {}
    rules = [str(analysis.threshold)] + [
        r
        for r in COMPARED_RULES
        if r != str(analysis.threshold) and (analysis.vectors is not None or not Threshold.parse(r).is_global)
    ]
    for rule in rules:
        other = chunker.with_threshold(analysis, Threshold.parse(rule))
        chunks = chunker.chunk_analysis(doc, other)
        level = other.distance_level
        shown = None if level is None else _shown_level(level, other)
        out[rule] = (len(other.applied_cut_gaps), len(chunks), level, shown)
    return out


def _write_jsonl(analysis: SemanticAnalysis) -> None:
    text, units = analysis.text, analysis.units
    cuts = set(analysis.applied_cut_gaps)
    for i in range(len(units) - 1):
        row = {
            "i": i,
            "similarity": round(float(analysis.similarities[i]), 6),
            "distance": round(float(analysis.distances[i]), 6),
            "cut": i in cuts,
            "left": text[units[i][0] : units[i][1]],
            "right": text[units[i + 1][0] : units[i + 1][1]],
            "position": units[i + 1][0],
        }
        write(json.dumps(row, ensure_ascii=False) + "\n")


def _write_table(name: str, analysis: SemanticAnalysis) -> None:
    text, units = analysis.text, analysis.units
    cuts = set(analysis.applied_cut_gaps)
    write(
        f"{name}: {len(units)} sentence{'' if len(units) == 1 else 's'}, similarity {analysis.similarity_name}, threshold {analysis.threshold}\n"
    )
    write(f"{'gap':>5}  {'sim':>6}  {'dist':>6}  {'cut':3}  {'left':<24} → {'right':<24}  distance\n")
    top = max(analysis.distances, default=0.0) or 1.0
    for i in range(len(units) - 1):
        d = float(analysis.distances[i])
        bar = "█" * max(0, round(8 * d / top))
        mark = "✂" if i in cuts else ""
        left = _preview(text[units[i][0] : units[i][1]])
        right = _preview(text[units[i + 1][0] : units[i + 1][1]])
        write(f"{i:>5}  {analysis.similarities[i]:6.3f}  {d:6.3f}  {mark:3}  {left} → {right}  {bar}\n")


def _shown_level(level: float, analysis: SemanticAnalysis) -> str:
    """A threshold level written so that ``absolute:<it>`` cuts the same gaps: rounded down, with as many
    decimals (3 to 6) as keep every distance on the same side of it (0.0918 rounded to 0.092 cut nothing)."""
    for digits in range(3, 7):
        shown = f"{math.floor(level * 10**digits) / 10**digits:.{digits}f}"
        if Threshold.parse(f"absolute:{shown}").cuts(analysis.distances)[0] == list(analysis.cut_gaps):
            return shown
    return repr(level)


def _summary(
    analysis: SemanticAnalysis, rules: dict[str, tuple[int, int, float | None, str | None]], *, err: bool
) -> None:
    def out(line: str) -> None:
        click.echo(line, err=err)

    current = str(analysis.threshold)
    cuts, chunks, _, shown = rules[current]
    if analysis.threshold.is_global:
        level_text = "global kernel segmentation of the sentence vectors, no distance level"
    elif shown is not None:
        level_text = f"distance > {shown}"
    elif cuts:
        level_text = "the rule's own choice: no single distance level gives these cuts"
    else:
        level_text = "no cut"
    out(
        f"\nthreshold {current}: {cuts} topic cuts ({level_text}) -> {chunks} chunk{'' if chunks == 1 else 's'} within the size limit"
    )
    auto_cuts, _, _, auto_shown = rules["auto:depth"]
    if analysis.threshold.is_global:  # no level of its own: depth's, when it has one, to tune from
        if auto_shown is not None:
            out(
                f"a distance level to tune from (auto:depth, chosen for this document): cut where "
                f"distance > {auto_shown} (--threshold absolute:{auto_shown})"
            )
    elif auto_shown is not None:
        out(
            f"suggested (auto:depth, chosen for this document): cut where distance > {auto_shown} "
            f"(--threshold absolute:{auto_shown})"
        )
    elif auto_cuts:
        out(
            f"suggested: --threshold auto:depth ({auto_cuts} cuts here, at the deepest dips of similarity; "
            "no single distance level gives the same cuts)"
        )
    out("other rules (topic cuts -> chunks):")
    for rule, (c, n, _, _) in rules.items():
        if rule != current:
            out(f"  {rule:<18} {c:>4} cuts -> {n:>4} chunks")
    out("use one: kireme chunk FILE --strategy semantic --threshold RULE (or absolute:DISTANCE)")
