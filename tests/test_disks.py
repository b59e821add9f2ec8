"""A full or read-only disk is said as such, never as damage, and a reader needs neither space nor writes.

Real file systems, not mocks: a small tmpfs that ``kireme index`` fills part way, and a read-only bind
mount of a healthy index (a shared mount, a container volume). Both need root and a kernel that lets this
process mount (``CAP_SYS_ADMIN``); the tests skip with the reason elsewhere, and every mount is undone in
the fixture's teardown (``umount -l`` when a process still holds it).

For every store (LanceDB, Chroma; milvus-lite and Qdrant's local mode when their extras are installed):
``kireme index`` on a full disk stops with one line (exit 4) saying so and what was kept, the index
answers as before, and the same command completes once space is freed; a search that must rebuild the
BM25 cache on a full disk builds it in memory and answers; on a read-only mount, search (dense, BM25,
hybrid), ask and check answer as on the writable original, and ``kireme index`` says it is read-only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # every test runs `kireme` as subprocesses on a mounted file system

EXTRAS = {"lancedb": ("lancedb",), "chroma": ("chromadb",), "milvus": ("pymilvus", "milvus_lite")}
EXTRAS["qdrant"] = ("qdrant_client",)
MODES = ("dense", "bm25", "hybrid")
QUERIES = {
    "dense": "how many days of remote work",
    "bm25": "宿泊費の上限",
    "hybrid": "宿泊費の上限はいくらか",
}
EXIT_STORAGE = 4


# ------------------------------------------------------------------------------------------ mounts


def _mount(*args: str) -> None:
    """``mount ARGS``, or skip the test with mount's own words (no root, no CAP_SYS_ADMIN, no tmpfs)."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a file system needs root on Linux")
    done = subprocess.run(["mount", *args], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here: {done.stderr.decode(errors='replace').strip()}")


def _unmount(target: Path) -> None:
    if subprocess.run(["umount", str(target)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)  # a process still holds it


@pytest.fixture()
def small_disk(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """``small_disk("40m")``: a tmpfs of that size (unmounted at teardown)."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        target = tmp_path / f"disk{len(mounted)}"
        target.mkdir()
        _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target))
        mounted.append(target)
        return target

    try:
        yield mount
    finally:
        for target in reversed(mounted):
            _unmount(target)


@pytest.fixture()
def read_only_view(tmp_path: Path) -> Iterator[Callable[[Path], Path]]:
    """``read_only_view(folder)``: the same folder, bind-mounted read-only (unmounted at teardown)."""
    mounted: list[Path] = []

    def mount(source: Path) -> Path:
        target = tmp_path / f"ro{len(mounted)}"
        target.mkdir()
        _mount("--bind", str(source), str(target))
        mounted.append(target)
        done = subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot make a bind mount read-only here: {done.stderr.decode(errors='replace')}")
        return target

    try:
        yield mount
    finally:
        for target in reversed(mounted):
            _unmount(target)


def fill(disk: Path, leave: int) -> Path:
    """A file that leaves ``leave`` bytes free on ``disk`` (0: the disk is full)."""
    filler = disk / "filler.bin"
    stat = os.statvfs(disk)
    size = max(0, stat.f_bavail * stat.f_frsize - leave)
    with open(filler, "wb") as out:
        chunk = b"\0" * (1 << 20)
        while size > 0:
            try:
                size -= out.write(chunk[: min(size, len(chunk))])
            except OSError:  # full before the count (metadata blocks): full is what was asked for
                break
    return filler


def free_bytes(disk: Path) -> int:
    stat = os.statvfs(disk)
    return stat.f_bavail * stat.f_frsize


# ------------------------------------------------------------------------------------------ helpers


@pytest.fixture(params=list(EXTRAS))
def store(request: pytest.FixtureRequest) -> str:
    for module in EXTRAS[request.param]:
        pytest.importorskip(module, reason=f"the {request.param} extra is not installed")
    return str(request.param)


def write_docs(folder: Path, first: int, count: int) -> Path:
    """``count`` documents numbered from ``first``: Japanese travel rules and English work policies, each
    a few pages long (what fills a small disk part way)."""
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(first, first + count):
        if n % 2:
            clauses = "".join(
                f"第{j + 1}条 第{n}営業部の社員が出張する場合、宿泊費の上限は一泊{9000 + 500 * (j % 7)}円とし、"
                f"日当は{1500 + 100 * (j % 5)}円とする。旅費の精算は帰着後{j % 9 + 3}日以内に行う。\n"
                for j in range(60)
            )
            (folder / f"旅費規程{n:03}.md").write_text(f"# 旅費規程 第{n}版\n\n{clauses}", encoding="utf-8")
        else:
            rules = "".join(
                f"Rule {j + 1}. Staff of team {n} may work remotely up to {j % 4 + 1} days a week; laptops "
                f"are replaced every {j % 3 + 3} years and expense reports are due within {j % 6 + 5} days.\n"
                for j in range(60)
            )
            (folder / f"policy{n:03}.md").write_text(
                f"# Work policy, revision {n}\n\n{rules}", encoding="utf-8"
            )
    return folder


def kireme(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kireme.cli", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=300,
    )


def environment(tmp_path: Path) -> dict[str, str]:
    """No chat or embedding settings; caches and private copies (TMPDIR) where the test sees them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIREME_", "OPENAI_"))}
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env.update(KIREME_CACHE_DIR=str(tmp_path / "user-cache"), TMPDIR=str(tmp_path / "tmp"))
    return env


def errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("kireme: error:")]


def index(docs: Path, db: Path, env: dict[str, str], *more: str) -> subprocess.CompletedProcess[str]:
    return kireme("index", str(docs), *more, "--db", str(db), "--embedder", "hash", "--quiet", env=env)


def searches(
    db: Path, env: dict[str, str], modes: tuple[str, ...] = MODES, *, here: bool = False
) -> dict[str, str]:
    """A query per mode: the hits as ``kireme search --format jsonl`` prints them (``here``: run in this
    process, for the reference answers: faster than a subprocess)."""
    out = {}
    for mode in modes:
        args = ["search", QUERIES[mode], "--db", str(db), "--mode", mode, "-k", "3", "--format", "jsonl"]
        if here:
            from click.testing import CliRunner

            from kireme.cli import cli

            result = CliRunner().invoke(cli, args, env=env)
            assert result.exit_code == 0, (mode, result.output)
            out[mode] = result.stdout
            continue
        done = kireme(*args, env=env)
        assert done.returncode == 0, (mode, done.stderr)
        assert not errors(done.stderr) and "Traceback" not in done.stderr, done.stderr
        out[mode] = done.stdout
    return out


def check(db: Path, env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    done = kireme("check", "--db", str(db), "--format", "json", env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


# --------------------------------------------------------------------------------------- full disk


def test_an_index_update_that_fills_the_disk_is_one_line_and_keeps_the_index(
    small_disk: Callable[[str], Path], tmp_path: Path, store: str
) -> None:
    env = environment(tmp_path)
    first, more = write_docs(tmp_path / "docs", 0, 12), write_docs(tmp_path / "more", 100, 24)
    disk = small_disk("48m")
    db = disk / "index"
    done = index(first, db, env, "--store", store)
    assert done.returncode == 0, done.stderr
    before = searches(db, env, ("bm25", "hybrid"), here=True)
    filler = fill(disk, leave=300_000)

    done = kireme("index", str(first), str(more), "--db", str(db), "--embedder", "hash", "--quiet", env=env)
    assert done.returncode == EXIT_STORAGE, done.stderr
    assert "Traceback" not in done.stderr and "damaged" not in done.stderr, done.stderr
    (line,) = errors(done.stderr)
    assert "no space left on the device" in line and "free some space" in line, line
    assert "nothing was committed" in line or "committed by this run are kept" in line, line
    assert "rebuild" not in line, line

    assert searches(db, env, ("bm25", "hybrid")) == before  # the index answers as it did
    code, report = check(db, env)
    assert not report["needs_rebuild"], report
    if store == "lancedb":  # its writes are atomic: nothing of the failed batch is left
        assert code == 0 and report["healthy"], report
    else:  # at most the rows of the batch that failed, which the next run removes
        unclean = [f for f in report["findings"] if f["level"] != "ok"]
        assert all("no manifest entry" in f["detail"] for f in unclean), report

    filler.unlink()
    done = kireme("index", str(first), str(more), "--db", str(db), "--embedder", "hash", "--quiet", env=env)
    assert done.returncode == 0, done.stderr
    assert "36 document(s)" in done.stderr and "0 failed" in done.stderr, done.stderr
    code, report = check(db, env)
    assert code == 0 and report["healthy"], report
    found = kireme(
        "search", "team 102", "--db", str(db), "--mode", "bm25", "-k", "1", "--format", "jsonl", env=env
    )
    assert json.loads(found.stdout)["doc_id"].endswith("policy102.md"), found.stdout  # the new ones are in


@pytest.mark.parametrize("kind", ["lancedb", "chroma"])
def test_a_search_on_a_full_disk_builds_bm25_in_memory_and_answers(
    small_disk: Callable[[str], Path], tmp_path: Path, kind: str
) -> None:
    for module in EXTRAS[kind]:
        pytest.importorskip(module)
    env = environment(tmp_path)
    disk = small_disk("48m")
    db = disk / "index"
    assert index(write_docs(tmp_path / "docs", 0, 12), db, env, "--store", kind).returncode == 0
    before = searches(db, env, here=True)
    shutil.rmtree(db / "bm25")  # as after a change: the next search rebuilds it
    fill(disk, leave=0)
    assert free_bytes(disk) < 64 * 1024

    for mode in ("bm25", "hybrid"):
        args = ["search", QUERIES[mode], "--db", str(db), "--mode", mode, "-k", "3", "--format", "jsonl"]
        done = kireme(*args, env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout == before[mode]
        assert "Traceback" not in done.stderr and not errors(done.stderr), done.stderr
        warnings = [line for line in done.stderr.splitlines() if line.startswith("kireme:")]
        assert any("no space left on the device" in w and "BM25" in w for w in warnings), done.stderr
        assert all("damaged" not in w for w in warnings), done.stderr
    assert not (db / "bm25").exists()
    code, report = check(db, env)
    assert code == 0 and report["healthy"], report
    assert any("no space left" in f["detail"] for f in report["findings"]), report
    assert not list((tmp_path / "tmp").glob("kireme-*"))  # private copies (Chroma) removed


def test_a_new_index_on_a_disk_too_small_says_so(small_disk: Callable[[str], Path], tmp_path: Path) -> None:
    env = environment(tmp_path)
    disk = small_disk("2m")
    done = index(write_docs(tmp_path / "docs", 0, 24), disk / "index", env)
    assert done.returncode == EXIT_STORAGE, done.stderr
    assert "Traceback" not in done.stderr and "damaged" not in done.stderr
    (line,) = errors(done.stderr)
    assert line.startswith(f"kireme: error: {disk / 'index'}: no space left on the device"), line
    code, report = check(disk / "index", env)
    assert code == 0 and report["healthy"], report


# ------------------------------------------------------------------------------------- read-only


def test_a_read_only_index_is_searched_asked_and_checked_as_the_original(
    read_only_view: Callable[[Path], Path], tmp_path: Path, store: str
) -> None:
    env = environment(tmp_path)
    source = tmp_path / "shared"
    done = index(write_docs(tmp_path / "docs", 0, 6), source / "index", env, "--store", store)
    assert done.returncode == 0, done.stderr
    modes = MODES if store in ("lancedb", "chroma") else ("hybrid",)
    original = searches(source / "index", env, modes, here=True)
    asked = kireme("ask", "宿泊費の上限は", "--db", str(source / "index"), env=env)
    assert asked.returncode == 0 and asked.stdout.strip(), asked.stderr

    db = read_only_view(source) / "index"
    assert searches(db, env, modes) == original
    again = kireme("ask", "宿泊費の上限は", "--db", str(db), env=env)
    assert again.returncode == 0 and again.stdout == asked.stdout, again.stderr
    code, report = check(db, env)
    assert code == 0 and report["healthy"], report
    disk = [f["detail"] for f in report["findings"] if f["part"] == "disk"]
    assert disk and "read-only file system" in disk[0] and "--repair" in disk[0], report

    done = index(tmp_path / "docs", db, env)
    assert done.returncode == EXIT_STORAGE, done.stderr
    assert errors(done.stderr) == [
        f"kireme: error: {db} is on a read-only file system; searching it works, indexing needs a writable --db"
    ]
    assert "Traceback" not in done.stderr and "damaged" not in done.stderr
    repair = kireme("check", "--repair", "--db", str(db), env=env)
    assert repair.returncode == EXIT_STORAGE and "read-only file system" in repair.stderr, repair.stderr
    assert not list((tmp_path / "tmp").glob("kireme-*"))  # private copies (Chroma, Milvus, Qdrant) removed


def test_a_read_only_index_with_commits_still_in_its_log_reads_them(
    read_only_view: Callable[[Path], Path], tmp_path: Path
) -> None:
    """A manifest copied while a process had it open keeps commits in ``manifest.sqlite-wal``: read from a
    private copy (``immutable`` would not see them), removed when the manifest is closed."""
    from kireme.index.manifest import Manifest

    source = tmp_path / "shared"
    source.mkdir()
    writer = Manifest(source / "manifest.sqlite")  # open: its commits are in the log, not yet in the file
    writer.set_meta("note", "在ログ")
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("manifest.sqlite", "manifest.sqlite-wal"):  # as a backup of a live volume takes them
        shutil.copyfile(source / name, copy / name)
    writer.close()
    assert (copy / "manifest.sqlite-wal").stat().st_size > 0

    view = read_only_view(copy)
    manifest = Manifest(view / "manifest.sqlite")
    try:
        assert manifest.get_meta("note") == "在ログ"
        assert manifest.refused is not None and "read-only" in str(manifest.refused)
        with pytest.raises(type(manifest.refused)):
            manifest.set_meta("note", "書けない")
        private = manifest._reader.copy if manifest._reader else None
        assert private is not None and private.exists()
    finally:
        manifest.close()
    assert not private.exists()


def test_the_server_searches_a_read_only_index(
    read_only_view: Callable[[Path], Path], tmp_path: Path
) -> None:
    from kireme.serve.service import IndexService

    env = environment(tmp_path)
    source = tmp_path / "shared"
    assert index(write_docs(tmp_path / "docs", 0, 4), source / "index", env).returncode == 0
    db = read_only_view(source) / "index"
    service = IndexService(db)
    try:
        hits = service.search("宿泊費の上限", k=2, mode="hybrid")
        assert hits and hits[0].chunk.doc_id.endswith(".md")
        assert service.health()["documents"] == 4 and len(service.documents()) == 4
        assert service.search("remote work", k=1, mode="bm25")
        assert service.reopened == 0  # the manifest's data_version is read without a write: it holds
    finally:
        if service._searcher is not None:
            service._searcher.close()
        service._watch.close()


def test_a_folder_this_user_may_not_write_is_not_called_a_read_only_file_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kireme index x --db rodir/idx`` with ``rodir`` chmod 555 said "is on a read-only file system"."""
    from kireme.errors import read_only_error

    folder = tmp_path / "rodir"
    folder.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if mode & os.W_OK else real_access(p, mode))
    message = str(read_only_error(folder / "idx"))
    assert "permission denied" in message and "read-only file system" not in message
