"""Behaviour of each strategy on documents written for these tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.invariants import check_invariants

from kireme import (
    STRATEGIES,
    Chunker,
    ChunkPlan,
    ConfigError,
    Document,
    Tokens,
    chunk,
    get_measure,
    make_chunker,
)
from kireme.boundaries.levels import LINE
from kireme.pack import PackedSpan, pack

RULES = (
    "旅費規程\n\n"
    "第1条（目的）\nこの規程は、社員が業務のために出張する場合の旅費について定める。\n\n"
    "第2条（宿泊費）\n宿泊費は１泊につき１０，０００円を上限とする。ただし、東京都内は１２，０００円とする。\n\n"
    "第3条（日当）\n日当は１日につき２，０００円とする。半日の場合は１，０００円とする。\n\n"
    "第4条（交通費）\n交通費は実費を支給する。新幹線の利用は片道１００キロメートル以上の場合に限る。\n"
)


def texts(chunks) -> list[str]:
    return [c.text for c in chunks]


def test_paragraph_keeps_each_article_whole() -> None:
    chunks = chunk(RULES, strategy="paragraph", max_size=60, merge_paragraphs=False)
    assert (
        texts(chunks)[1] == "第1条（目的）\nこの規程は、社員が業務のために出張する場合の旅費について定める。"
    )
    articles = [p for p in RULES.split("\n\n") if p.startswith("第")]
    assert texts(chunks) == ["旅費規程", *(a.strip() for a in articles)]


@pytest.mark.parametrize("strategy", ["recursive", "sentence", "paragraph"])
@pytest.mark.parametrize("max_size", [20, 30, 45, 80])
def test_amounts_and_headings_are_never_cut(strategy: str, max_size: int) -> None:
    chunks = chunk(RULES, strategy=strategy, max_size=max_size)
    for amount in ["１０，０００円", "１２，０００円", "２，０００円", "１，０００円"]:
        assert any(amount in c.text for c in chunks), (amount, texts(chunks))
    for c in chunks:  # no chunk ends with a heading line cut off from its body
        last_line = c.text.rsplit("\n", 1)[-1]
        assert not (last_line.startswith("第") and last_line.endswith("）")), texts(chunks)


UNPUNCTUATED = "令和6年4月1日から2024/04/01以降の出張にも適用し日当は1日あたり¥3,000とし会議は毎週10:30から開始し宿泊費は上限とする"


@pytest.mark.parametrize("strategy", ["recursive", "sentence", "paragraph", "markdown"])
@pytest.mark.parametrize("max_size", range(12, 30))
def test_dates_times_and_prefixed_amounts_are_never_cut_when_they_fit(strategy: str, max_size: int) -> None:
    """A last-resort cut kept ``1,234`` and ``1,234円`` whole but cut ``2024/04/|01`` at its slashes and
    ``¥|3,000`` after the sign: a number with ``/``, ``-`` or ``:`` between its digits is one number, and
    a currency sign before it goes with it."""
    chunks = chunk(UNPUNCTUATED, strategy=strategy, max_size=max_size)
    for whole in ["2024/04/01", "¥3,000", "10:30"]:
        assert any(whole in c.text for c in chunks), (whole, texts(chunks))


UNITS_UNPUNCTUATED = "次回定例会議2026年12月6日午前10時30分本社開催予定予算総額1万2千円以内交通費別途精算"


@pytest.mark.parametrize("strategy", ["recursive", "sentence", "paragraph", "markdown"])
@pytest.mark.parametrize("max_size", range(10, 30))
def test_japanese_dates_times_and_amounts_with_units_are_never_cut_when_they_fit(
    strategy: str, max_size: int
) -> None:
    """A last-resort cut went between ``2026年12月`` and ``6日``, ``10時`` and ``30分``, ``1万2千`` and ``円``:
    a unit between digits (or ``円`` after one) is part of the number, so the cut goes before it."""
    chunks = chunk(UNITS_UNPUNCTUATED, strategy=strategy, max_size=max_size)
    for whole in ["2026年12月6日", "10時30分", "1万2千円"]:
        assert any(whole in c.text for c in chunks), (whole, texts(chunks))


def test_a_date_longer_than_the_window_is_cut_at_its_last_unit() -> None:
    """When the whole window is one date, the cut still falls at one of its joints, not inside a number."""
    chunks = chunk("2026年12月16日開催", strategy="recursive", max_size=9)
    assert texts(chunks)[0] == "2026年12月"


SPEECH = (
    "部長は会議の冒頭でこう述べた。"
    "「今年度は売上が伸びた。しかし利益率は下がっている。来年度は原価の見直しを最優先で進めたい。"
    "各部門は来月末までに計画を出してほしい！」その後、議題に入った。"
)


@pytest.mark.parametrize("strategy", ["recursive", "sentence", "paragraph", "markdown", "semantic"])
@pytest.mark.parametrize("max_size", [28, 36, 45, 60])
def test_a_quotation_too_long_for_a_chunk_is_cut_between_its_own_sentences(
    strategy: str, max_size: int
) -> None:
    """The sentence rules keep ``「…」`` whole; a speech longer than the limit was cut at a comma or inside a
    word (``来年度は|原価``) though each of its sentences fits: it is cut after its own ``。`` / ``！``."""
    options = {"similarity": "bigram"} if strategy == "semantic" else {}
    chunks = chunk(SPEECH, strategy=strategy, max_size=max_size, **options)
    assert "".join(texts(chunks)) == SPEECH
    for c in chunks[:-1]:
        assert c.text.endswith(("。", "！", "」")), (max_size, texts(chunks))
    assert not any(c.text.startswith("」") for c in chunks)


def test_a_short_quotation_that_the_sentence_goes_on_after_is_not_cut() -> None:
    text = "課長は「行こう。」と言って席を立った。部長は「待て。」と止めた。"
    chunks = chunk(text, strategy="sentence", max_size=20)
    assert texts(chunks) == ["課長は「行こう。」と言って席を立った。", "部長は「待て。」と止めた。"]


HOLIDAY_RULES = (
    "第11条（休日）\n休日は次のとおりとする。\n（1）土曜日および日曜日\n（2）その他会社が指定する日\n"
    "第12条（時間外労働）\n会社は、業務上必要がある場合、時間外労働を命じることがある。"
    "時間外労働は、1か月45時間を上限とする。"
)


@pytest.mark.parametrize(
    ("strategy", "max_size"),
    # (`sentence` packs sentences, not paragraphs: at 100 it rightly fills up with 第12条's first one)
    [(s, n) for s in ("recursive", "paragraph") for n in (60, 80, 100)]
    + [("sentence", 60), ("sentence", 80)],
)
def test_numbered_items_are_no_headings_and_stay_with_their_article(strategy: str, max_size: int) -> None:
    """``（2）その他会社が指定する日`` is short and has no full stop, so it read as a heading that no chunk may
    end with: the list left 第11条 to open a chunk with 第12条. A line numbered like the line next to it is
    an item of a list (`kireme.text.headings.in_list`, in C too)."""
    chunks = chunk(HOLIDAY_RULES, strategy=strategy, max_size=max_size)
    assert chunks[0].text.startswith("第11条") and chunks[0].text.endswith("（2）その他会社が指定する日"), (
        texts(chunks)
    )
    assert chunks[1].text.startswith("第12条（時間外労働）\n"), texts(chunks)


def test_a_numbered_heading_over_its_body_is_still_a_heading() -> None:
    text = "（1）目的\n本規程は、社員の出張に関する旅費の取扱いを定める。\n（2）適用範囲\n本規程は、全ての社員に適用する。"
    chunks = chunk(text, strategy="paragraph", max_size=40)
    assert all(not c.text.endswith(("目的", "適用範囲")) for c in chunks), texts(chunks)


def test_a_numbered_faq_label_is_not_a_sentence_of_its_own() -> None:
    """``Q3.`` ended a sentence (a dot after a word, then a capital or Japanese): the question's number
    closed the answer above it and the question began the next chunk without it."""
    text = (
        "Q2. 領収書をなくしました。どうすればよいですか？\nA. 支払証明書を作成して上長の承認を受けてください。\n\n"
        "Q3. 海外出張の日当はいくらですか？\nA. 北米は1日US$80です。"
    )
    chunks = chunk(text, strategy="sentence", max_size=70)
    assert [c.text[:3] for c in chunks] == ["Q2.", "Q3."], texts(chunks)


def test_fixed_is_a_plain_window_baseline() -> None:
    chunks = chunk("あいうえおかきくけこさしすせそ", strategy="fixed", max_size=4)
    assert texts(chunks) == ["あいうえ", "おかきく", "けこさし", "すせそ"]


def test_fixed_overlap_shares_exact_text() -> None:
    chunks = chunk("あいうえおかきくけこ", strategy="fixed", max_size=4, overlap=1)
    # packed with max_size - overlap, then each chunk repeats up to `overlap` from its predecessor
    assert texts(chunks) == ["あいう", "うえおか", "かきくけ", "けこ"]


def test_recursive_overlap_starts_at_a_sentence() -> None:
    text = "最初の文です。二番目の文です。三番目の文です。四番目の文です。"
    chunks = chunk(text, strategy="recursive", max_size=24, overlap=8)
    assert texts(chunks) == [
        "最初の文です。二番目の文です。",
        "二番目の文です。三番目の文です。四番目の文です。",
    ]
    assert all(c.size <= 24 for c in chunks)


def test_repeated_text_gets_the_right_offsets_and_distinct_ids() -> None:
    text = "同じ文です。" * 6
    doc = Document(text, id="repeat")
    chunks = make_chunker("sentence", max_size=6).chunk(doc)
    assert [c.start for c in chunks] == [0, 6, 12, 18, 24, 30]
    assert len({c.id for c in chunks}) == 6


def test_ids_are_stable_and_depend_on_config_and_content() -> None:
    a = chunk(Document(RULES, id="rules.txt"), max_size=50)
    b = chunk(Document(RULES, id="rules.txt"), max_size=50)
    c = chunk(Document(RULES, id="rules.txt"), max_size=51)
    d = chunk(Document(RULES + "追記。", id="rules.txt"), max_size=50)
    assert [x.id for x in a] == [x.id for x in b]
    assert a[0].id != c[0].id and a[0].id != d[0].id


def test_token_sizes_are_exact_cl100k_counts() -> None:
    tokens = Tokens()
    chunks = chunk(RULES * 3, strategy="recursive", max_size=40, unit="tokens")
    assert all(c.size == tokens(c.text) <= 40 for c in chunks)
    assert max(c.size for c in chunks) > 30  # pieces are merged up to the limit


def test_tokens_never_split_a_character() -> None:
    text = "𠮷野家の𩸽定食は美味しい。" * 20  # characters outside the BMP take several tokens
    chunks = chunk(text, strategy="fixed", max_size=5, unit="tokens")
    assert "".join(c.text for c in chunks) == text
    assert all(c.size <= 5 for c in chunks)


def test_min_size_merges_a_small_trailing_piece() -> None:
    text = "一つ目の段落はここにあります。\n\n二つ目の段落もここにあります。\n\n短い。"
    without = chunk(text, strategy="paragraph", max_size=40)
    assert texts(without)[-1].endswith("短い。")
    plain = chunk(text, strategy="paragraph", max_size=40, merge_paragraphs=False)
    assert texts(plain)[-1] == "短い。"
    merged = chunk(text, strategy="paragraph", max_size=40, merge_paragraphs=False, min_size=5)
    assert texts(merged)[-1] == "二つ目の段落もここにあります。\n\n短い。"


def test_user_separators_keep_the_separator_with_the_following_text() -> None:
    sql = "CREATE TABLE a (id int);\nINSERT INTO a VALUES (1);\nCREATE TABLE b (id int);\nINSERT INTO b VALUES (2);"
    chunks = chunk(sql, strategy="recursive", max_size=50, separators=[r"\n(?=CREATE )", r"\n(?=INSERT )"])
    assert texts(chunks) == [
        "CREATE TABLE a (id int);\nINSERT INTO a VALUES (1);",
        "CREATE TABLE b (id int);\nINSERT INTO b VALUES (2);",
    ]


def test_sql_preset_splits_statements() -> None:
    sql = "-- users\nCREATE TABLE users (id int, name text);\nINSERT INTO users VALUES (1, 'a');\n" * 3
    chunks = chunk(sql, strategy="recursive", preset="sql", max_size=60)
    assert all(c.text.startswith(("--", "CREATE", "INSERT")) for c in chunks)


def test_markdown_preset_keeps_heading_with_body() -> None:
    md = "# 手順\n\n## 準備\n\n必要な道具をそろえる。\n\n## 実行\n\nボタンを押す。結果を確認する。\n"
    chunks = chunk(md, strategy="recursive", preset="markdown", max_size=24)
    assert texts(chunks) == [
        "# 手順\n\n## 準備\n\n必要な道具をそろえる。",
        "## 実行\n\nボタンを押す。結果を確認する。",
    ]


def _markdown_chunks(md: str, max_size: int) -> list[str]:
    return texts(
        chunk(Document(md, metadata={"format": "markdown"}), strategy="recursive", max_size=max_size)
    )


_FUNCTIONS = (
    "```python\ndef total(items):\n    return sum(items)\n\n\n"
    "def average(items):\n    return total(items) / len(items)\n```"
)


def test_markdown_preset_keeps_a_code_block_that_fits_whole() -> None:
    """The blank lines inside a code block are no cuts while it fits, and its closing fence stays with it
    (the regex levels used to cut before the closing fence as before an opening one)."""
    md = (
        "## 集計\n\n合計と平均を求める関数を用意します。入力は数値のリストです。\n\n"
        + _FUNCTIONS
        + "\n\n空のリストを渡すと平均はゼロ除算になります。呼ぶ前に確認してください。\n"
    )
    assert _markdown_chunks(md, 130) == [
        "## 集計\n\n合計と平均を求める関数を用意します。入力は数値のリストです。",
        _FUNCTIONS,
        "空のリストを渡すと平均はゼロ除算になります。呼ぶ前に確認してください。",
    ]


def test_markdown_preset_cuts_a_code_block_too_large_at_its_lines() -> None:
    code = "```text\n" + "\n".join(f"行{i:02d}: 値は{i * 7}です" for i in range(30)) + "\n```"
    md = "## ログ\n\n出力の例です。\n\n" + code + "\n\n以上です。\n"
    pieces = _markdown_chunks(md, 120)
    assert pieces[0] == "## ログ\n\n出力の例です。" and pieces[-1].endswith("```\n\n以上です。")
    assert all(len(p) <= 120 for p in pieces)
    starts = [md.index(p) for p in pieces[1:]]
    assert all(md[s - 1] == "\n" for s in starts)  # every piece of the code starts at one of its lines


def test_markdown_preset_keeps_lead_in_and_tags_with_their_code() -> None:
    """A lead-in (a colon at the end) and the `<Sandpack>` lines around a code block stay with it, and a
    short line such as a closing fence or a tag is no heading to keep with what follows."""
    example = (
        "次のコードを実行します：\n\n<Sandpack>\n\n```js\nexport default function App() {\n"
        "  return <h1>Hi</h1>;\n}\n```\n\n</Sandpack>"
    )
    md = (
        "## 例\n\nこの節では状態を更新する方法を見ます。まず全体の流れを確認しましょう。\n\n"
        + example
        + "\n\nボタンを押すと表示が変わります。変わらない場合は再読み込みします。\n"
    )
    assert _markdown_chunks(md, 110) == [
        "## 例\n\nこの節では状態を更新する方法を見ます。まず全体の流れを確認しましょう。",
        example,
        "ボタンを押すと表示が変わります。変わらない場合は再読み込みします。",
    ]


PLAIN_LEAD_IN = (
    "Travel expenses are reimbursed when the trip was approved in advance by the head of the department "
    "and the receipts are submitted within thirty days of the return.\n\n"
    "Employees may claim the following daily limits:\n"
    "(a) meals up to 5,000 yen per day;\n"
    "(b) local transport up to 3,000 yen per day;\n"
    "(c) lodging up to 12,000 yen per night.\n\n"
    "Claims above these limits need the written approval of the finance manager.\n"
)
PLAIN_LEAD_IN_JA = (
    "出張旅費は、事前に所属長の承認を得た出張について、帰着後三十日以内に領収書を提出した場合に支給する。\n\n"
    "日当の上限は次のとおりとする：\n"
    "・食事は一日あたり五千円\n"
    "・近距離の交通費は一日あたり三千円\n"
    "・宿泊費は一泊あたり一万二千円\n\n"
    "上限を超える請求には経理部長の書面による承認を要する。\n"
)


@pytest.mark.parametrize("strategy", ["recursive", "paragraph", "sentence"])
@pytest.mark.parametrize("text", [PLAIN_LEAD_IN, PLAIN_LEAD_IN_JA])
def test_a_plain_text_lead_in_stays_with_the_items_it_introduces(strategy: str, text: str) -> None:
    """Plain text: each item line is a paragraph start, and a greedy chunk filled with the paragraph before
    and the line ending with a colon left the items to the next chunk. A lead-in line ends no chunk while
    its first item fits with it, as a heading line ends none. (The items after the first may still go on
    in the next chunk: plain text has no list block to keep whole.)"""
    lead = text.index("\n\n") + 2
    first_item_end = text.index("\n", text.index("\n", lead) + 1)
    for size in range(first_item_end - lead, len(text) + 10, 4):
        chunks = make_chunker(strategy, max_size=size).chunk(text)
        check_invariants(Document(text), chunks, max_size=size, unit="chars")
        assert not any(c.text.rstrip().endswith((":", "：")) for c in chunks), (
            size,
            [c.text for c in chunks],
        )
        assert any(c.start <= lead and first_item_end <= c.end for c in chunks), size


FAQ = (
    "在宅勤務の申請は、前月末までに所属長へ申請書を提出し、承認を得たうえで人事部に届け出る。\n\n"
    "Q: パスワードを忘れてしまいました。どうすればよいですか？\n\n"
    "A: 社内ポータルの「パスワード再設定」から、登録済みの携帯電話に届く認証コードで再設定してください。\n\n"
    "**質問：** 申請は毎回必要ですか？\n\n"
    "**回答：** いいえ。初回に申請書を提出すれば、以後は同じ条件で利用できます。\n"
)


# `sentence`: a question line of two sentences that starts a chunk still ends it when its answer fits a
# chunk alone and only just not with it (the chunk's size counts the blank line before the question)
@pytest.mark.parametrize("strategy", ["recursive", "paragraph"])
def test_a_question_stays_with_its_answer(strategy: str) -> None:
    """A question (``…どうすればよいですか？``, ``**質問：** …？``) ended a chunk while its answer, the next
    paragraph, began the next chunk: it introduces what follows as a colon does, and ends no chunk while
    the answer fits with it."""
    for question, answer in (
        ("どうすればよいですか？", "A: 社内ポータル"),
        ("申請は毎回必要ですか？", "**回答：**"),
    ):
        end = FAQ.index(question) + len(question)
        together = FAQ.index("\n", FAQ.index(answer)) - FAQ.rfind("\n", 0, end) - 1
        for size in range(together, len(FAQ), 3):
            chunks = make_chunker(strategy, max_size=size).chunk(FAQ)
            check_invariants(Document(FAQ), chunks, max_size=size, unit="chars")
            assert not any(c.text.endswith(question) for c in chunks), (
                strategy,
                size,
                [c.text for c in chunks],
            )


def test_a_lead_in_line_is_not_kept_at_the_cost_of_a_cut_inside_a_line() -> None:
    """Code lines end with colons too (``def f(a: int) -> int:``, ``if a:``): moving a cut back before one
    must not leave a cut inside the line before it — then the colon line ends its chunk, as before."""
    code = "def daily_allowance(days: int, same_day: bool) -> int:\n    if same_day:\n        return 1_000\n"
    text = "Allowances are paid per day of travel.\n\n" + code + "    return 2_000 * days\n"
    for size in range(len(code.split("\n")[0]), 120):
        for c in make_chunker("paragraph", max_size=size).chunk(text):
            # every line fits: every chunk starts and ends at a line's edge (its indentation aside)
            assert not text[text.rfind("\n", 0, c.start) + 1 : c.start].strip(), (size, c.text)
            line_end = text.find("\n", c.end)
            assert not text[c.end : line_end if line_end >= 0 else len(text)].strip(), (size, c.text)


def test_markdown_preset_never_opens_a_chunk_with_a_closing_line() -> None:
    """A comment larger than a chunk (a translation's original) is cut at its lines, and its `-->` stays
    with its last line: the line cut before a closing line was left to the packing, which took it."""
    original = "\n".join(f"Line {i} of the original paragraph{' kept' * 5} " for i in range(3))
    md = f"## 手順\n\n<!--\n{original}\n-->\n\n翻訳した段落です。手順は三つあります。\n"
    pieces = _markdown_chunks(md, 120)  # two comment lines fill a chunk but for the `-->` after them
    assert all(len(p) <= 120 for p in pieces)
    assert not any(p.startswith("-->") for p in pieces), pieces
    assert any("kept \n-->" in p for p in pieces), pieces


# the prefix of a block's first line in each container, and of its other lines
_CONTAINERS = {"": "", "- ": "  ", "1. ": "   ", "> ": "> "}


@settings(max_examples=80, deadline=None)
@given(
    lines=st.integers(2, 9),
    size=st.integers(50, 160),
    container=st.sampled_from(sorted(_CONTAINERS)),
    fence=st.sampled_from(["```", "~~~", "````"]),
)
def test_markdown_preset_keeps_each_fence_line_with_the_code_next_to_it(
    lines: int, size: int, container: str, fence: str
) -> None:
    """A code block too large for a chunk is cut at its lines, but never between a fence line and the code
    line next to it: no chunk opens with a closing fence (going on with the text after the block) or ends
    with an opening one (the line cut before a closing fence was left to the packing, which took it)."""
    indent = _CONTAINERS[container]
    code = "\n".join(f"{indent}print('手順{i}: 設定ファイルを確認します')" for i in range(lines))
    block = f"{container}{fence}python\n{code}\n{indent}{fence}"
    md = f"## 手順\n\n次のスクリプトで設定を確かめます。\n\n{block}\n\n確認が終わったら結果を保存してください。\n"
    pieces = _markdown_chunks(md, size)
    assert all(len(p) <= size for p in pieces)
    assert "".join(pieces).count(fence) == 2
    for piece in pieces:
        rows = [row for row in piece.splitlines() if row.strip()]
        assert rows[0].lstrip(" >").strip() != fence, piece  # a closing fence
        assert not rows[-1].rstrip().endswith(f"{fence}python"), piece  # an opening fence


def test_markdown_preset_keeps_an_original_with_its_translation() -> None:
    """A translation's original in a comment right above it stays with it while the two fit a chunk (the
    comment's glue used to end where its `-->` line's began, leaving a cut between them), and when the two
    do not fit, they part at the blank line between them, not inside a wrapped line."""
    before = "前の段落です。" * 12
    original = "<!--\nThe backup job copies every folder to the archive\nserver each night.\n-->"
    translation = "バックアップ処理は毎晩すべてのフォルダーを保管サーバーへ複製する。"
    md = f"## 手順\n\n{before}\n\n{original}\n\n{translation}\n\n後の段落です。\n"
    pieces = _markdown_chunks(md, 200)
    assert not any(p.rstrip().endswith("-->") for p in pieces), pieces
    assert any(original in p and translation in p for p in pieces), pieces
    long_translation = "翻訳は長く、\n" * 30 + "ここで終わる。"  # a wrapped paragraph: the pair is over 200
    md = f"## 手順\n\n{original}\n\n{long_translation}\n"
    pieces = _markdown_chunks(md, 200)
    assert any(p.endswith("-->") for p in pieces), pieces  # parted at the blank line after the comment


def test_prose_strategies_end_a_chunk_at_a_closing_fence_not_inside_the_next_sentence() -> None:
    """A closing fence (a short line without a letter) used to count as a heading that must stay with its
    body: the chunk took the start of the next sentence with it, cut at a clause."""
    code = "```js\nconst items = people.map(person =>\n  <li key={person.id}>{person.name}</li>\n);\n```"
    sentence = "フラグメントは画面から消えるため、項目が一つずつ並んだ平らなリストが生成されます。"
    text = f"{code}\n\n{sentence}\n\n次の節では、キーの選び方を説明します。"
    for strategy in ("sentence", "paragraph"):
        size = len(code) + len(sentence)  # the two do not fit together (the blank line between them)
        pieces = texts(chunk(Document(text), strategy=strategy, max_size=size))
        assert pieces[0] == code and pieces[1].startswith(sentence), (strategy, pieces)


def test_python_preset_splits_between_functions() -> None:
    code = "import os\n\n\ndef a():\n    return 1\n\n\ndef b():\n    return 2\n"
    chunks = chunk(code, strategy="recursive", preset="python", max_size=30)
    assert texts(chunks) == ["import os", "def a():\n    return 1", "def b():\n    return 2"]


def test_english_sentences_pack_without_joining_with_spaces() -> None:
    text = "The pump needs oil. Check it weekly. Replace the filter yearly. Call support if it leaks."
    chunks = chunk(text, strategy="sentence", max_size=40)
    assert texts(chunks) == [
        "The pump needs oil. Check it weekly.",
        "Replace the filter yearly.",
        "Call support if it leaks.",
    ]


def test_text_without_any_punctuation_is_cut_at_the_limit() -> None:
    text = "あ" * 1_000_000
    for strategy in ["fixed", "recursive", "sentence", "paragraph"]:
        chunks = chunk(text, strategy=strategy, max_size=1000)
        assert len(chunks) == 1000 and all(c.size == 1000 for c in chunks)


def test_empty_and_whitespace_give_no_chunks() -> None:
    assert chunk("") == [] and chunk(" \n\u3000\r\n") == []


@pytest.mark.parametrize(
    "options, message",
    [
        ({"max_size": 0}, "max_size must be at least 1"),
        ({"max_size": 3, "unit": "tokens"}, "at least 4 tokens"),
        ({"max_size": 10, "overlap": 10}, "overlap (10) must be smaller"),
        ({"max_size": 10, "min_size": 11}, "min_size (11)"),
        ({"unit": "words"}, "unknown unit"),
        ({"strategy": "semantic-ish"}, "unknown strategy"),
        ({"separators": ["("]}, "invalid separator regex"),
        ({"separators": "\n"}, "list of regular expressions"),
        ({"preset": "cobol"}, "unknown preset"),
        ({"colour": "red"}, "colour is not an option of strategy 'recursive' (its options: "),
    ],
)
def test_bad_options_raise_config_errors(options: dict, message: str) -> None:
    strategy = options.pop("strategy", "recursive")
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_chunker(strategy, **options)


def test_auto_preset_uses_markdown_rules_for_markdown_documents() -> None:
    md = "# 手順\n準備の説明です。\n## 実行\n実行の説明です。"
    as_markdown = chunk(Document(md, id="a.md", metadata={"format": "markdown"}), max_size=20)
    as_text = chunk(Document(md, id="a.txt", metadata={"format": "text"}), max_size=20)
    assert texts(as_markdown) == ["# 手順\n準備の説明です。", "## 実行\n実行の説明です。"]
    assert as_markdown[0].id != as_text[0].id  # the resolved preset is part of the config hash


def test_every_strategy_only_plans_and_the_base_chunks() -> None:
    """One planning hook: no strategy re-implements `chunk` or how a plan becomes chunks."""
    for cls in set(STRATEGIES.values()):
        assert cls.chunk is Chunker.chunk and cls.build_chunks is Chunker.build_chunks, cls


def test_a_new_strategy_needs_only_a_plan() -> None:
    @dataclass(frozen=True)
    class Halves(Chunker):
        strategy: ClassVar[str] = "halves"

        def plan(self, doc: Document) -> ChunkPlan:
            mid, end = len(doc.text) // 2, len(doc.text)
            spans = [PackedSpan(0, mid, mid), PackedSpan(mid, end, end - mid)]
            return ChunkPlan(spans, title="題", embed_text=lambda a, b: f"[{a}:{b}]")

    chunks = Halves().chunk("あいうえおかきくけこ")
    assert texts(chunks) == ["あいうえお", "かきくけこ"]
    assert [c.embed_text for c in chunks] == ["[0:5]", "[5:10]"]
    assert chunks[0].title == "題" and chunks[1].index == 1
    assert Halves().chunk(" \n") == []


def test_pack_takes_the_heading_test_apart_from_the_flag() -> None:
    text = "前書き。\nHEAD\n本文です。"
    sizer = get_measure("chars").for_text(text)

    def head(t: str, pos: int) -> bool:
        return t[:pos].rstrip().endswith("HEAD")

    def cut(**options: Any) -> list[str]:
        return [text[s.start : s.end] for s in pack(text, [LINE], sizer, max_size=12, **options)]

    assert cut(heading_end=head) == ["前書き。", "HEAD\n本文です。"]
    assert cut(keep_headings=False, heading_end=head) == ["前書き。\nHEAD", "本文です。"]
    with pytest.raises(TypeError, match="heading_end"):
        cut(keep_headings=head)


def test_a_chunk_of_two_sections_is_under_neither_of_them() -> None:
    """`recursive` (and every strategy without an outline of its own) labelled a chunk by the path at its
    start: ``## 4. Revenue impact`` and ``## 5. Next steps`` in one chunk were both "4. Revenue impact".
    The path is the one all of the chunk shares now, the sections it holds text of its ``subheadings``, as
    the `markdown` strategy gives them."""
    text = (
        "# Report\n\nThis report estimates monthly churn for the subscription product in the fourth quarter.\n\n"
        "## 4. Revenue impact\n\nRevenue grew by 9.8% to $316,948.00 a month.\n\n"
        "## 5. Next steps\n\nRepeat the analysis with January data.\n"
    )
    doc = Document(text, id="report.md", metadata={"format": "markdown"})
    both = [c for c in make_chunker("recursive", max_size=150).chunk(doc) if "Next steps" in c.text]
    assert [(c.headings, c.metadata.get("subheadings")) for c in both] == [
        (("Report",), ["4. Revenue impact", "5. Next steps"])
    ]
    # a chunk that starts inside a section and runs on into the next keeps the one it starts in
    rules = (
        "# 規程\n\n## 第1条 目的\n\nこの規程は出張の旅費について定める。出張の範囲は国内とする。\n\n"
        "## 第2条 日当\n\n日当は一日二千円とする。\n"
    )
    doc = Document(rules, id="rules.md", metadata={"format": "markdown"})
    chunks = make_chunker("recursive", max_size=45).chunk(doc)
    labels = [(c.text, c.headings, c.metadata.get("subheadings")) for c in chunks]
    assert labels == [
        ("# 規程\n\n## 第1条 目的\n\nこの規程は出張の旅費について定める。", ("規程",), ["第1条 目的"]),
        (
            "出張の範囲は国内とする。\n\n## 第2条 日当\n\n日当は一日二千円とする。",
            ("規程",),
            ["第1条 目的", "第2条 日当"],
        ),
    ]
    # inside one section: its path, as before
    one = make_chunker("recursive", max_size=20).chunk(doc)
    assert [
        (c.headings, c.metadata.get("subheadings")) for c in one if c.text == "出張の範囲は国内とする。"
    ] == [(("規程", "第1条 目的"), None)]


FAQ_QA = (
    "よくある質問（勤怠）\n\n"
    "Q. 有給休暇は入社してから何日目に付与されますか？ 半日単位で取得することもできますか？\n"
    "A. 入社日から六か月を経過した日に十日を付与します。半日単位での取得も認めており、午前休と午後休のどちらも"
    "申請できます。申請は前日までに勤怠システムから行ってください。\n\n"
    "Q: Who can access my records?\n"
    "A: Only you and the people you authorize. A parent or guardian can access the records of a child "
    "under 13. For a teenager aged 13 to 17, access is limited to immunizations and billing.\n"
)


@pytest.mark.parametrize("strategy", ["recursive", "markdown", "sentence", "paragraph"])
@pytest.mark.parametrize("max_size", [100, 120, 150, 200])
def test_a_question_keeps_the_first_sentences_of_its_answer(strategy: str, max_size: int) -> None:
    """A question line ended a chunk and its answer began the next — when the answer did not fit a chunk
    (it was cut at sentences, the question left alone) and when it fit alone but not with the question
    (the lead-in rule's exception for code blocks and tables). A search for the question found a chunk
    without its answer. A two-sentence question line is moved on whole."""
    chunks = make_chunker(strategy, max_size=max_size).chunk(Document(FAQ_QA, id="faq.txt"))
    check_invariants(FAQ_QA, chunks, max_size=max_size, unit="chars")
    for c in chunks:
        assert not c.text.rstrip().endswith(("？", "?")), (max_size, [x.text for x in chunks])
        assert not c.text.startswith("半日単位で取得することもできますか"), [x.text for x in chunks]
    for question, answer in (("Q. 有給休暇", "A. 入社日から"), ("Q: Who can", "A: Only you")):
        (holder,) = [c for c in chunks if question in c.text]
        assert answer in holder.text


def _answer_cut_inside_reference(text: str, lead_end: int, a: int, b: int) -> bool:
    """`kireme.pack.answer_cut_inside` as it was written first: a character at a time."""
    from kireme.pack import _back_space, _dialogue, _skip_space

    end = _back_space(text, 0, lead_end)
    if end <= 0 or text[end - 1] not in "?？":
        return False
    if _dialogue(text, end, a, b):
        return False
    for i in range(a, b - 1):
        c = text[i]
        if (c in "。！？" or (c in ".!?" and text[i + 1].isspace())) and _skip_space(text, i + 1, b) < b:
            return True
    return False


_ANSWER_PIECES = [
    "翌月末です",
    "。",
    "！",
    "？",
    "?",
    ".",
    "!",
    " ",
    "\n",
    "\u3000",
    "Bob: ",
    "Yes",
    "x",
    "3.5",
]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(
        ["Q: いつ払われますか？", "When is it paid?", "Alice: Can I come?", "手順は次のとおり："]
    ),
    st.lists(st.sampled_from(_ANSWER_PIECES), max_size=30).map("".join),
    st.data(),
)
def test_a_questions_answer_is_judged_as_the_first_rule_did(question: str, answer: str, data) -> None:
    """The search for a sentence end in an answer (a regular expression) answers as the character loop."""
    from kireme.pack import answer_cut_inside

    text = question + "\n" + answer
    lead_end = len(question) + data.draw(st.integers(0, 1))
    a = data.draw(st.integers(lead_end, len(text)))
    b = data.draw(st.integers(a, len(text)))
    assert answer_cut_inside(text, lead_end, a, b) == _answer_cut_inside_reference(text, lead_end, a, b)


def test_a_colon_lead_in_still_leaves_a_block_that_fits_alone_whole() -> None:
    """The exception the question rule narrows: a lead-in that ends with a colon stays behind when what it
    introduces fits a chunk alone but not with it, rather than cut that in two."""
    text = "手順は次のとおりです：\n" + "・申請書を印刷し、所属長の印をもらう。" * 3
    chunks = make_chunker("recursive", max_size=60).chunk(Document(text, id="steps.txt"))
    assert [c.text for c in chunks] == ["手順は次のとおりです：", text.split("\n", 1)[1]]


def test_a_csv_record_with_a_line_break_in_a_quoted_cell_is_never_cut_there() -> None:
    """Excel writes a cell typed with Alt+Enter as a quoted cell holding a line break; `recursive` (the
    default), `paragraph` and `sentence` cut there — ``"業務用、`` | ``５枚セット"`` — and the half cell
    went to a chunk without the header. Every record that fits a chunk is whole now."""
    from kireme.text.csvtable import record_spans

    rows = [
        "商品コード,商品名,区分,単価,備考",
        'A-001,クリーナー５００ml,洗剤,"￥1,280","詰め替え用あり\n業務用は別売"',
        "A-002,スポンジ（３個入り）,清掃用品,￥350,",
        'B-101,マイクロファイバークロス,清掃用品,"￥1,200","業務用、\n５枚セット"',
        'C-201,ゴミ袋４５Ｌ（１０枚）,消耗品,"￥12,000","ケース単位（１００袋）\nでの販売"',
    ]
    text = "\r\n".join(rows * 3) + "\r\n"
    doc = Document(text, id="prices.csv", metadata={"format": "csv"})
    records = record_spans(text)
    starts = {s for s, _ in records}
    ends = {e for _, e in records}
    for strategy in ("recursive", "paragraph", "sentence"):
        for max_size in (60, 90, 150, 300):
            chunks = make_chunker(strategy, max_size=max_size).chunk(doc)
            check_invariants(doc, chunks, max_size=max_size, unit="chars")
            for c in chunks:
                assert c.start in starts and c.end in ends, (strategy, max_size, c.text)
    # a text file with the same lines is cut at its lines as before: only a CSV is read by records
    plain = make_chunker("recursive", max_size=60).chunk(Document(text, id="prices.txt"))
    assert any(c.start not in starts or c.end not in ends for c in plain)


def test_an_option_declared_bool_takes_only_true_or_false() -> None:
    """``merge_paragraphs="no"`` was taken as true (a non-empty string) and merged the paragraphs."""
    with pytest.raises(ConfigError, match="merge_paragraphs must be True or False, not 'no'"):
        make_chunker("paragraph", merge_paragraphs="no")
    texts = [
        c.text for c in make_chunker("paragraph", merge_paragraphs=False).chunk("一段落目。\n\n二段落目。")
    ]
    assert texts == ["一段落目。", "二段落目。"]


def test_chunks_go_in_sets_and_dict_keys_by_their_id() -> None:
    """`Chunk` is a frozen dataclass, yet ``{chunk}`` raised "unhashable type: 'mappingproxy'"."""
    text = "宿泊費は一泊一万円とする。日当は三千円とする。"
    first = make_chunker("sentence", max_size=14).chunk(text)
    again = make_chunker("sentence", max_size=14).chunk(text)
    assert len(first) == 2 and set(first) == set(again) and len({*first, *again}) == 2
    assert {c: c.text for c in first}[again[1]] == "日当は三千円とする。"


@pytest.mark.parametrize("max_size", [55, 60, 68, 69, 80])
def test_a_code_block_that_fits_is_not_cut_to_keep_its_heading_with_it(max_size: int) -> None:
    """``recursive`` on Markdown kept a heading with the start of the code block under it when the two did
    not fit together: the block was cut inside a line (``"a": "Leave at the`` | ``front desk."``) or inside
    its closing fence (`````` ` `````` | ``````` `` ```````), though it fit a chunk alone. The heading goes alone
    then, as it does before a table row that fits."""
    block = '```json\n{\n  "a": "Leave at the front desk."\n}\n```'
    text = f"# T\n\nSome text here.\n\n### Example request\n\n{block}\n\n### Next\n\nMore text.\n"
    doc = Document(text, id="api.md", metadata={"format": "markdown"})
    chunker = make_chunker("recursive", max_size=max_size)
    chunks = chunker.chunk(doc)
    assert any(block in c.text for c in chunks), [c.text for c in chunks]
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)


def test_a_piece_under_min_size_joins_a_neighbour_it_fits_with_exactly_in_tokens() -> None:
    """In tokens a piece under ``min_size`` stayed alone when the estimate of it joined to its neighbour was
    over the limit by a token or two, though the exact count fit (``、`` alone, then ``葛󠄀が```…``: 10 of 10)."""
    from kireme.length import Tokens

    text = "、葛\U000e0100が```\ncode\n```\n）カタカナ）あ❤️ ？"
    chunker = make_chunker("recursive", max_size=10, min_size=2, unit="tokens")
    chunks = chunker.chunk(text)
    assert chunks[0].text.startswith("、葛") and chunks[0].size <= 10
    assert all(c.size == Tokens()(c.text) for c in chunks)
    check_invariants(text, chunks, max_size=10, chunker=chunker)


@pytest.mark.parametrize("strategy", ["sentence", "paragraph"])
def test_a_sentence_of_unpunctuated_lines_is_cut_at_line_ends_not_inside_a_row(strategy: str) -> None:
    """A price table and a stock list without punctuation are one "sentence" each to the sentence rules;
    too long for a chunk, they were cut between words — a row's amount in the next chunk."""
    rows = [f"| 支店{i} | 宿泊 | {9000 + 500 * i:,}円 | 朝食込み |" for i in range(8)]
    stock = [f"品番C-{i:03d} 銀 鋼 重さ{300 + i}グラム 在庫あり" for i in range(8)]
    text = "\n".join(rows) + "\n\n" + "\n".join(stock) + "\n"
    ends = {i for i, ch in enumerate(text) if ch == "\n"} | {len(text.rstrip())}
    for size in (60, 90, 130):
        chunks = make_chunker(strategy, max_size=size).chunk(text)
        assert len(chunks) > 2
        assert all(c.end in ends for c in chunks), [c.text for c in chunks]
    # a sentence with clauses is still cut at its clauses first (hard-wrapped prose)
    prose = "出張の旅費は、往復の交通費と宿泊費を含み、\n日当は別に支給するが、\n領収書のない支出は認めない\n"
    first = make_chunker(strategy, max_size=30).chunk(prose)[0]
    assert first.text.endswith("、")


SETUP_STEPS = """# Setup

Follow these steps to prepare the project on a new machine before you run anything else.

1. Create a virtual environment:

   ```sh
   python -m venv .venv
   . .venv/bin/activate
   ```

2. Install the package with its test extras:

   ```sh
   pip install -e ".[test]"
   ```

3. Run the tests to check that everything works as expected on your machine.
"""


@pytest.mark.parametrize("size", [130, 150, 170])
def test_a_lead_in_inside_a_larger_piece_opens_the_chunk_of_what_it_introduces(size: int) -> None:
    """``1. Create a virtual environment:`` sat in one piece with the heading and paragraph above it; the
    piece and the code block did not fit together, so the chunk ended with the lead-in and its code went
    on alone, though the lead-in and the code fit a chunk (the C loop and Python alike)."""
    doc = Document(SETUP_STEPS, metadata={"format": "markdown"})
    chunks = make_chunker("recursive", max_size=size).chunk(doc)
    check_invariants(doc, chunks, max_size=size, unit="chars")
    texts = [c.text for c in chunks]
    assert not any(t.rstrip().endswith(":") for t in texts), texts
    assert any(t.startswith("1. Create a virtual environment:") and t.endswith("```") for t in texts), texts
    assert texts[0].endswith("before you run anything else.")
