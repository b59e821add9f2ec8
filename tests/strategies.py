"""Hypothesis strategies for text that breaks naive chunkers: Japanese, combining marks, emoji, CRLF."""

from __future__ import annotations

from hypothesis import strategies as st

# Pieces that are hard to cut correctly, mixed with ordinary Japanese and English words.
_ATOMS = [
    "今日は",
    "晴れ",
    "です",
    "。",
    "、",
    "！",
    "？",
    "「",
    "」",
    "『",
    "』",
    "（",
    "）",
    "【重要】",
    "第3条",
    "１０，０００円",
    "３．１４",
    "．",
    "・",
    "1. ",
    "宿泊費",
    "カタカナ",
    "ｶﾀｶﾅ",
    "the ",
    "cat ",
    "Dr. ",
    "e.g. ",
    "U.S. ",
    "sat. ",
    "Hello! ",
    "Why? ",
    "3.14 ",
    "word",
    "\n",
    "\r\n",
    "\n\n",
    "\r\n\r\n",
    " ",
    "  ",
    "\u3000",
    "\t",
    "\u200b",
    "e\u0301",
    "\u0301",
    "か\u3099",
    "\u3099",  # combining marks (also orphaned ones)
    "👨\u200d👩\u200d👧\u200d👦",
    "👍🏽",
    "🇯🇵",
    "🇺🇸🇯🇵",
    "\u2764\ufe0f",
    "\u200d",
    "\u0915\u094d\u0937",
    "\u1100\u1161\u11a8",  # Devanagari conjunct, Hangul jamo
]

atoms = st.sampled_from(_ATOMS)
long_runs = st.builds(
    lambda ch, n: ch * n, st.sampled_from(["あ", "x", "日", "e\u0301", "👍🏽", "１"]), st.integers(20, 300)
)
any_chars = st.characters(blacklist_categories=("Cs",))

texts = st.lists(st.one_of(atoms, atoms, atoms, long_runs, st.text(any_chars, max_size=8)), max_size=60).map(
    "".join
)

# Markdown blocks (headings, tables with blank cells, fences, lists, front matter) mixed with the atoms above,
# so the structure strategy meets unclosed fences, tables next to headings and headings inside code.
_MARKDOWN_ATOMS = [
    "# 旅費規程\n",
    "## 第3条 宿泊費\n",
    "### 細則\n",
    "Title\n=====\n",
    "\n\n",
    "| 区分 | 金額 |\n| --- | --- |\n| 役員 | 15,000円 |\n|  | 12,000円 |\n| 社員 | 9,000円 |\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\r\n",
    "```python\n# not a heading\nprint('x')\n\ndef f():\n    return 1\n```\n",
    "```\n",
    "~~~\ncode\n~~~\n",
    "- 項目A\n- 項目B\n  1. 入れ子\n",
    "> 引用です。\n",
    "---\ntitle: 規程\n---\n",
    "<!-- # コメント -->\n",
    "    indented code\n",
    "<Sandpack>\n\n",  # an opening tag (MDX) with its closing one and a container directive
    "</Sandpack>\n",
    "::: tip 注意\n",
    ":::\n",
    "<!--\nThe original paragraph, kept above its translation.\n-->\n\n",  # a translation's original
    "<!--\n## Original heading\n-->\n",
    "<!--\r\n",  # a comment left open, a stray closer
    "-->\n",
    "申請書には次の項目を記入します：\n\n",  # lead-ins: a paragraph ending with a colon, then a block
    "The output looks as follows:\r\n\r\n",
    "日当の上限は次のとおりです：\n- 食事\n- 交通費\n",  # a list right after the lead-in line
    "limits below:\n(a) meals;\n(b) lodging.\n",  # plain items under a lead-in line
    "def f(a: int) -> int:\n    if a:\n        return a\n",  # code lines ending with colons
]
markdown_texts = st.lists(
    st.one_of(st.sampled_from(_MARKDOWN_ATOMS), atoms, atoms, long_runs), max_size=40
).map("".join)

