"""One self-contained HTML page for choosing a semantic threshold by eye (``kireme inspect --html``).

The page shows every gap's distance as a bar chart and the document's sentences grouped into chunks; a
slider moves the distance threshold and re-draws the cuts live, so a user sees what a threshold does to
*this* document before choosing it. Gap ``i`` lies between sentences ``i`` and ``i + 1``, numbered from 0
as in ``kireme inspect``'s table, its PNG and ``SemanticAnalysis.cut_gaps``. Everything is inline (CSS,
vanilla JS, data): the page works from ``file://`` with no network, and carries no reference to any other
resource.

Document text never reaches the markup as markup: the data travels as JSON in a
``<script type="application/json">`` block with ``<``, ``>`` and ``&`` escaped as ``\\u003c`` … (so a
``</script>`` in a document cannot close the block), and the script inserts every sentence with
``textContent``. The caller's title is HTML-escaped.
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any

from kireme.semantic.chunker import SemanticAnalysis

_PLACEHOLDER = re.compile(r"%%([A-Z]+)%%")
_JSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}


def render_inspection_html(
    analysis: SemanticAnalysis,
    *,
    title: str = "",
    thresholds: dict[str, float] | None = None,
    max_size: int | None = None,
    unit: str = "chars",
) -> str:
    """The inspection page for one analysed document, as a complete HTML string.

    ``title`` names the document (e.g. its path). ``thresholds`` maps rule names to distance levels
    (``{"percentile:95": 0.41}``); each becomes a button that moves the slider there. ``max_size`` (in
    ``unit``): the chunks' limit — the page groups sentences by the threshold alone, and says how many of
    its groups are over the limit in characters (`kireme chunk` cuts those further), or that a limit in
    tokens applies besides.
    """
    data = _page_data(analysis, title, thresholds or {})
    data["max_size"] = max_size
    data["unit"] = unit
    lo, hi = _slider_range(data["distances"])
    start = _slider_start(analysis, lo, hi)
    heading = html.escape(title or "kireme inspect")
    slider = (
        f'<input type="range" id="threshold" min="{lo!r}" max="{hi!r}" step="any" value="{start!r}"'
        f'{"" if data["distances"] else " disabled"} aria-describedby="threshold-value">'
    )
    parts = {"TITLE": heading, "SLIDER": slider, "CSS": _CSS, "JS": _JS, "DATA": _script_json(data)}
    # one pass: a title that happens to contain "%%DATA%%" stays text
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], _PAGE)


def _page_data(analysis: SemanticAnalysis, title: str, thresholds: dict[str, float]) -> dict[str, Any]:
    """What the page's script needs: sentences, per-gap values, the rule's own cuts and levels."""
    level = analysis.distance_level
    distances = [_finite(x) for x in analysis.distances.tolist()]
    levels = {str(name): _finite(float(value)) for name, value in thresholds.items()}
    return {
        "title": title,
        "similarity": analysis.similarity_name,
        "threshold": str(analysis.threshold),
        "level": level,
        "units": [[int(a), int(b)] for a, b in analysis.units],
        "sentences": [analysis.text[a:b] for a, b in analysis.units],
        "distances": distances,
        "similarities": [_finite(x) for x in analysis.similarities.tolist()],
        "cut_gaps": [int(i) for i in analysis.applied_cut_gaps],
        "moves": [int(i) for i in analysis.gap_moves],
        "thresholds": levels,
        "chart_max": _chart_max(distances, [level, *levels.values()]),
    }


def _finite(value: float) -> float | None:
    """JSON has no NaN or infinity: a non-finite number travels as ``null``."""
    return float(value) if math.isfinite(value) else None


def _slider_range(distances: list[float | None]) -> tuple[float, float]:
    """From just below the smallest distance (every gap cut) to the largest (no gap cut)."""
    values = [d for d in distances if d is not None]
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    return lo - max((hi - lo) / 1000, 1e-6), hi


def _slider_start(analysis: SemanticAnalysis, lo: float, hi: float) -> float:
    """Where the slider starts: the rule's level, or a level that cuts as many gaps as the rule did."""
    level = analysis.distance_level
    if level is not None:
        return min(max(level, lo), hi)
    ranked: list[float] = sorted((d for d in analysis.distances.tolist() if math.isfinite(d)), reverse=True)
    k = len(analysis.cut_gaps)
    if k == 0 or not ranked:
        return hi
    if k >= len(ranked):
        return lo
    return (ranked[k - 1] + ranked[k]) / 2


