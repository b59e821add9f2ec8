"""The context within a budget (`kireme.assemble`, `kireme.index.passages`) and the commands that use it:
``kireme eval/compare --budget``, ``kireme search --budget`` and ``kireme ask``."""

from __future__ import annotations

import itertools
import json
import os
import re
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kireme.assemble import Assembler, Ranked, _continues, _touch, grow_span, guided_span
from kireme.document import Document
from kireme.errors import ConfigError
from kireme.index.passages import assemble_hits, render_passages
from kireme.index.store import Hit, StoredChunk
from kireme.length import Tokens
from kireme.strategies import make_chunker
from kireme.text.headings import is_heading_line
from kireme.text.markdown import HeadingPaths, markdown_outline
from kireme.text.terms import tokenize

RULES = """# 出張旅費規程

## 第1条 目的

この規程は、社員が業務のために出張する場合の旅費について定める。出張の命令は所属長が行う。

## 第2条 宿泊費

宿泊費は、１泊につき１０，０００円を上限として実費を支給する。東京都内に宿泊する場合は、１泊につき１２，０００円を上限とする。朝食代が含まれる場合も上限額は変わらない。

領収書は出張から戻った日から１４日以内に提出する。提出が遅れた場合は、所属長の承認を得る。

## 第3条 日当

日帰り出張の日当は２，０００円とする。宿泊を伴う出張の日当は１日につき３，０００円とする。
"""

NOTES = """Meeting notes, platform team.

The deploy pipeline now runs the integration suite before every release. It takes twelve minutes on the shared runners. We agreed to move the browser tests to a nightly job.

Budget: the team may spend up to 4,000 dollars on build machines this quarter. Anything above that needs the director's approval.
"""


def span_of(text: str, piece: str) -> tuple[int, int]:
    start = text.index(piece)
    return start, start + len(piece)


def unit(doc_id: str, text: str, piece: str, headings: tuple[str, ...] = ()) -> Ranked:
    s, e = span_of(text, piece)
    return Ranked(doc_id, s, e, text[s:e], headings)


TEXTS = {"rules": RULES, "notes": NOTES}


def assembler(**options: object) -> Assembler:
    return Assembler(TEXTS.get, **options)  # type: ignore[arg-type]


def check_exact(context: object, texts: dict[str, str]) -> None:
    for span in context.spans:  # type: ignore[attr-defined]
        assert texts[span.doc_id][span.start : span.end] == span.text


# ------------------------------------------------------------------------------------------ assembly


def test_hits_that_touch_in_one_document_become_one_span_in_document_order() -> None:
    first = unit("rules", RULES, "東京都内に宿泊する場合は、１泊につき１２，０００円を上限とする。")
    second = unit("rules", RULES, "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。")
    made = assembler(widen=0).assemble([first, second], first.end - second.start)  # no room to grow
    assert len(made.spans) == 1
    span = made.spans[0]
    assert span.start == second.start and span.end == first.end  # document order, one passage
    assert span.ranks == (1, 2)
    check_exact(made, TEXTS)


def test_a_hit_inside_a_passage_already_taken_costs_nothing() -> None:
    whole = unit("rules", RULES, "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。東京都内に")
    inner = unit("rules", RULES, "１泊につき１０，０００円を上限")
    made = assembler(widen=0).assemble([whole, inner, whole], len(whole.text))
    assert len(made.spans) == 1 and made.spans[0].ranks == (1, 2, 3)
    assert made.size == len(whole.text)


def test_the_same_words_from_a_copy_of_a_document_are_passed_once() -> None:
    """Two copies of one file (one rule in two folders) passed the same text twice: 159 of a 500-character
    budget spent on words the reader already had. A hit whose text a passage of another document holds is
    left out; the budget goes to the next hit."""
    texts = {"rules": RULES, "copy": RULES, "notes": NOTES}
    piece = "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。"
    other = "Budget: the team may spend up to 4,000 dollars on build machines this quarter."
    hits = [unit("rules", RULES, piece), unit("copy", RULES, piece), unit("notes", NOTES, other)]
    made = Assembler(texts.get, widen=0).assemble(hits, len(piece) + len(other) + 10)
    assert [span.doc_id for span in made.spans] == ["rules", "notes"]
    check_exact(made, texts)
    chunks = Assembler(texts.get, policy="chunks").assemble(hits, 3 * len(piece) + len(other))
    assert [span.doc_id for span in chunks.spans] == ["rules", "copy", "notes"]  # the control passes all


def test_the_budget_is_never_exceeded_and_passages_are_exact() -> None:
    doc = Document(RULES, id="rules")
    chunks = make_chunker("recursive", max_size=40).chunk(doc)
    ranked = [Ranked(c.doc_id, c.start, c.end, c.text, c.headings) for c in reversed(chunks)]
    for budget in (30, 45, 80, 150, 400, 2000):
        made = assembler().assemble(ranked, budget)
        assert 0 < made.size <= budget
        assert made.size == sum(len(s.text) for s in made.spans)
        check_exact(made, TEXTS)


def test_a_large_budget_widens_the_best_hit_at_sentence_boundaries() -> None:
    hit = unit(
        "rules", RULES, "東京都内に宿泊する場合は、１泊につき１２，０００円を上限とする。", ("第2条 宿泊費",)
    )
    narrow = assembler(widen=0).assemble([hit], 1000)
    wide = assembler().assemble([hit], 1000)
    assert narrow.spans[0].text == hit.text or narrow.spans[0].start <= hit.start
    span = wide.spans[0]
    assert span.start < hit.start and span.end > hit.end
    assert span.text.startswith("## 第2条 宿泊費") or span.text.startswith("宿泊費は")
    assert "第3条" not in span.text  # growth stops at the next section's heading
    assert span.end in {e for e in range(len(RULES)) if RULES[e - 1] in "。\n"}  # ends a sentence
    check_exact(wide, TEXTS)


def test_grow_span_takes_the_paragraph_and_stops_at_a_heading() -> None:
    s, e = span_of(RULES, "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。")
    paragraph = span_of(
        RULES,
        "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。東京都内に宿泊する場合は、１泊につき"
        "１２，０００円を上限とする。朝食代が含まれる場合も上限額は変わらない。",
    )
    assert grow_span(RULES, s, e, paragraph[1] - paragraph[0], lambda a, b: b - a) == paragraph
    # with room for everything it still stays inside its section: own heading yes, the next one no
    a, b = grow_span(RULES, s, e, 10_000, lambda a, b: b - a)
    assert RULES[a:b].startswith("## 第2条 宿泊費") and "第3条" not in RULES[a:b]
    # too small a limit: unchanged
    assert grow_span(RULES, s, e, 5, lambda a, b: b - a) == (s, e)


def test_leftover_budget_grows_the_passages() -> None:
    hit = unit("notes", NOTES, "It takes twelve minutes on the shared runners.")
    made = assembler(widen=0).assemble([hit], 400)
    assert made.spans[0].text != hit.text and hit.text in made.spans[0].text
    assert made.size <= 400


def test_chunks_policy_passes_whole_units_in_rank_order_without_growth() -> None:
    a = unit("notes", NOTES, "It takes twelve minutes on the shared runners.")
    b = unit("rules", RULES, "日帰り出張の日当は２，０００円とする。")
    made = assembler(policy="chunks").assemble([a, b, a], 10_000)
    assert [s.text for s in made.spans] == [a.text, b.text]
    assert made.size == len(a.text) + len(b.text)


def test_a_document_without_known_text_passes_its_hits_whole() -> None:
    text = "前半の文です。ここに答えがある。後半の文です。"
    hit = unit("gone", text, "ここに答えがある。")
    made = Assembler(lambda _doc: None).assemble([hit], 500)
    assert [(s.start, s.end, s.text) for s in made.spans] == [(hit.start, hit.end, hit.text)]


