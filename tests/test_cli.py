"""The `kireme` command as users and other tools call it: a real subprocess, stdout and stderr apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

RULES = "第1条（目的）\r\nこの規程は出張旅費を定める。\r\n\r\n第2条（宿泊費）\r\n宿泊費は１泊１０，０００円を上限とする。\r\n"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "kireme.cli", *args], capture_output=True, cwd=cwd)


@pytest.fixture()
def rules(tmp_path: Path) -> Path:
    path = tmp_path / "規程.txt"
    path.write_bytes(RULES.encode("cp932"))
    return path


def test_jsonl_rows_have_the_contract_fields_and_exact_offsets(rules: Path) -> None:
    result = run("chunk", str(rules), "--max-size", "30")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]
    loaded = run("load", str(rules)).stdout.decode("utf-8")
    assert loaded == RULES  # decoded from CP932, CRLF kept
    assert len(rows) == 2
    for i, row in enumerate(rows):
        assert {"id", "doc_id", "index", "start", "end", "text", "size", "unit", "headings"} <= row.keys()
        assert loaded[row["start"] : row["end"]] == row["text"]
        assert row["index"] == i and row["unit"] == "chars" and row["size"] == len(row["text"])
    assert "１０，０００円" in rows[1]["text"]
    assert "\\u" not in result.stdout.decode("utf-8")  # ensure_ascii=False


def test_text_format_and_summary_on_stderr(rules: Path) -> None:
    result = run("chunk", str(rules), "--format", "text", "--strategy", "paragraph", "--max-size", "40")
    out, err = result.stdout.decode(), result.stderr.decode()
    assert out.count("──") >= 2 and "第2条（宿泊費）" in out
    assert "2 chunks" in err and "max" in err


def test_tokens_unit_and_multiple_separators(tmp_path: Path) -> None:
    sql = tmp_path / "schema.sql.txt"
    sql.write_text("CREATE TABLE a (id int);\nINSERT INTO a VALUES (1);\nCREATE TABLE b (id int);\n")
    result = run(
        "chunk",
        str(sql),
        "--separators",
        r"\n(?=CREATE )",
        r"\n(?=INSERT )",
        "--max-size",
        "12",
        "--unit",
        "tokens",
    )
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [r["text"].split()[0] for r in rows] == ["CREATE", "INSERT", "CREATE"]
    assert all(r["unit"] == "tokens" and r["size"] <= 12 for r in rows)


def test_bad_files_are_reported_and_the_rest_still_finishes(tmp_path: Path, rules: Path) -> None:
    binary = tmp_path / "broken.txt"
    binary.write_bytes(b"\x00\x01\x02binary\x00")
    result = run("chunk", str(binary), str(rules))
    assert result.returncode == 1
    assert (
        result.stderr.decode().strip().splitlines()[0]
        == f"kireme: error: {binary.as_posix()}: binary file (contains NUL bytes)"
    )
    assert len(result.stdout.decode().splitlines()) >= 1  # the good file was chunked

    missing = run("chunk", str(tmp_path / "missing.txt"), str(rules))
    assert missing.returncode == 2 and "missing.txt: no such file or directory" in missing.stderr.decode()
    assert missing.stdout  # the good file still finished

    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    nothing = run("chunk", str(empty_dir))
    assert nothing.returncode == 2 and "directory has no files to read" in nothing.stderr.decode()


def test_directories_are_walked_in_order(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# 二\n\n本文。", encoding="utf-8")
    (tmp_path / "a.txt").write_text("一。", encoding="utf-8")
    (tmp_path / "skip.bin").write_bytes(b"\x00")
    rows = [json.loads(x) for x in run("chunk", str(tmp_path)).stdout.decode().splitlines()]
    assert [Path(r["doc_id"]).name for r in rows] == ["a.txt", "b.md"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--overlap", "600"], "overlap (600) must be smaller than max_size (512)"),
        (
            ["--strategy", "sentence", "--preset", "sql"],
            "--separators and --preset apply to --strategy recursive",
        ),
        (["--no-merge"], "--no-merge applies to --strategy paragraph"),
        (["--unit", "words"], "Invalid value for '--unit'"),
        (["--separators", "("], "invalid separator regex"),
        (["--max-size", str(2**63)], "max_size must be at most"),  # was an OverflowError in the packing
        (["--encoding", "bogus"], "unknown encoding 'bogus'"),  # once, not once per file
        (["--encoding", "rot13"], "'rot13' is not a text encoding"),  # was a LookupError traceback
        (["--threshold", "absolute:0.3"], "--threshold applies to --strategy semantic"),
        (
            ["--strategy", "semantic", "--similarity", "bigram", "--threshold", "absolute:nan"],
            "needs a finite number",  # nan was taken and cut nowhere
        ),
    ],
)
def test_usage_errors_exit_2_without_traceback(rules: Path, args: list[str], message: str) -> None:
    result = run("chunk", str(rules), *args)
    assert result.returncode == 2
    assert message in result.stderr.decode() and "Traceback" not in result.stderr.decode()


def test_json_nested_past_the_parsers_depth_is_a_bad_file_not_a_traceback(tmp_path: Path) -> None:
    deep = "[" * 50_000 + "]" * 50_000
    notebook = tmp_path / "deep.ipynb"
    notebook.write_text(deep, encoding="utf-8")
    result = run("chunk", str(notebook))
    assert result.returncode != 0 and "nested too deeply" in result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()
    questions = tmp_path / "q.jsonl"
    questions.write_text(deep + "\n", encoding="utf-8")
    text = tmp_path / "a.txt"
    text.write_text("一文目です。二文目です。", encoding="utf-8")
    result = run("eval", str(text), "--questions", str(questions))
    assert result.returncode == 1 and "nested too deeply" in result.stderr.decode()  # as any bad JSON line
    assert "Traceback" not in result.stderr.decode()


def test_a_folder_of_source_files_names_the_strategy_that_reads_them(tmp_path: Path) -> None:
    (tmp_path / "tool.py").write_text("def main():\n    return 0\n", encoding="utf-8")
    result = run("chunk", str(tmp_path))
    assert result.returncode == 2 and "it holds 1 .py file(s): use --strategy code" in result.stderr.decode()
    assert run("chunk", str(tmp_path), "--strategy", "code").returncode == 0


def test_eval_and_compare_read_a_folder_with_the_files_their_strategies_read(tmp_path: Path) -> None:
    """``-s code`` (or ``-s json``) on a folder of source files: eval and compare walked it for documents,
    found none, and said "use --strategy code" to a user who had. A folder of documents under ``-s code``
    names a text strategy, and a document whose language cannot be told is named in the error."""
    code = tmp_path / "src"
    code.mkdir()
    (code / "inv.py").write_text(
        'def due_days(kind: str) -> int:\n    """30 days for a company, 14 for a person."""\n'
        '    return 30 if kind == "company" else 14\n',
        encoding="utf-8",
    )
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"question": "How long until a company pays?", "answer": "30 days"}\n', encoding="utf-8"
    )
    for command in ("eval", "compare"):
        result = run(command, str(code), "--questions", str(questions), "-s", "code", "--retriever", "bm25")
        assert result.returncode == 0, result.stderr.decode()
        assert "hit_rate" in result.stdout.decode()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "rules.md").write_text("# 規程\n\n宿泊費は一泊一万円とする。\n", encoding="utf-8")
    result = run("compare", str(docs), "--questions", str(questions), "-s", "code", "--retriever", "bm25")
    assert result.returncode == 2 and "it holds 1 .md file(s): use a text strategy" in result.stderr.decode()
    result = run("eval", str(docs / "rules.md"), "--questions", str(questions), "-s", "code")
    stderr = result.stderr.decode()
    assert result.returncode == 1 and "rules.md: cannot tell the programming language" in stderr, stderr
    assert "Traceback" not in stderr


def test_options_only_a_budget_reads_are_said_to_change_nothing_without_one(tmp_path: Path) -> None:
    """``--assembly chunks``, ``--widen``, ``--comments`` without ``--budget`` exited 0 and changed nothing
    without a word (``--limit`` misplaced is an error; these are kept working, with a warning)."""
    text = tmp_path / "a.txt"
    text.write_text("宿泊費は一泊一万円とする。", encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"question": "宿泊費はいくら？", "answer": "一泊一万円"}\n', encoding="utf-8")
    for command in ("eval", "compare"):
        base = [command, str(text), "--questions", str(questions), "-s", "recursive"]
        result = run(*base, "--assembly", "chunks", "--widen", "2")
        stderr = result.stderr.decode()
        assert result.returncode == 0, stderr
        assert "--assembly, --widen apply only with --budget" in stderr
        quiet = run(*base, "--assembly", "chunks", "--widen", "2", "--budget", "100")
        assert quiet.returncode == 0 and "apply only with --budget" not in quiet.stderr.decode()


def test_eval_limit_with_its_own_questions_is_a_usage_error(tmp_path: Path) -> None:
    """``--limit`` counts SQuAD articles or segment documents; with ``--questions`` it was ignored silently."""
    text = tmp_path / "a.txt"
    text.write_text("宿泊費は一泊一万円とする。", encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"question": "宿泊費は？", "answer": "一万円"}\n', encoding="utf-8")
    result = run("eval", str(text), "--questions", str(questions), "--limit", "3")
    assert result.returncode == 2 and "--limit applies to --squad and --segments" in result.stderr.decode()


def test_help_teaches_with_examples() -> None:
    out = run("chunk", "--help").stdout.decode()
    assert "Examples:" in out and "--separators" in out and "kireme load" in out
    assert "Examples:" in run("load", "--help").stdout.decode()


def test_load_prints_exact_text_and_missing_file_exit_code(rules: Path, tmp_path: Path) -> None:
    result = run("load", str(rules), "--info")
    assert result.stdout == RULES.encode("utf-8")
    assert "encoding=cp932" in result.stderr.decode()
    assert run("load", str(tmp_path / "none.txt")).returncode == 2


def test_stdin_is_read_with_the_same_decoding(rules: Path) -> None:
    data = rules.read_bytes()  # CP932
    result = subprocess.run(
        [sys.executable, "-m", "kireme.cli", "chunk", "-", "--max-size", "30"],
        input=data,
        capture_output=True,
    )
    rows = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert result.returncode == 0 and rows[0]["doc_id"] == "<stdin>"
    assert RULES[rows[1]["start"] : rows[1]["end"]] == rows[1]["text"]
    loaded = subprocess.run(
        [sys.executable, "-m", "kireme.cli", "load", "-"], input=data, capture_output=True
    )
    assert loaded.stdout == RULES.encode("utf-8")


def rows_of(result: subprocess.CompletedProcess[bytes]) -> list[dict]:
    assert result.returncode == 0, result.stderr.decode()
    return [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]


def test_every_file_gets_a_title_and_title_overrides_it(tmp_path: Path, rules: Path) -> None:
    # plain text: the file name; with the title context it goes in front of embed_text
    plain = rows_of(run("chunk", str(rules), "--max-size", "30"))
    assert {r["title"] for r in plain} == {"規程"} and all(r["embed_text"] == r["text"] for r in plain)
    titled = rows_of(run("chunk", str(rules), "--max-size", "40", "--context", "title"))
    loaded = run("load", str(rules)).stdout.decode("utf-8")
    for r in titled:
        assert r["embed_text"] == "規程\n\n" + r["text"] and loaded[r["start"] : r["end"]] == r["text"]
    # Markdown: front matter, else the first H1, else the file name
    manual = tmp_path / "manual.md"
    manual.write_text(
        "Read this first.\n\n# Expense Claims\n\nSubmit receipts within 14 days.\n\n"
        "## Hotels\n\nHotels are paid at cost, up to 12,000 yen a night.\n",
        encoding="utf-8",
    )
    notes = tmp_path / "週報.md"
    notes.write_text("## 今週の予定\n\n水曜日に棚卸しを行う。\n", encoding="utf-8")
    rows = rows_of(run("chunk", str(manual), str(notes), "--strategy", "markdown", "--max-size", "80"))
    assert {r["doc_id"].rsplit("/", 1)[-1]: r["title"] for r in rows} == {
        "manual.md": "Expense Claims",
        "週報.md": "週報",
    }
    hotels = next(r for r in rows if r["text"].startswith("## Hotels"))
    assert hotels["embed_text"] == "Expense Claims\n\n" + hotels["text"]  # the path's "Expense Claims" once
    weekly = next(r for r in rows if r["title"] == "週報")
    assert weekly["embed_text"] == "週報\n\n" + weekly["text"]

    # --title: one title for every document of the run, in the rows and in front of embed_text
    given = rows_of(
        run(
            "chunk",
            str(rules),
            str(notes),
            "--title",
            "総務部 規程集",
            "--context",
            "title",
            "--max-size",
            "60",
        )
    )
    assert {r["title"] for r in given} == {"総務部 規程集"}
    assert all(r["embed_text"] == "総務部 規程集\n\n" + r["text"] for r in given)
    on_top = rows_of(
        run("chunk", str(rules), str(notes), "--title", "総務部 規程集", "--context", "title",
            "--no-context-in-budget", "--max-size", "60")
    )  # fmt: skip
    untitled = rows_of(run("chunk", str(rules), str(notes), "--max-size", "60"))
    # the title changes embed_text only: the same slices as without any context
    assert [(r["start"], r["end"], r["text"]) for r in on_top] == [
        (r["start"], r["end"], r["text"]) for r in untitled
    ]
    assert all(r["embed_text"] == "総務部 規程集\n\n" + r["text"] for r in on_top)

    stdin = subprocess.run(
        [sys.executable, "-m", "kireme.cli", "chunk", "-", "--title", "出張旅費規程", "--context", "title"],
        input=rules.read_bytes(),
        capture_output=True,
    )
    assert {r["title"] for r in rows_of(stdin)} == {"出張旅費規程"}

    info = run("load", str(notes), "--title", "Weekly report", "--info")
    assert info.returncode == 0 and "title=Weekly report" in info.stderr.decode()
    empty = run("chunk", str(rules), "--title", " ")
    assert empty.returncode == 2 and "--context none" in empty.stderr.decode()
    assert "Traceback" not in empty.stderr.decode()
    help_text = run("chunk", "--help").stdout.decode()
    assert "--title TEXT" in help_text and "file name" in help_text


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (Linux /proc): a pool's forkserver and its workers."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")
@pytest.mark.parametrize(("signum", "code", "jobs"), [(15, 143, "2"), (2, 130, "1")])
def test_a_signal_stops_chunk_between_documents_shuts_the_workers_down_and_says_so(
    tmp_path: Path, signum: int, code: int, jobs: str
) -> None:
    """SIGTERM to ``kireme chunk --jobs 2`` alone (``kill PID``, a supervisor) killed it at once and left
    its worker processes running, holding the caller's stderr; Ctrl-C printed ``Aborted!`` and exited 1,
    which says "some file could not be read", for an output cut short."""
    import signal
    import time

    lines = [
        "出張の旅費は月末に精算する。\n",
        "宿泊費は一泊一万二千円までとする。\n",
        "The receipt goes to accounting.\n",
    ]
    for i in range(8):
        (tmp_path / f"part{i}.txt").write_text(
            "".join(lines[(i + k) % 3] for k in range(40000)), encoding="utf-8"
        )
    command = [sys.executable, "-m", "kireme.cli", "chunk", str(tmp_path), "--unit", "tokens", "--jobs", jobs]
    # unbuffered: communicate() reads the pipes themselves, not what a buffered readline() took ahead
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    try:
        first = process.stdout.readline()  # type: ignore[union-attr]  # the first document is written
        below = _descendants(process.pid)
        process.send_signal(signum)
        rest, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert first and process.returncode == code, err.decode()
    message = err.decode()
    assert "kireme: interrupted:" in message and "the output is incomplete" in message
    assert "Aborted" not in message and "Traceback" not in message
    rows = (first + rest).decode().splitlines()
    assert all(json.loads(row)["text"] for row in rows)  # every line written whole
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in below) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in below if _alive(pid)], "worker processes left running"
    assert signal.Signals(signum).name in ("SIGTERM", "SIGINT")


def test_a_file_given_and_found_in_a_folder_given_is_chunked_once(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("日当は三千円とする。\n", encoding="utf-8")
    (tmp_path / "docs" / "b.txt").write_text("宿泊費は実費とする。\n", encoding="utf-8")
    result = run("chunk", "docs", "docs/a.txt", "./docs/a.txt", "--format", "jsonl", cwd=tmp_path)
    assert result.returncode == 0
    ids = [json.loads(line)["id"] for line in result.stdout.decode().splitlines()]
    assert len(ids) == len(set(ids)) == 2


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("fmt", ["jsonl", "text"])
def test_chunk_to_a_full_disk_exits_4_and_says_the_output_is_incomplete(rules: Path, fmt: str) -> None:
    """``kireme chunk > /dev/full`` exited 1 where the docs promise 4 (a full disk, as `kireme index`), and
    its closing line counted chunks that were never written as if they had been."""
    with open("/dev/full", "w", encoding="utf-8") as full:
        result = subprocess.run(
            [sys.executable, "-m", "kireme.cli", "chunk", str(rules), "--max-size", "30", "--format", fmt],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert result.returncode == 4, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "kireme: error: writing the output: No space left on device"
    assert lines[-1].endswith("; the output stopped at the error: not all of it was written"), lines
    assert "Traceback" not in result.stderr


def test_a_folder_walk_says_what_it_left_out_that_could_be_read(tmp_path: Path) -> None:
    """`kireme chunk repo/` read the README and said nothing of the source, JSON, YAML and subtitles it
    left out; the user learned it from a sentence in the docs."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "README.md").write_text("# 在庫API\n\n在庫数は毎朝更新されます。\n", encoding="utf-8")
    (repo / "src" / "stock.py").write_text("def count():\n    return 120\n", encoding="utf-8")
    (repo / "config.yaml").write_text("shipping:\n  free_threshold: 5000\n", encoding="utf-8")
    (repo / "talk.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\nこんにちは\n", encoding="utf-8")
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n")
    (repo / "questions.jsonl").write_text('{"question": "在庫数は？"}\n', encoding="utf-8")  # data: silent
    result = run("chunk", str(repo))
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.decode().splitlines() if "left out" in line]
    assert len(notes) == 1
    note = notes[0]
    assert "2 file(s) left out" in note and ".py ×1" in note and "--strategy code" in note
    assert ".yaml: name the files to read them as text" in note and ".srt" not in note  # subtitles are read
    assert ".png" not in note and ".jsonl" not in note
    quiet = run("chunk", str(repo / "README.md"), str(repo / "config.yaml"))
    assert "left out" not in quiet.stderr.decode()  # files named are read, nothing left out


def test_a_run_that_read_nothing_says_why_without_a_zero_summary(tmp_path: Path) -> None:
    """``kireme chunk nosuch.srt --format text`` printed its error and then "0 document(s), 0 chunks"."""
    result = run("chunk", str(tmp_path / "nosuch.txt"), "--format", "text")
    assert result.returncode == 2
    assert result.stderr.decode().splitlines() == [
        f"kireme: error: {tmp_path / 'nosuch.txt'}: no such file or directory"
    ]
