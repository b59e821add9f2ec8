"""A table cut by `recursive`, `paragraph`, `sentence` or `semantic`: every piece after the first repeats
the header in its ``embed_text`` (`kireme.text.tableheaders`), within ``max_size``; the rest of the
document keeps its cuts; ``text`` and offsets never change."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.invariants import check_invariants
from tests.strategies import csv_texts, markdown_texts

from kireme import Document, get_measure, load, make_chunker
from kireme.chunkers import Chunker
from kireme.text.tableheaders import table_headers

STRATEGIES = ["recursive", "paragraph", "sentence", "semantic"]
REGIONS = ["東京", "大阪", "名古屋", "福岡"]
HEADER = "| 支店 | 地域 | 日当 | 備考 |\n|---|---|---|---|\n"


def _rows(n: int) -> str:
    return "\n".join(
        f"| 支店{i:02d} | {REGIONS[i % 4]} | {10000 + i * 500:,}円 | 実費精算 |" for i in range(n)
    )


def _allowance_doc(rows: int = 30, fmt: str = "markdown") -> Document:
    text = (
        "# 出張手当\n\n出張の日当は支店ごとに定める。申請は出張の前日までに上長へ出す。\n\n"
        f"{HEADER}{_rows(rows)}\n\n"
        "## 精算\n\n領収書は帰着後十四日以内に経理課へ提出する。期限を過ぎた申請は受け付けない。\n"
    )
    return Document(text, id=f"allowance.{'md' if fmt == 'markdown' else 'txt'}", metadata={"format": fmt})


def _chunker(strategy: str, **options) -> Chunker:
    if strategy == "semantic":
        options.setdefault("similarity", "bigram")
        options.setdefault("cache_dir", False)
    return make_chunker(strategy, **options)


def _body_start(doc: Document) -> tuple[int, int]:
    found = table_headers(doc.text, doc.format)
    assert found is not None
    ((body, end, _, _),) = found.tables()
    return body, end


@pytest.mark.parametrize(
    ("strategy", "fmt"),
    [*((s, "markdown") for s in STRATEGIES), *((s, "text") for s in [*STRATEGIES, "markdown"])],
)
def test_every_piece_of_a_cut_table_names_its_columns(strategy: str, fmt: str) -> None:
    """In Markdown, and in a plain text (a ``.txt`` file, a string) holding the same pipe table, `markdown`
    too (what `kireme index` runs): before, the chunks of a plain text's later rows carried no header."""
    doc = _allowance_doc(fmt=fmt)
    chunker = _chunker(strategy, max_size=300)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=300, chunker=chunker)
    body, end = _body_start(doc)
    inside = [c for c in chunks if body <= c.start < end]
    assert len(inside) >= 2  # the table (about 1,100 characters) had to be cut
    for c in inside:
        assert c.embed_text == HEADER + c.text
        assert len(c.embed_text) <= 300
    for c in chunks:
        if not body <= c.start < end:
            assert c.embed_text == c.text  # no context asked for: nothing else changes


