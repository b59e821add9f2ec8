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
    assert doc.text == (
        "田中: では始めます。今日は新しい勤怠システムの 移行日程について話します。\n\n"
        "佐藤: 移行は四月一日です。旧システムは三月末で読み取り専用になります。\n"
        "佐藤: 過去の打刻データはそのまま残ります。\n\n"
        "Kobayashi: Will the old reports still open & print?\n"
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
