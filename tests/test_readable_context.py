"""What a passage cut out of a code block or a table needs to be read as one.

Code: a fence line is never passed alone nor as a passage's edge (`kireme.assemble._Reading`), and the
passages a chat model reads carry the fences of the code block they start or end inside
(`kireme.text.markdown.fences_around`, `kireme.index.passages.render_passages`), so a passage cut out of a
code block keeps its language and the next passage's citation is never read as code. Tables: a passage
that starts among a table's rows gets the table's header above it in that prompt
(`kireme.text.markdown.table_header_for`), so its values keep their column names."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from tests.stored_hits import stored_hits

from kireme.assemble import Assembler, Ranked, _Reading
from kireme.document import Document
from kireme.errors import ConfigError
from kireme.index.passages import render_passages
from kireme.strategies import make_chunker
from kireme.structure.layout import document_outline
from kireme.text.markdown import fenced_blocks, fenced_code, fences_around, markdown_outline, table_header_for

# A styling guide of ours with code blocks: top level, in a list item, a tilde fence, one left open at the end
STYLE_GUIDE = """## 見出しの体裁

見出しの余白は css で指定します。本文との間隔を広げすぎないでください。

```css
h2 { margin-top: 10px; margin-bottom: 0; }
h3 { margin-top: 5px; font-size: 100%; }
img { width: 120px; height: 120px; }
```

ボタンの体裁も css で揃えます。

- 手順:

  ```sh
  npm run build:css
  npm run check:css
  ```

~~~python
def render(page):
    return template.format(page=page)
~~~

最後に css の確認用コマンドを実行します。

```sh
npm run lint:css
"""

CSS_BLOCK_QUERY = "css 見出し 余白"


def _blocks(text: str) -> list[tuple[int, int]]:
    return fenced_code(text)


def _is_fence_line(line: str) -> bool:
    return re.fullmatch(r"[ \t>]*(?:`{3,}|~{3,})[^\n]*", line) is not None


def test_a_fence_line_goes_with_the_line_of_code_next_to_it() -> None:
    code = _blocks(STYLE_GUIDE)
    assert len(code) == 4
    units = _Reading(STYLE_GUIDE, code).units(0, len(STYLE_GUIDE))
    texts = [STYLE_GUIDE[s:e] for s, e in units]
    assert "```css\nh2 { margin-top: 10px; margin-bottom: 0; }" in texts
    assert "img { width: 120px; height: 120px; }\n```" in texts
    assert "```sh\n  npm run build:css" in texts and "npm run check:css\n  ```" in texts
    assert "return template.format(page=page)\n~~~" in texts
    assert "```sh\nnpm run lint:css" in texts  # never closed: only its opening goes with its line
    assert not any(_is_fence_line(t) for t in texts)
    quoted = "引用です。\n\n> ```txt\n> 一行目\n> 二行目\n> ```\n"
    quoted_units = [quoted[s:e] for s, e in _Reading(quoted, fenced_code(quoted)).units(0, len(quoted))]
    assert quoted_units == ["引用です。", "> ```txt\n> 一行目", "> 二行目\n> ```"]
    # a stretch that starts inside a block steps by its lines as before
    inner = STYLE_GUIDE.index("h3 {")
    assert STYLE_GUIDE[slice(*_Reading(STYLE_GUIDE, code).units(inner, code[0][1])[0])].startswith("h3 {")


