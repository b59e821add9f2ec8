"""Many files: `kireme.iter_chunks` streams them one document at a time, and ``--jobs N`` (worker
processes, `kireme.parallel`) gives exactly what one process gives: the same chunks, ids, order,
messages and exit codes, for ``kireme chunk`` and for the rows ``kireme index`` stores."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import kireme
from kireme import Document, iter_chunks, load
from kireme.cli import cli, progress
from kireme.embed.fake import KeywordEmbedder
from kireme.errors import ConfigError, KiremeError, LoadError
from kireme.load import iter_paths
from kireme.parallel import AUTO_MIN_BYTES, choose_jobs, ordered_map, usable_cores
from kireme.strategies import make_chunker
from kireme.stream import Chunked, iter_chunked, run_tasks

TRAVEL = (
    "出張の旅費は規程に従って精算する。宿泊費は一泊一万二千円を上限とする。\n\n"
    "日帰り出張の日当は二千円とし、半日未満の場合は支給しない。領収書は原本を経理部へ送る。\n\n"
    "海外出張では、現地の交通費を実費で精算する。為替は出発日の公示相場を使う。\n"
)
LEAVE = (
    "Annual leave is twenty days a year. Unused days carry over once, then expire.\n\n"
    "A sick day needs no certificate for the first two days. After that, the team lead asks for one.\n\n"
    "Parental leave is arranged with the personnel office at least a month ahead.\n"
)
MEETING = (
    "# 定例会議\n\n次回の予算案は来週の月曜日までに提出する。\n\n"
    "## 決定事項\n\n出張申請は三日前までに上長の承認を得る。会議室の予約は総務が行う。\n\n"
    "## Action items\n\nThe finance team updates the travel form. 総務は備品の一覧を更新する。\n"
)
CANTEEN_HTML = (  # the <body> is never closed: the loader logs a warning
    "<html><head><title>社内案内</title></head><body><h1>食堂</h1>"
    "<p>社員食堂は十二時から開く。味噌ラーメンが一番人気だ。</p><p>The canteen closes at two.</p>\n"
)


def write_corpus(folder: Path) -> list[Path]:
    """Six small files in sorted order: Japanese, English, Markdown, CP932, a broken one, HTML."""
    folder.mkdir()
    files = {
        "a_旅費.txt": TRAVEL.encode("utf-8"),
        "b_leave.txt": LEAVE.encode("utf-8"),
        "c_会議.md": MEETING.encode("utf-8"),
        "d_古い規程.txt": ("第1条（目的）\r\nこの規程は備品の貸出を定める。\r\n\r\n" + TRAVEL).encode(
            "cp932"
        ),
        "e_壊れた.txt": b"\x00\x01\x02binary\x00",
        "f_食堂.html": CANTEEN_HTML.encode("utf-8"),
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return sorted(folder.iterdir())


@pytest.fixture()
def corpus(tmp_path: Path) -> list[Path]:
    return write_corpus(tmp_path / "docs")


def good(files: list[Path]) -> list[Path]:
    return [p for p in files if "壊れた" not in p.name]


# ---------------------------------------------------------------------------------------- iter_chunks


def test_a_folder_streams_the_chunks_of_each_file_in_order(corpus: list[Path]) -> None:
    chunker = make_chunker("sentence", max_size=60)
    expected = [c for p in good(corpus) for c in chunker.chunk(load(p))]
    folder = corpus[0].parent
    assert list(iter_chunks(folder, "sentence", max_size=60, errors="skip")) == expected
    assert list(iter_chunks(str(folder), chunker=chunker, errors="skip")) == expected
    # files, folders and documents mixed, in any iterable
    doc = Document("今日は晴れ。明日は雨。", id="memo")
    mixed = list(iter_chunks(iter([corpus[0], doc, str(corpus[1])]), "sentence", max_size=60))
    assert mixed == chunker.chunk(load(corpus[0])) + chunker.chunk(doc) + chunker.chunk(load(corpus[1]))
    assert kireme.iter_chunks is iter_chunks and "iter_chunks" in kireme.__all__


def test_it_is_lazy_a_file_is_read_only_when_its_turn_comes(
    corpus: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded: list[str] = []

    def recording_load(path: Path, *args: Any, **kwargs: Any) -> Document:
        loaded.append(path.name)
        return load(path, *args, **kwargs)

    monkeypatch.setattr("kireme.stream.load", recording_load)
    given: list[Path] = []

    def sources() -> Iterator[Path]:
        for path in good(corpus):
            given.append(path)
            yield path

    stream = iter_chunks(sources(), "sentence", max_size=40)
    first = next(stream)
    assert first.doc_id == corpus[0].as_posix()
    assert loaded == [corpus[0].name] and given == [corpus[0]]  # the second file not even asked for
    rest = list(stream)
    assert loaded == [p.name for p in good(corpus)] and rest[-1].doc_id == corpus[-1].as_posix()


def test_errors_raise_in_turn_or_are_skipped_with_a_warning(
    corpus: list[Path], caplog: pytest.LogCaptureFixture
) -> None:
    missing = corpus[0].parent / "ない.txt"
    sources = [corpus[0], missing, corpus[1]]
    stream = iter_chunks(sources, "paragraph", max_size=200)
    before = []
    with pytest.raises(LoadError, match=r"ない\.txt: no such file"):
        for chunk in stream:
            before.append(chunk)
    assert {c.doc_id for c in before} == {corpus[0].as_posix()}  # the first file's chunks came first

    with caplog.at_level(logging.WARNING, logger="kireme.stream"):
        kept = list(iter_chunks([*sources, corpus[4]], "paragraph", max_size=200, errors="skip"))
    assert [c.doc_id for c in kept if c.index == 0] == [corpus[0].as_posix(), corpus[1].as_posix()]
    skipped = [r.getMessage() for r in caplog.records if r.name == "kireme.stream"]
    assert skipped == [
        f"skipped {missing.as_posix()}: no such file",
        f"skipped {corpus[4].as_posix()}: binary file (contains NUL bytes)",
    ]


def test_mistakes_are_clear_errors(corpus: list[Path]) -> None:
    # options are checked at the call, before anything is read
    with pytest.raises(ConfigError, match="errors must be 'raise' or 'skip'"):
        iter_chunks(corpus[0], errors="ignore")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="jobs must be a positive integer"):
        iter_chunks(corpus[0], jobs=0)
    with pytest.raises(ConfigError, match="either a chunker or chunking options"):
        iter_chunks(corpus[0], chunker=make_chunker(), max_size=10)
    with pytest.raises(ConfigError, match="unknown strategy 'sentences'"):
        iter_chunks(corpus[0], "sentences")
    with pytest.raises(ConfigError, match=r"wrap a text in kireme.Document\(text\)"):
        next(iter_chunks("第1条 目的。\n第2条 範囲。"))
    with pytest.raises(TypeError, match="not int"):
        list(iter_chunks([corpus[0], 42]))  # type: ignore[list-item]
    assert list(iter_chunks([])) == []


# ------------------------------------------------------------------------------------ worker processes


def outcomes(files: list[Path], jobs: int, **options: Any) -> list[tuple[Any, ...]]:
    chunker = make_chunker(**options)
    return [
        (o.source, str(o.error), o.chunks, o.document.id if o.document else None)
        for o in iter_chunked(files, chunker, jobs=jobs)
    ]


@pytest.mark.parametrize(
    "options",
    [
        {"strategy": "recursive", "max_size": 50, "overlap": 8},
        {"strategy": "markdown", "max_size": 40, "unit": "tokens", "context": "headings"},
        {"strategy": "semantic", "similarity": "bigram", "max_size": 80},  # no model: chunked in workers
    ],
    ids=lambda o: o["strategy"],
)
def test_two_workers_give_what_one_process_gives(corpus: list[Path], options: dict[str, Any]) -> None:
    files = [*corpus, corpus[0].parent / "ない.txt", *corpus[:2]]  # a missing file; files given twice
    serial = outcomes(files, 1, **options)
    assert [s[1] for s in serial].count("None") == len(files) - 2  # two failures, in their place
    assert outcomes(files, 2, **options) == serial


def test_worker_warnings_are_logged_here_in_order(
    corpus: list[Path], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        chunks = list(iter_chunks(good(corpus), "recursive", max_size=80, jobs=2))
    assert chunks == list(iter_chunks(good(corpus), "recursive", max_size=80))
    warned = [r for r in caplog.records if "not well-formed" in r.getMessage()]
    assert len(warned) == 2 and warned[0].name == "kireme.load.html"  # once from each run
    assert warned[0].getMessage().startswith(corpus[5].as_posix())


def test_a_chunker_that_embeds_chunks_in_this_process(corpus: list[Path]) -> None:
    embedder = KeywordEmbedder({"travel": ["出張", "旅費"], "food": ["食堂", "ラーメン"]})
    chunker = make_chunker("semantic", similarity=embedder, max_size=100, cache_dir=False)
    assert chunker.embeds and not make_chunker("semantic", similarity="bigram").embeds
    assert not make_chunker("recursive").embeds
    parallel = list(iter_chunks(good(corpus), chunker=chunker, jobs=2))
    assert embedder.calls > 0  # the embedder of this process did the work: nothing was sent away
    assert parallel == list(iter_chunks(good(corpus), chunker=chunker))


def test_ordered_map_keeps_order_and_raises_in_turn() -> None:
    words = ["出張", "a", "旅費規程", "bb", "x" * 50, "", "精算"] * 5
    assert list(ordered_map(len, words, jobs=2, batch_items=3)) == [len(w) for w in words]
    got: list[int] = []
    with pytest.raises(ValueError, match="invalid literal"):
        for value in ordered_map(int, ["1", "2", "x", "4"], jobs=2, batch_items=1):
            got.append(value)
    assert got == [1, 2]
    early = ordered_map(int, (str(i) for i in range(10_000)), jobs=2)
    assert next(early) == 0
    early.close()  # stops the workers; the rest is never computed


def test_choose_jobs() -> None:
    assert choose_jobs(None, []) == choose_jobs(None, [10 << 20]) == choose_jobs(8, [10 << 20]) == 1
    assert choose_jobs(None, [1000] * 50) == 1  # small input: no pool for the default
    assert choose_jobs(3, [1000] * 50) == 3  # asked for: honoured
    assert choose_jobs(8, [1000] * 2) == 2  # at most one per file
    assert choose_jobs(None, [AUTO_MIN_BYTES] * 64) == min(usable_cores(), 64) >= 1
    assert choose_jobs(None, [AUTO_MIN_BYTES // 2] * 64) == min(usable_cores(), 32)  # a worker per MiB


# ------------------------------------------------------------------------------------------ the CLI


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "kireme.cli", *args], input=stdin, capture_output=True, timeout=120
    )


@pytest.mark.slow
def test_kireme_chunk_jobs_2_writes_what_jobs_1_writes(corpus: list[Path]) -> None:
    folder = str(corpus[0].parent)
    args = ("chunk", folder, str(corpus[0].parent / "ない.txt"), "--strategy", "markdown", "--max-size", "60")
    one, two = run(*args, "--jobs", "1"), run(*args, "--jobs", "2")
    assert one.returncode == two.returncode == 2  # the missing path is a usage error, the rest still runs
    assert two.stdout == one.stdout and two.stderr == one.stderr
    rows = [json.loads(line) for line in one.stdout.decode().splitlines()]
    assert {r["doc_id"] for r in rows} == {p.as_posix() for p in good(corpus)}
    errors = [line for line in one.stderr.decode().splitlines() if line.startswith("kireme")]
    assert errors == [
        f"kireme: error: {corpus[0].parent.as_posix()}/ない.txt: no such file or directory",
        f"kireme: error: {corpus[4].as_posix()}: binary file (contains NUL bytes)",
        f"kireme: {corpus[5].as_posix()}: HTML is not well-formed (unclosed <body>); parsed leniently",
    ]
    # standard input among the files: read in its turn, in this process
    with_stdin = run("chunk", str(corpus[0]), "-", "--jobs", "2", "--max-size", "60", stdin=LEAVE.encode())
    assert with_stdin.returncode == 0
    assert [json.loads(line)["doc_id"] for line in with_stdin.stdout.decode().splitlines()][-1] == "<stdin>"


def test_progress_still_counts_files_with_workers(
    corpus: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "terminal_override", True)
    files = [str(p) for p in good(corpus)]
    result = CliRunner().invoke(
        cli, ["chunk", *files, "--jobs", "2", "--format", "jsonl"], catch_exceptions=False
    )
    assert result.exit_code == 0
    assert "chunking" in result.stderr and f"{len(files)}/{len(files)} files" in result.stderr
    assert len(result.stdout.splitlines()) == len(list(iter_chunks(files)))


def test_kireme_index_jobs_2_stores_what_jobs_1_stores(
    corpus: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kireme.index.ingest
    from kireme.embed.hashed import HashedNgramEmbedder
    from kireme.index.manifest import Manifest
    from kireme.index.store import open_store

    pools: list[int] = []

    def spy(*args: Any, jobs: int, **kwargs: Any) -> Iterator[Chunked]:
        pools.append(jobs)
        return run_tasks(*args, jobs=jobs, **kwargs)

    monkeypatch.setattr(kireme.index.ingest, "run_tasks", spy)

    def index(db: Path, jobs: str) -> tuple[int, dict[str, Any], list[str]]:
        args = ["index", str(corpus[0].parent), "--db", str(db), "--embedder", "hash:64", "--format", "json"]
        result = CliRunner().invoke(cli, [*args, "--max-size", "60", "--jobs", jobs], catch_exceptions=False)
        errors = [line for line in result.stderr.splitlines() if line.startswith("kireme")]
        return result.exit_code, json.loads(result.stdout), errors

    probe = HashedNgramEmbedder(64).embed(["出張の宿泊費"], "query")[0]

    def stored(db: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        manifest = Manifest(db / "manifest.sqlite")
        try:
            entries = {k: (e.content_hash, e.config_hash, e.chunks) for k, e in manifest.documents().items()}
            kind, info = manifest.get_meta("store"), manifest.get_meta("embedder")
        finally:
            manifest.close()
        store = open_store(kind, db, info)
        try:
            rows = sorted((c.to_dict() for c in store.chunks()), key=lambda r: r["id"])
            hits = [(h.chunk.id, round(h.score, 5)) for h in store.search(probe, 10)]  # the same vectors
        finally:
            store.close()
        return rows, {"entries": entries, "hits": hits}

    one = index(tmp_path / "one", "1")
    two = index(tmp_path / "two", "2")
    assert one[0] == two[0] == 3  # the broken file: a partial failure, reported the same way
    assert two == one and one[1]["added"] == len(good(corpus))
    assert one[2] == [f"kireme: error: {corpus[4].as_posix()}: binary file (contains NUL bytes)"]
    assert stored(tmp_path / "two") == stored(tmp_path / "one")
    assert pools == [2]  # --jobs 1 used no pool; --jobs 2 used one
    again = index(tmp_path / "two", "2")  # unchanged files are not even sent to a worker
    assert (again[1]["unchanged"], again[1]["texts_embedded"], again[1]["chunks_written"]) == (5, 0, 0)
    assert pools == [2]  # only the broken file (no entry) was read again: one file, no pool


def test_jobs_is_in_the_help_of_chunk_and_index() -> None:
    for command in ("chunk", "index"):
        result = CliRunner().invoke(cli, [command, "--help"])
        shown = " ".join(result.output.split())
        assert "--jobs N" in shown and "number of usable cores" in shown, command
    assert "Embedding and writing stay in this process" in " ".join(
        CliRunner().invoke(cli, ["index", "--help"]).output.split()
    )


def test_a_worker_that_dies_is_a_clear_error() -> None:
    with pytest.raises(KiremeError, match="worker process stopped abruptly"):
        list(ordered_map(_exit_now, [1, 2, 3], jobs=2, batch_items=1))


def _exit_now(item: int) -> int:
    import os

    os._exit(9)  # what an out-of-memory kill looks like to the pool


def test_outcomes_name_their_source(corpus: list[Path]) -> None:
    found = list(iter_chunked(corpus[4:6], make_chunker()))
    assert [o.source for o in found] == [p.as_posix() for p in corpus[4:6]]
    assert isinstance(found[0], Chunked) and found[0].document is None and found[1].chunks
    assert list(iter_paths(corpus[0].parent)) == corpus
