"""Cells pasted from a spreadsheet into a plain text (`kireme.text.csvtable.pasted_tables`): lines of
tab-separated cells under a line that names the columns are a table, so a chunk that starts among the rows
gets the header in its ``embed_text`` and no strategy cuts a row in two — as with a CSV or TSV file and a
plain text's pipe tables. Before, such a block was prose to kireme: ``大阪<TAB>4,000円`` went to the
reader without ``地域<TAB>日当``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.invariants import check_invariants

from kireme import Document, make_chunker
from kireme.text.caches import clear_text_caches
from kireme.text.csvtable import pasted_tables, text_tables
from kireme.text.markdown import plain_text_blocks

CITIES = ["札幌", "仙台", "東京", "名古屋", "大阪", "広島", "福岡", "那覇", "金沢", "新潟", "静岡", "岡山"]
HEADER = "地域\t日当\t宿泊費\t交通"


def _rows() -> list[str]:
    return [
        f"{city}\t{1000 + i * 250:,}円\t{'実費' if i % 2 else '上限12,000円'}\t"
        f"{'新幹線（指定席）を利用できる。' if i % 3 == 0 else '航空機の利用は事前承認を要する。'}"
        for i, city in enumerate(CITIES)
    ]


def _rule_text(newline: str = "\n") -> str:
    lines = [
        "第5条（出張手当）",
        "出張手当は、次の表のとおり支給する。",
        HEADER,
        *_rows(),
        "",
        "第6条（精算）",
        "出張者は、帰着後一週間以内に精算する。",
    ]
    return newline.join(lines) + newline


def _chunker(strategy: str, **options):
    if strategy == "semantic":
        options.setdefault("similarity", "bigram")
        options.setdefault("cache_dir", False)
    return make_chunker(strategy, **options)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_cells_pasted_from_a_spreadsheet_are_a_table_with_exact_offsets(newline: str) -> None:
    text = _rule_text(newline)
    (table,) = pasted_tables(text)
    assert table.dialect == "tsv"
    assert text[table.header[0] : table.header[1]] == HEADER
    assert table.columns == ("地域", "日当", "宿泊費", "交通")
    assert [text[r.start : r.end] for r in table.rows] == _rows()
    assert table.rows[4].cells == ("大阪", "2,000円", "上限12,000円", "航空機の利用は事前承認を要する。")
    assert (table.start, table.end) == (table.header[0], table.rows[-1].end)


@pytest.mark.parametrize(
    "text",
    [
        "件名\t出張申請\n申請者\t山田\n",  # two lines: a key<TAB>value pair, no table
        "手順：\n\tmake build\n\tmake test\n\tmake install\n",  # indented: code, not rows
        "地域\t\t宿泊費\n東京\t5,000円\t実費\n大阪\t4,000円\t実費\n",  # a header cell empty: no names
        "2023\t2024\n1,200\t1,350\n980\t1,010\n",  # numbers only: data with no header to repeat
        "地域\t日当\n東京\t5,000円\t実費\n大阪\t4,000円\t実費\n",  # the header has fewer cells: no run of 3
        "地域\t日当\n東京\t5,000円\n\n大阪\t4,000円\n",  # a blank line ends the run
        "出張の日当は東京が五千円、大阪が四千円とする。\n",
    ],
)
def test_what_is_not_a_pasted_table(text: str) -> None:
    assert pasted_tables(text) == ()
    assert text_tables(text) == ()


def test_pipe_tables_and_pasted_cells_in_one_text() -> None:
    pipe = "| 区分 | 日当 |\n|---|---|\n| 部長 | 3,000円 |\n| 課長 | 2,500円 |\n"
    text = f"役職ごとの日当：\n{pipe}\n地域ごとの宿泊費：\n地域\t宿泊費\n東京\t12,000円\n大阪\t11,000円\n"
    first, second = text_tables(text)
    assert (first.dialect, second.dialect) == ("markdown", "tsv")
    assert first.columns == ("区分", "日当") and second.columns == ("地域", "宿泊費")
    assert first.end < second.start


def test_a_pipe_table_with_tabs_in_its_rows_is_read_once() -> None:
    text = "| 区分\t| 日当\t|\n|---|---|\n| 部長\t| 3,000円\t|\n| 課長\t| 2,500円\t|\n"
    (table,) = text_tables(text)
    assert table.dialect == "markdown"


STRATEGIES = ["recursive", "paragraph", "sentence", "semantic", "markdown"]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("max_size", [120, 150, 200])
def test_every_chunk_among_the_rows_names_the_columns_and_no_row_is_cut(strategy: str, max_size: int) -> None:
    """Before, the later rows' chunks carried no header, and `paragraph`, `sentence` and `semantic` cut
    rows at the full stop in their last cell."""
    text = _rule_text()
    doc = Document(text, id="rule.txt", metadata={"format": "text"})
    chunker = _chunker(strategy, max_size=max_size, context="none")
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    first_row = text.index(_rows()[0])
    table_end = text.index(_rows()[-1]) + len(_rows()[-1])
    among = [c for c in chunks if first_row < c.start < table_end]
    assert len(among) >= 2
    for c in among:
        assert c.embed_text == f"{HEADER}\n{c.text}"
    for row in _rows():
        a = text.index(row)
        assert any(c.start <= a and a + len(row) <= c.end for c in chunks), (max_size, row[:8])


def test_the_records_mode_writes_pasted_rows_as_name_value_lines() -> None:
    doc = Document(_rule_text(), id="rule.txt", metadata={"format": "text"})
    chunks = make_chunker("markdown", max_size=200, table="records", context="none").chunk(doc)
    assert any(
        c.embed_text.endswith(
            "地域: 大阪\n日当: 2,000円\n宿泊費: 上限12,000円\n交通: 航空機の利用は事前承認を要する。"
        )
        for c in chunks
    )


_OPTIONS = ["--max-size", "200", "--format", "jsonl"]


def test_kireme_chunk_on_a_txt_file_repeats_the_pasted_header(tmp_path) -> None:
    text = _rule_text()
    (tmp_path / "rule.txt").write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "KIREME_CHAT"))}
    done = subprocess.run(
        [sys.executable, "-m", "kireme.cli", "chunk", "rule.txt", "-s", "recursive", *_OPTIONS],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    chunks = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(text[c["start"] : c["end"]] == c["text"] for c in chunks)
    among = [c for c in chunks if c["text"].startswith(tuple(CITIES[1:]))]
    assert len(among) >= 2
    assert all(c["embed_text"].startswith(HEADER + "\n") for c in among)


# --- the rule against a plain reading, line by line ------------------------------------------------------


def _reference(text: str) -> list[tuple]:
    """`pasted_tables` read the slow way: every line with its offsets, runs of tab lines grouped by hand."""
    lines = []
    start = 0
    for line in text.split("\n"):
        end = start + len(line)
        body_end = end
        while body_end > start and text[body_end - 1] == "\r":
            body_end -= 1
        lines.append((start, body_end))
        start = end + 1
    tables, run = [], []

    def close() -> None:
        if len(run) >= 3:
            header = text[run[0][0] : run[0][1]]
            cells = [c.strip() for c in header.split("\t")]
            if all(cells) and any(ch.isalpha() for ch in header):
                tables.append((run[0], tuple(run[1:])))

    for a, b in lines:
        line = text[a:b]
        candidate = "\t" in line and not line[0].isspace() and "\r" not in line
        if candidate and run and line.count("\t") == text[run[-1][0] : run[-1][1]].count("\t"):
            run.append((a, b))
            continue
        close()
        run = [(a, b)] if candidate else []
    close()
    return tables


_cell = st.sampled_from(["地域", "東京", "5,000円", "", " ", "実費", "2024", '"a\tb"', "x"])
_line = st.one_of(
    st.lists(_cell, min_size=2, max_size=4).map("\t".join),
    st.lists(_cell, min_size=2, max_size=3).map(lambda cells: "\t" + "\t".join(cells)),
    st.sampled_from(["", "本文です。", "  字下げ", "| a | b |", "|---|---|"]),
)


@given(lines=st.lists(_line, max_size=12), crlf=st.booleans())
def test_pasted_tables_are_the_runs_a_line_by_line_reading_finds(lines: list[str], crlf: bool) -> None:
    text = ("\r\n" if crlf else "\n").join(lines)
    clear_text_caches()
    found = [(t.header, tuple((r.start, r.end) for r in t.rows)) for t in pasted_tables(text)]
    assert found == _reference(text)
    for table in pasted_tables(text):
        assert all(
            text[r.start : r.end].count("\t") == text[slice(*table.header)].count("\t") for r in table.rows
        )


def test_the_prompt_of_ask_names_the_columns_of_pasted_rows() -> None:
    """`kireme ask`'s prompt (`render_passages`) puts the pasted header above the row it passes from a
    ``.txt`` file, and `kireme search --budget` reads the table by rows (`kireme.framing.Framing`)."""
    from tests.stored_hits import stored_hits

    from kireme.framing import Framing
    from kireme.index.passages import render_passages

    text = _rule_text()
    doc = Document(text, id="guide", metadata={"format": "text"})
    chunks = make_chunker("recursive", max_size=90).chunk(doc)
    chunks.sort(key=lambda c: "那覇" not in c.text)
    assert HEADER not in chunks[0].text
    hits = stored_hits(chunks, source="notes/rule.txt", fmt="text")
    rendered = render_passages(hits, 90, {"guide": text}.get, query="那覇 日当")
    assert rendered.tokens <= 90 and "那覇\t2,750円" in rendered.text, rendered.text
    assert HEADER + "\n" in rendered.text[: rendered.text.index("那覇")], rendered.text
    framing = Framing({"guide": text}.get, {"guide": "text"})
    (table,) = framing.tables("guide")
    assert table.dialect == "tsv" and text[slice(*table.header)] == HEADER
    row = text.index("那覇")
    assert framing("guide", row, row + 10) == (HEADER + "\n", "")


_PROSE = "出張の日当は、出張先の地域と日数に応じて支給する。日帰りの出張には支給しない。"


def _pipe(line: str) -> str:
    return "| " + " | ".join(line.split("\t")) + " |"


def _introduced(kind: str) -> str:
    """Prose, a line that introduces a table, the table (pasted cells, or the same as a pipe table)."""
    table = (
        [HEADER, *_rows()] if kind == "pasted" else [_pipe(HEADER), "|---|---|---|---|", *map(_pipe, _rows())]
    )
    lines = [
        "第5条（出張手当）",
        _PROSE,
        _PROSE.replace("出張", "海外出張"),
        "出張手当の額は、次の表のとおりとする：",
        *table,
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("kind", ["pasted", "pipe"])
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("max_size", [140, 180, 220])
def test_the_line_that_introduces_a_table_stays_with_its_header_and_first_row(
    kind: str, strategy: str, max_size: int
) -> None:
    """``…次の表のとおりとする：`` right above a plain text's table goes with the header and the first row
    where the three fit. `markdown` (what `kireme index` runs) left it at the end of the prose before: a
    plain text's outline had its tables and no blocks, so no line was a lead-in to it (pipe tables too)."""
    text = _introduced(kind)
    doc = Document(text, id="rule.txt", metadata={"format": "text"})
    chunker = _chunker(strategy, max_size=max_size, context="none")
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    lead = text.index("出張手当の額")
    (holder,) = [c for c in chunks if c.start <= lead < c.end]
    header = HEADER if kind == "pasted" else _pipe(HEADER) + "\n|---|---|---|---|"
    first = _rows()[0] if kind == "pasted" else _pipe(_rows()[0])
    assert f"とする：\n{header}\n{first}" in holder.text


def test_the_blocks_of_a_plain_text_around_its_tables() -> None:
    """`plain_text_blocks`, where a lead-in to a table may start: each table starts a block, and so do the
    paragraph above it and that paragraph's last line — unless that line goes on from the one before (the
    line alone would be half a hard-wrapped sentence)."""
    table = "Region\tDaily\tHotel\nTokyo\t5,000\tactual\nOsaka\t4,000\tactual\n"
    wrapped = f"Travel allowances are paid per day.\nThe daily allowance for each region is given in the\nfollowing table:\n{table}"
    (found,) = text_tables(wrapped)
    assert plain_text_blocks(wrapped, (found,)) == (0, found.start)
    ended = wrapped.replace("in the\nfollowing", "below.\nSee the")
    (found,) = text_tables(ended)
    starts = (0, ended.index("See the"), found.start)
    assert plain_text_blocks(ended, (found,)) == starts
    two = f"出張手当は次のとおり：\n{table}\n\n宿泊費は次のとおり：\n\n{table}"
    first, second = text_tables(two)
    assert plain_text_blocks(two, (first, second)) == (0, first.start, two.index("宿泊費"), second.start)