@settings(max_examples=120, deadline=None)
@given(size=st.integers(30, 140), budget=st.integers(15, 400), seed=st.randoms())
def test_no_passage_is_a_fence_alone_nor_starts_or_ends_at_one(size: int, budget: int, seed: object) -> None:
    text = STYLE_GUIDE
    code = _blocks(text)
    doc = Document(text, id="guide", metadata={"format": "markdown"})
    chunks = make_chunker("recursive", max_size=size).chunk(doc)
    ranked = [Ranked(c.doc_id, c.start, c.end, c.text, c.headings) for c in chunks]
    seed.shuffle(ranked)  # type: ignore[attr-defined]
    try:
        made = Assembler({"guide": text}.get, code=lambda _d: code).assemble(ranked, budget, CSS_BLOCK_QUERY)
    except ConfigError:
        return
    assert made.size <= budget
    hits = {(r.start, r.end) for r in ranked}
    for span in made.spans:
        assert text[span.start : span.end] == span.text
        lines = [line for line in span.text.splitlines() if line.strip()]
        assert not all(_is_fence_line(line) for line in lines), span.text
        if (span.start, span.end) in hits:
            continue  # a hit passed as it is: the chunker's cut (it glues fences to their code too)
        for cs, ce in code:
            # starts inside a block (past its opening fence, not only its indentation): not at its closing fence
            if cs < span.start < ce and text[cs : span.start].strip():
                assert not _is_fence_line(lines[0]), span.text
            if cs < span.end <= ce and span.end < ce - 3:  # ends inside: not at its opening fence
                assert not _is_fence_line(lines[-1]), span.text


def test_a_span_cut_out_of_a_code_block_gets_its_fences() -> None:
    text = STYLE_GUIDE
    code = _blocks(text)
    blocks = fenced_blocks(text)
    inner = text.index("h3 {")
    inner_end = text.index("100%; }") + len("100%; }")
    assert fences_around(blocks, inner, inner_end) == ("```css\n", "\n```")
    # from the opening fence on: only the closing one
    assert fences_around(blocks, code[0][0], inner_end) == ("", "\n```")
    # from inside to past the closing fence: only the opening one
    assert fences_around(blocks, inner, code[0][1]) == ("```css\n", "")
    # the whole block, or prose around it: nothing
    assert fences_around(blocks, code[0][0], code[0][1]) == ("", "")
    assert fences_around(blocks, 0, text.index("```css") - 2) == ("", "")
    # a block in a list item: its fences indented as its own are
    build = text.index("npm run build:css")
    assert fences_around(blocks, build, build + len("npm run build:css")) == ("  ```sh\n", "\n  ```")
    # a tilde fence, and a span from the first block into the second
    ret = text.index("return template")
    assert fences_around(blocks, ret, ret + 10) == ("~~~python\n", "\n~~~")
    assert fences_around(blocks, inner, build + 5) == ("```css\n", "\n  ```")
    # a block never closed: whatever part of it is passed is closed
    lint = text.index("npm run lint:css")
    assert fences_around(blocks, code[3][0], len(text.rstrip())) == ("", "\n```")
    assert fences_around(blocks, lint, len(text.rstrip())) == ("```sh\n", "\n```")


_PIECES = [
    "本文の段落です。",
    "```js\nconst a = 1;\nconst b = 2;\n```",
    "```\nplain one\nplain two\nplain three\n```",
    "~~~~ py\nx = 1\n```\ny = 2\n~~~~",
    "- 項目\n\n  ```sh\n  echo one\n  echo two\n  ```",
    "- ```js\n  const c = 3;\n  const d = 4;\n  ```",
    "1. ```py\n   x = 1\n   y = 2",
    "> ```txt\n> quoted one\n> quoted two\n> ```",
    "```md\n# not a heading\n\ntext\n```",
    "## 見出し",
]


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6),
    unclosed=st.booleans(),
    data=st.data(),
)
def test_the_next_citation_is_never_read_as_code(
    pieces: list[str], unclosed: bool, data: st.DataObject
) -> None:
    """Whatever lines of a Markdown text a passage holds, the passage with its fences, followed by the
    next passage's citation line, leaves that line outside any code (as markdown-it reads it)."""
    text = "\n\n".join(pieces) + ("\n\n```rb\nputs 1\nputs 2\n" if unclosed else "\n")
    lines = [m.span() for m in re.finditer(r"[^\n]+", text) if m.group().strip()]
    i = data.draw(st.integers(0, len(lines) - 1))
    j = data.draw(st.integers(i, len(lines) - 1))
    start = lines[i][0] + len(text[lines[i][0] : lines[i][1]]) - len(text[lines[i][0] : lines[i][1]].lstrip())
    end = lines[j][1]
    before, after = fences_around(fenced_blocks(text), start, end)
    prompt = "[1] guide.md\n" + before + text[start:end] + after + "\n\n[2] next.md — 次の節\n本文。\n"
    tokens = MarkdownIt("commonmark").parse(prompt)
    last = prompt.count("\n") - 2  # the line of the second citation
    for t in tokens:
        if t.type in ("fence", "code_block") and t.map is not None:
            assert not (t.map[0] <= last < t.map[1]), prompt