def test_a_hit_larger_than_the_budget_is_cut_at_sentences_sharing_the_query() -> None:
    hit = unit(
        "rules",
        RULES,
        "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。東京都内に宿泊する場合は、１泊につき"
        "１２，０００円を上限とする。朝食代が含まれる場合も上限額は変わらない。",
    )
    made = assembler().assemble([hit], 40, query="東京都内の宿泊の上限")
    assert made.cut and made.spans[0].cut
    assert made.spans[0].text == "東京都内に宿泊する場合は、１泊につき１２，０００円を上限とする。"
    check_exact(made, TEXTS)


def test_a_hit_cut_to_the_budget_does_not_end_with_a_heading_line_without_its_body() -> None:
    """The whole rules document as one hit: at 110 characters the longest run holding the query's words
    would end with "## 第3条 日当", a heading whose body it cannot hold; the run stops before it."""
    hit = unit("rules", RULES, RULES.rstrip())
    made = assembler().assemble([hit], 110, query="宿泊の上限")
    assert made.cut and made.size <= 110
    text = made.spans[0].text
    assert "上限" in text
    assert not text.rstrip().splitlines()[-1].startswith("#"), text
    check_exact(made, TEXTS)


SETTINGS = """# 設定

## cache.dir

- **型:** `string`
- **既定値:** `.cache`

キャッシュを書き込むディレクトリー。相対パスは設定ファイルの場所から解決される。

## cache.ttl

- **型:** `number`
- **既定値:** `3600`

キャッシュを保持する秒数。
"""


def test_a_cut_hit_stays_in_its_section_when_the_next_one_adds_nothing() -> None:
    """Two option sections in one hit; the budget holds the first section's body and more, but not the
    whole hit. The run that also took the next heading and its first line is longer and holds no more
    of the question's words; the cut stays in its section, from the heading that names it."""
    texts = {"settings": SETTINGS}
    hit = unit("settings", SETTINGS, SETTINGS[SETTINGS.index("## cache.dir") :].rstrip())
    made = Assembler(texts.get).assemble([hit], 110, query="キャッシュを書き込むディレクトリー")
    assert made.cut and made.size <= 110
    text = made.spans[0].text
    assert text.startswith("## cache.dir") and "キャッシュを書き込むディレクトリー。" in text
    assert "cache.ttl" not in text and "3600" not in text, text
    check_exact(made, texts)


def test_a_part_cut_out_of_a_hit_is_cited_by_the_finer_path_it_sits_under() -> None:
    """The hit holds two option sections, so its own path is the page's; the part kept for a small
    budget is the second option's lines without their heading line (no room), and with the document's
    headings known it carries that option in its path, as a chunk of those lines would."""
    texts = {"settings": SETTINGS}
    outline = HeadingPaths(markdown_outline(SETTINGS).headings)
    hit = unit("settings", SETTINGS, SETTINGS[SETTINGS.index("## cache.dir") :].rstrip(), ("設定",))
    query = "キャッシュを保持する秒数"
    plain = Assembler(texts.get).assemble([hit], 60, query=query)
    finer = Assembler(texts.get, paths=lambda _d, s, e: outline.titles(s, e)[0]).assemble(
        [hit], 60, query=query
    )
    for made in (plain, finer):
        assert made.cut and made.size <= 60
        assert "キャッシュを保持する秒数。" in made.spans[0].text and "cache.ttl" not in made.spans[0].text
        check_exact(made, texts)
    assert plain.spans[0].headings == ("設定",)
    assert finer.spans[0].headings == ("設定", "cache.ttl")


def test_a_cut_part_that_needs_two_sections_is_cited_by_the_path_both_share() -> None:
    texts = {"settings": SETTINGS}
    outline = HeadingPaths(markdown_outline(SETTINGS).headings)
    hit = unit("settings", SETTINGS, SETTINGS[SETTINGS.index("## cache.dir") :].rstrip(), ("設定",))
    made = Assembler(texts.get, paths=lambda _d, s, e: outline.titles(s, e)[0]).assemble(
        [hit], 90, query="解決される キャッシュを保持する秒数"
    )
    text = made.spans[0].text
    assert made.cut and "解決される。" in text and "秒数" in text and "## cache.ttl" in text
    assert made.spans[0].headings == ("設定",)


def test_search_and_ask_cite_a_cut_part_of_a_markdown_hit_by_its_own_section() -> None:
    texts = {"settings": SETTINGS}
    piece = SETTINGS[SETTINGS.index("## cache.dir") :].rstrip()
    hits = [Hit(stored("settings", SETTINGS, piece, 0, ("設定",)), 0.9)]
    made = assemble_hits(hits, 60, texts.get, query="キャッシュを保持する秒数")
    assert made.passages[0].span.headings == ("設定", "cache.ttl") and made.passages[0].span.cut
    rendered = render_passages(hits, 60, texts.get, query="キャッシュを保持する秒数")
    assert rendered.tokens <= 60
    assert rendered.text.startswith("[1] docs/settings.md — 設定 > cache.ttl\n"), rendered.text
    # a plain-text document is not read as Markdown: the hit's own path stays
    plain = [Hit(replace(hits[0].chunk, format="text"), 0.9)]
    assert assemble_hits(plain, 60, texts.get, query="キャッシュを保持する秒数").passages[
        0
    ].span.headings == ("設定",)


def test_bad_budgets_are_config_errors() -> None:
    hit = unit("rules", RULES, "日帰り出張の日当は２，０００円とする。")
    for budget in (0, -5):
        with pytest.raises(ConfigError, match="budget"):
            assembler().assemble([hit], budget)
    with pytest.raises(ConfigError, match="smaller than one sentence"):
        assembler().assemble([hit], 3)


def test_tokens_are_counted_when_the_budget_is_in_tokens() -> None:
    tokens = Tokens()
    doc = Document(RULES, id="rules")
    chunks = make_chunker("sentence", max_size=60).chunk(doc)
    ranked = [Ranked(c.doc_id, c.start, c.end, c.text, c.headings) for c in chunks]
    made = Assembler(TEXTS.get, tokens, unit="tokens").assemble(ranked, 90)
    assert made.unit == "tokens" and made.size <= 90
    assert made.size == sum(tokens(s.text) for s in made.spans)


japanese = st.text(alphabet="あいうえおかきくけこ漢字東京円。、\n ", min_size=1, max_size=400)


@settings(max_examples=60, deadline=None)
@given(text=japanese, size=st.integers(5, 80), budget=st.integers(1, 600), seed=st.randoms())
def test_any_ranking_any_budget_gives_exact_disjoint_passages_within_the_budget(
    text: str, size: int, budget: int, seed: object
) -> None:
    doc = Document(text, id="d")
    chunks = make_chunker("recursive", max_size=size).chunk(doc)
    if not chunks:
        return
    ranked = [Ranked(c.doc_id, c.start, c.end, c.text) for c in chunks]
    seed.shuffle(ranked)  # type: ignore[attr-defined]
    try:
        made = Assembler({"d": text}.get).assemble(ranked, budget)
    except ConfigError:
        assert budget < len(ranked[0].text)  # only when even the best hit's sentences do not fit
        return
    assert made.size <= budget
    spans = sorted((s.start, s.end) for s in made.spans)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))  # no text passed twice
    for span in made.spans:
        assert text[span.start : span.end] == span.text and span.text
    assert {r for s in made.spans for r in s.ranks} <= set(range(1, len(ranked) + 1))


sections = st.lists(
    st.tuples(st.integers(1, 3), st.text(alphabet="設定項目", min_size=1, max_size=4), japanese),
    min_size=1,
    max_size=6,
)


