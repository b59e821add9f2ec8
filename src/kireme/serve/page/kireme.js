// kireme serve: the page's script. Plain JavaScript, no library, no network beyond this server.
//
// Safety: document text, titles, headings, ids and error messages reach the page only through
// textContent / createTextNode / attributes, never as markup.
// Offsets: the API's start/end count Unicode code points (Python str indices); JavaScript strings count
// UTF-16 code units, so every offset goes through a code point -> UTF-16 map of the returned text.
"use strict";

(function () {
  var SVG_NS = "http://www.w3.org/2000/svg";
  var TOKEN_KEY = "kireme-token";
  var AROUND = 160;
  var DEBOUNCE_MS = 300;

  var state = {
    seq: 0, // the newest /chunk request; older answers are dropped
    searchSeq: 0,
    source: "text", // "text" (the textarea) or "file" (the file input)
    file: null,
    response: null, // the last /chunk answer drawn
    units: null, // code point -> UTF-16 offset map of response.text
    sent: null, // the options of the request that produced response
    chunkEls: [], // per chunk: the span(s) that draw it
    overlapEls: [], // per chunk: the overlap spans it shares
    selected: null,
    pinned: false,
    chart: null, // distance chart scale, for dragging the threshold line
    retry: null, // what to run again once a token is given
    indexed: false, // /health named an index
    renders: 0,
    searches: 0,
  };

  function $(id) {
    return document.getElementById(id);
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function svg(tag, attrs, parent) {
    var node = document.createElementNS(SVG_NS, tag);
    for (var name in attrs) node.setAttribute(name, String(attrs[name]));
    if (parent) parent.appendChild(node);
    return node;
  }

  function svgTitle(node, text) {
    var title = document.createElementNS(SVG_NS, "title");
    title.textContent = text;
    node.appendChild(title);
  }

  function debounce(fn, ms) {
    var timer = null;
    function run() {
      clearTimeout(timer);
      timer = setTimeout(function () {
        timer = null;
        fn();
      }, ms);
    }
    run.cancel = function () {
      clearTimeout(timer);
      timer = null;
    };
    return run;
  }

  function fmt(x, digits) {
    if (x === null || x === undefined || !isFinite(x)) return "—";
    return Number(x).toFixed(digits === undefined ? 3 : digits);
  }

  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }

  // ---- errors and busy state -------------------------------------------------------------------------

  function showError(message) {
    var line = $("error");
    line.textContent = message;
    line.hidden = false;
  }

  function clearError() {
    var line = $("error");
    line.textContent = "";
    line.hidden = true;
  }

  function setBusy(on) {
    $("busy").hidden = !on;
    document.body.classList.toggle("busy", on);
  }

  // ---- token (Authorization: Bearer) ------------------------------------------------------------------

  function getToken() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || "";
    } catch (e) {
      return state.memoryToken || "";
    }
  }

  function setToken(token) {
    state.memoryToken = token;
    try {
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) {
      /* storage refused (privacy mode): the token lives in memory for this page */
    }
  }

  function askToken() {
    var form = $("auth");
    form.hidden = false;
    $("token").focus();
  }

  // ---- HTTP -------------------------------------------------------------------------------------------

  function ApiError(status, message) {
    this.status = status;
    this.message = message;
  }

  // One request: JSON (or FormData) out, JSON in; any failure becomes an ApiError with a one-line message.
  function api(method, path, body, retry) {
    var headers = {};
    var token = getToken();
    if (token) headers.Authorization = "Bearer " + token;
    var payload;
    if (body instanceof FormData) {
      payload = body;
    } else if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      payload = JSON.stringify(body);
    }
    return fetch(path, { method: method, headers: headers, body: payload, cache: "no-store" })
      .catch(function (err) {
        throw new ApiError(0, "network error: the server did not answer (" + err.message + ")");
      })
      .then(function (response) {
        return response.text().then(function (text) {
          var data = null;
          try {
            data = text ? JSON.parse(text) : null;
          } catch (e) {
            data = null;
          }
          if (response.ok && data !== null && typeof data === "object") return data;
          if (response.status === 401) {
            state.retry = retry || null;
            askToken();
          }
          var message;
          if (data && typeof data.error === "string") message = data.error;
          else if (data && data.detail !== undefined) message = JSON.stringify(data.detail);
          else if (response.ok) message = "the answer is not JSON";
          else message = response.statusText || "request failed";
          if (response.status === 401 && !(data && data.error)) message = "a token is required";
          throw new ApiError(response.status, message);
        });
      });
  }

  function reportError(what, err) {
    if (err instanceof ApiError) {
      var status = err.status ? " (" + err.status + ")" : "";
      var hint = err.status === 401 ? " — enter the token above / トークンを入力してください" : "";
      showError(what + " failed" + status + ": " + err.message + hint);
    } else {
      showError(what + " failed: " + (err && err.message ? err.message : String(err)));
      if (window.console) console.error(err);
    }
  }

  // ---- offsets ----------------------------------------------------------------------------------------

  // map[k] = the UTF-16 index of code point k; map[count] = text.length. A surrogate pair is one code
  // point (never split); a lone surrogate counts as one, as in Python.
  function codePointMap(text) {
    var map = new Uint32Array(text.length + 1);
    var k = 0;
    for (var i = 0; i < text.length; ) {
      map[k++] = i;
      var c = text.charCodeAt(i);
      var pair =
        c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
      i += pair ? 2 : 1;
    }
    map[k] = text.length;
    return { map: map, count: k };
  }

  function toUtf16(units, cp) {
    var k = Math.max(0, Math.min(units.count, Math.floor(Number(cp) || 0)));
    return units.map[k];
  }

  function codePointLength(text) {
    var n = 0;
    for (var i = 0; i < text.length; i++) {
      var c = text.charCodeAt(i);
      if (!(c >= 0xdc00 && c <= 0xdfff && i > 0 && (text.charCodeAt(i - 1) & 0xfc00) === 0xd800)) n++;
    }
    return n;
  }

  // ---- chunk request ----------------------------------------------------------------------------------

  function readInt(id, label, min) {
    var raw = $(id).value.trim();
    var value = Number(raw);
    if (raw === "" || !Number.isInteger(value) || value < min) {
      throw new Error(label + " must be a whole number ≥ " + min);
    }
    return value;
  }

  function chunkOptions() {
    var options = {
      strategy: $("strategy").value,
      max_size: readInt("max-size", "max size", 1),
      min_size: readInt("min-size", "min size", 0),
      overlap: readInt("overlap", "overlap", 0),
      unit: $("unit").value,
    };
    if ($("context").value) options.context = $("context").value;
    if ($("title").value.trim()) options.title = $("title").value.trim();
    if ($("format").value) options.format = $("format").value;
    if (options.strategy === "semantic") {
      if ($("similarity").value) options.similarity = $("similarity").value;
      if ($("threshold-rule").value.trim()) options.threshold = $("threshold-rule").value.trim();
    }
    return options;
  }

  // What a pasted text is when the format is "auto": HTML by its opening tags, Markdown by a heading,
  // a code fence or a table row, else plain text (the server reads a text with no name as plain text).
  function pastedFormat(text) {
    if (/^\s*(<!doctype html|<html[\s>]|<head[\s>]|<body[\s>])/i.test(text)) return "html";
    if (/^(#{1,6} \S|```|~~~|\|.*\|\s*$)/m.test(text)) return "markdown";
    return "text";
  }

  function runChunk() {
    scheduleChunk.cancel();
    var seq = ++state.seq;
    var options;
    try {
      options = chunkOptions();
    } catch (err) {
      showError(err.message);
      return Promise.resolve();
    }
    var body;
    if (state.source === "file" && state.file) {
      body = new FormData();
      body.append("file", state.file, state.file.name);
      body.append("options", JSON.stringify(options));
    } else {
      var text = $("doc-input").value;
      if (!text) {
        clearDocument();
        return Promise.resolve();
      }
      // "auto" for a pasted text: the page tells HTML and Markdown from plain text, as a file's name would
      var pasted = { text: text, filename: null, format: options.format ? null : pastedFormat(text), title: null };
      body = Object.assign(pasted, options);
    }
    setBusy(true);
    return api("POST", "/chunk", body, runChunk)
      .then(function (data) {
        if (seq !== state.seq) return; // a newer request is on its way
        clearError();
        render(data, options);
      })
      .catch(function (err) {
        if (seq === state.seq) reportError("Chunk", err);
      })
      .then(function () {
        if (seq === state.seq) setBusy(false);
      });
  }

  var scheduleChunk = debounce(runChunk, DEBOUNCE_MS);

  // ---- drawing a /chunk answer ------------------------------------------------------------------------

  function clearDocument() {
    state.response = null;
    $("doc-view").textContent = "";
    $("summary").hidden = true;
    $("semantic").hidden = true;
    resetDetails();
  }

  function render(data, options) {
    var text = typeof data.text === "string" ? data.text : "";
    var chunks = Array.isArray(data.chunks) ? data.chunks : [];
    state.response = data;
    state.sent = options;
    state.units = codePointMap(text);
    state.selected = null;
    state.pinned = false;
    drawSummary(data, chunks, options);
    drawDocument(text, chunks);
    drawSemantic(data.analysis || null);
    resetDetails();
    state.renders += 1;
    document.body.setAttribute("data-chunk-renders", String(state.renders));
  }

  function median(sorted) {
    if (!sorted.length) return null;
    var mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  }

  function drawSummary(data, chunks, options) {
    $("summary").hidden = false;
    var unit = data.unit || options.unit || "";
    var sizes = chunks
      .map(function (c) {
        return Number(c.size) || 0;
      })
      .sort(function (a, b) {
        return a - b;
      });
    var count = $("chunk-count");
    count.textContent = plural(chunks.length, "chunk") + " · " + chunks.length + " チャンク";
    count.setAttribute("data-count", String(chunks.length));
    $("size-stats").textContent = sizes.length
      ? "size min " + sizes[0] + " · median " + median(sizes) + " · max " + sizes[sizes.length - 1] + " " + unit
      : "no chunks";
    $("doc-title").textContent = data.title ? "title: " + data.title : "";
    drawHistogram(sizes, options.max_size, unit);
  }

  function drawHistogram(sizes, maxSize, unit) {
    var chart = $("histogram");
    chart.textContent = "";
    var W = 320,
      H = 64,
      top = 4,
      bottom = 14;
    var hi = Math.max(maxSize || 1, sizes.length ? sizes[sizes.length - 1] : 1, 1);
    var bins = Math.min(16, hi);
    var width = hi / bins;
    var counts = new Array(bins).fill(0);
    sizes.forEach(function (s) {
      counts[Math.min(bins - 1, Math.floor(s / width))] += 1;
    });
    var most = Math.max.apply(null, counts.concat([1]));
    var bw = W / bins;
    counts.forEach(function (n, b) {
      var h = ((H - top - bottom) * n) / most;
      var rect = svg("rect", { class: "bin", x: b * bw + 1, y: H - bottom - h, width: Math.max(1, bw - 2), height: h }, chart);
      var lo = Math.ceil(b * width),
        up = Math.ceil((b + 1) * width) - 1;
      svgTitle(rect, lo + "–" + Math.max(lo, up) + " " + unit + ": " + plural(n, "chunk"));
    });
    if (maxSize) {
      var x = Math.min(W - 1, (maxSize / hi) * W);
      svg("line", { class: "limit", x1: x, x2: x, y1: top, y2: H - bottom }, chart);
    }
    svg("text", { x: 1, y: H - 3 }, chart).textContent = "0";
    var end = svg("text", { x: W - 1, y: H - 3, "text-anchor": "end" }, chart);
    end.textContent = hi + " " + unit;
    chart.setAttribute("data-bins", String(bins));
  }

  // Every chunk is one span.chunk holding the characters from its start up to where the next chunk
  // starts (the latest-starting chunk owns a character); characters a chunk shares with the previous
  // one (overlap) sit inside it as span.overlap, marked with the indexes of every chunk that holds them.
  // Characters no chunk holds are plain text. The view's text is therefore exactly `text`, in order.
  function drawDocument(text, chunks) {
    var view = $("doc-view");
    view.textContent = "";
    state.chunkEls = chunks.map(function () {
      return [];
    });
    state.overlapEls = chunks.map(function () {
      return [];
    });
    var units = state.units;
    var items = chunks.map(function (c, i) {
      var s = toUtf16(units, c.start),
        e = toUtf16(units, c.end);
      return { i: i, s: s, e: Math.max(s, e) };
    });
    var bounds = [0, text.length];
    items.forEach(function (it) {
      bounds.push(it.s, it.e);
    });
    bounds = Array.from(new Set(bounds)).sort(function (a, b) {
      return a - b;
    });
    var byStart = items.slice().sort(function (a, b) {
      return a.s - b.s || a.i - b.i;
    });
    var fragment = document.createDocumentFragment();
    var active = [];
    var next = 0;
    var open = null; // { i, node }: the chunk span being filled
    var started = new Set();

    function chunkSpan(i) {
      var part = started.has(i); // a chunk drawn in two places (only when chunks nest): one span.chunk
      started.add(i);
      var span = el("span", (part ? "chunk-part" : "chunk") + " c" + (i % 2));
      span.setAttribute("data-index", String(i));
      if (!part) span.tabIndex = 0;
      state.chunkEls[i].push(span);
      fragment.appendChild(span);
      return span;
    }

    for (var b = 0; b < bounds.length; b++) {
      var at = bounds[b];
      active = active.filter(function (it) {
        return it.e > at;
      });
      var starting = [];
      while (next < byStart.length && byStart[next].s === at) starting.push(byStart[next++]);
      starting.forEach(function (it, k) {
        if (it.e === it.s || k < starting.length - 1) {
          open = null; // empty, or hidden by a later chunk starting here too: its span marks the place
          chunkSpan(it.i);
        }
        if (it.e > it.s) active.push(it);
      });
      if (b + 1 >= bounds.length) break;
      var piece = text.slice(at, bounds[b + 1]);
      if (!piece) continue;
      var own = null;
      active.forEach(function (it) {
        if (!own || it.s > own.s || (it.s === own.s && it.i > own.i)) own = it;
      });
      if (!own) {
        open = null;
        fragment.appendChild(document.createTextNode(piece));
        continue;
      }
      if (!open || open.i !== own.i) open = { i: own.i, node: chunkSpan(own.i) };
      if (active.length > 1) {
        var ids = active
          .map(function (x) {
            return x.i;
          })
          .sort(function (p, q) {
            return p - q;
          });
        var mark = el("span", "overlap", piece);
        mark.setAttribute("data-chunks", ids.join(" "));
        mark.title = "overlap: chunks " + ids.join(", ") + " / 重なり";
        ids.forEach(function (i) {
          state.overlapEls[i].push(mark);
        });
        open.node.appendChild(mark);
      } else {
        open.node.appendChild(document.createTextNode(piece));
      }
    }
    view.appendChild(fragment);
    view.setAttribute("data-chunks", String(chunks.length));
  }

  // ---- chunk details ----------------------------------------------------------------------------------

  function resetDetails() {
    var panel = $("details");
    panel.textContent = "";
    panel.appendChild(el("p", "muted", "Hover or click a chunk. チャンクにカーソルを合わせると詳細を表示。"));
    panel.removeAttribute("data-index");
  }

  function select(i) {
    if (state.selected !== null) {
      (state.chunkEls[state.selected] || []).concat(state.overlapEls[state.selected] || []).forEach(function (node) {
        node.classList.remove("selected");
      });
    }
    state.selected = i;
    (state.chunkEls[i] || []).concat(state.overlapEls[i] || []).forEach(function (node) {
      node.classList.add("selected");
    });
    showDetails(i);
  }

  function addRow(dl, label, value, id) {
    dl.appendChild(el("dt", null, label));
    var dd = el("dd", null, value);
    if (id) dd.id = id;
    dl.appendChild(dd);
  }

  function showDetails(i) {
    var data = state.response;
    var chunk = data && data.chunks[i];
    if (!chunk) return;
    var panel = $("details");
    panel.textContent = "";
    panel.setAttribute("data-index", String(i));
    var head = el("h3", null, "Chunk #" + chunk.index + " ");
    if (state.pinned) head.appendChild(el("span", "pinned", "pinned 固定 (click to release)"));
    panel.appendChild(head);
    var dl = el("dl");
    addRow(dl, "index", chunk.index, "detail-index");
    addRow(dl, "start", chunk.start, "detail-start");
    addRow(dl, "end", chunk.end, "detail-end");
    addRow(dl, "size", chunk.size + " " + (chunk.unit || data.unit || ""), "detail-size");
    var headings = Array.isArray(chunk.headings) ? chunk.headings : [];
    addRow(dl, "headings 見出し", headings.length ? headings.join(" > ") : "—", "detail-headings");
    addRow(dl, "id", chunk.id, "detail-id");
    if (chunk.title) addRow(dl, "title", chunk.title, "detail-title");
    var prev = data.chunks[i - 1],
      following = data.chunks[i + 1];
    var before = prev ? Math.max(0, prev.end - chunk.start) : 0;
    var after = following ? Math.max(0, chunk.end - following.start) : 0;
    if (before || after) addRow(dl, "overlap 重なり", "← " + before + " · → " + after + " chars", "detail-overlap");
    if (chunk.metadata && Object.keys(chunk.metadata).length) {
      addRow(dl, "metadata", JSON.stringify(chunk.metadata), "detail-metadata");
    }
    panel.appendChild(dl);
    panel.appendChild(el("h4", null, "embed_text"));
    var pre = el("pre", null, chunk.embed_text === undefined ? "" : chunk.embed_text);
    pre.id = "detail-embed";
    panel.appendChild(pre);
  }

  function chunkIndexOf(target) {
    var node = target && target.closest ? target.closest(".chunk, .chunk-part") : null;
    return node ? Number(node.getAttribute("data-index")) : null;
  }

  function wireDocumentView() {
    var view = $("doc-view");
    view.addEventListener("mouseover", function (event) {
      if (state.pinned) return;
      var i = chunkIndexOf(event.target);
      if (i !== null && i !== state.selected) select(i);
    });
    view.addEventListener("click", function (event) {
      var i = chunkIndexOf(event.target);
      if (i === null) return;
      state.pinned = !(state.pinned && state.selected === i);
      select(i);
    });
    view.addEventListener("focusin", function (event) {
      var i = chunkIndexOf(event.target);
      if (i !== null && !state.pinned) select(i);
    });
    view.addEventListener("keydown", function (event) {
      if (event.key !== "Enter" && event.key !== " ") return;
      var i = chunkIndexOf(event.target);
      if (i === null) return;
      event.preventDefault();
      state.pinned = !(state.pinned && state.selected === i);
      select(i);
    });
  }

  // ---- semantic: distances, threshold, cuts -----------------------------------------------------------

  function finiteDistances(analysis) {
    return (analysis.distances || []).filter(function (d) {
      return d !== null && isFinite(d);
    });
  }

  function drawSemantic(analysis) {
    var box = $("semantic");
    if (!analysis) {
      box.hidden = true;
      state.chart = null;
      return;
    }
    box.hidden = false;
    var values = finiteDistances(analysis);
    var slider = $("threshold");
    if (values.length) {
      var lo = Math.min.apply(null, values),
        hi = Math.max.apply(null, values);
      var pad = Math.max((hi - lo) * 0.01, 1e-6);
      slider.min = String(lo - pad);
      slider.max = String(hi);
      slider.disabled = false;
      var level = analysis.level;
      var sorted = values.slice().sort(function (a, b) {
        return a - b;
      });
      slider.value = String(level !== null && isFinite(level) ? Math.min(hi, Math.max(lo - pad, level)) : median(sorted));
    } else {
      slider.disabled = true;
    }
    drawChart(analysis, analysis.cut_gaps || [], analysis.level);
    var cuts = (analysis.cut_gaps || []).length;
    $("cut-count").textContent = plural(cuts, "cut") + " · " + cuts + " 箇所で分割 (" + analysis.threshold + ")";
    $("cut-count").setAttribute("data-cuts", String(cuts));
    $("threshold-value").textContent = fmt(analysis.level, 4);
    $("cut-gaps").textContent = cuts
      ? "cut gaps (after sentence): " + analysis.cut_gaps.join(", ")
      : "no gap is cut / 分割なし";
  }

  function drawChart(analysis, cutGaps, level) {
    var chart = $("distance-chart");
    chart.textContent = "";
    var distances = analysis.distances || [];
    var G = distances.length;
    var W = 720,
      H = 180,
      L = 40,
      R = 10,
      T = 10,
      B = 22;
    var values = finiteDistances(analysis);
    // the y axis spans the distances (and the level), not 0..max: bigram distances often sit close together
    var shown = values.concat(level !== null && isFinite(level) ? [level] : []);
    var top = shown.length ? Math.max.apply(null, shown) : 1;
    var bottom = shown.length ? Math.min.apply(null, shown) : 0;
    var pad = (top - bottom) * 0.08 || Math.max(Math.abs(top) * 0.05, 0.01);
    top += pad;
    bottom -= pad;
    function x(i) {
      return G <= 1 ? (L + W - R) / 2 : L + (i * (W - L - R)) / (G - 1);
    }
    function y(d) {
      return T + ((top - d) * (H - T - B)) / (top - bottom || 1);
    }
    state.chart = { top: top, bottom: bottom, T: T, B: B, H: H };
    svg("line", { class: "axis", x1: L, x2: W - R, y1: y(bottom), y2: y(bottom) }, chart);
    svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }, chart);
    svg("text", { x: L - 4, y: T + 8, "text-anchor": "end" }, chart).textContent = fmt(top, 2);
    svg("text", { x: L - 4, y: y(bottom), "text-anchor": "end" }, chart).textContent = fmt(bottom, 2);
    if (!G) {
      svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, chart).textContent =
        "no gaps: one sentence / 文が一つだけ";
      chart.setAttribute("data-gaps", "0");
      return;
    }
    svg("text", { x: L, y: H - 6 }, chart).textContent = "gap 0";
    svg("text", { x: W - R, y: H - 6, "text-anchor": "end" }, chart).textContent = "gap " + (G - 1);
    var cut = new Set(cutGaps);
    cut.forEach(function (g) {
      if (g >= 0 && g < G) svg("line", { class: "cut-mark", x1: x(g), x2: x(g), y1: T, y2: H - B }, chart);
    });
    var path = "";
    var pen = false;
    distances.forEach(function (d, i) {
      if (d === null || !isFinite(d)) {
        pen = false;
        return;
      }
      path += (pen ? " L" : " M") + x(i).toFixed(1) + " " + y(d).toFixed(1);
      pen = true;
    });
    if (path) svg("path", { class: "curve", d: path.trim() }, chart);
    distances.forEach(function (d, i) {
      var missing = d === null || !isFinite(d);
      var point = svg(
        "circle",
        {
          class: "point" + (cut.has(i) ? " cut" : "") + (missing ? " missing" : ""),
          cx: x(i),
          cy: missing ? y(bottom) : y(d),
          r: G > 200 ? 1.5 : 3,
          "data-gap": i,
        },
        chart
      );
      svgTitle(point, "gap " + i + ": distance " + fmt(d, 4) + (cut.has(i) ? " — cut 分割" : ""));
    });
    var line = svg("line", { class: "threshold-line", id: "threshold-line", x1: L, x2: W - R, y1: 0, y2: 0 }, chart);
    placeThresholdLine(line, level);
    chart.setAttribute("data-gaps", String(G));
  }

  function placeThresholdLine(line, level) {
    var c = state.chart;
    if (!line || !c) return;
    if (level === null || level === undefined || !isFinite(level)) {
      line.setAttribute("visibility", "hidden");
      return;
    }
    var yy = c.T + ((c.top - level) * (c.H - c.T - c.B)) / (c.top - c.bottom || 1);
    yy = Math.max(c.T, Math.min(c.H - c.B, yy));
    line.setAttribute("visibility", "visible");
    line.setAttribute("y1", yy);
    line.setAttribute("y2", yy);
  }

  // The slider (or a drag on the chart) moved: preview the cuts a distance threshold makes, then ask
  // the server for the chunks with threshold absolute:<value>.
  function thresholdMoved() {
    var slider = $("threshold");
    var value = Number(slider.value);
    var analysis = state.response && state.response.analysis;
    if (!analysis || !isFinite(value)) return;
    placeThresholdLine($("threshold-line"), value);
    $("threshold-value").textContent = fmt(value, 4);
    var preview = 0;
    (analysis.distances || []).forEach(function (d, i) {
      var on = d !== null && isFinite(d) && d > value;
      if (on) preview++;
      var point = document.querySelector('#distance-chart circle[data-gap="' + i + '"]');
      if (point) point.classList.toggle("cut", on);
    });
    $("cut-count").textContent = "≈ " + plural(preview, "cut") + " (preview…)";
    $("threshold-rule").value = "absolute:" + Number(value.toPrecision(6));
    scheduleChunk();
  }

  function wireChart() {
    var chart = $("distance-chart");
    var dragging = false;
    function move(event) {
      var c = state.chart;
      var slider = $("threshold");
      if (!c || slider.disabled) return;
      var matrix = chart.getScreenCTM();
      if (!matrix) return;
      var point = chart.createSVGPoint();
      point.x = event.clientX;
      point.y = event.clientY;
      var yy = point.matrixTransform(matrix.inverse()).y;
      var value = c.top - ((yy - c.T) * (c.top - c.bottom)) / (c.H - c.T - c.B);
      value = Math.max(Number(slider.min), Math.min(Number(slider.max), value));
      slider.value = String(value);
      thresholdMoved();
    }
    chart.addEventListener("pointerdown", function (event) {
      dragging = true;
      if (chart.setPointerCapture) chart.setPointerCapture(event.pointerId);
      move(event);
    });
    chart.addEventListener("pointermove", function (event) {
      if (dragging) move(event);
    });
    function stop() {
      dragging = false;
    }
    chart.addEventListener("pointerup", stop);
    chart.addEventListener("pointercancel", stop);
    $("threshold").addEventListener("input", thresholdMoved);
  }

  // ---- search -----------------------------------------------------------------------------------------

  function runSearch() {
    var query = $("search-query").value.trim();
    if (!query) {
      showError("Type a query first. 検索語を入力してください。");
      return Promise.resolve();
    }
    var k = Number($("search-k").value || 5);
    if (!Number.isInteger(k) || k < 1) {
      showError("k must be a whole number ≥ 1");
      return Promise.resolve();
    }
    var budgetRaw = $("search-budget").value.trim();
    var budget = budgetRaw ? Number(budgetRaw) : null;
    if (budget !== null && (!Number.isInteger(budget) || budget < 1)) {
      showError("budget must be a whole number ≥ 1, or empty");
      return Promise.resolve();
    }
    var body = { query: query, k: k, mode: $("search-mode").value, filters: {}, budget: budget, unit: "chars", around: AROUND };
    var seq = ++state.searchSeq;
    $("search-status").textContent = "searching… 検索中";
    return api("POST", "/search", body, runSearch)
      .then(function (data) {
        if (seq !== state.searchSeq) return;
        clearError();
        drawHits(data);
        if (!state.indexed) loadHealth(); // the index appeared since the page asked
      })
      .catch(function (err) {
        if (seq !== state.searchSeq) return;
        $("search-status").textContent = err instanceof ApiError ? "search failed: " + err.message : "search failed";
        reportError("Search", err);
      });
  }

  function drawHits(data) {
    var list = $("hits");
    list.textContent = "";
    var hits = Array.isArray(data.hits) ? data.hits : [];
    $("search-status").textContent =
      plural(hits.length, "hit") + " · " + (data.mode || "") + (hits.length ? "" : " — 該当なし / nothing found");
    hits.forEach(function (hit) {
      var item = el("li", "hit");
      item.setAttribute("data-rank", String(hit.rank));
      var head = el("div", "hit-head");
      head.appendChild(el("span", "rank", "#" + hit.rank));
      head.appendChild(el("span", "score", "score " + fmt(hit.score, 4)));
      head.appendChild(el("span", "source", hit.source || hit.doc_id || ""));
      var headings = Array.isArray(hit.headings) ? hit.headings : [];
      if (headings.length) head.appendChild(el("span", "headings", headings.join(" > ")));
      head.appendChild(el("span", "range", "chars " + hit.start + "–" + hit.end));
      item.appendChild(head);
      var body = el("p", "hit-text");
      var before = hit.before || "",
        after = hit.after || "";
      if (before && Number(hit.start) > codePointLength(before)) body.appendChild(el("span", "ellipsis", "…"));
      if (before) body.appendChild(el("span", "ctx before", before));
      body.appendChild(el("mark", null, hit.text || ""));
      if (after) body.appendChild(el("span", "ctx after", after));
      if (after && codePointLength(after) >= AROUND) body.appendChild(el("span", "ellipsis", "…"));
      item.appendChild(body);
      list.appendChild(item);
    });
    drawContext(data.context || null);
    state.searches += 1;
    document.body.setAttribute("data-search-renders", String(state.searches));
  }

  function drawContext(context) {
    var box = $("search-context");
    var list = $("passages");
    list.textContent = "";
    if (!context) {
      box.hidden = true;
      return;
    }
    box.hidden = false;
    $("context-size").textContent =
      context.size + " / " + context.budget + " " + (context.unit || "") + (context.cut ? " · cut 切り詰め" : "");
    (context.passages || []).forEach(function (p) {
      var item = el("li", "passage");
      var head = el("div", "hit-head");
      head.appendChild(el("span", "source", p.source || p.doc_id || ""));
      if (Array.isArray(p.headings) && p.headings.length) head.appendChild(el("span", "headings", p.headings.join(" > ")));
      head.appendChild(el("span", "range", "chars " + p.start + "–" + p.end));
      if (Array.isArray(p.ranks) && p.ranks.length) head.appendChild(el("span", "ranks", "hits #" + p.ranks.join(", #")));
      if (Array.isArray(p.pages) && p.pages.length) head.appendChild(el("span", "pages", "p. " + p.pages.join(", ")));
      head.appendChild(el("span", "size", "size " + p.size + (p.cut ? " · cut" : "")));
      item.appendChild(head);
      item.appendChild(el("pre", null, p.text || ""));
      list.appendChild(item);
    });
  }

  // ---- server status ----------------------------------------------------------------------------------

  function loadHealth() {
    return api("GET", "/health", undefined, loadHealth)
      .then(function (data) {
        var line = "kireme " + (data.version || "?") + " · ";
        var index = data.index;
        if (index) {
          line +=
            "index: " + plural(Number(index.documents) || 0, "document") + ", " + plural(Number(index.rows) || 0, "chunk") +
            (index.embedder ? ", embedder " + index.embedder : "");
        } else {
          line += "no index / 索引なし" + (data.error ? ": " + data.error : " (chunking only)");
        }
        $("health").textContent = line;
        state.indexed = Boolean(index);
        if (index) return loadDocuments();
        $("documents-count").textContent = "(no index)";
      })
      .catch(function (err) {
        $("health").textContent = "server: " + (err.message || "unreachable");
        reportError("Status", err);
      });
  }

  function loadDocuments() {
    return api("GET", "/documents", undefined, loadDocuments)
      .then(function (data) {
        var list = $("documents");
        list.textContent = "";
        var docs = Array.isArray(data.documents) ? data.documents : [];
        $("documents-count").textContent = "(" + (data.count === undefined ? docs.length : data.count) + ")";
        docs.forEach(function (d) {
          list.appendChild(el("li", null, (d.source || d.doc_id) + " — " + plural(Number(d.chunks) || 0, "chunk") + ", " + d.size));
        });
      })
      .catch(function (err) {
        reportError("Documents", err);
      });
  }

  // ---- wiring -----------------------------------------------------------------------------------------

  function syncSemanticClass() {
    document.body.classList.toggle("is-semantic", $("strategy").value === "semantic");
  }

  function init() {
    wireDocumentView();
    wireChart();
    syncSemanticClass();

    ["strategy", "unit", "context", "format", "similarity"].forEach(function (id) {
      $(id).addEventListener("change", function () {
        if (id === "strategy") syncSemanticClass();
        scheduleChunk();
      });
    });
    ["max-size", "overlap", "min-size", "title", "threshold-rule"].forEach(function (id) {
      $(id).addEventListener("input", scheduleChunk);
    });
    $("doc-input").addEventListener("input", function () {
      if (state.source === "file") {
        state.source = "text";
        state.file = null;
        $("file-input").value = "";
        $("source").textContent = "source: pasted text";
      }
      scheduleChunk();
    });
    $("file-input").addEventListener("change", function () {
      var file = $("file-input").files[0] || null;
      state.file = file;
      state.source = file ? "file" : "text";
      $("source").textContent = file ? "source: file " + file.name + " (type in the box to use pasted text)" : "source: pasted text";
      runChunk();
    });
    $("chunk-button").addEventListener("click", function () {
      runChunk();
    });
    $("search-form").addEventListener("submit", function (event) {
      event.preventDefault();
      runSearch();
    });
    $("auth").addEventListener("submit", function (event) {
      event.preventDefault();
      setToken($("token").value.trim());
      $("token").value = "";
      $("auth").hidden = true;
      clearError();
      var retry = state.retry;
      state.retry = null;
      loadHealth();
      if (retry && retry !== loadHealth) retry();
    });
    document.body.setAttribute("data-chunk-renders", "0");
    document.body.setAttribute("data-search-renders", "0");
    window.kireme = { state: state, chunk: runChunk, search: runSearch, render: render };
    loadHealth();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