def test_the_prompt_of_ask_closes_what_a_passage_opens() -> None:
    """`render_passages` (what `kireme ask` and ``POST /ask`` send): a passage that stops inside a code
    block is closed before the next citation, and one that starts inside it says its language."""
    text = STYLE_GUIDE
    doc = Document(text, id="guide", metadata={"format": "markdown"})
    chunks = make_chunker("recursive", max_size=40).chunk(doc)
    # the CSS block's middle lines first, then the rest
    chunks.sort(key=lambda c: ("h3 {" not in c.text, c.start))
    hits = stored_hits(chunks, source="docs/style.md")
    seen = 0
    for budget in (30, 45, 60, 90, 150):
        rendered = render_passages(hits, budget, {"guide": text}.get, query="h3 余白")
        assert rendered.tokens <= budget
        prompt = rendered.text + "\n\n[9] next.md\n本文。\n"
        last = prompt.count("\n") - 2
        tokens = MarkdownIt("commonmark").parse(prompt)
        fences = [t for t in tokens if t.type == "fence" and t.map is not None]
        assert not any(t.map[0] <= last < t.map[1] for t in fences), prompt  # type: ignore[index]
        if "h3 {" in rendered.text:  # the CSS read as CSS, wherever the passage starts
            seen += 1
            assert any(t.info == "css" and "h3 {" in t.content for t in fences), prompt
    assert seen >= 3


# ---------------------------------------------------------------------------------------------- tables

# Our own allowance table, and a CSV of the same kind
ALLOWANCE = """## 日当

日当は次の表のとおりとする。

| 区分 | 地域 | 日当 | 備考 |
| --- | --- | --- | --- |
| 部長 | 国内 | 3,000円 | 半日は半額 |
| 部長 | 海外 | 6,000円 | 現地通貨で支給 |
| 一般社員 | 国内 | 2,000円 | 半日は半額 |
| 一般社員 | 海外 | 4,500円 | 現地通貨で支給 |

日当は出張の日数に応じて支給する。
"""

STAFF_CSV = "氏名,部署,内線\n山田花子,総務,101\n佐藤一郎,経理,102\n鈴木次郎,営業,103\n"