@settings(max_examples=100, deadline=None)
@given(parts=sections, size=st.integers(20, 120), budget=st.integers(1, 400), seed=st.randoms())
def test_a_span_is_cited_by_a_path_its_text_sits_under_and_the_citation_counts(
    parts: list[tuple[int, str, str]], size: int, budget: int, seed: object
) -> None:
    """Markdown hits cut, grown and merged with finer paths known: every span's path is one its whole
    text sits under (each character's path starts with it, by titles), and the citation each path
    costs stays within the budget."""
    text = "".join(f"{'#' * level} {title}\n\n{body}\n\n" for level, title, body in parts)
    outline = HeadingPaths(markdown_outline(text).headings)
    chunks = make_chunker("markdown", max_size=size).chunk(
        Document(text, id="d", metadata={"format": "markdown"})
    )
    ranked = [Ranked(c.doc_id, c.start, c.end, c.text, c.headings) for c in chunks]
    seed.shuffle(ranked)  # type: ignore[attr-defined]
    assembler = Assembler(
        {"d": text}.get,
        overhead=lambda _d, headings: len(" > ".join(headings)) + 1,
        paths=lambda _d, s, e: outline.titles(s, e)[0],
    )
    try:
        made = assembler.assemble(ranked, budget, "設定の項目")
    except ConfigError:
        return  # not even one sentence of the best hit fits
    assert made.size <= budget
    assert made.size == sum(len(s.text) + len(" > ".join(s.headings)) + 1 for s in made.spans)
    for span in made.spans:
        assert text[span.start : span.end] == span.text
        for x in range(span.start, span.end):  # every character sits under the path (by titles)
            here = outline.titles(x, x + 1)[0]
            assert span.headings == here[: len(span.headings)], (span.headings, here)


def slow_best_run(
    a: Assembler, unit: Ranked, room: int, query: str, need_match: bool
) -> tuple[int, int] | None:
    """What `Assembler._best_run` chose before it was made fast: every run of sentences measured and
    tokenised whole, the longest from each start until one does not fit."""
    text, offset, bounds = a._unit_sentences(unit)
    wanted = set(tokenize(query)) if query else set()
    heads = [is_heading_line(text[s:e]) if "\n" not in text[s:e].strip("\n") else False for s, e in bounds]
    inked = [any(c.isalnum() for c in re.sub(r"</?[A-Za-z][^<>\n]*>", "", text[s:e])) for s, e in bounds]
    if not any(inked):
        inked = [True] * len(bounds)
    best = None
    for i in range(len(bounds)):
        entered = 0
        for j in range(i, len(bounds)):
            s, e = bounds[i][0], bounds[j][1]
            if a.size(unit.doc_id, unit.headings, text[s:e]) > room:
                break
            entered += j > i and heads[j]
            if not (inked[i] and inked[j]):
                continue
            if all(heads[i : j + 1]) and (need_match or len(bounds) > 1):
                continue
            if j > i and heads[j]:
                continue
            score = len(wanted.intersection(tokenize(text[s:e])))
            if need_match and score == 0:
                continue
            key = (score, -entered, e - s, -s, e)
            best = key if best is None or key > best else best
    return None if best is None else (-best[3] + offset, best[4] + offset)


LINES = [
    "東京都内の宿泊費は上限がある。", "日当は２，０００円とする。", "## 第3条 日当", "第2条（宿泊費）", "",
    "Hotels cost more in Tokyo.", "朝食代は含まない", "上限を超える場合は、所属長の承認を要する。", "-->",
    "<!-- 原文 -->", "</Note>",
]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(st.sampled_from(LINES), min_size=1, max_size=16),
    glue=st.sampled_from(["\n", "", " ", "\n\n"]),
    room=st.integers(5, 300),
    query=st.sampled_from(["東京の宿泊費の上限", "日当", "hotel tokyo", "承認の上限", ""]),
    need_match=st.booleans(),
    tokens=st.booleans(),
)
# a comment's closing line alone before the sentence that holds the term: never the start of the run
@example(
    parts=["-->", "日当は２，０００円とする。"],
    glue="\n\n",
    room=300,
    query="日当",
    need_match=False,
    tokens=False,
)
def test_the_fast_cut_chooses_the_run_every_run_measured_would(
    parts: list[str], glue: str, room: int, query: str, need_match: bool, tokens: bool
) -> None:
    text = glue.join(parts)
    if not text.strip():
        return
    a = Assembler({"d": text}.get, Tokens() if tokens else len, unit="tokens" if tokens else "chars")
    hit = Ranked("d", 0, len(text), text)
    run = a._best_run(hit, room, query, need_match=need_match)
    assert run == slow_best_run(a, hit, room, query, need_match)
    if run is not None:
        assert a.measure(text[run[0] : run[1]]) <= room


