"""Filters are exact in every store (issue #30): a filter on a name returns exactly that document's chunks.

Names are drawn with what each store's filter language could get wrong: quotes ``'`` and ``"``,
backslashes (an escape in Milvus expressions, not in Lance SQL), ``%`` and ``_`` (LIKE patterns), ``*``,
``?`` and brackets (globs), line breaks and tabs, SQL (``' OR 1=1 --``), Japanese, emoji, and the
surrogate escapes of file names that are not UTF-8 (``"\\udcff"``, stored through `kireme.index.names`).
Beside them sit decoys that differ by one escaped character (``O'Reilly.md``, ``O''Reilly.md``,
``O\\'Reilly.md``, ``O\\\\'Reilly.md``): a store that unescapes once too often or too rarely finds the
wrong one. Every store (memory, LanceDB, Chroma, Milvus through milvus-lite, Qdrant in local mode) is
checked against the reference semantics (`kireme.index.store.matches`) on ``doc_id``, ``source`` and
``title``, alone and with ``format`` (Chroma's ``$and``), in ``chunks`` (keyword search reads rows this
way) and ``search`` (dense), and ``delete_documents`` must remove exactly the named documents. Each
store is opened once per module; the decoys stay in it while hypothesis adds and removes its names.

Then the command line: ``kireme index`` a folder of such file names into LanceDB and Chroma, and
``kireme search --filter source=…`` in each mode finds exactly that file; a filter that names no
document (a bare file name for ``docs/O'Reilly.md``) says so on stderr, with the name meant.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from kireme.cli import cli
from kireme.index.memory import MemoryStore
from kireme.index.store import StoredChunk, VectorStore, matches

DIM = 8
EXTRAS = {
    "memory": (),
    "lancedb": ("lancedb",),
    "chroma": ("chromadb",),
    "milvus": ("pymilvus", "milvus_lite"),
    "qdrant": ("qdrant_client",),
}
DECOYS = [
    "O'Reilly.md",
    "O''Reilly.md",
    "O\\'Reilly.md",
    "O\\\\'Reilly.md",
    "O\\''Reilly.md",
    'O"Reilly.md',
    'O\\"Reilly.md',
    "back\\slash.md",
    "back\\\\slash.md",
    "back/slash.md",
    "trailing\\",
    "50%_off.md",
    "50%25_off.md",
    "50_%off.md",
    "5_%_off.md",
    "star*.md",
    "star?.md",
    "[ab].md",
    "a\nb.md",
    "a\\nb.md",
    "a\tb.md",
    "a\\tb.md",
    "' OR 1=1 --",
    "x' OR '1'='1",
    '" or ""="',
    "DROP TABLE chunks;",
    "規程.md",
    "規程 .md",
    "😀.md",
    "bad\udcff.md",
    "bad%FF.md",
    "\ufffebad%FF.md",
    "high\ud800.md",
    " lead.md",
    "lead.md",
    "trail.md ",
    "$and",
    '{"$ne": 1}',
    "x" * 2000,
]
PIECES = [
    "'",
    "''",
    '"',
    "\\",
    "\\\\",
    "\\'",
    '\\"',
    "%",
    "_",
    "*",
    "?",
    "[",
    "]",
    "{",
    "}",
    "$",
    "\n",
    "\r",
    "\t",
    "\x00",
    " ",
    "' OR 1=1 --",
    "DROP TABLE chunks;",
    " AND ",
    "==",
    "規程",
    "出張旅費",
    "😀",
    "\udcff",
    "\udc80",
    "\ud800",
    "\ufffe",
    "%FF",
    "%25",
    "\\u0041",
    "\\x41",
    "é",
    "e\u0301",
]
NAMES = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(st.characters(codec="utf-8"), min_size=1, max_size=4)),
    min_size=1,
    max_size=6,
).map("".join)
FIELDS = ("doc_id", "source", "title")


# -- stores ----------------------------------------------------------------------------------------------


def open_kind(kind: str, folder: Path) -> VectorStore:
    if kind == "memory":
        return MemoryStore()
    if kind == "lancedb":
        from kireme.index.lancedb_store import LanceDBStore

        return LanceDBStore(folder / "lancedb")
    if kind == "chroma":
        from kireme.index.chroma_store import ChromaStore

        return ChromaStore(folder / "chroma")
    if kind == "milvus":
        from kireme.index.milvus_store import MilvusStore

        return MilvusStore(folder / "milvus")
    from kireme.index.qdrant_store import QdrantStore

    return QdrantStore(folder / "qdrant")


class Loaded:
    """A store, the rows it must hold (the reference), and a query vector."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store
        self.rows: dict[str, StoredChunk] = {}
        self.vectors: dict[str, np.ndarray] = {}
        self.rng = np.random.default_rng(30)
        self.serial = itertools.count()

    def documents(self, names: list[str], tag: str) -> list[StoredChunk]:
        """Two chunks per name; ``source`` and ``title`` rotate through the names, so each field of a row
        holds another name than its ``doc_id`` (a store filtering on the wrong column is caught)."""
        chunks = []
        for i, name in enumerate(names):
            for index in range(2):
                chunks.append(
                    StoredChunk(
                        id=f"{tag}-{next(self.serial)}",
                        doc_id=name,
                        index=index,
                        start=index * 10,
                        end=index * 10 + 10,
                        text=f"text {i} {index}",
                        embed_text=f"passage: text {i} {index}",
                        headings=(names[(i + 3) % len(names)],),
                        title=names[(i + 2) % len(names)],
                        source=names[(i + 1) % len(names)],
                        format=("markdown", "text")[i % 2],
                    )
                )
        return chunks

    def add(self, chunks: list[StoredChunk]) -> None:
        vectors = self.rng.normal(size=(len(chunks), DIM)).astype(np.float32) + 0.5  # never a zero row
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        self.store.add(chunks, vectors)
        for chunk, vector in zip(chunks, vectors, strict=True):
            self.rows[chunk.id] = chunk
            self.vectors[chunk.id] = vector

    def delete(self, doc_ids: list[str]) -> None:
        self.store.delete_documents(doc_ids)
        for id_ in [i for i, c in self.rows.items() if c.doc_id in doc_ids]:
            del self.rows[id_]
            del self.vectors[id_]
        assert self.store.doc_counts() == _counts(self.rows.values()), f"delete_documents({doc_ids!r})"

    def check(self, where: dict[str, str]) -> None:
        expected = {c.id for c in self.rows.values() if matches(c, where)}
        assert {c.id for c in self.store.chunks(where)} == expected, f"chunks({where!r})"
        k = max(1, 2 * len(expected))
        query = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
        hits = self.store.search(query, k, where)
        assert {h.chunk.id for h in hits} == expected, f"search({where!r})"
        for hit in hits:  # the row comes back as it was written (names decoded)
            assert hit.chunk == self.rows[hit.chunk.id]

    def check_name(self, name: str) -> None:
        for field in FIELDS:
            self.check({field: name})
        self.check({"source": name, "format": "markdown"})
        self.check({"doc_id": name, "title": name})  # rows whose two fields differ: none must come back