def test_a_passage_among_a_tables_rows_gets_its_header() -> None:
    tables = markdown_outline(ALLOWANCE, warn=False).tables
    header = "| 区分 | 地域 | 日当 | 備考 |\n| --- | --- | --- | --- |\n"
    row = ALLOWANCE.index("| 一般社員 | 国内")
    assert table_header_for(ALLOWANCE, tables, row) == header
    # from the table's first line, or outside it: nothing to add
    assert table_header_for(ALLOWANCE, tables, ALLOWANCE.index("| 区分")) == ""
    assert table_header_for(ALLOWANCE, tables, ALLOWANCE.index("日当は出張")) == ""
    assert table_header_for(ALLOWANCE, tables, 0) == ""
    # from the delimiter row: the header line above it
    assert table_header_for(ALLOWANCE, tables, ALLOWANCE.index("| ---")) == "| 区分 | 地域 | 日当 | 備考 |\n"
    # a CSV file is one table: its header record
    csv_tables = document_outline(Document(STAFF_CSV, id="staff", metadata={"format": "csv"})).tables
    assert table_header_for(STAFF_CSV, csv_tables, STAFF_CSV.index("佐藤")) == "氏名,部署,内線\n"


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_rows_with_their_header_read_as_the_table(data: st.DataObject) -> None:
    """Any run of a table's body rows, with the header put above it, is read (by markdown-it) as a table
    whose column names are the table's and whose rows are those rows."""
    text = ALLOWANCE
    (table,) = markdown_outline(text, warn=False).tables
    i = data.draw(st.integers(0, len(table.rows) - 1))
    j = data.draw(st.integers(i, len(table.rows) - 1))
    start, end = table.rows[i].start, table.rows[j].end
    prompt = table_header_for(text, [table], start) + text[start:end]
    tokens = MarkdownIt("commonmark").enable("table").parse(prompt)
    heads = [tokens[k + 1].content for k, t in enumerate(tokens) if t.type == "th_open"]
    assert heads == list(table.columns)
    cells = [tokens[k + 1].content for k, t in enumerate(tokens) if t.type == "td_open"]
    assert cells == [cell for row in table.rows[i : j + 1] for cell in row.cells]


def test_the_prompt_of_ask_names_the_columns_of_the_rows_it_passes() -> None:
    text = ALLOWANCE
    doc = Document(text, id="guide", metadata={"format": "markdown"})
    chunks = make_chunker("markdown", max_size=90).chunk(doc)
    # the chunk holding the staff's rows first: its text has no header (its embed_text repeats it)
    chunks.sort(key=lambda c: "| 一般社員 | 海外" not in c.text)
    assert "| 区分" not in chunks[0].text and "| 区分" in chunks[0].embed_text
    hits = stored_hits(chunks, source="docs/style.md")
    header = "| 区分 | 地域 | 日当 | 備考 |\n| --- | --- | --- | --- |\n"
    for budget in (50, 60, 70, 90):
        rendered = render_passages(hits, budget, {"guide": text}.get, query="一般社員 海外 日当")
        # the best hit is never given up for its header: the row in every prompt, under its header where
        # the budget holds both
        assert rendered.tokens <= budget and "4,500円" in rendered.text, rendered.text
        assert (header in rendered.text[: rendered.text.index("4,500円")]) == (budget >= 70), rendered.text


def test_the_prompt_of_ask_names_the_columns_of_a_plain_texts_rows() -> None:
    """A ``.txt`` file holding a pipe table: `kireme ask`'s prompt puts the header above the rows it
    passes, and `kireme search --budget` reads the table by rows (`kireme.framing.Framing`) — before, a
    plain text had no tables and its rows went without the names of their columns."""
    from kireme.framing import Framing

    text = ALLOWANCE.replace("## 日当\n\n", "日当について\n\n")
    doc = Document(text, id="guide", metadata={"format": "text"})
    chunks = make_chunker("recursive", max_size=90).chunk(doc)
    chunks.sort(key=lambda c: "| 一般社員 | 海外" not in c.text)
    assert "| 区分" not in chunks[0].text
    hits = stored_hits(chunks, source="notes/guide.txt", fmt="text")
    header = "| 区分 | 地域 | 日当 | 備考 |\n| --- | --- | --- | --- |\n"
    rendered = render_passages(hits, 90, {"guide": text}.get, query="一般社員 海外 日当")
    assert rendered.tokens <= 90 and "4,500円" in rendered.text, rendered.text
    assert header in rendered.text[: rendered.text.index("4,500円")], rendered.text
    framing = Framing({"guide": text}.get, {"guide": "text"})
    (table,) = framing.tables("guide")
    assert text[slice(*table.header)] == header.rstrip("\n")
    row = text.index("| 部長 | 海外")
    assert framing("guide", row, row + 10) == (header, "")