def test_cutting_a_large_hit_measures_about_two_runs_per_sentence() -> None:
    """A hit of 300 sentences cut to half of it: every run from every start was measured and tokenised
    (about 45,000 of them); now each start's longest run is found from the previous one's."""
    text = "".join(f"第{i}項の規定により、宿泊費を支給する。" for i in range(300))
    measured: list[int] = []

    def measure(piece: str) -> int:
        measured.append(len(piece))
        return len(piece)

    hit = Ranked("d", 0, len(text), text)
    run = Assembler({"d": text}.get, measure)._best_run(hit, len(text) // 2, "宿泊費の支給")
    assert run is not None and 0 < run[1] - run[0] <= len(text) // 2
    assert len(measured) <= 2 * 300 + 2


# A translated manual keeps its original in HTML comments: their markers are sentences of their own.
MANUAL = (
    "## 定数\n\n<!--\nConstants are always immutable.\n-->\n\n"
    "定数は常に不変です。定数は`const`で宣言し、型の注釈が必要です。\n\n"
    "<!--\nConstants can be declared in any scope.\n-->\n\n"
    "定数はどのスコープでも宣言できます。\n\n<!--\n### Shadowing\n-->\n"
)


def test_a_cut_part_neither_starts_nor_ends_with_markup_alone() -> None:
    """A part cut to fit starts and ends with a sentence that holds a letter or digit: the line that
    closes a comment ("-->") is not passed at its start, nor alone as a filler for the last few units."""
    a = Assembler({"m": MANUAL}.get, len)
    start = MANUAL.index("-->\n\n定数は常に")
    hit = Ranked("m", start, len(MANUAL), MANUAL[start:])
    run = a._best_run(hit, 60, "定数の宣言")
    assert run is not None
    assert MANUAL[run[0] : run[1]].startswith("定数は")
    closing = MANUAL.index("-->")
    filler = Ranked("m", closing, closing + 3, "-->")
    assert a._best_run(filler, 3, "") == (closing, closing + 3)  # markup only: still a run when alone
    assert a._best_run(hit, 5, "") is None  # only "-->" fits in five: nothing worth passing
    assert a._best_run(hit, 12, "") == (start + 5, start + 15)  # "定数は常に不変です。"


def test_a_hit_of_markup_alone_is_not_passed() -> None:
    """A chunk that is only a closing tag (the React docs' ``</Solution>`` left after a large example) is
    retrieved now and then; the budget goes to the next hit instead."""
    text = "<Solution>\n\n定数は`const`で宣言する。\n\n</Solution>\n\n定数の名前は大文字で書く。\n"
    tag = text.index("</Solution>")
    rule = text.index("定数の名前")
    hits = [
        Ranked("m", tag, tag + len("</Solution>"), "</Solution>"),
        Ranked("m", rule, len(text) - 1, text[rule:-1]),
    ]
    context = Assembler({"m": text}.get, len, widen=0).assemble(hits, 16, "定数の名前")
    assert [s.text for s in context.spans] == ["定数の名前は大文字で書く。"]
    assert context.spans[0].ranks == (2,)


# --------------------------------------------------------------------------------- rendering for ask


def stored(doc_id: str, text: str, piece: str, index: int, headings: tuple[str, ...] = ()) -> StoredChunk:
    s, e = span_of(text, piece)
    return StoredChunk(
        id=f"{doc_id}-{index}", doc_id=doc_id, index=index, start=s, end=e, text=piece, embed_text=piece,
        headings=headings, title=doc_id, source=f"docs/{doc_id}.md", format="markdown",
        metadata={"page": 3} if doc_id == "rules" else {},
    )  # fmt: skip


def test_render_passages_cites_sources_and_fits_the_token_budget() -> None:
    hits = [
        Hit(stored("rules", RULES, "東京都内に宿泊する場合は、１泊につき１２，０００円を上限とする。", 0, ("第2条 宿泊費",)), 0.9),
        Hit(stored("notes", NOTES, "Anything above that needs the director's approval.", 1), 0.5),
    ]  # fmt: skip
    tokens = Tokens()
    for budget in (80, 150, 400):
        made = render_passages(hits, budget, TEXTS.get, query="東京の宿泊費")
        assert made.tokens == tokens(made.text) <= budget
        assert made.text.startswith("[1] docs/rules.md — 第2条 宿泊費\n")
    small = render_passages(hits, 40, TEXTS.get)  # the best hit does not fit with its citation: the next does
    assert small.tokens <= 40 and small.text.startswith("[1] docs/notes.md\n")
    assert small.best_left_out and small.best_needs > 40  # and says so
    made = render_passages(hits, 400, TEXTS.get)
    assert [s.number for s in made.sources] == [1, 2] and made.sources[0].pages == (3,)
    assert "[2] docs/notes.md" in made.text


# ------------------------------------------------------------------------------------------ commands


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "KIREME_CHAT"))}
    return subprocess.run(
        [sys.executable, "-m", "kireme.cli", *args], capture_output=True, text=True, cwd=cwd, env=env
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("budget")
    (folder / "docs").mkdir()
    (folder / "docs" / "rules.md").write_text(RULES, encoding="utf-8")
    (folder / "docs" / "notes.txt").write_text(NOTES, encoding="utf-8")
    questions = [
        {"question": "東京都内に宿泊する場合の上限はいくら？", "answer": "１２，０００円", "doc": "docs/rules.md"},
        {"question": "日帰り出張の日当は？", "answer": "２，０００円", "doc": "docs/rules.md"},
        {"question": "How long does the integration suite take?", "answer": "twelve minutes", "doc": "docs/notes.txt"},
        {"question": "How much may the team spend on build machines?", "answer": "4,000 dollars", "doc": "docs/notes.txt"},
    ]  # fmt: skip
    (folder / "qa.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions), encoding="utf-8"
    )
    return folder


def _eval_bm25_jsonl(max_size: int) -> list[str]:
    """``kireme eval`` of the corpus's questions, BM25, ``recursive`` at ``max_size``, JSONL rows."""
    args = ["eval", "docs", "--questions", "qa.jsonl", "--retriever", "bm25", "--max-size", str(max_size)]
    return [*args, "--format", "jsonl"]


def test_eval_budget_reports_hit_at_budget_and_what_was_passed(corpus: Path) -> None:
    args = _eval_bm25_jsonl(40)
    result = run_cli(*args, "--budget", "60", "--budget", "400", cwd=corpus)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["budget"] for r in rows] == [60, 400]
    for row in rows:
        assert row["assembly"] == "spans" and 0 <= row["hit_at_budget"] <= 1
        assert row["chars_passed"] <= row["budget"] and row["tokens_passed"] > 0
    assert rows[1]["hit_at_budget"] == 1.0  # 400 characters hold every answer's passage
    chunks = run_cli(*args, "--budget", "60", "--assembly", "chunks", cwd=corpus)
    assert json.loads(chunks.stdout.splitlines()[0])["assembly"] == "chunks"
    plain = run_cli(*args, cwd=corpus)  # no budget: the top-k rows, as before
    assert "budget" not in json.loads(plain.stdout.splitlines()[0])


def test_eval_and_compare_refuse_a_budget_of_zero(corpus: Path) -> None:
    for command in ("eval", "compare"):
        bad = run_cli(command, "docs", "--questions", "qa.jsonl", "--budget", "0", cwd=corpus)
        assert bad.returncode == 2 and "--budget must be > 0" in bad.stderr


