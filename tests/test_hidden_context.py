"""What a reader never sees stays out of the context: the HTML comments of Markdown documents (a
translation's original above each paragraph) cost nothing in a budget and are never passed
(`kireme.text.markdown.comment_blocks`, `Assembler(hidden=...)`, ``kireme search/ask --comments``)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.stored_hits import stored_hits

from kireme.assemble import Assembler, Ranked
from kireme.document import Document
from kireme.errors import ConfigError
from kireme.index.passages import assemble_hits, markdown_hidden, render_passages
from kireme.index.store import Hit, StoredChunk
from kireme.length import Tokens
from kireme.strategies import make_chunker
from kireme.text.markdown import comment_blocks

# A translated manual in the style of mdBook translations: the original of each paragraph kept in a comment
# above its translation (the originals and translations are ours).
GUIDE = """<!--
# Backups
-->

# バックアップ

<!--
The backup job copies every project folder to the archive server each night. It keeps the last fourteen
copies and deletes older ones automatically.
-->

バックアップ処理は毎晩すべてのプロジェクトフォルダーを保管サーバーへ複製する。直近１４世代を残し、それより古い世代は自動で削除される。

<!--
## Restoring a folder
-->

## フォルダーの復元

<!--
To restore a folder, open a ticket with the folder path and the date you need. The operations team
restores it within two business days.
-->

フォルダーを復元するには、フォルダーのパスと必要な日付を書いて申請を出す。運用チームが２営業日以内に復元する。

<!--
Restored files keep their original permissions.
-->

復元したファイルは元の権限を保つ。