def test_the_prompt_of_ask_names_the_columns_of_a_csv_files_rows() -> None:
    rows = [f"社員{k:02d},部署{k % 3},{100 + k}" for k in range(30)]
    text = "氏名,部署,内線\n" + "\n".join(rows) + "\n"
    doc = Document(text, id="staff", metadata={"format": "csv"})
    chunks = make_chunker("markdown", max_size=80).chunk(doc)
    chunks.sort(key=lambda c: "社員27" not in c.text)
    assert not chunks[0].text.startswith("氏名")
    hits = stored_hits(chunks, doc_id="staff", source="staff.csv", fmt="csv")
    for budget in (40, 60):  # the rows of a CSV file are cut as rows, under the header
        rendered = render_passages(hits, budget, {"staff": text}.get, query="社員27")
        assert rendered.tokens <= budget and "社員27,部署0,127" in rendered.text
        assert "氏名,部署,内線\n" in rendered.text[: rendered.text.index("社員27")], rendered.text
    # a budget that holds the row but not the header too: the row as it is, rather than no context
    tight = render_passages(hits, 20, {"staff": text}.get, query="社員27")
    assert tight.tokens <= 20 and "社員27,部署0,127" in tight.text and "氏名" not in tight.text


def test_a_table_is_read_by_rows_its_header_as_a_heading_of_them() -> None:
    """The header is one unit read as a heading (never passed alone, never a passage's end); it was glued to
    the first row, which then weighed more than the others when a row was chosen to fit a budget: "役員が
    東京に…" got the 大阪 row, which fitted, instead of the 東京 one under the header, which did not."""
    (table,) = markdown_outline(ALLOWANCE, warn=False).tables
    reading = _Reading(ALLOWANCE, (), [(table.start, table.end, table.header[1])])
    units = [ALLOWANCE[s:e] for s, e in reading.units(0, len(ALLOWANCE))]
    assert units[2:8] == [
        "| 区分 | 地域 | 日当 | 備考 |\n| --- | --- | --- | --- |",
        "| 部長 | 国内 | 3,000円 | 半日は半額 |",
        "| 部長 | 海外 | 6,000円 | 現地通貨で支給 |",
        "| 一般社員 | 国内 | 2,000円 | 半日は半額 |",
        "| 一般社員 | 海外 | 4,500円 | 現地通貨で支給 |",
        "日当は出張の日数に応じて支給する。",
    ]
    spans = reading.units(0, len(ALLOWANCE))
    assert reading.is_heading(spans[2])  # the header names the rows
    assert not any(reading.is_heading(u) for u in spans[3:7])  # a short row is no heading line
    # a stretch from inside the table: its rows
    row = ALLOWANCE.index("| 部長 | 海外")
    assert ALLOWANCE[slice(*reading.units(row, table.end)[0])] == "| 部長 | 海外 | 6,000円 | 現地通貨で支給 |"


def test_eval_at_a_budget_cuts_a_csv_file_at_its_rows() -> None:
    """`kireme eval --budget` on a CSV file: a chunk of rows larger than the budget gives the row that holds
    the answer (the rows hold no sentence end: before, the chunk was one "sentence" and nothing fitted)."""
    from kireme.evaluate.datasets import Question
    from kireme.evaluate.retrievers import BM25Retriever
    from kireme.evaluate.runner import evaluate_budgets

    rows = [f"社員{k:02d},部署{k % 3},内線{100 + k}" for k in range(30)]
    text = "氏名,部署,内線\n" + "\n".join(rows) + "\n"
    doc = Document(text, id="staff", metadata={"format": "csv"})
    answer = "内線127"
    question = Question("社員27の内線は？", answer, "staff", answer_start=text.index(answer))
    chunker = make_chunker("markdown", max_size=120)
    assert all(c.size > 40 for c in chunker.chunk(doc) if answer in c.text)
    (row,) = evaluate_budgets(chunker, [doc], [question], BM25Retriever, [40])
    assert row.hit_at_budget == 1.0 and row.chars_passed <= 40