def test_compare_names_the_best_configuration_at_each_budget(corpus: Path) -> None:
    result = run_cli(
        "compare", "docs", "--questions", "qa.jsonl", "-s", "sentence", "-s", "recursive", "--sizes", "40,120",
        "--retriever", "bm25", "--budget", "100", "--budget", "300", cwd=corpus,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "best within 100 characters" in result.stdout  # the top-k view, as before
    assert "At each budget (characters; --assembly spans)" in result.stdout
    assert "best at 100 characters: --strategy" in result.stdout
    assert "best at 300 characters: --strategy" in result.stdout


def test_compare_with_budgets_writes_one_csv_table_and_names_no_best_that_answers_nothing(
    corpus: Path,
) -> None:
    """``compare --budget --format csv`` wrote two tables, the second with its own header, which no CSV
    reader takes; and at a budget that answers nothing it named a "best" configuration (hit rate 0)."""
    import csv
    import io

    result = run_cli(
        "compare", "docs", "--questions", "qa.jsonl", "-s", "recursive", "--sizes", "40,120", "--retriever",
        "bm25", "--budget", "300", "--format", "csv", cwd=corpus,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["budget"] for r in rows] == ["", "", "300", "300"]
    assert all(r["strategy"] == "recursive" for r in rows)  # no second header read as a row
    tiny = run_cli(
        "compare", "docs", "--questions", "qa.jsonl", "-s", "recursive", "--sizes", "40", "--retriever",
        "bm25", "--budget", "2", cwd=corpus,
    )  # fmt: skip
    assert "no configuration answers any question within 2 characters" in tiny.stdout + tiny.stderr
    assert "best at 2 characters" not in tiny.stdout + tiny.stderr


@pytest.fixture(scope="module")
def index(corpus: Path) -> Path:
    db = corpus / "idx"
    result = run_cli("index", "docs", "--db", str(db), "--embedder", "hash", "--max-size", "40", cwd=corpus)
    assert result.returncode == 0, result.stderr
    return db


def test_search_budget_prints_exact_passages_within_the_budget(corpus: Path, index: Path) -> None:
    texts = {"docs/rules.md": RULES, "docs/notes.txt": NOTES}
    for budget in (50, 150, 600):
        result = run_cli(
            "search", "東京都内の宿泊費の上限", "--db", str(index), "--mode", "bm25", "--budget", str(budget),
            "--format", "jsonl", cwd=corpus,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        assert rows and sum(r["size"] for r in rows) <= budget
        for row in rows:
            assert texts[row["source"]][row["start"] : row["end"]] == row["text"]
            assert set(row) >= {
                "doc_id",
                "source",
                "title",
                "start",
                "end",
                "headings",
                "ranks",
                "size",
                "cut",
            }
        assert f"/{budget} chars" in result.stderr
        if budget >= 150:  # room for the passage around the best hits
            assert "１２，０００円" in "".join(r["text"] for r in rows)


def test_search_budget_in_tokens_and_usage_errors(corpus: Path, index: Path) -> None:
    base = ["search", "日当", "--db", str(index), "--mode", "bm25", "--format", "jsonl"]
    tokens = run_cli(*base, "--budget", "60", "--unit", "tokens", cwd=corpus)
    assert tokens.returncode == 0, tokens.stderr
    assert sum(json.loads(line)["size"] for line in tokens.stdout.splitlines()) <= 60
    for bad in ("0", "-3"):
        result = run_cli(*base, "--budget", bad, cwd=corpus)
        assert result.returncode == 2 and "--budget must be > 0" in result.stderr
    tiny = run_cli(*base, "--budget", "2", cwd=corpus)
    assert tiny.returncode == 2 and "smaller than one sentence" in tiny.stderr
    assert "Traceback" not in tiny.stderr


def test_ask_with_a_budget_too_small_names_the_budget_that_passes_the_best_hit(
    corpus: Path, index: Path
) -> None:
    """``kireme ask --budget`` too small for any sentence of the best hit with its citation line said so
    in the same words at 1, 10 and 20 tokens; `kireme search` names the smallest budget that works, and
    so does ask now — and that budget passes a sentence of the best hit."""
    import re

    question = ["ask", "東京都内の宿泊費の上限", "--db", str(index), "--mode", "bm25", "--show-prompt"]
    tiny = run_cli(*question, "--budget", "3", cwd=corpus)
    assert tiny.returncode == 2 and "Traceback" not in tiny.stderr
    found = re.search(r"the shortest that can be passed, with that line, is (\d+) tokens", tiny.stderr)
    assert found, tiny.stderr
    needs = int(found.group(1))
    enough = run_cli(*question, "--budget", str(needs), cwd=corpus)
    assert enough.returncode == 0, enough.stderr
    assert "no sentence of the best hit fits" not in enough.stderr


def test_a_hit_larger_than_the_budget_is_cut_and_the_command_says_so(corpus: Path, index: Path) -> None:
    result = run_cli(
        "search", "宿泊費 上限 東京都内", "--db", str(index), "--mode", "bm25", "--budget", "34", "--format", "jsonl",
        cwd=corpus,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 1 and rows[0]["size"] <= 34
    if rows[0]["cut"]:
        assert "passed the sentences of it that fit" in result.stderr


def test_an_index_without_kept_texts_still_answers_with_whole_hits(corpus: Path, tmp_path: Path) -> None:
    db = tmp_path / "old"
    made = run_cli("index", "docs", "--db", str(db), "--embedder", "hash", "--max-size", "40", cwd=corpus)
    assert made.returncode == 0, made.stderr
    with sqlite3.connect(db / "manifest.sqlite") as connection:  # as an index of an earlier release
        connection.execute("DELETE FROM texts")
    result = run_cli(
        "search", "日帰り出張の日当", "--db", str(db), "--mode", "bm25", "--budget", "300", "--format", "jsonl",
        cwd=corpus,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows and all(
        RULES[r["start"] : r["end"]] == r["text"] for r in rows if r["source"].endswith(".md")
    )


def test_ask_passes_passages_within_its_token_budget(corpus: Path, index: Path) -> None:
    result = run_cli(
        "ask",
        "日帰り出張の日当はいくら？",
        "--db",
        str(index),
        "--mode",
        "bm25",
        "--budget",
        "120",
        cwd=corpus,
    )
    assert result.returncode == 0, result.stderr
    assert "２，０００円" in result.stdout and result.stdout.startswith("[1] docs/rules.md")
    assert Tokens()(result.stdout.rstrip("\n")) <= 120
    assert "/120 tokens" in result.stderr
    # a budget that holds no sentence of the best hit with its citation: a usage error, as for search
    # (it used to send the question with an empty context)
    tiny = run_cli(
        "ask", "日帰り出張の日当はいくら？", "--db", str(index), "--mode", "bm25", "--budget", "5", cwd=corpus
    )
    assert tiny.returncode == 2 and "raise the budget" in tiny.stderr and "Traceback" not in tiny.stderr


def test_a_later_hit_too_large_for_what_is_left_gives_its_best_sentences() -> None:
    first = unit("notes", NOTES, "It takes twelve minutes on the shared runners.")
    second = unit(
        "rules",
        RULES,
        "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。東京都内に宿泊する場合は、１泊につき"
        "１２，０００円を上限とする。朝食代が含まれる場合も上限額は変わらない。",
    )
    budget = len(first.text) + 40
    made = assembler(widen=0).assemble([first, second], budget, query="東京都内 宿泊 上限")
    texts = [s.text for s in made.spans]
    assert first.text in texts[0] or first.text in texts[1]
    assert "東京都内に宿泊する場合は、１泊につき１２，０００円を上限とする。" in texts
    assert made.size <= budget and not made.cut  # the best hit itself was passed whole
    only_best = assembler(widen=0, cut="best").assemble([first, second], budget, query="東京都内 宿泊 上限")
    assert all("東京都内" not in s.text for s in only_best.spans)
    with pytest.raises(ConfigError, match="cut must be"):
        assembler(cut="some")


def test_the_manifest_gives_a_kept_text_only_while_it_is_the_indexed_one(tmp_path: Path) -> None:
    from kireme.document import content_hash
    from kireme.index.manifest import DocumentEntry, Manifest

    manifest = Manifest(tmp_path / "manifest.sqlite")
    try:
        digest = content_hash(RULES)
        manifest.put(DocumentEntry("規程.md", digest, "cfg", 3, "規程.md"))
        manifest.put_text("規程.md", digest, RULES)
        assert manifest.current_text("規程.md") == RULES
        manifest.put(
            DocumentEntry("規程.md", content_hash(NOTES), "cfg", 3, "規程.md")
        )  # re-indexed elsewhere
        assert manifest.current_text("規程.md") is None  # the kept text is another version: not trusted
        manifest.put_text("規程.md", content_hash(NOTES), NOTES[:-5])  # damaged: its hash does not match
        assert manifest.current_text("規程.md") is None
        manifest.put_text("名\udcff.txt", "x", "a\udcffb")  # not UTF-8: not kept, hits pass whole
        assert manifest.current_text("名\udcff.txt") is None
        manifest.remove(["規程.md"])
        assert manifest.current_text("規程.md") is None
    finally:
        manifest.close()


def test_eval_measures_another_keywords_setting_before_it_is_indexed(corpus: Path) -> None:
    pytest.importorskip("sudachipy")
    args = ["eval", "docs", "--questions", "qa.jsonl", "--max-size", "40", "--format", "jsonl"]
    words = run_cli(
        *args, "--retriever", "bm25", "--keywords", "sudachi+bigrams", "--budget", "300", cwd=corpus
    )
    assert words.returncode == 0, words.stderr
    assert json.loads(words.stdout.splitlines()[0])["hit_at_budget"] > 0
    wrong = run_cli(*args, "--keywords", "sudachi", cwd=corpus)  # the default retriever is terms
    assert wrong.returncode == 2 and "--keywords applies to --retriever bm25 or hybrid" in wrong.stderr


def test_widen_zero_passes_the_hits_without_their_surroundings(corpus: Path, index: Path) -> None:
    args = _eval_bm25_jsonl(40)
    never = run_cli(*args, "--budget", "600", "--widen", "0", cwd=corpus)
    assert never.returncode == 0, never.stderr
    assert json.loads(never.stdout.splitlines()[0])["budget"] == 600
    bad = run_cli(*args, "--budget", "600", "--widen", "-1", cwd=corpus)
    assert bad.returncode == 2
    base = ["search", "東京都内の宿泊費の上限", "--db", str(index), "--mode", "bm25", "--format", "jsonl"]
    wide = run_cli(*base, "--budget", "600", "--widen", "1", cwd=corpus)
    narrow = run_cli(*base, "--budget", "600", "--widen", "0", cwd=corpus)
    assert wide.returncode == narrow.returncode == 0, wide.stderr + narrow.stderr
    first_wide = json.loads(wide.stdout.splitlines()[0])
    first_narrow = json.loads(narrow.stdout.splitlines()[0])
    assert 1 in first_wide["ranks"] and 1 in first_narrow["ranks"]
    assert sum(json.loads(line)["size"] for line in wide.stdout.splitlines()) <= 600


def test_assembler_widen_setting() -> None:
    hit = unit("rules", RULES, "東京都内に宿泊する場合は、１泊につき１２，０００円を上限とする。")
    far = unit("notes", NOTES, "It takes twelve minutes on the shared runners.")
    budget = 3 * len(hit.text)
    never = assembler(widen=0).assemble([hit, far], budget)  # both hits, what is left grows the first
    always = assembler(widen=0.1).assemble([hit, far], budget)  # the best hit widened first: no room left
    assert {s.doc_id for s in never.spans} == {"rules", "notes"}
    assert [s.doc_id for s in always.spans] == ["rules"]
    assert always.spans[0].size > len(hit.text) and always.size <= budget and never.size <= budget
    with pytest.raises(ConfigError, match="widen"):
        assembler(widen=-1)


def test_hits_one_unit_apart_are_bridged_with_the_text_between() -> None:
    first = unit("rules", RULES, "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。")
    third = unit(
        "rules",
        RULES,
        "朝食代が含まれる場合も上限額は変わらない。\n\n領収書は出張から戻った日から１４日以内に提出する。",
    )
    between = RULES[first.end : third.start]
    assert between and not between.isspace() and len(between) <= (len(first.text) + len(third.text)) / 2
    far = unit("notes", NOTES, "Anything above that needs the director's approval.")
    short = unit("notes", NOTES, "It takes twelve minutes")
    budget = third.end - first.start + len(far.text)
    bridged = assembler(widen=0).assemble([first, third, far, short], budget)
    assert [(s.doc_id, s.start, s.end) for s in bridged.spans] == [
        ("rules", first.start, third.end),  # one passage, the sentence between included
        ("notes", far.start, far.end),
    ]
    assert bridged.spans[0].ranks == (1, 2) and "東京都内" in bridged.spans[0].text
    apart = assembler(widen=0, bridge=0).assemble([first, third, far, short], budget)
    assert "東京都内" not in apart.text and short.text in apart.text  # the room went to a lower hit
    check_exact(bridged, TEXTS)


def test_a_hit_that_continues_a_better_one_goes_before_the_hit_ranked_above_it() -> None:
    # the two halves of 第2条's first paragraph were ranked 1st and 3rd, a sentence of the notes 2nd: with
    # room for two of them, the reader gets the provision whole, not its first half and an aside
    first = unit("rules", RULES, "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。")
    rest = unit("rules", RULES, "東京都内に宿泊する場合は、１泊につき１２，０００円を上限とする。")
    aside = unit("notes", NOTES, "Anything above that needs the director's approval.")
    assert rest.start == first.end  # the next sentence of the same paragraph
    budget = len(first.text) + len(aside.text) + 5  # the best hit and one of the other two
    made = assembler(widen=0, bridge=0).assemble([first, aside, rest], budget)
    assert [(s.doc_id, s.start) for s in made.spans] == [("rules", first.start)]  # one passage
    assert rest.text in made.text and made.spans[0].ranks == (1, 3)  # the retriever's ranks
    in_order = assembler(widen=0, bridge=0, ahead=0).assemble([first, aside, rest], budget)
    assert [(s.doc_id, s.start, s.end) for s in in_order.spans] == [
        ("rules", first.start, first.end),
        ("notes", aside.start, aside.end),
    ]
    # only as far ahead as asked: two places down, the continuation waits its turn at ahead=1
    other = unit("notes", NOTES, "It takes twelve minutes on the shared runners.")
    later = assembler(widen=0, bridge=0).assemble([first, aside, other, rest], budget)
    assert "notes" in {s.doc_id for s in later.spans} and rest.text not in later.text
    further = assembler(widen=0, bridge=0, ahead=2).assemble([first, aside, other, rest], budget)
    assert [s.doc_id for s in further.spans] == ["rules"] and rest.text in further.text
    check_exact(made, TEXTS)
    for wrong in (-1, 1.5, True):
        with pytest.raises(ConfigError, match="ahead"):
            assembler(ahead=wrong)


def test_hits_continue_each_other_across_a_line_break_only() -> None:
    crlf = "第1条 目的\r\n社員の出張に適用する。\r\n\r\n第2条 宿泊費"
    text_of = {"d": crlf}.get
    first, second = span_of(crlf, "第1条 目的"), span_of(crlf, "社員の出張に適用する。")
    third = span_of(crlf, "第2条 宿泊費")
    assert _continues(first, second, "d", text_of)  # "\r\n" between them
    assert _continues(second, first, "d", text_of)  # either order
    assert not _continues(second, third, "d", text_of)  # a blank line between: another paragraph
    assert _continues((0, 5), (6, 9), "unknown", lambda _: None)  # one character, whatever it is
    assert not _continues((0, 5), (7, 9), "unknown", lambda _: None)  # two, where the text is not known


def test_a_bridge_the_budget_cannot_hold_leaves_the_hits_apart() -> None:
    first = unit("rules", RULES, "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。")
    third = unit("rules", RULES, "朝食代が含まれる場合も上限額は変わらない。")
    budget = len(first.text) + len(third.text)  # both hits fit, the text between does not
    made = assembler(widen=0).assemble([first, third], budget)
    assert [(s.start, s.end) for s in made.spans] == [(first.start, first.end), (third.start, third.end)]
    assert made.size <= budget


def test_a_bridge_crosses_a_heading_line_and_the_span_keeps_the_path_both_sides_share() -> None:
    # consecutive provisions asked about together (第1条's last sentence and 第2条's first) were retrieved
    # apart; the bridge passes them as one span with "## 第2条 宿泊費" between, as the document has it
    before = unit("rules", RULES, "出張の命令は所属長が行う。", ("出張旅費規程", "第1条 目的"))
    after = unit(
        "rules",
        RULES,
        "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。",
        ("出張旅費規程", "第2条 宿泊費"),
    )
    same_section = span_of(RULES, "朝食代が含まれる場合も上限額は変わらない。")
    assert "## 第2条 宿泊費" in RULES[before.end : after.start] and after.start - before.end < 100
    assert _touch(RULES, (before.start, before.end), (after.start, after.end), gap=100)
    assert _touch(RULES, (after.start, after.end), same_section, gap=100)
    assert not _touch(RULES, (after.start, after.end), same_section, gap=10)  # farther apart than the gap
    far = unit("notes", NOTES, "Anything above that needs the director's approval.")
    budget = after.end - before.start + len(far.text)
    made = assembler(widen=0).assemble([before, after, far], budget)
    assert [(s.doc_id, s.start, s.end) for s in made.spans] == [
        ("rules", before.start, after.end),
        ("notes", far.start, far.end),
    ]
    bridged = made.spans[0]
    assert "## 第2条 宿泊費" in bridged.text and bridged.ranks == (1, 2)
    assert bridged.headings == ("出張旅費規程",)  # what both sides sit under, not 第1条's path alone
    snug = len(before.text) + len(after.text) + len(far.text)  # no room to grow the hits into each other
    apart = assembler(widen=0, bridge=0).assemble([before, after, far], snug)
    assert [s.headings for s in apart.spans if s.doc_id == "rules"] == [before.headings, after.headings]
    check_exact(made, TEXTS)
    with pytest.raises(ConfigError, match="bridge"):
        assembler(bridge=-1)


def test_guided_growth_follows_the_question_into_the_next_sentence_only() -> None:
    hit = span_of(RULES, "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。")
    tokyo = span_of(RULES, "東京都内に宿泊する場合は、１泊につき１２，０００円を上限とする。")
    wanted = frozenset(tokenize("東京都内に泊まるときの宿泊費の上限は"))
    grown = guided_span(RULES, *hit, 1000, lambda s, e: e - s, wanted)
    assert grown == (hit[0], tokyo[1])  # 東京/都内 are new; the breakfast sentence adds no new word
    unrelated = frozenset(tokenize("日帰り出張の日当"))
    assert guided_span(RULES, *hit, 1000, lambda s, e: e - s, unrelated) == hit
    assert guided_span(RULES, *hit, 1000, lambda s, e: e - s, frozenset()) == hit
    assert guided_span(RULES, *hit, hit[1] - hit[0] + 5, lambda s, e: e - s, wanted) == hit  # no room


def test_a_hit_in_the_guided_share_of_the_budget_grows_only_towards_the_question() -> None:
    hit = unit("rules", RULES, "東京都内に宿泊する場合は、１泊につき１２，０００円を上限とする。")
    before = span_of(RULES, "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。")
    far = unit("notes", NOTES, "Anything above that needs the director's approval.")
    budget = hit.end - before[0] + len(far.text)  # the hit, the sentence before it, the other hit
    # widen 4: the best hit holds between 2 and 4 mean units of this budget, so it is followed, not widened
    made = assembler(widen=4, bridge=0).assemble([hit, far], budget, "実費を支給する上限")
    assert [(s.start, s.end) for s in made.spans] == [(before[0], hit.end), (far.start, far.end)]
    # nothing new before or after it: the hit comes whole, what is left grows it the plain way (after first)
    plain = assembler(widen=4, bridge=0).assemble([hit, far], budget, "東京都内の上限")
    assert "朝食代" in plain.text and "実費" not in plain.text
    assert made.size <= budget and plain.size <= budget
    check_exact(made, TEXTS)


def test_a_small_budget_takes_the_telling_sentence_of_a_later_hit_to_make_room_for_another() -> None:
    first = unit(
        "rules",
        RULES,
        "日帰り出張の日当は２，０００円とする。宿泊を伴う出張の日当は１日につき３，０００円とする。",
    )
    lodging = unit(
        "rules",
        RULES,
        "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。東京都内に宿泊する場合は、１泊につき"
        "１２，０００円を上限とする。朝食代が含まれる場合も上限額は変わらない。",
    )
    tokyo = "東京都内に宿泊する場合は、１泊につき１２，０００円を上限とする。"
    other = unit(
        "notes", NOTES, "Budget: the team may spend up to 4,000 dollars on build machines this quarter."
    )
    ranked = [first, lodging, other]
    mean = sum(len(u.text) for u in ranked) / 3
    budget = 180  # between 2 and 4 mean units; the three hits whole do not fit, with the one sentence they do
    assert 2 * mean <= budget < 4 * mean and sum(len(u.text) for u in ranked) > budget
    assert len(first.text) + len(tokyo) + len(other.text) <= budget and len(tokyo) <= budget / 4
    # every query term the lodging hit holds is in its Tokyo sentence: that sentence is enough of it
    made = assembler(bridge=0).assemble(ranked, budget, "東京都内 宿泊 上限")
    texts = [s.text for s in made.spans]
    assert tokyo in texts and other.text in texts and lodging.text not in " ".join(texts)
    assert made.size <= budget and not made.cut  # the best hit was not cut
    assert next(s for s in made.spans if s.text == tokyo).cut  # the later hit was
    check_exact(made, TEXTS)
    # off, the lodging hit comes whole and leaves no room for the third
    whole = assembler(bridge=0, share=0).assemble(ranked, budget, "東京都内 宿泊 上限")
    assert lodging.text in whole.text and other.text not in whole.text
    # the question's words spread over two sentences of the hit: no part of a quarter holds them all
    spread = assembler(bridge=0).assemble(ranked, budget, "実費 東京都内")
    assert lodging.text in spread.text and other.text not in spread.text
    with pytest.raises(ConfigError, match="share"):
        assembler(share=-1)


def test_what_is_left_grows_a_passage_towards_the_question_before_it_takes_a_piece_of_a_later_hit() -> None:
    # the budget holds the best hit and one more sentence, not the next hit: the sentence after the best
    # hit holds the question's words (東京都内), the next hit's best sentence only words already passed
    best = unit("rules", RULES, "宿泊費は、１泊につき１０，０００円を上限として実費を支給する。")
    later = unit(
        "rules",
        RULES,
        "日帰り出張の日当は２，０００円とする。宿泊を伴う出張の日当は１日につき３，０００円とする。",
    )
    follows = "東京都内に宿泊する場合は、１泊につき１２，０００円を上限とする。"
    assert RULES[best.end : best.end + len(follows)] == follows
    budget = len(best.text) + len(follows) + 5  # not enough for the later hit whole
    question = "東京都内に宿泊する場合の宿泊費の上限"
    made = assembler(widen=0, share=0).assemble([best, later], budget, question)
    assert [(s.start, s.end) for s in made.spans] == [(best.start, best.end + len(follows))]
    assert made.spans[0].ranks == (1,) and made.size <= budget
    # a question whose words the neighbours do not add: the budget still buys a piece of the later hit
    other = assembler(widen=0, share=0).assemble([best, later], budget, "宿泊を伴う出張の日当")
    assert any(s.start >= later.start for s in other.spans)
    check_exact(made, TEXTS)
    check_exact(other, TEXTS)


# ------------------------------------------------------------------- a best hit the budget cannot hold

NIGHT = "第12条（深夜勤務）\n午後１０時から午前５時までの勤務を深夜勤務とする。深夜勤務には、通常の賃金の２５パーセント以上の割増賃金を支払う。\n"
OVERTIME = "時間外勤務は１か月４５時間を超えてはならない。\n"
LABOUR = {"night": NIGHT, "overtime": OVERTIME}


def test_a_best_hit_of_which_no_sentence_fits_is_said_to_be_left_out() -> None:
    """At 23 characters only the article line of the best hit fitted (never passed without its body), so
    the second hit was passed alone and nothing said the best one was missing."""
    ranked = [Ranked("night", 0, len(NIGHT), NIGHT), Ranked("overtime", 0, len(OVERTIME), OVERTIME)]
    made = Assembler(LABOUR.get).assemble(ranked, 23, "深夜勤務の割増賃金")
    assert made.ranks == (2,) and made.best_left_out and made.best_needs == 25
    assert made.to_dict()["best_left_out"] is True
    with pytest.raises(
        ConfigError, match="the shortest that can be passed is 25 chars"
    ):  # not the 10 of 第12条
        Assembler(LABOUR.get).assemble(ranked[:1], 23, "深夜勤務の割増賃金")
    cut = Assembler(LABOUR.get).assemble(ranked, 25, "深夜勤務の割増賃金")
    assert cut.cut and not cut.best_left_out and cut.ranks == (1,)


def test_search_and_ask_say_when_the_best_hit_is_left_out_or_cut(tmp_path: Path) -> None:
    for name, text in LABOUR.items():
        (tmp_path / f"{name}.txt").write_text(text, encoding="utf-8")
    built = run_cli("index", ".", "--db", "idx", "--embedder", "hash", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    query = ["深夜勤務の割増賃金", "--db", "idx", "--mode", "bm25"]
    search = run_cli("search", *query, "--budget", "23", "--format", "jsonl", cwd=tmp_path)
    assert search.returncode == 0 and [json.loads(row)["doc_id"] for row in search.stdout.splitlines()] == [
        "overtime.txt"
    ]
    assert (
        "no sentence of the best hit fits in 23 chars" in search.stderr
        and "25 chars or more" in search.stderr
    )
    left_out = run_cli("ask", *query, "--budget", "33", cwd=tmp_path)
    assert left_out.returncode == 0 and "no sentence of the best hit fits in 33 tokens" in left_out.stderr
    assert "a budget of 34 tokens or more passes a part of it" in left_out.stderr
    # and 34 does: the first passage was charged for a separator it has not (one token short, always)
    exact = run_cli("ask", *query, "--budget", "34", cwd=tmp_path)
    assert "context 34/34 tokens" in exact.stderr and "the best hit is larger" in exact.stderr
    cut = run_cli("ask", *query, "--budget", "40", cwd=tmp_path)
    assert "the best hit is larger than the 40-token budget" in cut.stderr and "午後１０時" in cut.stdout


def test_a_table_header_never_takes_the_place_of_the_row_the_question_asks_for() -> None:
    """With the header too large to go along, ``ask`` passed another part of the same (one-chunk) document
    framed — the parking paragraph — instead of the row without its header."""
    manual = (
        "# Printer\n\n## Settings\n\n| Setting | Default | Range |\n| --- | --- | --- |\n"
        "| Font size | 12 pt | 6–48 pt |\n| Margin | 2 mm | 0–10 mm |\n| Copies | 1 | 1–99 |\n"
        "| Speed | normal | slow, normal, fast |\n\n## Parking\n\nWhat is free? Parking is free for the first 2 hours.\n"
    )
    hits = [Hit(stored("manual", manual, manual, 0), 1.0)]
    for budget in (20, 25, 30):
        made = render_passages(hits, budget, {"manual": manual}.get, query="copies")
        assert "| Copies | 1 | 1–99 |" in made.text and "Parking" not in made.text, (budget, made.text)


def test_eval_counts_a_question_whose_best_hit_fits_no_budget_as_a_miss(corpus: Path) -> None:
    """One question with no sentence fitting the smallest budget aborted the whole run (exit 1, no rows)."""
    args = ["eval", "docs", "--questions", "qa.jsonl", "--retriever", "bm25", "--max-size", "40"]
    result = run_cli(*args, "--format", "jsonl", "--budget", "4", "--budget", "400", cwd=corpus)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["budget"], r["hit_at_budget"]) for r in rows] == [(4, 0.0), (400, 1.0)]


def test_an_eval_row_at_a_budget_does_not_depend_on_the_other_budgets(corpus: Path) -> None:
    args = _eval_bm25_jsonl(20)
    alone = json.loads(run_cli(*args, "--budget", "60", cwd=corpus).stdout.splitlines()[0])
    beside = json.loads(
        run_cli(*args, "--budget", "60", "--budget", "3000", cwd=corpus).stdout.splitlines()[0]
    )
    assert alone == beside


def test_compare_in_tokens_names_the_best_within_a_token_budget(corpus: Path) -> None:
    result = run_cli(
        "compare", "docs", "--questions", "qa.jsonl", "-s", "sentence", "--sizes", "20,40", "--unit", "tokens",
        "--retriever", "bm25", "--budget", "60", cwd=corpus,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "best within 60 tokens" in result.stdout and "best at 60 tokens" in result.stdout
    assert "characters" not in result.stdout.split("best within", 1)[1]


def test_k_given_with_a_budget_is_said_not_to_apply(corpus: Path) -> None:
    args = ["docs", "--questions", "qa.jsonl", "--retriever", "bm25", "--max-size", "40", "--budget", "100"]
    told = run_cli("eval", *args, "-k", "3", cwd=corpus)
    assert told.returncode == 0 and "-k does not apply with --budget" in told.stderr
    assert "warning" not in run_cli("eval", *args, cwd=corpus).stderr
    compared = run_cli(
        "compare", *args[:-4], "--sizes", "40", "-s", "sentence", "--budget", "100", "-k", "2", cwd=corpus
    )
    assert compared.returncode == 0 and "-k sets the top-k table only" in compared.stderr


@pytest.mark.parametrize("unit", ["chars", "tokens"])
@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        # a heading line and the first word of the next sentence: no cut of it passes, only all of it
        ("第1条（目的）\n本規程は定める。\n\n第2条（貸出期間）\n貸出期間は２週間とする。\n", 19, 31),
        ("旅行の写真。👨‍👩‍👧‍👦👩🏿‍💻", 6, 17),  # no letter at all: was "the shortest is 0"
        ("メモ\n\n👍🏽👩🏿‍💻", 4, 10),
        ("日当は二千円とする。宿泊費は一泊一万円を上限とする。精算は月末に行う。", 0, 35),
    ],
)
def test_the_budget_a_too_small_budget_names_passes_the_best_hit(
    unit: str, text: str, start: int, end: int
) -> None:
    """The error named a budget that did not pass the best hit (a heading and a word: 5 tokens named,
    16 needed; emoji alone: 0): the one it names passes a part of it, and one less does not."""
    from kireme.errors import BudgetTooSmallError

    measure = Tokens() if unit == "tokens" else len
    assembler = Assembler({"d": text}.get, measure, unit=unit)
    hit = [Ranked("d", start, end, text[start:end])]
    with pytest.raises(BudgetTooSmallError) as info:
        assembler.assemble(hit, 1, "")
    needs = info.value.needs
    assert needs >= 1 and f"the shortest that can be passed is {needs} {unit}" in str(info.value)
    made = assembler.assemble(hit, needs, "")
    assert made.spans and made.size <= needs
    if needs > 1:
        with pytest.raises(BudgetTooSmallError):
            assembler.assemble(hit, needs - 1, "")


def test_unit_tokens_counts_tokens_and_a_measure_that_does_not_is_refused() -> None:
    """``Assembler(text_of, unit="tokens")`` counted characters (``measure`` defaulted to ``len``) and called
    them tokens: a 46-token budget passed 48 cl100k tokens."""
    from kireme.length import Tokens

    text = "東京の宿泊費の上限は一泊一万八千円とする。大阪の宿泊費の上限は一泊一万五千円とする。" * 3
    hit = Ranked("d", 0, len(text), text)
    tokens = Tokens()
    for budget in (30, 46):
        made = Assembler({"d": text}.get, unit="tokens").assemble([hit], budget, "東京")
        assert made.unit == "tokens" and sum(tokens(s.text) for s in made.spans) <= budget
    with pytest.raises(ConfigError, match="measure=len counts characters"):
        Assembler({"d": text}.get, len, unit="tokens")
    with pytest.raises(ConfigError, match="needs a measure"):
        Assembler({"d": text}.get, unit="words")


@pytest.mark.parametrize(
    ("start", "end", "text", "said"),
    [
        (0, 999, None, "not end - start"),  # the whole text with an end past it: an IndexError deep inside
        (10, 5, "", "0 <= start <= end"),  # was "a budget of 60 chars is smaller than one sentence"
        (-1, 4, "第1条", "0 <= start <= end"),
    ],
)
def test_a_hit_whose_offsets_cannot_be_its_texts_is_refused_by_name(
    start: int, end: int, text: str | None, said: str
) -> None:
    document = "第1条 宿泊費は一泊一万円とする。第2条 日当は三千円とする。"
    hit = Ranked("規程", start, end, document if text is None else text)
    with pytest.raises(ConfigError, match=rf"hit '規程' \[{start}:{end}\].*{re.escape(said)}"):
        Assembler({"規程": document}.get).assemble([hit], 60)


SPEC_SHEET = (
    "## 仕様\n\n"
    "本機の主な仕様は次のとおりです。\n"
    "最大通信速度は毎秒2402メガビットです。\n"
    "消費電力は最大12ワットです。\n"
    "保証期間はお買い上げ日から1年間、ただし消耗品および付属品は対象外とします。\n"
)


def test_a_best_hit_cut_to_fit_holds_a_word_of_the_question_or_is_left_out() -> None:
    """The sentence that answers (保証期間…) was just over the budget, and the best hit was cut to the
    longest run that fitted — the power rating — though it shares no word with the question: a wrong value,
    said to be "the sentences that share most words with the question". A part of the best hit that holds
    none of the question's words is not passed; a later hit is (`best_left_out`), or the budget is refused."""
    other = "保証の手続きは販売店で受け付けます。"
    texts = {"spec": SPEC_SHEET, "faq": other}
    ranked = [
        Ranked("spec", 0, len(SPEC_SHEET), SPEC_SHEET),
        Ranked("faq", 0, len(other), other),
    ]
    question = "保証期間は？"
    answer = SPEC_SHEET.index("保証期間")
    needed = len(SPEC_SHEET) - answer - 1  # the sentence without its line break
    for budget in (needed - 10, needed - 1):
        made = Assembler(texts.get).assemble(ranked, budget, question)
        assert made.best_left_out and made.ranks == (2,), [s.text for s in made.spans]
        assert made.best_needs == needed
        with pytest.raises(ConfigError, match="holds a word of the query"):
            Assembler(texts.get).assemble(ranked[:1], budget, question)
    made = Assembler(texts.get).assemble(ranked, needed, question)
    assert made.cut and [s.text for s in made.spans] == [SPEC_SHEET[answer:-1]]
    # a question none of whose words the hit holds (a dense match) still gets the hit's best run
    made = Assembler(texts.get).assemble(ranked[:1], 20, "ルーターの性能")
    assert made.cut and made.spans