def _chart_max(distances: list[float | None], levels: list[float | None]) -> float:
    """The top of the chart's distance axis: a little above every value drawn on it."""
    values = [v for v in [*distances, *levels] if v is not None and v > 0]
    return max(values) * 1.05 if values else 1.0


def _script_json(data: dict[str, Any]) -> str:
    """JSON safe inside a script element: no ``<``, ``>`` or ``&`` survives literally."""
    return json.dumps(data, ensure_ascii=False, allow_nan=False).translate(_JSON_ESCAPES)


_PAGE = """<!DOCTYPE html>
<html lang="ja">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%%TITLE%% — kireme inspect</title>
<style>%%CSS%%</style>
</head>
<body>
<header>
  <h1>%%TITLE%%</h1>
  <dl class="meta">
    <div><dt>similarity</dt><dd id="meta-similarity"></dd></div>
    <div><dt>units</dt><dd id="meta-units"></dd></div>
    <div><dt>threshold</dt><dd id="meta-threshold"></dd></div>
  </dl>
</header>
<section class="controls" aria-label="threshold">
  <div class="slider-row">
    <label for="threshold">distance threshold</label>
    %%SLIDER%%
    <output id="threshold-value"></output>
  </div>
  <div class="summary"><strong id="chunk-count"></strong> <span id="chunk-sizes"></span></div>
  <div id="presets" class="presets"></div>
</section>
<section class="chart" aria-label="distance per gap">
  <div class="chart-scroll"><div id="bars" class="bars"><div id="threshold-line" class="line"></div></div></div>
  <div class="axis"><span>gap 0</span><span id="axis-note"></span><span id="axis-last"></span></div>
</section>
<main id="document"></main>
<noscript><p class="noscript">This page needs JavaScript to show the document.</p></noscript>
<script type="application/json" id="kireme-data">%%DATA%%</script>
<script>%%JS%%</script>
</body>
</html>
"""

_CSS = """
:root {
  --ink: #1f2328; --muted: #656d76; --line: #d0d7de; --cut: #cf222e; --accent: #0969da;
  --chunk-a: #ffffff; --chunk-b: #f3f6fa;
}
* { box-sizing: border-box; }
body {
  margin: 0; color: var(--ink); background: #f6f8fa; line-height: 1.75;
  font-family: system-ui, -apple-system, "Hiragino Sans", "Hiragino Kaku Gothic ProN", "Yu Gothic UI",
    "Yu Gothic", Meiryo, "Noto Sans CJK JP", "Noto Sans JP", "Source Han Sans JP", "IPAexGothic",
    "IPAGothic", "TakaoGothic", sans-serif;
}
header, .controls, .chart, main { max-width: 60rem; margin: 0 auto; padding: 0 1.25rem; }
header { padding-top: 1rem; }
h1 { font-size: 1.25rem; margin: 0 0 .25rem; word-break: break-all; }
.meta { display: flex; flex-wrap: wrap; gap: .25rem 1.5rem; margin: 0 0 .5rem; font-size: .875rem; }
.meta div { display: flex; gap: .4rem; }
.meta dt { color: var(--muted); }
.meta dd { margin: 0; font-variant-numeric: tabular-nums; }
.controls {
  position: sticky; top: 0; z-index: 2; background: #f6f8fa; padding-top: .5rem; padding-bottom: .5rem;
  border-bottom: 1px solid var(--line);
}
.slider-row { display: flex; align-items: center; gap: .75rem; flex-wrap: wrap; }
.slider-row label { font-size: .875rem; color: var(--muted); }
#threshold { flex: 1 1 16rem; accent-color: var(--cut); }
#threshold-value { font-variant-numeric: tabular-nums; font-size: .875rem; min-width: 14rem; }
.summary { font-size: .9rem; }
#chunk-sizes { color: var(--muted); margin-left: .5rem; }
.presets { display: flex; flex-wrap: wrap; gap: .35rem; margin-top: .35rem; }
.presets:empty { display: none; }
.presets button {
  font: inherit; font-size: .8rem; padding: .1rem .6rem; border: 1px solid var(--line); border-radius: 1rem;
  background: #fff; color: var(--ink); cursor: pointer;
}
.presets button.active { border-color: var(--accent); color: var(--accent); }
.chart { padding-top: .75rem; }
.chart-scroll { overflow-x: auto; background: #fff; border: 1px solid var(--line); border-radius: 6px; }
.bars { position: relative; display: flex; align-items: flex-end; gap: 1px; height: 120px; padding: 0 2px; }
.bars .bar { flex: 1 1 0; min-width: 2px; background: #8c959f; cursor: pointer; }
.bars .bar:hover { background: var(--accent); }
.bars .bar.cut { background: var(--cut); }
.line { position: absolute; left: 0; right: 0; border-top: 2px dashed var(--cut); pointer-events: none; }
.line[hidden] { display: none; }
.axis { display: flex; justify-content: space-between; font-size: .75rem; color: var(--muted); }
main { padding-top: 1rem; padding-bottom: 4rem; }
.chunk { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 .75rem; padding: .25rem .9rem .4rem; }
.chunk:nth-child(odd) { background: var(--chunk-a); }
.chunk:nth-child(even) { background: var(--chunk-b); }
.chunk-label { font-size: .75rem; color: var(--muted); font-variant-numeric: tabular-nums; }
.chunk-label strong { color: var(--ink); margin-right: .5rem; }
.unit { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.gap { display: flex; align-items: center; gap: .5rem; height: .9rem; margin: .05rem 0 .15rem; }
.gap .track { width: 12rem; height: 4px; background: #eaeef2; border-radius: 2px; overflow: hidden; }
.gap .fill { display: block; height: 100%; border-radius: 2px; }
.gap .value { font-size: .7rem; color: var(--muted); font-variant-numeric: tabular-nums; }
.gap.cut .value { color: var(--cut); font-weight: 600; }
.gap.flash { outline: 2px solid var(--accent); outline-offset: 2px; }
.noscript { max-width: 60rem; margin: 1rem auto; color: var(--cut); }
"""

_JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("kireme-data").textContent);
  var dist = data.distances, n = data.sentences.length, top = data.chart_max;
  var slider = document.getElementById("threshold");
  var valueOut = document.getElementById("threshold-value");
  var countOut = document.getElementById("chunk-count");
  var sizesOut = document.getElementById("chunk-sizes");
  var doc = document.getElementById("document");
  var bars = document.getElementById("bars");
  var line = document.getElementById("threshold-line");
  var presets = document.getElementById("presets");
  var lo = parseFloat(slider.min), hi = parseFloat(slider.max), start = slider.value;
  var ruleCuts = {}, mode = "rule", units = [], gaps = [], barEls = [], buttons = [];
  data.cut_gaps.forEach(function (i) { ruleCuts[i] = true; });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function fmt(x) { return x === null ? "n/a" : x.toFixed(4); }
  function plural(k, word) { return k + " " + word + (k === 1 ? "" : "s"); }
  function heat(x) {
    var f = x === null ? 1 : Math.max(0, Math.min(1, x / top));
    return "hsl(" + Math.round(210 - 210 * f) + ", 70%, " + Math.round(62 - 14 * f) + "%)";
  }

  function header() {
    document.getElementById("meta-similarity").textContent = data.similarity;
    document.getElementById("meta-units").textContent = n + " (" + plural(dist.length, "gap") + ")";
    document.getElementById("meta-threshold").textContent = data.threshold +
      (data.level === null ? "" : " → distance > " + fmt(data.level));
    document.getElementById("axis-note").textContent = "distance per gap (axis 0 – " + top.toFixed(3) +
      "); click a bar to jump to its gap";
    document.getElementById("axis-last").textContent = dist.length > 1 ? "gap " + (dist.length - 1) : "";
  }

  function build() {
    for (var i = 0; i < n; i++) {
      units.push(el("p", "unit", data.sentences[i]));
      if (i < n - 1) {
        var gap = el("div", "gap"), track = el("span", "track"), fill = el("span", "fill");
        var d = dist[i];
        fill.style.width = (d === null ? 100 : Math.max(0, d / top) * 100) + "%";
        fill.style.background = heat(d);
        track.appendChild(fill);
        gap.appendChild(track);
        gap.appendChild(el("span", "value"));
        gap.title = "gap " + i + ": distance " + fmt(d) + ", similarity " + fmt(data.similarities[i]);
        gaps.push(gap);
        var bar = el("div", "bar");
        bar.style.height = (d === null ? 100 : Math.max(0, d / top) * 100) + "%";
        bar.title = gap.title;
        bar.addEventListener("click", jump.bind(null, i));
        bars.appendChild(bar);
        barEls.push(bar);
      }
    }
    bars.style.minWidth = (dist.length * 3 + 4) + "px";
  }

  function jump(i) {
    gaps[i].scrollIntoView({ block: "center" });
    gaps[i].classList.add("flash");
    setTimeout(function () { gaps[i].classList.remove("flash"); }, 1200);
  }

  function rawCut(i, t) { return dist[i] !== null && t < hi && dist[i] > t; }

  function appliedCuts(t) {
    // a cut right after a heading line is made before that heading, as the chunks are (data.moves)
    var applied = {};
    for (var i = 0; i < n - 1; i++) {
      if (rawCut(i, t) && data.moves[i] >= 0) { applied[data.moves[i]] = true; }
    }
    return applied;
  }

  function isCut(i, t, applied) {
    if (mode === "rule") { return ruleCuts[i] === true; }
    return applied[i] === true;
  }

  function section(k, first) {
    var s = el("section", "chunk");
    var label = el("div", "chunk-label");
    label.appendChild(el("strong", "", "chunk " + k));
    s.appendChild(label);
    s.kiremeFirst = first;
    return s;
  }

  function close(s, last, sizes) {
    var chars = data.units[last][1] - data.units[s.kiremeFirst][0];
    sizes.push(chars);
    s.firstChild.appendChild(document.createTextNode(
      plural(last - s.kiremeFirst + 1, "sentence") + " · " + chars + " chars"));
  }

  function redraw() {
    var t = parseFloat(slider.value), frag = document.createDocumentFragment(), sizes = [];
    var applied = mode === "rule" ? {} : appliedCuts(t);
    var current = n ? section(1, 0) : null;
    for (var i = 0; i < n; i++) {
      current.appendChild(units[i]);
      if (i === n - 1) { break; }
      var cut = isCut(i, t, applied);
      gaps[i].classList.toggle("cut", cut);
      barEls[i].classList.toggle("cut", cut);
      gaps[i].lastChild.textContent = "gap " + i + " · " + (cut ? "✂ cut · " : "") + fmt(dist[i]);
      current.appendChild(gaps[i]);
      if (cut) {
        close(current, i, sizes);
        frag.appendChild(current);
        current = section(sizes.length + 1, i + 1);
      }
    }
    if (current) { close(current, n - 1, sizes); frag.appendChild(current); }
    doc.replaceChildren(frag);
    summary(sizes, t);
  }

  function summary(sizes, t) {
    countOut.textContent = plural(sizes.length, "chunk");
    var sorted = sizes.slice().sort(function (a, b) { return a - b; });
    sizesOut.textContent = sorted.length ? "chars per chunk: min " + sorted[0] + " · median " +
      sorted[Math.floor((sorted.length - 1) / 2)] + " · max " + sorted[sorted.length - 1] : "";
    // the groups are the threshold's alone; the chunks are cut within max_size besides
    if (data.max_size && data.unit === "chars") {
      var over = sizes.filter(function (s) { return s > data.max_size; }).length;
      if (over) {
        sizesOut.textContent += " · " + over + " over max_size " + data.max_size +
          ": kireme chunk cuts " + (over === 1 ? "it" : "each") + " further";
      }
    } else if (data.max_size) {
      sizesOut.textContent += " · chunks are cut within max_size " + data.max_size + " " + data.unit + " besides";
    }
    var shown = mode === "rule" ? data.level : (t < hi ? t : null);
    if (mode === "rule") {
      valueOut.textContent = "rule " + data.threshold +
        (data.level === null ? (data.threshold.indexOf("gradient") === 0 ? " (cuts on the gradient)" : "") :
          " (distance > " + fmt(data.level) + ")");
    } else {
      valueOut.textContent = t < hi ? "cut where distance > " + fmt(t) : "no cuts (above every distance)";
    }
    line.hidden = shown === null;
    if (shown !== null) { line.style.bottom = Math.min(100, Math.max(0, shown / top * 100)) + "%"; }
    buttons.forEach(function (b) { b.classList.toggle("active", b.kiremeActive()); });
  }

  function preset(name, level, isRule) {
    var b = el("button", "", name + (level === null ? "" : " " + level.toFixed(3)));
    b.type = "button";
    b.kiremeActive = function () {
      return isRule ? mode === "rule" : mode === "slider" && slider.value === b.kiremeValue;
    };
    b.addEventListener("click", function () {
      if (isRule) { mode = "rule"; slider.value = start; }
      else {
        mode = "slider";
        slider.value = String(level === null ? hi : Math.min(hi, Math.max(lo, level)));
        b.kiremeValue = slider.value;
      }
      redraw();
    });
    buttons.push(b);
    presets.appendChild(b);
  }

  header();
  build();
  if (dist.length) {
    preset("rule " + data.threshold, data.level, true);
    Object.keys(data.thresholds).forEach(function (k) { preset(k, data.thresholds[k], false); });
  }
  slider.addEventListener("input", function () { mode = "slider"; redraw(); });
  redraw();
})();
"""
