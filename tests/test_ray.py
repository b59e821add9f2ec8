"""``--engine ray``: the same index and the same chunks as the local path, on a local Ray started once.

One module, one Ray (2 CPUs, no dashboard), fixture files written here; the hash embedder (exact, fast).
Killed workers and actors: a chunker and an embedder that kill their own process the first time they run
(a marker file says whether they did), so Ray must retry the task or restart the actor.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

from kireme.chunkers import Chunker, SentenceChunker  # noqa: E402
from kireme.document import Chunk, Document  # noqa: E402
from kireme.embed.hashed import HashedNgramEmbedder  # noqa: E402
from kireme.errors import ConfigError  # noqa: E402
from kireme.index.embedders import cached, make_index_embedder  # noqa: E402
from kireme.index.ingest import Ingestor, IngestSummary, ingest_paths  # noqa: E402
from kireme.ray import RayEngine, chunk_dataset, embed_dataset  # noqa: E402
from kireme.strategies import make_chunker  # noqa: E402

pytestmark = pytest.mark.slow

EMBEDDER = "hash:64"


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Any:
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", configure_logging=False)
    # tests and the worker-killing chunker below travel by value (workers cannot import tests/)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    if started:
        ray.shutdown()


def write_corpus(root: Path) -> list[Path]:
    """Rules and manuals in Japanese and English, one broken file among them."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(1, 9):
        text = (
            f"# 就業規則 第{i}章\n\n## 経費\n\n社員は毎月{i}日までに経費を申請する。"
            f"申請額が{i * 3}万円を超える場合は部長の承認を受ける。\n\n"
            f"## Travel\n\nA trip of {i} days is booked through the travel desk. "
            f"Receipts over {i * 1000} yen are kept for seven years.\n\n"
        ) * i
        (root / f"rule-{i:02d}.md").write_text(text, encoding="utf-8")
    (root / "zz-broken.txt").write_bytes(b"\xff\xfe\x00\xd8")  # a UTF-16 mark with half a character
    return sorted(root.iterdir())


def index(
    db: Path, files: list[Path], engine: RayEngine | None, chunker: Chunker | None = None
) -> IngestSummary:
    embedder = cached(make_index_embedder(EMBEDDER), db)
    with Ingestor(db, chunker or make_chunker("markdown", max_size=160), embedder) as ingestor:
        return ingest_paths(ingestor, files, prepare=engine.prepare() if engine else None)


def rows(db: Path) -> list[dict[str, Any]]:
    import lancedb

    table = lancedb.connect(str(db / "lancedb")).open_table("chunks").to_arrow().to_pylist()
    return sorted(table, key=lambda r: r["id"])


def test_the_ray_index_equals_the_local_one_and_a_rerun_does_nothing(tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")
    local = index(tmp_path / "local", files, None)
    remote = index(tmp_path / "ray", files, RayEngine())
    assert local.failed == remote.failed == 1 and "broken.txt" in remote.errors[0]
    assert (
        (remote.added, remote.chunks_written)
        == (local.added, local.chunks_written)
        == (8, local.chunks_written)
    )
    assert remote.texts_embedded == local.texts_embedded > 0
    a, b = rows(tmp_path / "local"), rows(tmp_path / "ray")
    assert len(a) == len(b) == local.chunks_written > 8
    for x, y in zip(a, b, strict=True):
        for field in (
            "id",
            "doc_id",
            "idx",
            "start",
            "end",
            "text",
            "embed_text",
            "headings",
            "title",
            "metadata",
        ):
            assert x[field] == y[field], field
        assert np.allclose(x["vector"], y["vector"], atol=1e-5)
    again = index(tmp_path / "ray", files, RayEngine())
    assert (again.chunks_written, again.texts_embedded, again.unchanged, again.failed) == (0, 0, 8, 1)

    # one file edited: only it is scheduled, and only its new chunk texts are embedded
    edited = files[0]
    edited.write_text(
        edited.read_text(encoding="utf-8") + "\n## 付則\n\nこの規程は四月一日から施行する。\n", "utf-8"
    )
    changed = index(tmp_path / "ray", files, RayEngine())
    assert (changed.updated, changed.unchanged) == (1, 7)
    assert 0 < changed.texts_embedded < changed.chunks_written or changed.texts_embedded == 1


class DiesOnce(SentenceChunker):
    """A sentence chunker whose first call kills its worker process (the marker says it did)."""

    marker = ""

    def chunk(self, doc: Document) -> list[Chunk]:
        if not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()))
            os._exit(1)
        return super().chunk(doc)