@pytest.mark.parametrize("fmt", ["markdown", "text"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_only_the_table_is_packed_again(strategy: str, fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The room for the header is made in the table's chunks, not by shrinking every chunk: the prose
    before the table keeps its chunks (and ids); without a repeated header the chunks are the old ones."""
    doc = _allowance_doc(fmt=fmt)
    chunker = _chunker(strategy, max_size=300)
    now = chunker.chunk(doc)
    monkeypatch.setattr(type(chunker), "repeats_table_headers", False)
    before = chunker.chunk(doc)
    assert all(c.embed_text == c.text for c in before)
    body, _ = _body_start(doc)
    assert [c for c in now if c.end <= body] == [c for c in before if c.end <= body]
    assert [c.start for c in now if c.start < body] == [c.start for c in before if c.start < body]


def test_a_table_that_fits_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _allowance_doc(rows=4)
    chunker = make_chunker("recursive", max_size=300)
    now = chunker.chunk(doc)
    monkeypatch.setattr(type(chunker), "repeats_table_headers", False)
    assert now == chunker.chunk(doc)
    assert all(c.embed_text == c.text for c in now)


def test_the_header_gives_way_to_a_row_that_fits_a_chunk() -> None:
    """Rows of 90 characters at 100: with the 23-character header no row fits; the rows stay whole (and
    carry no header) rather than be cut to make room for it."""
    header = "| 項目 | 内容 |\n|---|---|\n"
    rows = "\n".join(
        f"| 規定{i:02d} | " + "出張の旅費は所定の様式により申請し上長の承認を得る。" * 3 + " |"
        for i in range(6)
    )
    doc = Document(f"# 規定\n\n{header}{rows}\n", metadata={"format": "markdown"})
    chunker = make_chunker("recursive", max_size=100)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=100, chunker=chunker)
    offset = doc.text.index(rows)
    for line in rows.splitlines():
        a = doc.text.index(line, offset)
        assert any(c.start <= a and a + len(line) <= c.end for c in chunks), line[:10]  # whole
    for c in chunks:
        assert len(c.embed_text) <= 100


@pytest.mark.parametrize("strategy", ["recursive", "markdown"])
def test_an_aligned_header_is_repeated_without_its_padding(strategy: str) -> None:
    """Columns aligned with spaces and long dashes (a 160-character header at 300) are repeated as the
    same table without the padding, which fits the third of a chunk a header may take (`markdown` left
    such a header out of 55 of its 152 chunks of table rows on the Japanese technical docs at 400)."""
    header = (
        "| オプション                 | 説明                                   | 既定値           |\n"
        "|--------------------------|--------------------------------------|-----------------|\n"
    )
    rows = "\n".join(
        f"| `--option-{i:02d}`             | 出張申請の{i}番目の設定を切り替える          | `false`         |"
        for i in range(30)
    )
    doc = Document(f"# 設定\n\n{header}{rows}\n", metadata={"format": "markdown"})
    chunker = make_chunker(strategy, max_size=300)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=300, chunker=chunker)
    compact = "| オプション | 説明 | 既定値 |\n|---|---|---|\n"
    among_rows = [c for c in chunks if c.start > doc.text.index("| `--option-00`")]
    assert len(among_rows) >= 3
    for c in among_rows:
        assert c.embed_text.endswith(compact + c.text), c.embed_text[:80]
        assert len(c.embed_text) <= 300


def test_fixed_windows_stay_plain() -> None:
    doc = _allowance_doc()
    chunks = make_chunker("fixed", max_size=300).chunk(doc)
    assert all(c.embed_text == c.text for c in chunks)


def test_context_comes_first_then_the_header_within_the_limit_in_tokens() -> None:
    doc = _allowance_doc()
    measure = get_measure("tokens")
    chunker = make_chunker("recursive", max_size=120, unit="tokens", context="headings")
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=120, chunker=chunker)
    body, end = _body_start(doc)
    inside = [c for c in chunks if body <= c.start < end]
    assert len(inside) >= 2
    for c in inside:
        assert c.embed_text.startswith("出張手当\n\n" + HEADER), c.embed_text[:60]
        assert c.embed_text.endswith(c.text)
        assert measure(c.embed_text) <= 120


def test_context_outside_the_budget_puts_the_header_on_top(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _allowance_doc()
    chunker = make_chunker("recursive", max_size=300, context="title", context_in_budget=False)
    now = chunker.chunk(doc)
    monkeypatch.setattr(type(chunker), "repeats_table_headers", False)
    before = chunker.chunk(doc)
    assert [(c.start, c.end) for c in now] == [(c.start, c.end) for c in before]  # no room made
    body, end = _body_start(doc)
    for new, old in zip(now, before, strict=True):
        if body <= new.start < end:
            assert new.embed_text == old.embed_text[: -len(old.text)] + HEADER + new.text
        else:
            assert new.embed_text == old.embed_text


def test_a_header_larger_than_a_third_of_a_chunk_is_not_repeated() -> None:
    wide = "| " + " | ".join(f"列{i}の名前" for i in range(12)) + " |\n|" + "---|" * 12 + "\n"
    rows = "\n".join("| " + " | ".join(f"{r}-{i}" for i in range(12)) + " |" for r in range(20))
    doc = Document(f"# 表\n\n{wide}{rows}\n", metadata={"format": "markdown"})
    chunker = make_chunker("recursive", max_size=150)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=150, chunker=chunker)
    assert len(chunks) > 3
    assert all(c.embed_text == c.text for c in chunks)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_csv_records_repeat_the_header_and_stay_whole(strategy: str) -> None:
    lines = ["支店,地域,日当,備考"] + [
        f"支店{i:02d},{REGIONS[i % 4]},{10000 + i * 500}円,実費精算" for i in range(40)
    ]
    text = "\n".join(lines) + "\n"
    doc = Document(text, id="allowance.csv", metadata={"format": "csv"})
    chunker = _chunker(strategy, max_size=200)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=200, chunker=chunker)
    record_starts = {0} | {i + 1 for i, ch in enumerate(text) if ch == "\n"}
    assert len(chunks) >= 3
    assert chunks[0].embed_text == chunks[0].text
    for c in chunks[1:]:
        assert c.start in record_starts, c.text[:20]  # never half a record (semantic cut at commas)
        assert c.embed_text == "支店,地域,日当,備考\n" + c.text
        assert len(c.embed_text) <= 200


def test_html_tables_loaded_as_markdown_repeat_their_header(tmp_path) -> None:
    rows = "".join(f"<tr><td>支店{i:02d}</td><td>{10000 + i * 500}円</td></tr>" for i in range(30))
    path = tmp_path / "allowance.html"
    path.write_text(
        "<html><head><title>日当</title></head><body><h1>出張手当</h1><p>次の表のとおり。</p>"
        f"<table><tr><th>支店</th><th>日当</th></tr>{rows}</table></body></html>",
        encoding="utf-8",
    )
    doc = load(path)
    chunker = make_chunker("recursive", max_size=200)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=200, chunker=chunker)
    repeated = [c for c in chunks if c.embed_text != c.text]
    assert len(repeated) >= 2
    for c in repeated:
        assert c.embed_text.startswith("| 支店 | 日当 |\n")
        assert c.embed_text.endswith(c.text) and not c.text.startswith("| 支店 | 日当 |")


@settings(max_examples=60, deadline=None)
@given(
    text=st.one_of(markdown_texts, csv_texts),
    max_size=st.integers(1, 120),
    data=st.data(),
)
def test_repeated_headers_keep_every_invariant(text: str, max_size: int, data) -> None:
    """Generated Markdown and CSV, every strategy that repeats headers, chars and tokens, overlap and
    ``min_size``: the invariants hold, and each ``embed_text`` is the text, or the header of the table it
    starts in followed by the text, within ``max_size``."""
    fmt = "csv" if data.draw(st.booleans()) and "," in text else "markdown"
    strategy = data.draw(st.sampled_from(STRATEGIES))
    unit = data.draw(st.sampled_from(["chars", "tokens"]))
    max_size = max(max_size, 4) if unit == "tokens" else max_size
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4]))
    min_size = data.draw(st.sampled_from([0, (max_size - overlap) // 3]))
    chunker = _chunker(strategy, max_size=max_size, overlap=overlap, min_size=min_size, unit=unit)
    doc = Document(text, id="doc", metadata={"format": fmt})
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, overlap=overlap, chunker=chunker)
    found = table_headers(doc.text, fmt)
    for c in chunks:
        if c.embed_text == c.text:
            continue
        assert found is not None
        assert c.embed_text == found.at(c.start) + c.text
        assert chunker.measure(c.embed_text) <= max_size


@pytest.mark.parametrize(
    ("strategy", "fmt"),
    [*((s, "markdown") for s in STRATEGIES), *((s, "text") for s in [*STRATEGIES, "markdown"])],
)
def test_a_row_that_fits_is_never_cut_at_the_sentences_in_its_cells(strategy: str, fmt: str) -> None:
    """Cells that hold sentences and clauses (``申請する。``, ``ためには、``): `paragraph`, `sentence` and
    `semantic` cut there, the row's last cells in the next chunk (in a plain text's table too)."""
    rows = "\n".join(
        f"| 手続き{i:02d} | 出張の{i}日前までに申請する。承認を得るためには、上長の確認が必要です。 | 経理課 |"
        for i in range(24)
    )
    text = f"# 出張手続き\n\n手続きの一覧を次に示す。\n\n| 手続き | 内容 | 窓口 |\n|---|---|---|\n{rows}\n"
    doc = Document(text, metadata={"format": fmt})
    for max_size in (120, 200, 333):
        chunker = _chunker(strategy, max_size=max_size)
        chunks = chunker.chunk(doc)
        check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
        offset = text.index(rows)
        for line in rows.splitlines():
            a = text.index(line, offset)
            assert any(c.start <= a and a + len(line) <= c.end for c in chunks), (max_size, line[:12])


def test_protected_spans_keep_a_heading_level_hard() -> None:
    """`Outside` around a heading level (rows kept whole in a Markdown file) still keeps its sections
    apart: the packer reads ``hard`` through it."""
    from kireme.boundaries.levels import PARAGRAPH, Outside, PositionLevel

    assert Outside(PositionLevel([5], "h2", hard=True), (1,), (3,)).hard
    assert not Outside(PARAGRAPH, (1,), (3,)).hard


def test_a_header_takes_at_most_a_third_of_a_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 40-character header at 100 characters (over a third): not repeated, the chunks as they were
    (rows keep their room, a group's rows stay together); at 120 (under a third) repeated."""
    doc = _allowance_doc()
    assert len(HEADER) == 40
    small = make_chunker("recursive", max_size=100)
    now = small.chunk(doc)
    assert all(c.embed_text == c.text for c in now)
    monkeypatch.setattr(type(small), "repeats_table_headers", False)
    assert now == small.chunk(doc)
    monkeypatch.undo()
    body, end = _body_start(doc)
    larger = make_chunker("recursive", max_size=120).chunk(doc)
    assert all(c.embed_text == HEADER + c.text for c in larger if body <= c.start < end)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_room_for_the_header_keeps_the_overlap_invariants(strategy: str) -> None:
    """With overlap the run of a table's chunks starts inside the chunk before it; packed again tighter,
    its first chunk ended inside that chunk (`semantic`, 400 with overlap 100 and min_size 100: chunks
    ``[23, 331)`` then ``[238, 331)``). Such a run stays as it was; every configuration keeps the
    invariants and every ``embed_text`` its limit."""
    two_tables = _allowance_doc().text + f"\n## 宿泊\n\n{HEADER}{_rows(18)}\n\n以上。\n"
    for text in (_allowance_doc().text, two_tables):
        doc = Document(text, id="allowance.md", metadata={"format": "markdown"})
        for max_size, overlap, min_size in [
            (400, 100, 100),
            (300, 80, 60),
            (300, 50, 0),
            (200, 60, 40),
            (150, 20, 0),
        ]:
            chunker = _chunker(strategy, max_size=max_size, overlap=overlap, min_size=min_size)
            chunks = chunker.chunk(doc)
            check_invariants(doc, chunks, max_size=max_size, overlap=overlap, chunker=chunker)
            assert all(len(c.embed_text) <= max_size for c in chunks)


_cells = st.text(alphabet="出張日当東京大阪円0123456789、。 abc", min_size=0, max_size=14)


@st.composite
def _table_docs(draw: st.DrawFn) -> str:
    """Prose, then one or two pipe tables of generated cells (sentences and clauses in them), then prose."""
    parts = [draw(st.sampled_from(["# 手当\n\n", "", "前文です。\n\n"]))]
    for _ in range(draw(st.integers(1, 2))):
        width = draw(st.integers(1, 4))
        header = "| " + " | ".join(f"列{i}" + " " * draw(st.integers(0, 6)) for i in range(width)) + " |\n"
        header += "|" + "|".join("-" * draw(st.integers(3, 12)) for _ in range(width)) + "|\n"
        rows = [
            "| " + " | ".join(draw(_cells) for _ in range(width)) + " |"
            for _ in range(draw(st.integers(1, 25)))
        ]
        parts.append(header + "\n".join(rows) + "\n\n" + draw(st.sampled_from(["", "後の段落です。\n\n"])))
    return "".join(parts)


@settings(max_examples=300, deadline=None)
@given(text=_table_docs(), max_size=st.integers(20, 300), data=st.data())
def test_generated_tables_keep_every_invariant(text: str, max_size: int, data) -> None:
    """Generated tables (padded headers, cells with sentences and clauses, one or two tables) in every
    strategy that repeats headers, with overlap and ``min_size``, in characters and tokens, in Markdown and
    in plain text."""
    fmt = data.draw(st.sampled_from(["markdown", "text"]))
    strategy = data.draw(st.sampled_from(STRATEGIES if fmt == "markdown" else [*STRATEGIES, "markdown"]))
    unit = data.draw(st.sampled_from(["chars", "tokens"]))
    overlap = data.draw(st.sampled_from([0, max_size // 4, max_size // 3]))
    min_size = data.draw(st.sampled_from([0, (max_size - overlap) // 3]))
    chunker = _chunker(strategy, max_size=max_size, overlap=overlap, min_size=min_size, unit=unit)
    doc = Document(text, id="doc", metadata={"format": fmt})
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, overlap=overlap, chunker=chunker)
    found = table_headers(text, fmt)
    for c in chunks:
        assert chunker.measure(c.embed_text) <= max_size
        if c.embed_text != c.text:
            assert found is not None and c.embed_text == found.at(c.start) + c.text


# A travel-expense rule whose table follows its paragraph's last line directly (no blank line: GFM lets a
# table interrupt a paragraph). At 120 characters the paragraph and the header line fit one chunk.
_RULE_WITH_TABLE = (
    "# 出張旅費規程\n\n"
    "第5条 出張旅費は、交通費、日当及び宿泊料とする。日当は出張の日数に応じて支給する。"
    "宿泊料は実際に宿泊した夜数に応じて支給する。なお、役員の出張については別に定める。\n"
    "| 区分 | 日当 | 宿泊料 |\n|---|---|---|\n"
    "| 部長 | 3,000円 | 12,000円 |\n| 課長 | 2,500円 | 11,000円 |\n| 一般職員 | 2,000円 | 10,000円 |\n\n"
    "第6条 前条の規定にかかわらず、日帰りの出張については宿泊料を支給しない。\n"
)


def _header_and_first_row(text: str) -> tuple[int, int]:
    from kireme.text.markdown import markdown_outline

    (table,) = markdown_outline(text, warn=False).tables
    return table.header[0], table.rows[0].end


@pytest.mark.parametrize(
    ("strategy", "fmt"),
    [*((s, "markdown") for s in [*STRATEGIES, "markdown"]), *((s, "text") for s in STRATEGIES)],
)
@pytest.mark.parametrize("max_size", [100, 120, 140, 160])
def test_a_table_under_a_paragraph_line_keeps_its_header_with_its_first_row(
    strategy: str, fmt: str, max_size: int
) -> None:
    """Before: `recursive` packed the header line with the paragraph (``…別に定める。\\n| 区分 | 日当 |
    宿泊料 |``) and started the next chunk at the delimiter row, the rows without their column names (in
    a plain text's table until its tables were read)."""
    doc = Document(_RULE_WITH_TABLE, id="rule", metadata={"format": fmt})
    chunker = _chunker(strategy, max_size=max_size)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    start, end = _header_and_first_row(doc.text)
    assert not [c for c in chunks if start < c.end < end or start < c.start < end]
    holder = next(c for c in chunks if c.start <= start < c.end)
    assert "| 区分 | 日当 | 宿泊料 |\n|---|---|---|\n| 部長 |" in holder.text


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_header_too_large_with_its_first_row_is_still_kept_whole(strategy: str) -> None:
    """A header that fits a chunk but not with its (long) first row is still never cut inside."""
    long_row = "| 部長 | 3,000円 | 役員会で別に定める額とし、出張の目的及び日数に応じて加算することがある。 |"
    text = _RULE_WITH_TABLE.replace("| 部長 | 3,000円 | 12,000円 |", long_row)
    doc = Document(text, id="rule.md", metadata={"format": "markdown"})
    chunker = _chunker(strategy, max_size=70)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=70, chunker=chunker)
    start, row_end = _header_and_first_row(text)
    header_end = text.index("|---|---|---|") + len("|---|---|---|")
    assert row_end - start > 70 >= header_end - start
    assert not [c for c in chunks if start < c.end < header_end]


_lead = st.sampled_from(
    ["", "# 手当\n\n", "前文です。\n", "支給額は次の表のとおりとする。\n", "前文です。\n\n"]
)


def test_room_for_a_header_does_not_cut_the_next_tables_header_and_first_row() -> None:
    """Found by the property below: making room for the first table's repeated header (overlap 12, 51
    characters) packed its last chunk again into the second table, cutting that table's first row
    (``|  |`` ‖ ``|``); the header gives way instead, as it does to a row."""
    text = "# 手当\n\n| 列0 |\n|---|\n" + "|  |\n" * 7 + "\n| 列0 | 列1 |\n|---|---|\n|  |  |\n\n"
    doc = Document(text, id="doc", metadata={"format": "markdown"})
    chunker = _chunker("recursive", max_size=51, overlap=12)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=51, overlap=12, chunker=chunker)
    start = text.index("| 列0 | 列1 |")
    end = text.index("|  |  |") + len("|  |  |")
    assert not [c for c in chunks if start < c.end < end or start < c.start < end]


@settings(max_examples=200, deadline=None)
@given(lead=_lead, rest=_table_docs(), max_size=st.integers(20, 300), data=st.data())
def test_generated_headers_are_never_parted_from_their_first_row(
    lead: str, rest: str, max_size: int, data
) -> None:
    """Property: wherever a table's header and first row fit a chunk with its overlap, no chunk starts or
    ends between them (tables right under a text line included), in every strategy that repeats headers."""
    from kireme.text.markdown import markdown_outline

    text = lead + rest
    strategy = data.draw(st.sampled_from(STRATEGIES))
    overlap = data.draw(st.sampled_from([0, max_size // 4]))
    chunker = _chunker(strategy, max_size=max_size, overlap=overlap)
    doc = Document(text, id="doc", metadata={"format": data.draw(st.sampled_from(["markdown", "text"]))})
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, overlap=overlap, chunker=chunker)
    for table in markdown_outline(text, warn=False).tables:
        start, end = table.header[0], table.rows[0].end
        if end - start <= max_size - overlap:
            assert not [c for c in chunks if start < c.end < end or start < c.start < end]


def _approvals_doc() -> Document:
    rows = "\n".join(f"| 申請{i} | 部署{i}の課長 | {i}日以内 | 可 |" for i in range(1, 9))
    text = (
        "# 申請の一覧\n\n各申請の承認者と期限は次のとおりとする。\n\n"
        "| 申請の種類 | 承認者 | 提出期限 | 代理申請できる？ |\n|---|---|---|---|\n" + rows + "\n\n以上。\n"
    )
    return Document(text, id="approvals.md", metadata={"format": "markdown"})


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("max_size", [100, 200, 300])
def test_a_question_mark_in_a_header_cell_does_not_end_a_chunk(strategy: str, max_size: int) -> None:
    """Before: `sentence`, `paragraph` and `semantic` ended a chunk at ``代理申請できる？`` at every size, the
    header's closing ``|`` and delimiter row starting the next chunk."""
    doc = _approvals_doc()
    chunker = _chunker(strategy, max_size=max_size)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    start, end = _header_and_first_row(doc.text)
    assert not [c for c in chunks if start < c.end < end or start < c.start < end]


_ALLOWANCE_PROSE = (
    "出張の日当は、出張の日数に応じて支給する。半日の出張には半額を支給する。"
    "日当には昼食代及び現地での交通費を含むものとし、別に請求することはできない。"
    "宿泊を伴う出張では、宿泊料を実費で精算する。領収書は帰着後十四日以内に提出する。"
)


@pytest.mark.parametrize("fmt", ["markdown", "text"])
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("max_size", [110, 120, 130])
def test_a_table_keeps_the_line_that_introduces_it(strategy: str, max_size: int, fmt: str) -> None:
    """The lead-in ``…次の表のとおりとする：`` goes with the table's header and first row where the three fit:
    before, `paragraph`, `sentence` and `semantic` ended a chunk with it at 120 characters, the table it
    announces in the next chunk."""
    text = (
        f"# 日当\n\n{_ALLOWANCE_PROSE}\n\n{_ALLOWANCE_PROSE.replace('出張', '海外出張')}\n\n"
        "役職ごとの日当の額は、次の表のとおりとする：\n\n"
        "| 区分 | 国内 | 海外 |\n|---|---|---|\n| 部長 | 3,000円 | 6,000円 |\n| 課長 | 2,500円 | 5,000円 |\n"
        "| 一般職員 | 2,000円 | 4,000円 |\n"
    )
    doc = Document(text, id="allowance", metadata={"format": fmt})
    chunker = _chunker(strategy, max_size=max_size)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    lead, table = text.index("役職ごと"), text.index("| 区分")
    assert not [c for c in chunks if lead < c.end <= table]
    holder = next(c for c in chunks if c.start <= lead < c.end)
    assert "次の表のとおりとする：\n\n| 区分 | 国内 | 海外 |\n|---|---|---|\n| 部長 |" in holder.text


# --- pipe tables in plain text ---------------------------------------------------------------------------

_PLAIN_NOTES = (
    "出張の精算メモ\n"
    "精算は cat receipts.txt | sort のように並べてから行う。\n"
    "- | 金額（千円）\n"
    "2024年度 | 1,200\n\n"
    "日当の表：\n"
    "| 区分 | 日当 |\n"
    "|:---|---:|\n"
    "| 部長 | 3,000円 |\n"
    "| 課長 | 2,500円 |\n\n"
    "宿泊料 | 上限\r\n"
    "--- | ---\r\n"
    "東京 | 12,000円\r\n"
    "大阪 | 11,000円"
)


def test_a_plain_texts_pipe_tables_are_read_with_exact_offsets() -> None:
    """A pipe table under a colon line, one without outer pipes in CRLF at the end of the text; a shell
    pipe and pipe-separated lines without a delimiter row are no table."""
    from kireme.text.markdown import plain_text_tables

    text = _PLAIN_NOTES
    first, second = plain_text_tables(text)
    assert (
        text[first.start : first.end]
        == "| 区分 | 日当 |\n|:---|---:|\n| 部長 | 3,000円 |\n| 課長 | 2,500円 |"
    )
    assert text[slice(*first.header)] == "| 区分 | 日当 |\n|:---|---:|"
    assert first.columns == ("区分", "日当")
    assert [r.cells for r in first.rows] == [("部長", "3,000円"), ("課長", "2,500円")]
    assert (
        text[second.start : second.end] == "宿泊料 | 上限\r\n--- | ---\r\n東京 | 12,000円\r\n大阪 | 11,000円"
    )
    assert [text[r.start : r.end] for r in second.rows] == ["東京 | 12,000円", "大阪 | 11,000円"]
    assert plain_text_tables("精算は cat a.txt | sort で並べる。\n- | 金額\n2024年度 | 1,200\n") == ()
    assert (
        plain_text_tables("") == () and plain_text_tables("|") == () and plain_text_tables("| a |\n|-|") != ()
    )


_plain_lines = st.sampled_from(
    [
        "",
        "  ",
        "出張の日当は次のとおり。",
        "Travel costs are paid monthly:",
        "| 区分 | 日当 |",
        "| 部長 | 3,000円 |",
        "区分 | 日当",
        "a | b | c",
        "|---|---|",
        "|:--|--:|",
        "--- | ---",
        " |---| ",
        "|-|-|",
        "|---|",
        "| x |",
        "---",
        "cat a | sort",
        "| 課長 | 2,500円 | 超過分 |",
        "|  |",
        "|",
        "   | 字下げ三つ |",
        "| a \\| b |",
        "| **太字** | `x|y` |",
        "| [規程](rules.md) | &amp; |",
        "| 一 | 二 | 三 | 四 |",
        "|　全角　|",
    ]
)
# lines a plain text reads otherwise than Markdown (block syntax), tabs, deep indentation
_other_lines = st.sampled_from(
    [
        "- 項目",
        "- | 金額",
        "> 引用",
        "# 見出し",
        "```",
        "    | 字下げ四つ |",
        "\t| タブ |",
        "|\t---|",
        "\u3000| 全角空白 |",
        "1. | 番号 |",
        "<div>",
        "[規程]: rules.md",
    ]
)


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(_plain_lines, max_size=14), crlf=st.booleans(), last_break=st.booleans())
def test_a_plain_texts_tables_are_the_ones_markdown_reads(
    lines: list[str], crlf: bool, last_break: bool
) -> None:
    """Property: on texts of lines a plain text and Markdown read alike (prose, pipe rows, delimiter rows,
    blank lines; no other block syntax), the tables found line by line are where markdown-it reads tables
    in the whole text as Markdown, with the same rows and columns; the cells too, but where Markdown reads
    inline syntax (a plain text's cells are as written: ``**太字**`` stays)."""
    from kireme.text.markdown import _plain_text_tables, markdown_outline, plain_text_tables

    text = ("\r\n" if crlf else "\n").join(lines) + ("\n" if last_break and lines else "")
    _plain_text_tables.cache_clear()
    found, parsed = plain_text_tables(text), markdown_outline(text, warn=False).tables
    assert [_shape(t) for t in found] == [_shape(t) for t in parsed]
    if not any(mark in text for mark in "!&*<[\\]_`"):  # no inline syntax: the cells read alike too
        assert found == parsed


def _shape(table):
    """Where a table, its header and each of its rows are, and how many columns it has."""
    return table.start, table.end, table.header, len(table.columns), [(r.start, r.end) for r in table.rows]


def _parser_tables(text: str) -> list[tuple]:
    """The reference: from each line holding ``|`` over a line of pipes, dashes, colons and blanks, outside
    the table before it, markdown-it (CommonMark + GFM tables, as it is) reads the rest of the text; where
    its first block is a table, that table's shape (`_shape`) and its cells (the parser's inline contents:
    as written, trimmed, ``\\|`` read as ``|``)."""
    import re as re_module

    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    starts = [0, *(m.end() for m in re_module.finditer("\n", text))]
    lines = text.split("\n")

    def span(first: int, last: int) -> tuple[int, int]:  # lines [first, last) without the last line break
        end = starts[last] - 1 if last < len(starts) else len(text)
        return starts[first], end - (text[end - 1 : end] == "\r" and end > starts[first])

    found: list[tuple] = []
    end = 0
    for i in range(len(lines) - 1):
        if (
            starts[i] < end
            or "|" not in lines[i]
            or not re_module.fullmatch(r"[ \t]*[|\-:][|\-: \t]*\r?", lines[i + 1])
        ):
            continue
        tokens = md.parse(text[starts[i] :])
        if not tokens or tokens[0].type != "table_open":
            continue
        close = next(k for k, t in enumerate(tokens) if t.type == "table_close")
        table = tokens[: close + 1]
        first, last = table[0].map
        rows: list[tuple[int, int]] = []
        cells: list[list[str]] = []
        for tok in table:
            if tok.type == "tr_open":
                cells.append([])
                if tok.map[0] >= first + 2:  # a body row (the header's is the first line)
                    rows.append(span(i + tok.map[0], i + tok.map[1]))
            elif tok.type == "inline":
                cells[-1].append(tok.content)
        start, stop = span(i + first, i + last)
        header = (start, span(i + first, i + first + 2)[1])
        found.append((start, stop, header, len(cells[0]), rows, cells))
        end = stop
    return found


def _read(text: str) -> list[tuple]:
    from kireme.text.markdown import _plain_text_tables, plain_text_tables

    _plain_text_tables.cache_clear()
    tables = plain_text_tables(text)
    _plain_text_tables.cache_clear()
    return [(*_shape(t), [list(t.columns), *(list(r.cells) for r in t.rows)]) for t in tables]


@settings(max_examples=500, deadline=None)
@given(
    lines=st.lists(st.one_of(_plain_lines, _other_lines), max_size=14),
    crlf=st.booleans(),
    last_break=st.booleans(),
)
def test_a_plain_texts_tables_are_the_parsers_reading_from_each_header(
    lines: list[str], crlf: bool, last_break: bool
) -> None:
    """Property: the tables read line by line (`_table_columns` at each header line, `_is_row` for each line
    after the delimiter row, the parser asked only of a line that may open a block) are what markdown-it
    reads from each such header line: offsets, header, rows, columns and every cell."""
    text = ("\r\n" if crlf else "\n").join(lines) + ("\n" if last_break and lines else "")
    assert _read(text) == [(*t[:5], t[5]) for t in _parser_tables(text)]


_HEADS = [
    "| 区分 | 日当 |",
    "区分 | 日当",
    "   | 区分 | 日当 |",
    "    | 区分 | 日当 |",
    "\t| 区分 | 日当 |",
    "|",
    "| a \\| b |",
    "\\| 区分 | 日当 |",
    "| 区分 | 日当 | 備考 |",
]
_DELIMITERS = [
    "|---|---|",
    "| --- | --- |",
    "---|---",
    "- | ---",
    "-|-",
    " |:-|-:| ",
    "   |---|---|",
    "    |---|---|",
    "|---|",
    "|-",
    "||",
    "|---||---|",
]
_BODIES = [
    "| 部長 | 3,000円 |",
    "   | 課長 |",
    "    | 字下げ四つ |",
    "部長 | 3,000円",
    "| \x1c区分\x1c | 　全角　 |",
    "| **太字** | `x|y` |",
    "|",
    "- 項目",
    "> 引用",
    "",
    "| a \\| b | c \\\\| d |",
    "| \\|先頭 |",
    "-->",
    "---",
    "- - -",
    "***",
    "*強調* | x",
    "-1 | x",
    "+ 項目",
    "-\t項目",
    "+x | y",
    "1. 番号",
    "1.5 | x",
    "12) 番号",
    "#[meta] | 属性",
    "## 見出し",
    "\u3000",
    "_ _ _",
    "__init__ | x",
    "`code` | x",
    "<!-- メモ -->",
    "[規程]: rules.md",
    "=== | x",
]


def test_every_header_delimiter_and_rows_read_as_the_parser_reads_them() -> None:
    """Every header line, delimiter row and one or two rows of the lists above, with line feeds or CRLF:
    read as markdown-it reads them (`_parser_tables`)."""
    read = 0
    for head in _HEADS:
        for delimiter in _DELIMITERS:
            for rows in [[], *([row] for row in _BODIES), *([a, b] for a in _BODIES[:6] for b in _BODIES)]:
                for newline in ("\n", "\r\n"):
                    text = newline.join(["前文です。", head, delimiter, *rows, "", "後文です。"])
                    expected = _parser_tables(text)
                    assert _read(text) == [(*t[:5], t[5]) for t in expected], repr(text)
                    read += bool(expected)
    assert read > 500  # tables were read, not only turned down


def test_a_line_the_parser_reads_as_two_ends_a_table() -> None:
    """A lone carriage return (the parser reads the line as two) ends the table before its line, and a
    header or delimiter row holding one starts none; NUL in a cell is kept as written."""
    from kireme.text.markdown import _plain_text_tables, plain_text_tables

    text = "| 区分 | 日当 |\n|---|---|\n| 部長 | 3,000円 |\n| 課長\r | 2,500円 |\n| 係長 | 2,200円 |\n"
    _plain_text_tables.cache_clear()
    (table,) = plain_text_tables(text)
    assert [r.cells for r in table.rows] == [("部長", "3,000円")]
    assert plain_text_tables("| 区分\r | 日当 |\n|---|---|\n| 部長 | 3,000円 |\n") == ()
    assert plain_text_tables("| 区分 | 日当 |\n|---|---|\n| 部長\x00 | 3,000円 |\n")[0].rows[0].cells == (
        "部長\x00",
        "3,000円",
    )


def test_reading_a_plain_texts_tables_takes_linear_time() -> None:
    """Thousands of tables, each ended by a list item, and a table of thousands of rows the parser is asked
    about (``<b>``): the first version parsed up to the next blank line for each table (24,000 characters
    took 52 s), and looked for each table's lead-in line up through every table before it (6 s to chunk
    48,000 characters); now each line is read once or twice."""
    import time

    from kireme.text.markdown import plain_text_tables

    many = "a|b\n-|-\n- x\n" * 4000
    long = "a|b\n-|-\n" + "<b>x</b> | y\n" * 3000
    started = time.process_time()
    assert len(plain_text_tables(many)) == 4000
    assert len(plain_text_tables(long)[0].rows) == 3000
    # chunked: the line that introduces each table is looked for above it, not above the table before
    for strategy in ("recursive", "paragraph"):
        chunker = make_chunker(strategy, max_size=200)
        doc = Document(many, id="many")
        check_invariants(doc, chunker.chunk(doc), max_size=200, chunker=chunker)
    assert time.process_time() - started < 30  # linear: about a second here; quadratic: minutes


def test_a_table_of_pipe_rows_is_read_without_the_parser() -> None:
    """The rows of the tables a plain text holds most often start with a pipe: read without markdown-it
    (about 1 ms a table there); only a line that may open another block goes to the parser. Whether a line
    starts a table at all is the table rule's answer at it (`_table_columns`)."""
    from unittest import mock

    from kireme.text import markdown
    from kireme.text.markdown import _read_table, _table_columns

    text = "日当の表：\n| 区分 | 日当 |\n|---|---:|\n| 部長 | **3,000円** |\n| 課長 |\n課長代理 | 2,400円\n\n以上。"
    start = text.index("| 区分")
    line_feed = text.index("\n|---")
    row_end = text.index("\n", line_feed + 1)
    assert _table_columns("| 区分 | 日当 |", "|---|---:|") == 2
    assert _table_columns("| 区分 | 日当 |", "|---|") == 0  # one alignment for two columns: no table
    assert _table_columns("    | 区分 |", "|---|") == 0  # indented code
    assert _table_columns("\t| 区分 |", "|---|") == 0  # a tab reaches the fourth column: code
    with mock.patch.object(markdown, "_parser", side_effect=AssertionError("parser asked")):
        table = _read_table(text, start, line_feed, row_end, 2)
    assert table.columns == ("区分", "日当")
    assert [row.cells for row in table.rows] == [
        ("部長", "**3,000円**"),
        ("課長", ""),
        ("課長代理", "2,400円"),
    ]
    assert text[table.start : table.end].endswith("| 課長 |\n課長代理 | 2,400円")


def test_the_table_modes_read_a_plain_texts_table() -> None:
    """`markdown`'s ``table`` modes on a plain text's pipe table: ``fill-down`` fills a blank 区分 from the
    row above in ``embed_text`` (``text`` stays the source), ``records`` writes each row as name: value
    lines — before, a plain text had no table for them to read."""
    text = (
        "役職と地域ごとの日当は次のとおり。\n\n| 区分 | 地域 | 日当 |\n|---|---|---|\n"
        "| 部長 | 東京 | 3,000円 |\n|  | 大阪 | 2,800円 |\n| 課長 | 東京 | 2,500円 |\n|  | 大阪 | 2,300円 |\n"
    )
    doc = Document(text, id="allowance.txt", metadata={"format": "text"})
    chunker = make_chunker("markdown", max_size=60, table="fill-down")
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=60, chunker=chunker)
    (osaka,) = [c for c in chunks if c.text == "|  | 大阪 | 2,300円 |"]
    assert osaka.embed_text.endswith("| 区分 | 地域 | 日当 |\n|---|---|---|\n| 課長 | 大阪 | 2,300円 |")
    records = make_chunker("markdown", max_size=60, table="records").chunk(doc)
    assert any(c.embed_text.endswith("区分: 部長\n地域: 東京\n日当: 3,000円") for c in records)


def test_kireme_chunk_on_a_txt_file_repeats_a_tables_header(tmp_path) -> None:
    """Through the command line: ``kireme chunk notes.txt`` gives the chunks of a plain text's later rows
    the table's header in their ``embed_text``; the text and its offsets stay the file's."""
    import json
    import os
    import subprocess
    import sys

    text = _allowance_doc(fmt="text").text
    (tmp_path / "notes.txt").write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "KIREME_CHAT"))}
    done = subprocess.run(
        [sys.executable, "-m", "kireme.cli", "chunk", "notes.txt", "--max-size", "300", "--format", "jsonl"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    chunks = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(text[c["start"] : c["end"]] == c["text"] for c in chunks)
    among_rows = [c for c in chunks if c["text"].startswith("| 支店") and "|---|" not in c["text"]]
    assert len(among_rows) >= 2
    assert all(c["embed_text"] == HEADER + c["text"] for c in among_rows)
