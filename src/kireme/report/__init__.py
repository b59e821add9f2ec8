"""Views of a semantic analysis for choosing a threshold: an interactive HTML page and a PNG plot.

`save_distance_plot` needs matplotlib (``kireme[plot]``), imported only when a plot is drawn.
"""

from kireme.report.html import render_inspection_html
from kireme.report.plot import save_distance_plot

__all__ = ["render_inspection_html", "save_distance_plot"]
