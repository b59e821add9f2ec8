"""The `kireme compare` picture: hit rate against characters passed, one point per configuration."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kireme.errors import MissingExtraError

if TYPE_CHECKING:
    from kireme.evaluate.runner import RetrievalRow


def save_pareto_plot(
    rows: Sequence[RetrievalRow], front: Sequence[RetrievalRow], path: str | os.PathLike[str]
) -> None:
    """Scatter of every configuration (colour = strategy, label = max_size), the Pareto front as a line."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingExtraError("--plot", "plot", "matplotlib") from exc
    fig = Figure(figsize=(8, 5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    strategies = sorted({r.strategy for r in rows})
    for name in strategies:
        mine = [r for r in rows if r.strategy == name]
        ax.scatter([r.chars_passed for r in mine], [r.hit_rate for r in mine], label=name, s=36)
        for r in mine:
            ax.annotate(
                str(r.max_size),
                (r.chars_passed, r.hit_rate),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
    ax.plot(
        [r.chars_passed for r in front], [r.hit_rate for r in front], "k--", linewidth=1, label="Pareto front"
    )
    ax.set_xlabel("characters passed to the reader per question")
    ax.set_ylabel("hit rate")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    suffix = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
    # the format the name asks for; PNG under a name with no suffix, written as named (savefig would
    # add ".png" to it while the command said it wrote the name given)
    fig.savefig(os.fspath(path), format=suffix if suffix in fig.canvas.get_supported_filetypes() else "png")