```html
<!-- a comment inside code is code: it stays -->
<p>例</p>
```
"""


ORIGINALS = (
    "Backups",
    "backup job",
    "Restoring a folder",
    "To restore a folder",
    "operations team",
    "Restored files",
)


def _holds_an_original(text: str) -> bool:
    return any(original in text for original in ORIGINALS)


def _span(text: str, piece: str) -> tuple[int, int]:
    start = text.index(piece)
    return start, start + len(piece)


def _hidden_text(text: str, spans: list[tuple[int, int]]) -> str:
    return "".join(text[a:b] for a, b in spans)


# ------------------------------------------------------------------------------------------ comment blocks


def test_comment_blocks_are_the_top_level_comments_only() -> None:
    spans = comment_blocks(GUIDE)
    assert len(spans) == 5
    for a, b in spans:
        assert GUIDE.startswith("<!--", a) and GUIDE[:b].endswith("-->")
    assert "inside code" not in _hidden_text(GUIDE, spans)  # a comment in a code block is code
    assert "バックアップ" not in _hidden_text(GUIDE, spans)


def test_comment_blocks_edge_cases() -> None:
    assert comment_blocks("本文だけ。\n") == []
    unclosed = "前。\n\n<!--\nnever closed\n"
    assert comment_blocks(unclosed) == [(unclosed.index("<!--"), len(unclosed))]
    empty = "<!-->\n\n本文。\n"
    assert comment_blocks(empty) == [(0, 5)]
    after = "<!-- note --> 見える文。\n\n本文。\n"  # text after --> on its line is shown on the page
    (a, b), *_ = comment_blocks(after)
    assert after[a:b] == "<!-- note -->"
    indented = "本文。\n\n   <!-- three spaces -->\n"
    assert [indented[a:b] for a, b in comment_blocks(indented)] == ["<!-- three spaces -->"]
    listed = "- 項目\n\n  <!-- inside an item -->\n"
    assert comment_blocks(listed) == []  # not a top-level block


# ------------------------------------------------------------------------------------------ the assembler


def _ranked(text: str, size: int) -> list[Ranked]:
    doc = Document(text, id="guide", metadata={"format": "markdown"})
    chunks = make_chunker("markdown", max_size=size).chunk(doc)
    return [Ranked(c.doc_id, c.start, c.end, c.text, c.headings) for c in chunks]


def test_hidden_comments_are_never_passed_and_cost_nothing() -> None:
    texts = {"guide": GUIDE}
    hidden = comment_blocks(GUIDE)
    ranked = _ranked(GUIDE, 200)
    best = next(u for u in ranked if "２営業日以内" in u.text)
    order = [best, *(u for u in ranked if u is not best)]
    query = "フォルダーの復元は何日で終わる"
    budget = 120
    kept = Assembler(texts.get, widen=0).assemble(order, budget, query)
    left = Assembler(texts.get, widen=0, hidden=lambda _d: hidden).assemble(order, budget, query)
    passed = "".join(s.text for s in left.spans)
    assert "２営業日以内" in passed
    assert "<!--" not in passed and not _holds_an_original(passed)
    for span in left.spans:
        assert GUIDE[span.start : span.end] == span.text and span.text == span.text.strip()
        assert all(span.end <= a or b <= span.start for a, b in hidden)
    assert left.size == sum(len(s.text) for s in left.spans) <= budget
    # the same budget holds more of the translation once the originals cost nothing
    japanese = sum(1 for c in passed if "\u3040" <= c <= "\u9fff")
    assert japanese > sum(1 for c in "".join(s.text for s in kept.spans) if "\u3040" <= c <= "\u9fff")


def test_a_hit_holding_only_a_comment_is_passed_over() -> None:
    texts = {"guide": GUIDE}
    a, b = comment_blocks(GUIDE)[1]
    only = Ranked("guide", a, b, GUIDE[a:b])
    s, e = _span(GUIDE, "復元したファイルは元の権限を保つ。")
    real = Ranked("guide", s, e, GUIDE[s:e])
    hidden = Assembler(texts.get, widen=0, hidden=lambda _d: comment_blocks(GUIDE))
    made = hidden.assemble([only, real], e - s)  # room for the second hit alone
    assert [span.text for span in made.spans] == ["復元したファイルは元の権限を保つ。"]
    assert made.spans[0].ranks == (2,)
    grown = hidden.assemble([only, real], 60)  # what is left grows the passage, past the comment for free
    assert grown.spans[-1].text == "復元したファイルは元の権限を保つ。"
    assert "<!--" not in "".join(span.text for span in grown.spans)


def test_a_passage_around_a_comment_is_passed_as_its_parts_with_one_rank_set() -> None:
    texts = {"guide": GUIDE}
    s = GUIDE.index("フォルダーを復元するには")
    e = GUIDE.index("元の権限を保つ。") + len("元の権限を保つ。")
    whole = Ranked("guide", s, e, GUIDE[s:e])
    parts = [
        "フォルダーを復元するには、フォルダーのパスと必要な日付を書いて申請を出す。運用チームが２営業日以内に復元する。",
        "復元したファイルは元の権限を保つ。",
    ]
    budget = sum(map(len, parts))  # the hit's shown text and nothing more: it fits though it is longer
    assert len(whole.text) > budget
    made = Assembler(texts.get, widen=0, hidden=lambda _d: comment_blocks(GUIDE)).assemble([whole], budget)
    assert [span.text for span in made.spans] == parts and not made.cut
    assert {span.ranks for span in made.spans} == {(1,)}
    assert made.size == sum(len(span.text) for span in made.spans)


def test_without_hidden_spans_nothing_changes() -> None:
    texts = {"guide": GUIDE}
    ranked = _ranked(GUIDE, 120)
    for budget in (40, 200, 900):
        plain = Assembler(texts.get).assemble(ranked, budget, "復元")
        none = Assembler(texts.get, hidden=lambda _d: []).assemble(ranked, budget, "復元")
        assert plain == none


def test_tokens_count_only_what_is_passed() -> None:
    tokens = Tokens()
    made = Assembler(
        {"guide": GUIDE}.get, tokens, unit="tokens", hidden=lambda _d: comment_blocks(GUIDE)
    ).assemble(_ranked(GUIDE, 150), 70, "バックアップ 世代")
    assert made.size == sum(tokens(span.text) for span in made.spans) <= 70
    assert "<!--" not in "".join(span.text for span in made.spans)


def test_a_budget_smaller_than_every_shown_sentence_is_still_a_config_error() -> None:
    with pytest.raises(ConfigError, match="smaller than one sentence"):
        Assembler({"guide": GUIDE}.get, hidden=lambda _d: comment_blocks(GUIDE)).assemble(
            _ranked(GUIDE, 400)[:1], 3
        )


sentences = st.text(alphabet="あいう漢字。、ab .", min_size=1, max_size=40).filter(lambda t: t.strip())
blocks = st.lists(
    st.one_of(
        sentences.map(lambda t: ("text", t)),
        sentences.map(lambda t: ("comment", t)),
        st.just(("heading", "見出し")),
    ),
    min_size=1,
    max_size=12,
)


def _markdown(parts: list[tuple[str, str]]) -> str:
    out = []
    for kind, body in parts:
        if kind == "comment":
            out.append(f"<!--\n{body}\n-->")
        elif kind == "heading":
            out.append(f"## {body}")
        else:
            out.append(body.replace("\n", " "))
    return "\n\n".join(out) + "\n"


@settings(max_examples=80, deadline=None)
@given(parts=blocks, size=st.integers(10, 90), budget=st.integers(1, 400), seed=st.randoms())
def test_any_ranking_any_budget_passes_exact_disjoint_shown_text_within_the_budget(
    parts: list[tuple[str, str]], size: int, budget: int, seed: object
) -> None:
    text = _markdown(parts)
    hidden = comment_blocks(text)
    ranked = _ranked(text, size)
    if not ranked:
        return
    seed.shuffle(ranked)  # type: ignore[attr-defined]
    try:
        made = Assembler({"guide": text}.get, hidden=lambda _d: hidden).assemble(ranked, budget, "漢字")
    except ConfigError:
        return
    assert made.size == sum(len(s.text) for s in made.spans) <= budget
    spans = sorted((s.start, s.end) for s in made.spans)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))  # nothing passed twice
    for span in made.spans:
        assert text[span.start : span.end] == span.text and span.text.strip() == span.text != ""
        assert all(span.end <= a or b <= span.start for a, b in hidden)  # nothing hidden passed


# ------------------------------------------------------------------------------------------ search and ask


def _hits(size: int = 200) -> list[Hit]:
    doc = Document(GUIDE, id="guide", metadata={"format": "markdown"})
    chunks = make_chunker("markdown", max_size=size).chunk(doc)
    return stored_hits(sorted(chunks, key=lambda c: "２営業日" not in c.text))


def test_search_and_ask_leave_the_comments_of_markdown_documents_out_unless_asked() -> None:
    texts = {"guide": GUIDE}
    hits = _hits()
    made = assemble_hits(hits, 150, texts.get, query="復元 営業日")
    passed = "".join(p.span.text for p in made.passages)
    assert not _holds_an_original(passed) and "２営業日以内" in passed
    kept = assemble_hits(hits, 150, texts.get, query="復元 営業日", comments=True)
    assert _holds_an_original("".join(p.span.text for p in kept.passages))
    # a plain-text document's comments are text
    plain = [Hit(StoredChunk(**{**h.chunk.__dict__, "format": "text"}), h.score) for h in hits]
    assert markdown_hidden(plain, texts.get)("guide") == []

    rendered = render_passages(hits, 120, texts.get, query="復元 営業日")
    assert rendered.tokens <= 120 and not _holds_an_original(rendered.text)
    assert rendered.text.count("[1] ") == 1  # the parts of one passage under one citation
    with_comments = render_passages(hits, 120, texts.get, query="復元 営業日", comments=True)
    assert _holds_an_original(with_comments.text)


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "KIREME_CHAT"))}
    return subprocess.run(
        [sys.executable, "-m", "kireme.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def test_kireme_search_budget_leaves_comments_out_and_comments_flag_keeps_them(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text(GUIDE, encoding="utf-8")
    made = run_cli("index", "docs", "--db", "idx", "--embedder", "hash", "--max-size", "60", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    base = [
        "search",
        "フォルダーの復元",
        "--db",
        "idx",
        "--mode",
        "bm25",
        "--budget",
        "200",
        "--format",
        "jsonl",
    ]
    result = run_cli(*base, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows and sum(r["size"] for r in rows) <= 200
    hidden = comment_blocks(GUIDE)
    for row in rows:
        assert GUIDE[row["start"] : row["end"]] == row["text"]
        assert all(row["end"] <= a or b <= row["start"] for a, b in hidden)
    assert "２営業日以内" in "".join(r["text"] for r in rows)
    with_comments = run_cli(*base, "--comments", cwd=tmp_path)
    assert with_comments.returncode == 0, with_comments.stderr
    assert _holds_an_original(with_comments.stdout)
    # read on a terminal: the parts of one passage under its one header, the footer counting passages
    table = run_cli(*base[:-2], "--format", "table", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    headers = table.stdout.count("── ")
    assert "   ⋯ [" in table.stdout and headers < len(rows)
    assert f"in {headers} passage(s) ({len(rows)} parts around what no reader sees)" in table.stderr
    assert "--comments" in run_cli("ask", "--help", cwd=tmp_path).stdout


def test_eval_at_a_budget_measures_what_search_passes() -> None:
    from kireme.evaluate.datasets import Question
    from kireme.evaluate.retrievers import BM25Retriever
    from kireme.evaluate.runner import evaluate_budgets

    # an answer the manual does not hold: every question is a miss, and a miss shows what was passed
    question = Question("フォルダーの復元とバックアップの世代", "存在しない答え", "guide")
    chunker = make_chunker("markdown", max_size=200)

    def passed(fmt: str, comments: bool) -> str:
        doc = Document(GUIDE, id="guide", metadata={"format": fmt})
        (row,) = evaluate_budgets(chunker, [doc], [question], BM25Retriever, [400], comments=comments)
        assert row.hit_at_budget == 0.0 and row.chars_passed <= 400
        return row.misses[0].returned

    assert "２営業日" in passed("markdown", False) and not _holds_an_original(passed("markdown", False))
    assert _holds_an_original(passed("markdown", True))
    assert _holds_an_original(passed("text", False))  # not Markdown: a comment is text


def test_kireme_eval_budget_takes_comments(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text(GUIDE, encoding="utf-8")
    row = {
        "question": "フォルダーの復元とバックアップの世代",
        "answer": "存在しない答え",
        "doc_id": "docs/guide.md",
    }
    (tmp_path / "qa.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    args = [
        "eval",
        "docs",
        "--questions",
        "qa.jsonl",
        "-s",
        "markdown",
        "--max-size",
        "200",
        "--retriever",
        "bm25",
    ]
    args += ["--budget", "400", "--show-misses"]
    left = run_cli(*args, cwd=tmp_path)
    kept = run_cli(*args, "--comments", cwd=tmp_path)
    assert left.returncode == 0 and kept.returncode == 0, left.stderr + kept.stderr
    assert "returned:" in left.stderr and "returned:" in kept.stderr
    assert not _holds_an_original(left.stderr) and _holds_an_original(kept.stderr)


def _spans_reference(text: str, cuts: list[int], a: int, b: int) -> list[tuple[int, int]]:
    """The sentence spans' whitespace trimming one character at a time (what `_spans_from_cuts` was)."""
    spans = []
    for s, e in itertools.pairwise([a, *cuts, b]):
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            spans.append((s, e))
    return spans


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=" \t\n\r\u3000\u00a0\u2028あ漢a。.", max_size=80),
    data=st.data(),
)
def test_long_white_space_runs_are_trimmed_as_one_character_at_a_time_would(
    text: str, data: st.DataObject
) -> None:
    from kireme.text.sentences import _spans_from_cuts

    n = len(text)
    a = data.draw(st.integers(0, n))
    b = data.draw(st.integers(a, n))
    cuts = sorted(data.draw(st.lists(st.integers(a, b), max_size=6)))
    assert _spans_from_cuts(text, cuts, a, b) == _spans_reference(text, cuts, a, b)