def _counts(rows: Iterable[StoredChunk]) -> dict[str, int]:
    return dict(Counter(row.doc_id for row in rows))


@pytest.fixture(scope="module", params=list(EXTRAS))
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    for module in EXTRAS[request.param]:
        pytest.importorskip(module, reason=f"the {request.param} extra is not installed")
    store = open_kind(request.param, tmp_path_factory.mktemp(request.param))
    loaded = Loaded(store)
    loaded.add(loaded.documents(DECOYS, "decoy"))
    yield loaded
    store.close()


# -- the properties ----------------------------------------------------------------------------------------


def test_decoys_each_filter_finds_exactly_its_rows(loaded: Loaded) -> None:
    for name in DECOYS:
        loaded.check_name(name)
    loaded.check({"format": "text"})
    loaded.check({"source": "O'Reilly"})  # a prefix is not a match
    loaded.check({"source": "%"})


def test_delete_documents_removes_exactly_the_named(loaded: Loaded) -> None:
    """Re-ingesting a changed file deletes its rows, then adds them again: no other document is touched,
    however close its name, and nothing is left twice."""
    for name in [
        "O'Reilly.md",
        "O\\'Reilly.md",
        "back\\slash.md",
        "50%_off.md",
        "bad\udcff.md",
        "' OR 1=1 --",
    ]:
        again = [c for c in loaded.rows.values() if c.doc_id == name]
        loaded.delete([name])
        for near in DECOYS:
            loaded.check({"doc_id": near})
        loaded.add(again)
        loaded.check({"doc_id": name})
    assert loaded.store.doc_counts() == _counts(loaded.rows.values())


