"""The live progress display (kireme.cli.progress): one rich display per command, on stderr only.

Most tests force a terminal with ``progress.terminal_override`` (CliRunner's streams are not terminals);
one runs ``kireme chunk`` on a real pseudo-terminal shared by stdout and stderr, as a user's shell does.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
from collections import deque
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from kireme.cli import cli, progress
from kireme.cli.progress import (
    MIN_RATE_SECONDS,
    QUIET_HELP,
    MessageHandler,
    ProgressDisplay,
    measured_rate,
    rate_text,
)

CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def screen_pieces(stderr: str) -> list[str]:
    """What a terminal would show, piece by piece: escape sequences dropped, split at CR and LF."""
    return [p for p in re.split(r"[\r\n]", CSI.sub("", stderr)) if p.strip()]


@pytest.fixture
def docs(tmp_path: Path) -> list[Path]:
    texts = {
        "旅費規程.txt": "出張の旅費は規程に従って精算する。宿泊費は一泊一万二千円を上限とする。\n\n"
        "日帰り出張の日当は二千円とし、半日未満の場合は支給しない。\n",
        "travel.txt": "Hotel costs are refunded up to the nightly limit set by the policy.\n\n"
        "A day trip earns a flat allowance when it lasts more than four hours.\n",
        "会議メモ.md": "# 定例会議\n\n次回の予算案は来週の月曜日までに提出する。\n\n"
        "## 決定事項\n\n出張申請は三日前までに上長の承認を得る。\n",
    }
    paths = []
    for name, text in texts.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Draw as on a terminal although CliRunner captures stderr."""
    monkeypatch.setattr(progress, "terminal_override", True)