def test_kireme_search_budget_passes_a_csv_row(tmp_path: Path) -> None:
    """`kireme search --budget` on a CSV file: a budget smaller than a chunk of rows passes the row that
    holds the words (an exact slice; before, the chunk was one "sentence" and nothing fitted)."""
    rows = [f"社員{k:02d},部署{k % 3},内線{100 + k}" for k in range(40)]
    text = "氏名,部署,内線\n" + "\n".join(rows) + "\n"
    (tmp_path / "staff.csv").write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "KIREME_CHAT"))}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kireme.cli", *args], capture_output=True, text=True, cwd=tmp_path, env=env
        )

    assert (
        cli("index", "staff.csv", "--embedder", "hash", "--max-size", "120", "--unit", "chars").returncode
        == 0
    )
    found = cli("search", "社員27 内線", "--mode", "bm25", "--budget", "30", "--format", "jsonl")
    assert found.returncode == 0, found.stderr
    passages = [json.loads(line) for line in found.stdout.splitlines()]
    assert any("社員27,部署0,内線127" in p["text"] for p in passages)
    assert all(text[p["start"] : p["end"]] == p["text"] for p in passages)
    assert sum(p["size"] for p in passages) <= 30


def test_kireme_search_budget_passes_a_row_of_a_txt_files_table(tmp_path: Path) -> None:
    """`kireme index` (its default `markdown` strategy) and `kireme search --budget` on a ``.txt`` file
    holding a pipe table: the chunks of later rows carry the header in ``embed_text``, and a budget smaller
    than a chunk passes the whole row that holds the words (an exact slice), not half of two rows."""
    rows = [f"| 社員{k:02d} | 部署{k % 3} | 内線{100 + k} |" for k in range(40)]
    text = (
        "内線番号の一覧です。\n\n| 氏名 | 部署 | 内線 |\n|---|---|---|\n" + "\n".join(rows) + "\n\n以上。\n"
    )
    (tmp_path / "staff.txt").write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "KIREME_CHAT"))}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kireme.cli", *args], capture_output=True, text=True, cwd=tmp_path, env=env
        )

    done = cli("index", "staff.txt", "--embedder", "hash", "--max-size", "150", "--unit", "chars")
    assert done.returncode == 0, done.stderr
    chunks = cli("chunk", "staff.txt", "--strategy", "markdown", "--max-size", "150", "--format", "jsonl")
    among_rows = [json.loads(line) for line in chunks.stdout.splitlines()]
    among_rows = [
        c for c in among_rows if c["text"].startswith("| 社員") and c["start"] > text.index("| 社員00")
    ]
    assert among_rows and all(
        c["embed_text"].endswith("| 氏名 | 部署 | 内線 |\n|---|---|---|\n" + c["text"]) for c in among_rows
    )
    found = cli("search", "社員27 内線", "--mode", "bm25", "--budget", "30", "--format", "jsonl")
    assert found.returncode == 0, found.stderr
    passages = [json.loads(line) for line in found.stdout.splitlines()]
    assert any(p["text"] == "| 社員27 | 部署0 | 内線127 |" for p in passages), passages
    assert all(text[p["start"] : p["end"]] == p["text"] for p in passages)
    assert sum(p["size"] for p in passages) <= 30