class EmbedderDiesOnce(HashedNgramEmbedder):
    """The hash embedder, except that its first call kills its actor."""

    def __init__(self, marker: str) -> None:
        super().__init__(64)
        self.marker = marker

    def embed(self, texts: Any, kind: Any = "passage") -> np.ndarray:
        if not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()))
            os._exit(1)
        return super().embed(texts, kind)


def test_a_killed_worker_and_a_killed_actor_are_retried(tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")[:-1]
    chunker = DiesOnce(max_size=160)
    chunker.marker = str(tmp_path / "chunker-died")
    engine = RayEngine(embedder=EmbedderDiesOnce(str(tmp_path / "actor-died")))
    summary = index(tmp_path / "db", files, engine, chunker)
    assert (tmp_path / "chunker-died").exists() and (tmp_path / "actor-died").exists()
    assert (summary.added, summary.failed) == (8, 0)
    reference = DiesOnce(max_size=160)
    reference.marker = str(tmp_path / "chunker-died")  # it exists now: this one does not die
    index(tmp_path / "local", files, None, reference)
    assert [r["id"] for r in rows(tmp_path / "db")] == [r["id"] for r in rows(tmp_path / "local")]


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIREME_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, "-m", "kireme.cli", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def test_kireme_chunk_engine_ray_writes_shards_equal_to_the_local_rows(tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")
    address = ray.get_runtime_context().gcs_address
    local = cli(
        "chunk", str(tmp_path / "docs"), "--strategy", "markdown", "--max-size", "160", "--format", "jsonl"
    )
    assert local.returncode == 1 and "broken.txt" in local.stderr  # a file that cannot be read
    out = tmp_path / "out"
    (out).mkdir()
    (out / "part-000099.jsonl").write_text("stale\n")  # a shard an earlier, bigger run left
    common = ("--strategy", "markdown", "--max-size", "160", "--engine", "ray", "--ray-address", address)
    run = cli("chunk", str(tmp_path / "docs"), *common, "--output", str(out))
    assert run.returncode == 1 and "broken.txt" in run.stderr and "8 document(s)" in run.stderr
    shards = sorted(out.glob("part-*.jsonl"))
    assert len(shards) >= 2 and not (out / "part-000099.jsonl").exists()
    assert "".join(s.read_text(encoding="utf-8") for s in shards) == local.stdout
    run = cli("chunk", str(tmp_path / "docs"), *common, "--output", str(out), "--format", "parquet")
    import pyarrow.parquet as pq

    table = [r for s in sorted(out.glob("part-*.parquet")) for r in pq.read_table(s).to_pylist()]
    expected = [json.loads(line) for line in local.stdout.splitlines()]
    assert [{**r, "metadata": json.loads(r["metadata"])} for r in table] == expected
    assert not list(out.glob("part-*.jsonl"))  # one run's shards only

    usage = cli("chunk", str(files[0]), "--engine", "ray")
    assert usage.returncode == 2 and "--output DIR" in usage.stderr
    usage = cli("chunk", str(files[0]), *common, "--output", str(out), "--format", "text")
    assert usage.returncode == 2 and "not --format text" in usage.stderr
    # without Ray (tests/test_chunk_output.py covers it): the same rows, in the same files' format
    run = cli("chunk", str(tmp_path / "docs"), *common[:4], "--output", str(out))
    assert run.returncode == 1 and "broken.txt" in run.stderr
    assert "".join(s.read_text(encoding="utf-8") for s in sorted(out.glob("part-*.jsonl"))) == local.stdout
    usage = cli("index", str(files[0]), "--engine", "ray", "--jobs", "2", "--db", str(tmp_path / "x"))
    assert usage.returncode == 2 and "--jobs" in usage.stderr


def test_a_killed_driver_leaves_no_half_document_and_the_next_run_finishes(tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")[:-1]
    (tmp_path / "docs" / "zz-broken.txt").unlink()
    for i in range(20):  # more files, so the kill lands mid-run
        (tmp_path / "docs" / f"memo-{i:02d}.txt").write_text(
            f"第{i}回の議事録。予算は{i}百万円で承認された。\n" * 40, "utf-8"
        )
    db = tmp_path / "db"
    address = ray.get_runtime_context().gcs_address
    command = [sys.executable, "-m", "kireme.cli", "index", str(tmp_path / "docs"), "--db", str(db)]
    command += ["--embedder", EMBEDDER, "--engine", "ray", "--ray-address", address, "--format", "json"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    manifest = db / "manifest.sqlite"
    try:
        while not (manifest.exists() and _entries(manifest) > 0):
            assert process.poll() is None, process.communicate()[1].decode()
            assert time.monotonic() < deadline, "the run never wrote an entry"
            time.sleep(0.005)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL
    done = _entries(manifest)
    assert 0 < done < len(files) + 20
    finish = subprocess.run([*command], capture_output=True, text=True, timeout=180)
    assert finish.returncode == 0, finish.stderr
    summary = json.loads(finish.stdout)
    assert summary["unchanged"] >= done and summary["added"] + summary["unchanged"] == len(files) + 20
    reference = index(
        tmp_path / "local",
        sorted((tmp_path / "docs").iterdir()),
        None,
        make_chunker("markdown", max_size=320, unit="tokens"),
    )
    assert reference.failed == 0
    assert [r["id"] for r in rows(db)] == [r["id"] for r in rows(tmp_path / "local")]
    # a file that cannot be read is a failed document: the command says so and exits 3, as a local run does
    (tmp_path / "docs" / "zz-broken.txt").write_bytes(b"\xff\xfe\x00\xd8")
    broken = subprocess.run([*command], capture_output=True, text=True, timeout=180)
    assert broken.returncode == 3, broken.stderr
    assert "zz-broken.txt" in broken.stderr and json.loads(broken.stdout)["failed"] == 1


def test_gpus_the_cluster_does_not_have_are_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="asks for 1 GPU"):
        RayEngine(num_gpus=1).prepare()  # this Ray has CPUs only: the actors would wait forever
    files = write_corpus(tmp_path / "docs")
    address = ray.get_runtime_context().gcs_address
    command = [sys.executable, "-m", "kireme.cli", "index", str(files[0]), "--db", str(tmp_path / "db")]
    command += ["--embedder", EMBEDDER, "--engine", "ray", "--ray-address", address, "--ray-gpus", "0.5"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "drop --ray-gpus" in run.stderr
    assert not (tmp_path / "db").exists()


def _entries(manifest: Path) -> int:
    import sqlite3

    try:
        con = sqlite3.connect(manifest, timeout=5)
        try:
            return int(con.execute("SELECT count(*) FROM documents").fetchone()[0])
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


def test_chunk_dataset_and_embed_dataset_work_inside_a_ray_pipeline(tmp_path: Path) -> None:
    files = write_corpus(tmp_path / "docs")[:-1]
    ds = ray.data.from_items([{"path": str(p)} for p in files])
    chunks = chunk_dataset(ds, "markdown", max_size=160)
    vectors = embed_dataset(chunks, EMBEDDER, concurrency=1).take_all()
    expected = [
        c for p in files for c in make_chunker("markdown", max_size=160).chunk(__import__("kireme").load(p))
    ]
    assert sorted(r["id"] for r in vectors) == sorted(c.id for c in expected)
    by_id = {c.id: c for c in expected}
    hashed = HashedNgramEmbedder(64)
    for row in vectors[:5]:
        chunk = by_id[row["id"]]
        assert row["text"] == chunk.text and json.loads(row["metadata"]) == dict(chunk.metadata)
        assert np.allclose(row["vector"], hashed.embed([chunk.embed_text])[0], atol=1e-5)
    texts = ray.data.from_items([{"text": "雨の日は在宅勤務とする。", "id": "memo"}])
    (row,) = chunk_dataset(texts, "sentence", text_column="text", max_size=50).take_all()
    assert (row["doc_id"], row["text"]) == ("memo", "雨の日は在宅勤務とする。")
    from kireme.errors import ConfigError

    with pytest.raises(ConfigError, match="no column 'body'"):
        embed_dataset(texts, EMBEDDER, column="body")