def test_a_hit_that_no_longer_agrees_with_its_document_is_passed_as_it_was() -> None:
    """A hit whose text is not the document's at its offsets (the document changed since) is passed whole
    as its own text, as without hidden spans: its parts cannot be read from the document."""
    a, _ = comment_blocks(GUIDE)[1]
    s, e = a, GUIDE.index("古い世代は自動で削除される。") + len("古い世代は自動で削除される。")
    stale_text = "古い版の本文。" * ((e - s) // 7) + "x" * ((e - s) % 7)
    stale = Ranked("guide", s, e, stale_text)
    for budget in (e - s, 5 * (e - s)):
        made = Assembler({"guide": GUIDE}.get, hidden=lambda _d: comment_blocks(GUIDE)).assemble(
            [stale], budget
        )
        assert [span.text for span in made.spans] == [stale_text] and made.size == len(stale_text)
    small = Assembler({"guide": GUIDE}.get, hidden=lambda _d: comment_blocks(GUIDE)).assemble([stale], 10)
    assert small.cut and all(span.text in stale_text for span in small.spans)


# ------------------------------------------------------------------------------------------ code blocks

CODE_GUIDE = """## 設定の読み込み

設定ファイルを読み込む関数です。ファイルがなければ既定値を返します。

```python
def load(path):
    if not path.exists():
        print("not found!")  # 見つからない場合
        return {"retries": 3, "timeout": 30.5}
    return parse(path.read_text())
```

読み込んだ値は起動時に一度だけ検証されます。不正な値があれば起動を止めます。
"""


def test_inside_a_fenced_code_block_the_assembly_steps_by_lines() -> None:
    from kireme.assemble import _Reading
    from kireme.text.markdown import fenced_code

    code = fenced_code(CODE_GUIDE)
    assert len(code) == 1
    reading = _Reading(CODE_GUIDE, code)
    units = reading.units(0, len(CODE_GUIDE))
    lines = [CODE_GUIDE[s:e] for s, e in units if code[0][0] <= s < code[0][1]]
    expected = [line.strip() for line in CODE_GUIDE[slice(*code[0])].splitlines() if line.strip()]
    # the fence lines go with the line of code next to them (`test_readable_context.py`)
    expected[:2] = ["```python\n" + expected[1]]
    expected[-2:] = [CODE_GUIDE[CODE_GUIDE.index(expected[-2]) : code[0][1]]]
    assert lines == expected and expected[-1].endswith("parse(path.read_text())\n```")
    assert not any(reading.is_heading(u) for u in units if code[0][0] <= u[0] < code[0][1])
    assert reading.is_heading(units[0])  # the heading outside the code is one
    # without the code blocks, "not found!" ends a sentence inside a line of code
    plain = [CODE_GUIDE[s:e] for s, e in _Reading(CODE_GUIDE).units(0, len(CODE_GUIDE))]
    assert any(u.endswith('print("not found!")') for u in plain)
    assert any(u.startswith("# 見つからない場合") for u in plain)  # the next "sentence" starts mid-line


@settings(max_examples=80, deadline=None)
@given(
    size=st.integers(60, 160), budget=st.integers(20, 400), seed=st.randoms()
)  # no code line cut by the chunker
def test_no_passage_starts_or_ends_inside_a_line_of_code(size: int, budget: int, seed: object) -> None:
    from kireme.text.markdown import fenced_code

    text = CODE_GUIDE
    code = fenced_code(text)
    doc = Document(text, id="guide", metadata={"format": "markdown"})
    chunks = make_chunker("recursive", max_size=size).chunk(doc)
    ranked = [Ranked(c.doc_id, c.start, c.end, c.text, c.headings) for c in chunks]
    seed.shuffle(ranked)  # type: ignore[attr-defined]
    assembler = Assembler({"guide": text}.get, code=lambda _d: code)
    try:
        made = assembler.assemble(ranked, budget, "not found 見つからない 既定値")
    except ConfigError:
        return
    assert made.size <= budget
    cs, ce = code[0]
    for span in made.spans:
        assert text[span.start : span.end] == span.text
        line_start = text.rfind("\n", 0, span.start) + 1
        line_end = text.find("\n", span.end)
        if cs < span.start < ce:  # a passage that starts in the code starts at a line (its indentation aside)
            assert not text[line_start : span.start].strip(), span.text
        if cs < span.end < ce:
            assert not text[span.end : line_end].strip(), span.text


def test_search_and_ask_read_code_blocks_by_lines() -> None:
    from kireme.text.markdown import fenced_code

    text = CODE_GUIDE
    ((cs, ce),) = fenced_code(text)
    doc = Document(text, id="guide", metadata={"format": "markdown"})
    chunks = make_chunker("recursive", max_size=200).chunk(doc)
    hits = stored_hits(sorted(chunks, key=lambda c: "print(" not in c.text))
    for budget in (30, 45, 60, 90):
        made = assemble_hits(hits, budget, {"guide": text}.get, query="not found 見つからない")
        for passage in made.passages:
            span = passage.span
            line_start = text.rfind("\n", 0, span.start) + 1
            assert not (cs < span.start < ce and text[line_start : span.start].strip()), span.text
            assert not (cs < span.end < ce and text[span.end : text.find("\n", span.end)].strip()), span.text


markdown_pieces = st.lists(
    st.sampled_from(
        [
            "本文の段落です。",
            "<!-- 短い注釈 -->",
            "<!--\noriginal line\n-->",
            "<!--\nunclosed at the end",
            "<!-- a --> 見える文",
            "   <!-- indented -->",
            "    <!-- four spaces: code -->",
            "```\n<!-- in code -->\n```",
            "- 項目\n\n  <!-- in an item -->",
            "> <!-- in a quote -->",
            "## 見出し",
            "<!-->",
            "text\n<!-- after a paragraph line -->",
        ]
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(pieces=markdown_pieces, sep=st.sampled_from(["\n\n", "\n", "\r\n\r\n"]))
def test_comment_blocks_are_the_parsers_top_level_comment_blocks(pieces: list[str], sep: str) -> None:
    """Each span starts where markdown-it's top-level ``html_block`` of a comment starts (its ``<!--``)
    and ends with the ``-->`` on the block's last line (or the text's end): what the parser reads as
    one HTML comment block, nothing else."""
    from markdown_it import MarkdownIt

    text = sep.join(p.replace("\n", "\r\n") if sep.startswith("\r") else p for p in pieces) + "\n"
    tokens = MarkdownIt("commonmark").parse(text)
    lines = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    expected = []
    for tok in tokens:
        if (
            tok.type == "html_block"
            and tok.level == 0
            and tok.map
            and tok.content.lstrip(" ").startswith("<!--")
        ):
            start = lines[tok.map[0]]
            start += len(text[start:]) - len(text[start:].lstrip(" "))
            last_line = lines[tok.map[1] - 1] if tok.map[1] - 1 < len(lines) else len(text)
            close = text.find("-->", start + 2)
            expected.append((start, close, last_line))
    spans = comment_blocks(text)
    assert [s for s, _ in spans] == [s for s, _, _ in expected]
    for (_, end), (_, close, last_line) in zip(spans, expected, strict=True):
        if close < 0:  # never closed: the block, and the comment, run to the end
            assert end == len(text)
        else:  # the `-->` that ends the comment is on the block's last line
            assert end == close + 3 and close >= last_line
