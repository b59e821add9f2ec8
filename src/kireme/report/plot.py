"""A PNG of one document's gap distances, for reports and CI artefacts (``kireme[plot]``).

matplotlib is imported only when a plot is drawn, and the figure is rendered with the Agg canvas
directly, so drawing never touches pyplot's global state or the caller's chosen backend. Labels are
English only: matplotlib's default fonts have no Japanese glyphs (a title outside ASCII, a file name, is
drawn in a Japanese font where one is installed).
"""

from __future__ import annotations

import os
from typing import Any

from kireme.errors import MissingExtraError
from kireme.semantic.chunker import SemanticAnalysis

_CUT_COLOUR = "#cf222e"
_LINE_COLOUR = "#57606a"


def save_distance_plot(analysis: SemanticAnalysis, path: str | os.PathLike[str], *, title: str = "") -> None:
    """Write a plot of distance per gap, the threshold line (for distance rules) and the cut gaps: PNG, or
    the format the file name asks for where matplotlib writes it (``.svg``, ``.pdf``, ``.jpg``); a PNG
    was written under any name (``p.svg`` held PNG data).

    A ``title`` outside ASCII (``議事録.txt``) is drawn in a Japanese font where one is installed (Noto
    Sans CJK, IPA, Hiragino, Yu Gothic, …); where none is, the default title is drawn instead of boxes
    (matplotlib's own fonts have no Japanese glyphs, and it warned once per missing glyph).
    """
    figure_class, canvas_class = _matplotlib()
    gaps = len(analysis.distances)
    figure = figure_class(figsize=(min(20.0, max(8.0, gaps / 12)), 3.6), dpi=100, layout="constrained")
    canvas_class(figure)
    axes = figure.add_subplot()
    _draw(axes, analysis)
    default = f"Distance between adjacent units ({analysis.similarity_name})"
    family = None
    if title and not title.isascii():
        cjk = _cjk_font()
        if cjk is None:
            title = default
        else:
            family = ["DejaVu Sans", cjk]  # Latin letters in the default font, the rest in the CJK one
    axes.set_title(title or default, fontsize=10, fontfamily=family)
    suffix = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
    kind = suffix if suffix in canvas_class(figure).get_supported_filetypes() else "png"
    figure.savefig(os.fspath(path), format=kind)


# Fonts with Japanese glyphs, by the family names matplotlib reads from them (in order of preference)
_CJK_FAMILIES = (
    "Noto Sans CJK JP",
    "Noto Sans JP",
    "IPAexGothic",
    "IPAGothic",
    "Hiragino Sans",
    "Hiragino Kaku Gothic ProN",
    "Yu Gothic",
    "Meiryo",
    "MS Gothic",
    "TakaoGothic",
    "VL Gothic",
    "Source Han Sans JP",
)


def _cjk_font() -> str | None:
    """The family name of an installed font with Japanese glyphs, ``None`` where there is none."""
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    return next((name for name in _CJK_FAMILIES if name in installed), None)


def _matplotlib() -> tuple[Any, Any]:
    """The Figure and Agg canvas classes, or MissingExtraError naming ``kireme[plot]``."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtraError("--plot", "plot", "matplotlib") from None
    return Figure, FigureCanvasAgg


def _draw(axes: Any, analysis: SemanticAnalysis) -> None:
    """Distances as a line with dots; cuts as red dots and faint red verticals; the level if it is one."""
    distances = analysis.distances.tolist()
    xs = list(range(len(distances)))
    axes.plot(xs, distances, color=_LINE_COLOUR, linewidth=1, marker="o", markersize=2.5, label="distance")
    applied = analysis.applied_cut_gaps
    for i in applied:
        axes.axvline(i, color=_CUT_COLOUR, alpha=0.25, linewidth=1)
    cuts = [i for i in applied if 0 <= i < len(distances)]
    if cuts:
        axes.plot(cuts, [distances[i] for i in cuts], "o", color=_CUT_COLOUR, markersize=5, label="cut")
    if analysis.distance_level is not None:
        axes.axhline(
            analysis.distance_level,
            color=_CUT_COLOUR,
            linestyle="--",
            linewidth=1,
            label=f"threshold {analysis.threshold}",
        )
    if not distances:
        axes.text(
            0.5, 0.5, "no gaps: fewer than two units", ha="center", va="center", transform=axes.transAxes
        )
    axes.set_xlabel("gap index (between unit i and i+1)")
    axes.set_ylabel("distance (1 - similarity)")
    axes.grid(True, axis="y", alpha=0.3)
    if distances:
        axes.legend(loc="best", fontsize=8, frameon=False)
