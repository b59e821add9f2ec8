"""Subtitles and transcripts (`.srt`, `.vtt`): what was said, a paragraph per speaker, a start time per chunk."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.invariants import check_invariants

from kireme import LoadError, load, make_chunker
from kireme.load import load_bytes

MEETING_VTT = """WEBVTT

NOTE 録音 2026-03-05 定例会議

1
00:00:02.150 --> 00:00:08.400 align:start position:10%
<v 田中>では始めます。今日は新しい勤怠システムの
移行日程について話します。

2
00:00:08.420 --> 00:00:15.300
<v 佐藤>移行は四月一日です。旧システムは三月末で<i>読み取り専用</i>になります。</v>

00:00:15.500 --> 00:00:19.000
<v 佐藤>過去の打刻データはそのまま残ります。

00:01:02.500 --> 00:01:06.000
Kobayashi: Will the old reports still open &amp; print?
"""

COOKING_SRT = (
    "1\r\n00:00:01,000 --> 00:00:04,200\r\n鍋に水を800ミリリットル加えて、\r\n\r\n"
    "2\r\n00:00:04,300 --> 00:00:07,000\r\n中火で15分煮込みます。\r\n\r\n"
    "3\r\n00:00:07,100 --> 00:00:09,000\r\n最後に塩で味を調えます。\r\n"
)


def test_a_webvtt_file_reads_as_what_was_said_a_paragraph_per_speaker(tmp_path: Path) -> None:
    path = tmp_path / "定例会議.vtt"
    path.write_text(MEETING_VTT, encoding="utf-8")
    doc = load(path)
    assert doc.format == "vtt" and doc.metadata["cues"] == 4 and doc.title == "定例会議"
    assert (
        doc.text
        == (
            "田中: では始めます。今日は新しい勤怠システムの移行日程について話します。\n\n"  # no space between kanji
            "佐藤: 移行は四月一日です。旧システムは三月末で読み取り専用になります。\n"
            "佐藤: 過去の打刻データはそのまま残ります。\n\n"
            "Kobayashi: Will the old reports still open & print?\n"
        )
    )
    times = [(doc.text[r.start : r.end][:6], r.metadata["time"]) for r in doc.regions]
    assert times == [
        ("田中: では", "00:00:02.150"),
        ("佐藤: 移行", "00:00:08.420"),
        ("佐藤: 過去", "00:00:15.500"),
        ("Kobaya", "00:01:02.500"),
    ]


def test_a_subrip_file_keeps_no_cue_number_or_timing_in_any_chunk() -> None:
    doc = load_bytes(COOKING_SRT.encode("utf-8"), "cooking.srt", format="srt")
    assert doc.text == "鍋に水を800ミリリットル加えて、\n中火で15分煮込みます。\n最後に塩で味を調えます。\n"
    for strategy in ("recursive", "sentence", "paragraph", "markdown"):
        chunker = make_chunker(strategy, max_size=30)
        chunks = chunker.chunk(doc)
        check_invariants(doc, chunks, max_size=30, chunker=chunker)
        for c in chunks:
            assert "-->" not in c.text and not c.text.strip().isdigit(), (strategy, c.text)
            assert c.metadata["time"] in ("00:00:01.000", "00:00:04.300", "00:00:07.100")
    first = make_chunker("recursive", max_size=30).chunk(doc)[0]
    assert first.metadata["time"] == "00:00:01.000"


def test_a_speakers_turn_is_not_cut_from_their_name() -> None:
    """Read as text, a transcript's chunks ended with ``00:00:22.010\\nKenji Tanaka:`` and a cue's number,
    and a semantic chunker compared ``1`` with ``00:00:02,150 -->``."""
    doc = load_bytes(MEETING_VTT.encode("utf-8"), "meeting.vtt", format="vtt")
    for size in (60, 90):  # every turn fits: none is cut, none parted from its name
        for c in make_chunker("recursive", max_size=size).chunk(doc):
            last = c.text.rstrip().splitlines()[-1]
            assert not last.endswith((":", "：")), (size, c.text)


def test_a_file_named_srt_without_any_timing_is_refused_and_read_as_text_when_asked() -> None:
    with pytest.raises(LoadError, match="no subtitle cue"):
        load_bytes(b"just some notes\nno timings here\n", "notes.srt", format="srt")
    assert load_bytes(b"just some notes\n", "notes.srt", format="text").text == "just some notes\n"
    assert load_bytes(b"", "empty.vtt", format="vtt").text == ""


def test_a_folder_walk_reads_subtitles(tmp_path: Path) -> None:
    from kireme.load import iter_paths

    (tmp_path / "talk.vtt").write_text(MEETING_VTT, encoding="utf-8")
    (tmp_path / "cook.srt").write_text(COOKING_SRT, encoding="utf-8")
    assert sorted(p.name for p in iter_paths(tmp_path)) == ["cook.srt", "talk.vtt"]


def test_cues_in_files_as_people_write_them_lose_no_word_and_leak_no_timing() -> None:
    """Found by a helper on the first version: a missing blank line between cues put the next cue's number
    and timing into the text; a blank line inside a cue dropped what followed; a timing without
    milliseconds dropped its cue; ``{\\an8}`` stayed in the text."""
    srt = (
        "1\n00:00:01,000 --> 00:00:02,000\n最初の行\n2\n00:00:02,000 --> 00:00:03,000\n空行なしの次の字幕\n\n"
        "3\n00:00:03,500 --> 00:00:05,000\n字幕の中に\n\n空行がある\n\n"
        "4\n00:00:09 --> 00:00:10\n{\\an8}田中：ミリ秒のない時刻\n"
    )
    doc = load_bytes(srt.encode("utf-8"), "odd.srt", format="srt")
    assert "-->" not in doc.text and "\n2\n" not in doc.text and "an8" not in doc.text
    for words in ("最初の行", "空行なしの次の字幕", "字幕の中に", "空行がある", "田中：ミリ秒のない時刻"):
        assert words in doc.text, (words, doc.text)
    assert [r.metadata["time"] for r in doc.regions] == [
        "00:00:01.000",
        "00:00:02.000",
        "00:00:03.500",
        "00:00:09.000",
    ]


def test_rolling_captions_are_read_once() -> None:
    """Video sites roll each caption line into the next cue: the loaded text held most lines twice."""
    vtt = (
        "WEBVTT\n\n00:00:00.000 --> 00:00:02.000\nso today we are going to talk\n\n"
        "00:00:02.000 --> 00:00:04.000\nso today we are going to talk\nabout vector databases\n\n"
        "00:00:04.000 --> 00:00:04.010\nabout vector databases\n\n"
        "00:00:04.010 --> 00:00:06.000\nabout vector databases\nand how to chunk documents\n"
    )
    text = load_bytes(vtt.encode("utf-8"), "yt.vtt", format="vtt").text
    assert text == "so today we are going to talk\nabout vector databases\nand how to chunk documents\n"


def test_speakers_are_named_as_transcription_tools_write_them_and_not_invented() -> None:
    vtt = (
        "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nSpeaker 1: can you hear me\n\n"
        "00:00:02.000 --> 00:00:03.000\nSpeaker 2: yes I can\n\n"
        "00:00:03.000 --> 00:00:04.000\n田中（司会）：始めましょう\n\n"
        "00:00:04.000 --> 00:00:05.000\nSo here is the thing: we need more time.\n"
    )
    text = load_bytes(vtt.encode("utf-8"), "diarized.vtt", format="vtt").text
    assert text == (
        "Speaker 1: can you hear me\n\nSpeaker 2: yes I can\n\n田中（司会）：始めましょう\n"
        "So here is the thing: we need more time.\n"  # a sentence with a colon names no speaker
    )


def test_a_webvtt_file_with_only_its_header_is_an_empty_document_and_guesses_are_said(caplog) -> None:
    assert load_bytes(b"WEBVTT\n\nNOTE nothing yet\n", "header.vtt", format="vtt").text == ""
    with caplog.at_level("WARNING"):
        load_bytes(
            "1\n00:00:01,000 --> 00:00:02,000\nTrès bien, merci à toi\n".encode("cp1252"),
            "fr.srt",
            format="srt",
        )
    assert any("fr.srt" in r.getMessage() and "guess" in r.getMessage() for r in caplog.records), (
        caplog.records
    )


def test_search_and_chunk_output_show_where_a_transcripts_hit_starts(tmp_path: Path) -> None:
    """The time was kept in the metadata but shown nowhere a user looks: the search table, the passages
    of a budget, the chunk listing."""
    import json
    import subprocess
    import sys

    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "meeting.vtt").write_text(MEETING_VTT, encoding="utf-8")
    db = tmp_path / "db"

    def kireme(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kireme.cli", *args], capture_output=True, text=True, timeout=120
        )

    assert kireme("index", str(folder), "--db", str(db), "--embedder", "hash", "-q").returncode == 0
    table = kireme("search", "打刻データ", "--db", str(db), "--mode", "bm25", "--format", "table", "-k", "1")
    assert " @ 00:00:02.150 [" in table.stdout, table.stdout
    budget = kireme("search", "打刻データ", "--db", str(db), "--mode", "bm25", "--budget", "60")
    assert json.loads(budget.stdout.splitlines()[0])["time"] == "00:00:02.150"
    listing = kireme("chunk", str(folder / "meeting.vtt"), "--max-size", "60", "--format", "text")
    assert "] @ 00:00:08.420 " in listing.stdout, listing.stdout