def invoke(*args: str) -> tuple[int, bytes, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout_bytes, result.stderr


def test_chunk_draws_on_stderr_only(docs: list[Path], terminal: None) -> None:
    code, stdout, stderr = invoke("chunk", *map(str, docs), "--max-size", "40", "--format", "jsonl")
    assert code == 0
    assert "chunking" in stderr and "3/3 files" in stderr  # the display was drawn, on stderr
    assert b"\x1b" not in stdout and b"chunking" not in stdout
    rows = [json.loads(line) for line in stdout.decode().splitlines()]
    assert {row["doc_id"] for row in rows} == {str(p) for p in docs}
    # the summary stands on a line of its own after the bars are erased
    assert screen_pieces(stderr)[-1].startswith("3 document(s),")


def test_chunk_stdout_is_the_same_with_and_without_progress(
    docs: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ("chunk", *map(str, docs), "--max-size", "40", "--format", "text")
    monkeypatch.setattr(progress, "terminal_override", True)
    _, drawn, drawn_err = invoke(*args)
    _, quiet, quiet_err = invoke(*args, "--quiet")
    monkeypatch.setattr(progress, "terminal_override", False)
    _, plain, plain_err = invoke(*args)
    assert "━" in drawn_err and "━" not in quiet_err and "━" not in plain_err
    assert drawn and drawn == quiet == plain
    assert "── " in drawn.decode()


def test_quiet_writes_nothing_to_stderr_on_success(docs: list[Path], terminal: None) -> None:
    code, stdout, stderr = invoke("chunk", str(docs[0]), "--max-size", "40", "--format", "jsonl", "-q")
    assert code == 0 and stdout
    assert stderr == ""


@pytest.mark.parametrize("command", ["chunk", "index", "inspect", "eval", "compare"])
def test_every_command_with_progress_takes_quiet(command: str) -> None:
    result = CliRunner().invoke(cli, [command, "--help"])
    assert result.exit_code == 0
    shown = " ".join(result.output.split())
    assert "-q, --quiet" in shown and QUIET_HELP in shown


def test_no_progress_when_stderr_is_not_a_terminal(docs: list[Path]) -> None:
    assert progress.terminal_override is None
    code, _, stderr = invoke("chunk", *map(str, docs), "--max-size", "40", "--format", "jsonl")
    assert code == 0
    assert "\x1b" not in stderr and "chunking" not in stderr and "━" not in stderr
    assert stderr.startswith("3 document(s),")


def test_display_is_off_when_stderr_is_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    display = ProgressDisplay()
    assert not display.enabled
    display.tracker("embedding", "texts")(5, 10)  # a report to a display that does not draw: nothing
    display.close()
    assert sys.stderr.getvalue() == ""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_rate_waits_for_a_minimum_of_measurement() -> None:
    samples: deque[tuple[float, int]] = deque()
    assert measured_rate(samples, 0.0, 32) is None  # one report: nothing to measure
    assert measured_rate(samples, 0.001, 33) is None  # one text in a millisecond is no rate
    assert measured_rate(samples, MIN_RATE_SECONDS / 2, 64) is None
    assert measured_rate(samples, 2.0, 232) == pytest.approx(100.0)  # (232 - 32) texts in 2 s
    # a long pause ages out of the window: the next rate is measured on fresh reports only
    assert measured_rate(samples, 40.0, 264) is None
    assert measured_rate(samples, 42.0, 464) == pytest.approx(100.0)


def test_rate_column_is_blank_until_measured() -> None:
    out, clock = io.StringIO(), Clock()
    console = Console(file=out, force_terminal=True, width=100)
    with ProgressDisplay(console=console, get_time=clock) as display:
        assert display.enabled
        embedding = display.tracker("embedding", "texts", restarts=True)
        embedding(32, 1000)
        clock.now = 0.001
        embedding(64, 1000)
        task = display.progress.tasks[0]  # type: ignore[union-attr]
        assert rate_text(task) == ""
        display.progress.refresh()  # type: ignore[union-attr]
        assert "/s" not in out.getvalue()
        clock.now = 2.0
        embedding(432, 1000)
        assert rate_text(task) == "200 texts/s"  # (432 - 32) / 2 s, the first batch's time unknown
        clock.now = 2.5
        embedding(1000, 1000)
        assert rate_text(task) == f"{(1000 - 32) / 2.5:,.0f} texts/s"


def test_steps_show_an_eta_after_a_finished_step() -> None:
    clock = Clock()
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    with ProgressDisplay(console=console, get_time=clock) as display:
        configurations = display.steps("evaluating", 4, "configurations")
        task = display.progress.tasks[0]  # type: ignore[union-attr]
        clock.now = 0.2
        configurations.advance()
        assert rate_text(task) == ""  # too early to tell
        clock.now = 3.0
        configurations.advance()
        assert rate_text(task) == "ETA 0:03"  # two left at 1.5 s each


def test_embedding_calls_add_up_in_one_row() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    with ProgressDisplay(console=console, get_time=Clock()) as display:
        embedding = display.tracker("embedding", "texts", restarts=True)
        for done, total in [(32, 40), (40, 40), (10, 10), (5, 20), (3, 3)]:
            embedding(done, total)
        # 40 + 10, then a call stopped after 5 of 20, then 3: the stopped call's rest is not owed
        assert (embedding.completed, embedding.total) == (58, 58)
        assert len(display.progress.tasks) == 1  # type: ignore[union-attr]


def test_single_file_gets_no_bar() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    with ProgressDisplay(console=console) as display:
        list(display.iterate(["one.txt"], "chunking", "files"))
        assert display.progress.tasks == []  # type: ignore[union-attr]


def test_messages_print_above_the_bars(docs: list[Path], terminal: None) -> None:
    english, japanese, notes = docs
    code, _, stderr = invoke(
        "chunk", str(english), str(japanese), str(notes), "--encoding", "ascii", "--format", "jsonl"
    )
    assert code == 1  # the Japanese files cannot be ascii: reported, the English one is chunked
    errors = [p for p in screen_pieces(stderr) if "kireme: error:" in p]
    assert len(errors) == 2
    assert all(p.startswith("kireme: error:") and "━" not in p and "files" not in p for p in errors)


def test_log_records_go_through_the_live_console() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    logger = logging.getLogger("kireme.test_progress")
    handler = MessageHandler()
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with ProgressDisplay(console=console) as display:
            display.steps("indexing", 3, "files").advance()
            logger.warning("議事録.html: HTML is not well-formed; parsed leniently")
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    pieces = screen_pieces(out.getvalue())
    assert "議事録.html: HTML is not well-formed; parsed leniently" in pieces
    assert any(p.startswith("indexing") for p in pieces)


def test_index_shows_files_and_embedding_on_separate_rows(
    docs: list[Path], terminal: None, tmp_path: Path
) -> None:
    db = tmp_path / "db"
    code, _, stderr = invoke("index", *map(str, docs), "--embedder", "hash", "--db", str(db))
    assert code == 0, stderr
    pieces = screen_pieces(stderr)
    files = [p for p in pieces if p.startswith("indexing")]
    embedding = [p for p in pieces if p.startswith("embedding")]
    assert files and embedding
    assert any("3/3 files" in p for p in files)
    assert all(re.search(r"\d+/\d+ texts", p) for p in embedding)
    assert not any("indexing" in p and "embedding" in p for p in pieces)  # never drawn over each other
    assert pieces[-1].startswith("3 document(s): 3 added")


def test_index_quiet_keeps_only_the_summary(docs: list[Path], terminal: None, tmp_path: Path) -> None:
    db = tmp_path / "db"
    code, _, stderr = invoke("index", *map(str, docs), "--embedder", "hash", "--db", str(db), "--quiet")
    assert code == 0
    assert "\x1b" not in stderr
    assert stderr.splitlines() == [stderr.strip()] and stderr.startswith("3 document(s): 3 added")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_listing_and_bars_share_one_terminal_cleanly(docs: list[Path]) -> None:
    """stdout and stderr on one terminal: every line of the listing reaches the screen whole."""
    args = [*map(str, docs), "--max-size", "40", "--format", "text"]
    expected = CliRunner().invoke(cli, ["chunk", *args]).stdout.splitlines()
    import pty

    leader, follower = pty.openpty()
    env = dict(os.environ, COLUMNS="100", LINES="30", TERM="xterm-256color")
    env.pop("TTY_COMPATIBLE", None)
    child = subprocess.Popen(
        [sys.executable, "-m", "kireme.cli", "chunk", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    screen = b""
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        screen += data
    os.close(leader)
    assert child.wait(timeout=60) == 0
    pieces = screen_pieces(screen.decode("utf-8"))
    assert any(p.startswith("chunking") and "files" in p for p in pieces)  # the bar was drawn
    listing = [p for p in pieces if not p.startswith("chunking")]
    wanted = [line for line in expected if line.strip()]
    assert len(wanted) > 6
    assert listing[: len(wanted)] == wanted
    assert listing[len(wanted)].startswith("3 document(s),")


def test_sigterm_while_the_bars_are_drawn_shows_the_cursor_again(tmp_path: Path) -> None:
    """A command without its own SIGTERM handling: the display erases the bars and shows the cursor it
    hid, then the process ends as SIGTERM ends it (the parent sees the signal)."""
    import signal

    script = (
        "import os, signal, sys\n"
        "from kireme.cli import progress\n"
        "progress.terminal_override = True\n"
        "display = progress.ProgressDisplay()\n"
        "with display:\n"
        "    display.tracker('embedding', 'texts')(1, 10)\n"
        "    sys.stderr.flush()\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    signal.pause()\n"
    )
    env = dict(os.environ, COLUMNS="100", TERM="xterm-256color")
    env.pop("TTY_COMPATIBLE", None)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == -signal.SIGTERM, done.stderr
    hide, show = "\x1b[?25l", "\x1b[?25h"
    assert hide in done.stderr, "the display did not draw"
    assert done.stderr.rfind(show) > done.stderr.rfind(hide), repr(done.stderr[-300:])
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # this process: nothing left installed