# No shrinking: a failure names the exact filter that went wrong (``chunks({'source': …})``), and shrinking
# would re-run the store for minutes.
@settings(
    max_examples=6,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(names=st.lists(NAMES, min_size=1, max_size=20, unique=True))
# a high and a low surrogate side by side: JSON text would read them back as one character (U+10080)
@example(names=["\ud800\udc80+T", "a\udbff\udfff"])
def test_any_name_filters_exactly(loaded: Loaded, names: list[str]) -> None:
    names = [n for n in names if n not in DECOYS]
    if not names:
        return
    loaded.add(loaded.documents(names, "drawn"))
    try:
        for name in names:
            loaded.check_name(name)
        for name in DECOYS[:4]:  # the decoys are still found exactly among the drawn names
            loaded.check_name(name)
    finally:
        loaded.delete(names)  # exactly these: every decoy keeps its rows


# -- the command line --------------------------------------------------------------------------------------

CLI_NAMES = ["O'Reilly.md", "O''Reilly.md", "back\\slash.md", "50%_off.md", 'say "hi".md', "規程 'a'.md"]


def write_files(folder: Path) -> list[str]:
    """The files that this file system accepts (each with its own word), as ``source`` will name them."""
    folder.mkdir()
    written = []
    for i, name in enumerate(CLI_NAMES):
        try:
            (folder / name).write_text(f"# Note {i}\n\nApples and pears, word{i} here.\n", encoding="utf-8")
        except OSError:
            continue
        written.append(f"{folder.name}/{name}")
    return written


@pytest.mark.parametrize("store", ["lancedb", "chroma"])
def test_cli_filter_on_quoted_names(tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if store == "chroma":
        pytest.importorskip("chromadb", reason="the chroma extra is not installed")
    monkeypatch.chdir(tmp_path)
    sources = write_files(tmp_path / "docs")
    runner = CliRunner()
    made = runner.invoke(
        cli, ["index", "docs", "--db", "db", "--store", store, "--embedder", "hash", "--quiet"]
    )
    assert made.exit_code == 0, made.output
    for source in sources:
        for mode in ("bm25", "dense", "hybrid"):
            args = ["search", "apples pears", "--db", "db", "--mode", mode, "-k", "20", "--format", "jsonl"]
            result = runner.invoke(cli, [*args, "--filter", f"source={source}"])
            assert result.exit_code == 0, result.output
            rows = [json.loads(line) for line in result.stdout.splitlines()]
            assert rows, f"{mode}: nothing for source={source!r}: {result.stderr}"
            assert {row["source"] for row in rows} == {source}, mode
            assert result.stderr == ""
    # a bare file name is not the path that was indexed: nothing matches, and stderr says what was meant
    bare = runner.invoke(cli, ["search", "apples", "--db", "db", "--filter", "source=O'Reilly.md"])
    assert bare.exit_code == 0 and bare.stdout == ""
    assert bare.stderr.splitlines() == [
        "kireme: no chunk matched",
        "kireme: no document has source=O'Reilly.md; did you mean docs/O'Reilly.md?",
    ]
    spaced = runner.invoke(cli, ["search", "apples", "--db", "db", "--filter", "path = docs/O'Reilly.md"])
    assert spaced.exit_code == 0 and spaced.stdout == ""
    assert "did you mean docs/O'Reilly.md?" in spaced.stderr
    # a value some chunk has, with a query no chunk matches: only the usual line
    missed = runner.invoke(
        cli, ["search", "zzzz", "--db", "db", "--mode", "bm25", "--filter", f"source={sources[0]}"]
    )
    assert missed.exit_code == 0 and missed.stderr == "kireme: no chunk matched\n"
    no_title = runner.invoke(cli, ["search", "apples", "--db", "db", "--filter", "title=O'Reilly"])
    assert "kireme: no chunk has title=O'Reilly (filters match whole values exactly)" in no_title.stderr
    budget = runner.invoke(
        cli, ["search", "apples", "--db", "db", "--budget", "200", "--filter", "path=x'.md"]
    )
    assert budget.exit_code == 0
    assert budget.stderr.splitlines()[-1].startswith("kireme: no document has source=x'.md")


def test_a_heading_no_chunk_has_is_said_with_the_headings_meant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--filter heading=第3章`` (the heading is ``第3章 精算``) answered only "no chunk matched", where a
    source or title no document has gets a second line: a heading matches whole; the ones holding the
    value are offered."""
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "rules.md").write_text(
        "# 出張旅費規程\n\n## 第2章 宿泊\n\n宿泊費は実費とする。\n\n## 第3章 精算\n\n精算は帰着後十四日以内に行う。\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    made = runner.invoke(cli, ["index", "docs", "--db", "db", "--embedder", "hash", "--quiet"])
    assert made.exit_code == 0, made.output
    for value in ("第3章", "精算"):
        result = runner.invoke(cli, ["search", "精算", "--db", "db", "--filter", f"heading={value}"])
        assert result.exit_code == 0 and result.stdout == ""
        assert result.stderr.splitlines() == [
            "kireme: no chunk matched",
            f"kireme: no chunk has heading={value} (a heading matches whole); did you mean 第3章 精算?",
        ]
    found = runner.invoke(
        cli, ["search", "精算", "--db", "db", "--filter", "heading=第3章 精算", "--format", "jsonl"]
    )
    assert found.exit_code == 0 and found.stdout and found.stderr == ""


def test_filter_values_are_not_stripped() -> None:
    """A file name may begin or end with a space: the value after ``=`` is kept whole (the key is stripped)."""
    from kireme.index.search import parse_filters

    assert parse_filters([" source = a.md ", "title=O'Reilly"]) == {"source": " a.md ", "title": "O'Reilly"}
    assert parse_filters(["path=a=b.md"]) == {"source": "a=b.md"}