def test_a_hit_cut_to_one_row_takes_the_row_that_answers_though_it_is_the_first() -> None:
    """Room for one row: the first row (役員, 東京) was glued to the header and did not fit, so the row of
    役員 and 大阪 — half of the question's words — was passed, and a reader would answer 15,000円."""
    text = (
        "## 宿泊費\n\n宿泊費の上限は次の表のとおりとする。\n\n"
        "| 区分 | 地域 | 上限額 |\n| --- | --- | --- |\n"
        "| 役員 | 東京 | 18,000円 |\n| 役員 | 大阪 | 15,000円 |\n| 一般 | 東京 | 12,000円 |\n"
    )
    (table,) = markdown_outline(text, warn=False).tables
    rows = {"d": [(table.start, table.end, table.header[1])]}
    assembler = Assembler({"d": text}.get, tables=lambda doc_id: rows[doc_id])
    hit = Ranked("d", table.start, table.end, text[table.start : table.end])
    made = assembler.assemble(
        [hit], len("| 役員 | 東京 | 18,000円 |") + 2, "役員が東京に泊まるときの宿泊費の上限は？"
    )
    assert [s.text for s in made.spans] == ["| 役員 | 東京 | 18,000円 |"]
    # the header is never passed alone, nor as a passage's end
    assert all(
        not s.text.endswith("| --- | --- | --- |") for s in assembler.assemble([hit], 30, "役員").spans
    )
    # asked for by the header's words alone, the header with a row is the least that can be passed: a row
    # that holds none of them (the 役員 row beside the one asked about) is no answer, however high it ranks
    with pytest.raises(ConfigError, match="one sentence of the best hit that holds a word of the query"):
        assembler.assemble([hit], 30, "区分")


def test_a_passage_grows_into_a_table_by_its_header_and_first_row_together() -> None:
    """With the header a unit of its own, growth stopped at it as at another section's heading: the
    sentence announcing the table was passed without any row, though the header and a row fitted."""
    from kireme.assemble import grow_span

    text = (
        "## 宿泊費\n\n宿泊費の上限は次の表のとおりとする。\n\n"
        "| 区分 | 地域 | 上限額 |\n| --- | --- | --- |\n"
        "| 役員 | 東京 | 18,000円 |\n| 役員 | 大阪 | 15,000円 |\n\n## 日当\n\n日当は三千円とする。\n"
    )
    (table,) = markdown_outline(text, warn=False).tables
    reading = _Reading(text, (), [(table.start, table.end, table.header[1])])
    start = text.index("宿泊費の上限")
    end = text.index("。", start) + 1
    first_row = text.index("| 役員 | 東京 | 18,000円 |") + len("| 役員 | 東京 | 18,000円 |")
    s, e = grow_span(text, start, end, first_row - start + 3, lambda a, b: b - a, reading=reading)
    assert text[s:e].endswith("| 役員 | 東京 | 18,000円 |"), text[s:e]
    s, e = grow_span(text, start, end, len(text), lambda a, b: b - a, reading=reading)
    assert text[s:e].endswith("| 役員 | 大阪 | 15,000円 |")  # the whole table, not the next section


def test_a_passage_passed_without_its_fences_holds_no_fence_line_alone() -> None:
    """Where the fences did not fit the budget (`kireme ask --budget 25`), a passage cut out of a code block
    was passed as it is: ``timeout = 30`` and a closing fence whose opening was not in it, or an opening
    fence left open — either turns what follows it in the prompt into code. Such a fence line is left out."""
    from kireme.assemble import ContextSpan
    from kireme.framing import Framing

    text = "## 設定\n\n設定ファイルの例です。\n\n```toml\ntimeout = 30\nport = 8080\n```\n\n保存したら再起動します。\n"
    framing = Framing({"manual.md": text}.get, {"manual.md": "markdown"})

    def passed(piece: str) -> str:
        start = text.index(piece)
        return framing.unframed(
            ContextSpan("manual.md", start, start + len(piece), piece, (), (1,), len(piece))
        )

    assert passed("port = 8080\n```\n\n保存したら再起動します。") == "port = 8080\n\n保存したら再起動します。"
    assert (
        passed("設定ファイルの例です。\n\n```toml\ntimeout = 30") == "設定ファイルの例です。\n\ntimeout = 30"
    )
    whole = "```toml\ntimeout = 30\nport = 8080\n```"
    assert passed(whole) == whole  # balanced: as it is
    assert passed("timeout = 30\nport = 8080") == "timeout = 30\nport = 8080"  # no fence in it
