"""``kireme index --store-uri``: the LanceDB table somewhere else than the index directory — a shared
folder, or object storage (S3 here, served by moto on 127.0.0.1: the same protocol, no network).

The index directory keeps the manifest, the keyword index and the caches, and records the URI, so
search, ask and check need no option. Re-runs, edits, a re-embed (the replaced table is dropped from
the bucket) and the mistakes (another URI, chroma) are checked through the command line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from kireme.cli import cli
from kireme.index.check import _writable
from kireme.index.search import Searcher

BUCKET = "kireme-test"
RULES = {
    "travel.md": "# 出張旅費規程\n\n## 第3条 宿泊費\n\n宿泊費の上限は一泊12,000円とする。\n\n## 第4条 日当\n\n日当は2,000円とする。\n",
    "leave.md": "# Leave policy\n\n## Annual leave\n\nStaff earn 20 days of paid leave a year.\n",
}


def write_docs(root: Path) -> Path:
    root.mkdir()
    for name, text in RULES.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def hits(db: Path, query: str) -> list[dict[str, object]]:
    code, out = run("search", query, "--db", str(db), "--format", "jsonl", "-k", "2")
    assert code == 0, out
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_a_shared_folder_holds_the_table_and_the_index_directory_the_rest(tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs")
    db, shared = tmp_path / "db", tmp_path / "shared" / "kireme"
    base = ["--db", str(db), "--embedder", "hash:64", "--quiet"]
    code, out = run("index", str(docs), *base, "--store-uri", str(shared))
    assert code == 0, out
    assert (shared / "lancedb" / "chunks.lance").is_dir() and not (db / "lancedb").exists()
    assert (db / "manifest.sqlite").is_file()
    assert "12,000円" in str(hits(db, "宿泊費の上限")[0]["text"])
    code, out = run("index", str(docs), *base)  # the URI comes from the index
    assert code == 0 and "0 chunks written" in out
    code, out = run("check", "--db", str(db))
    assert code == 0 and f"kept in {shared / 'lancedb'}" in out, out
    code, out = run("index", str(docs), *base, "--store-uri", str(tmp_path / "elsewhere"))
    assert code == 2 and "keeps its store under" in out
    code, out = run(
        "index", str(docs), "--db", str(tmp_path / "db2"), "--store", "chroma", "--store-uri", str(shared)
    )
    assert code == 2 and "needs the lancedb store" in out


@pytest.fixture()
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A bucket on a moto S3 server on 127.0.0.1, with the variables LanceDB and boto3 read."""
    pytest.importorskip("moto", reason="the S3 test needs moto (the dev extra)")
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for key, value in {
        "AWS_ACCESS_KEY_ID": "kireme",
        "AWS_SECRET_ACCESS_KEY": "kireme",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ENDPOINT": endpoint,
        "AWS_ALLOW_HTTP": "true",
    }.items():
        monkeypatch.setenv(key, value)
    for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    client = boto3.client("s3", endpoint_url=endpoint)
    client.create_bucket(Bucket=BUCKET)
    try:
        yield client
    finally:
        server.stop()


def keys(client: object, prefix: str) -> list[str]:
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix)  # type: ignore[attr-defined]
    return [item["Key"] for item in listed.get("Contents", [])]


def test_an_index_on_s3_is_written_searched_updated_checked_and_re_embedded(
    tmp_path: Path, s3: object
) -> None:
    docs = write_docs(tmp_path / "docs")
    db = tmp_path / "db"
    uri = f"s3://{BUCKET}/team/index"
    base = ["--db", str(db), "--embedder", "hash:64", "--quiet", "--format", "json"]
    code, out = run("index", str(docs), *base, "--store-uri", uri)
    assert code == 0, out
    first = json.loads(out.splitlines()[0])
    assert first["added"] == 2 and first["chunks_written"] > 0
    assert any(key.startswith("team/index/lancedb/chunks.lance/") for key in keys(s3, "team/index/"))
    assert not (db / "lancedb").exists()
    assert "12,000円" in str(hits(db, "宿泊費の上限")[0]["text"])

    code, out = run("index", str(docs), *base)
    assert code == 0 and json.loads(out.splitlines()[0])["chunks_written"] == 0  # nothing written again
    (docs / "leave.md").write_text(RULES["leave.md"].replace("20 days", "25 days"), encoding="utf-8")
    code, out = run("index", str(docs), *base)
    assert code == 0 and json.loads(out.splitlines()[0])["updated"] == 1
    assert "25 days" in str(hits(db, "paid leave days a year")[0]["text"])
    code, out = run("check", "--db", str(db))
    assert code == 0 and f"kept in {uri}/lancedb" in out, out
    code, out = run("index", str(docs), *base, "--optimize")  # 2 documents: too few rows, said not failed
    assert code == 0, out

    code, out = run("index", str(docs), "--db", str(db), "--embedder", "hash:32", "--reembed", "--quiet")
    assert code == 0, out
    assert keys(s3, "team/index/lancedb/") == []  # the replaced table is dropped from the bucket
    assert any(key.startswith("team/index/lancedb-") for key in keys(s3, "team/index/"))
    assert "12,000円" in str(hits(db, "宿泊費の上限")[0]["text"])
    searcher = Searcher(db)
    try:  # what `kireme check --repair` writes through: the same table, opened for writing
        assert searcher.location.startswith(f"{uri}/lancedb-")
        writable = _writable(searcher.store)
        assert (writable.path, writable.writable, writable.count()) == (
            searcher.location,
            True,
            searcher.store.count(),
        )
    finally:
        searcher.close()


def test_an_unreachable_bucket_is_one_line_naming_what_to_check(
    tmp_path: Path, s3: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = write_docs(tmp_path / "docs")
    db = tmp_path / "db"
    code, out = run(
        "index",
        str(docs),
        "--db",
        str(db),
        "--embedder",
        "hash:64",
        "--quiet",
        "--store-uri",
        f"s3://{BUCKET}/x",
    )
    assert code == 0, out
    for key in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT"):
        monkeypatch.setenv(key, "http://127.0.0.1:9")  # nothing listens there: refused at once
    code, out = run("search", "宿泊費", "--db", str(db))
    assert code == 1
    assert f"s3://{BUCKET}/x/lancedb cannot be reached or read" in out and "AWS_ENDPOINT_URL" in out
    assert "Traceback" not in out