# CSV records: quoted cells with commas and line breaks, blank cells, CRLF.
_CSV_ATOMS = [
    "区分,地域,金額\n",
    "役員,東京,15000\n",
    ",大阪,12000\n",
    '"社員, 一般","福岡\n博多",9000\r\n',
    '"""引用""",x,1\n',
    "\n",
    ",,\n",
]
csv_texts = st.lists(st.one_of(st.sampled_from(_CSV_ATOMS), atoms), max_size=30).map("".join)

# Law-like heading trees (## law, ### 条, #### 項, ##### 号) with bodies of varied length, so sibling
# sections sometimes fit together and sometimes not.
_BODIES = [
    "",
    "本文。",
    "職員が出張した場合には旅費を支給する。",
    "前項の規定にかかわらず、日当は一日につき二千円とする。" * 2,
]
law_texts = st.lists(
    st.tuples(st.integers(2, 5), st.integers(1, 9), st.sampled_from(_BODIES)), min_size=1, max_size=25
).map(
    lambda items: "".join(
        f"{'#' * level} 第{n}項\n\n{body}\n\n" if body else f"{'#' * level} 第{n}項\n\n"
        for level, n, body in items
    )
)


# JSON: nested objects and arrays with Japanese, escapes and awkward characters in keys and strings,
# written compact, indented (spaces, tabs) or as JSON Lines (LF or CRLF), ASCII-escaped or not; sometimes
# with a broken tail, so the fallback (and, for JSON Lines, a record kept as text) is exercised too.
_JSON_STRINGS = st.lists(
    st.one_of(atoms, st.sampled_from(['"', "\\", "/", "\u3042", "\x01"])), max_size=6
).map("".join)
_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    _JSON_STRINGS,
)
json_values = st.recursive(
    _json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=6), st.dictionaries(_JSON_STRINGS, inner, max_size=5)),
    max_leaves=30,
)


def _dump(value: object, indent: object, ascii_only: bool) -> str:
    import json

    return json.dumps(value, indent=indent, ensure_ascii=ascii_only)


json_documents = st.builds(_dump, json_values, st.sampled_from([None, 1, 2, "\t"]), st.booleans())
jsonl_documents = st.builds(
    lambda values, newline, ascii_only: newline.join(_dump(v, None, ascii_only) for v in values) + newline,
    st.lists(json_values, min_size=1, max_size=8),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
)
json_texts = st.one_of(
    json_documents,
    jsonl_documents,
    st.builds(lambda a, b: a + b, jsonl_documents, atoms),  # a broken last record
)

# Source code: definitions, decorators, comments (Japanese ones too) and statements of several languages,
# mixed with the atoms above, so the parser meets broken code as well as well-formed code.
_CODE_ATOMS = [
    "# 合計を返す\n",
    "@property\n",
    "def total(self) -> int:\n    return 1\n",
    "class Invoice:\n    rate = 10\n\n    def tax(self):\n        return 2\n",
    "async def fetch(url):\n    '''取得する。'''\n    pass\n",
    "import os\n",
    "// 注文\n",
    "/** ドキュメント */\n",
    "export class Cart {\n  add(item: string): void {\n    this.items.push(item);\n  }\n}\n",
    "function helper() {}\n",
    "const total = (a) => a * 2;\n",
    "func (o *Order) Total() int {\n\treturn 0\n}\n",
    "impl Invoice {\n    #[inline]\n    pub fn total(&self) -> i32 { self.a }\n}\n",
    "CREATE TABLE orders (\n  id INT\n);\n",
    "SELECT * FROM orders;\n",
    "}\n",
    "{\n",
    "    x = 1\n",
    "\n",
]
code_texts = st.lists(
    st.one_of(st.sampled_from(_CODE_ATOMS), st.sampled_from(_CODE_ATOMS), atoms), max_size=30
).map("".join)


@st.composite
def _text_and_window(draw: st.DrawFn, texts: st.SearchStrategy[str]) -> tuple[str, int, int]:
    text = draw(texts)
    a = draw(st.integers(0, len(text)))
    b = draw(st.integers(a, len(text)))
    return text, a, b


def text_and_window(texts: st.SearchStrategy[str]) -> st.SearchStrategy[tuple[str, int, int]]:
    """A text from ``texts`` and a window ``0 <= a <= b <= len(text)`` inside it."""
    return _text_and_window(texts)
