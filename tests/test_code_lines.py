"""A line of a fenced code block that fits a chunk is never cut by `sentence`, `paragraph`, `semantic` or
`recursive` in a Markdown document, nor a block that fits whole: its commas, colons and full stops
(``function MediaBar({ onStart,``, ``subject: '準備はいいですか？',``, ``value={person.profile.city}``) are no
clause or sentence ends, a block keeps the line that introduces it where they fit together, and a heading,
lead-in or opening fence over a line goes alone rather than take the line's first characters with it
(`markdown`: its fence with a large block's first line)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.invariants import check_invariants
from tests.strategies import markdown_texts

from kireme import Document, make_chunker
from kireme.chunkers import Chunker
from kireme.text.leads import lead_ins
from kireme.text.markdown import code_lines, fenced_blocks, markdown_outline

STRATEGIES = ["sentence", "paragraph", "semantic", "recursive"]

FORM = """\
# 会員登録フォーム

登録フォームは氏名、作品名、都市の三つの欄からなる。入力のたびに状態を更新する。

```jsx
export default function Form({ person, onSave }) {
  const [draft, setDraft] = useState(person);
  return (
    <form onSubmit={(e) => { e.preventDefault(); onSave(draft); }}>
      <label>
        Title:
        <input
          value={draft.profile.title}
          onChange={(e) => setDraft({ ...draft, title: e.target.value })}
        />
      </label>
      <label>
        City:
        <input
          value={draft.profile.city}
          onChange={(e) => setDraft({ ...draft, city: e.target.value })}
        />
      </label>
      <p>{draft.name}さん、保存しますか？ 変更は、すぐに反映されます。</p>
    </form>
  );
}

function MediaBar({ onStart, onAttach }) {
  const message = { subject: '準備はいいですか？', body: 'Ready. Set. Go!' };
  return (
    <div>
      <Button onClick={onStart}>開始</Button>
      <Button onClick={onAttach}>添付</Button>
    </div>
  );
}
```

保存ボタンを押すと、入力内容が確定する。取り消す場合は、ページを再読み込みする。
"""


def _chunker(strategy: str, **options) -> Chunker:
    if strategy == "semantic":
        options.setdefault("similarity", "bigram")
        options.setdefault("cache_dir", False)
    return make_chunker(strategy, **options)


def _code_lines(text: str) -> list[tuple[int, int]]:
    return [line for block in fenced_blocks(text) if block.closed for line in code_lines(text, *block.body)]


def _blocks_cut(text: str, chunks, max_size: int) -> list[str]:
    """The closed fenced code blocks that fit a chunk whole with a chunk edge inside them."""
    edges = {c.end for c in chunks} | {c.start for c in chunks}
    fitting = [b for b in fenced_blocks(text) if b.closed and b.end - b.start <= max_size]
    return [
        text[b.start : b.end]
        for b in fitting
        if any(b.start < e < b.end and text[b.start : e].strip() and text[e : b.end].strip() for e in edges)
    ]


def _cut_inside(text: str, chunks, lines: list[tuple[int, int]], max_size: int) -> list[str]:
    """The code lines that fit a chunk (their ink: indentation aside) with a chunk edge inside them."""
    edges = {c.end for c in chunks} | {c.start for c in chunks}
    cut = []
    for a, b in lines:
        ink = a + len(text[a:b]) - len(text[a:b].lstrip())
        if b - a <= max_size and any(ink < e < b for e in edges):
            cut.append(text[a:b].strip())
    return cut


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("max_size", [60, 90, 140, 200, 333])
def test_a_line_of_code_that_fits_is_never_cut(strategy: str, max_size: int) -> None:
    doc = Document(FORM, metadata={"format": "markdown"})
    chunker = _chunker(strategy, max_size=max_size)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    lines = _code_lines(FORM)
    assert len(lines) == 32  # the blank line between the two functions too
    assert _cut_inside(FORM, chunks, lines, max_size) == []


SMALL_BLOCKS = """\
## 設定の読み込み

設定ファイルは起動時に一度だけ読む。読み込みに失敗した場合は、既定値で起動する。

```python
def load(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)  # 失敗したら、呼び出し側で既定値に戻す。
```

保存するときは、一時ファイルに書いてから置き換える。途中で止まっても、元の設定は残る。

```js
const saved = await save(config, { atomic: true, retries: 3 });
console.log("保存しました。", saved.path);
```

以上の二つで、設定の読み書きはすべてである。
"""


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("max_size", [120, 150, 170, 190, 220, 260, 400])
def test_a_code_block_that_fits_a_chunk_is_never_cut(strategy: str, max_size: int) -> None:
    """`sentence` and `paragraph` filled a chunk with the prose before a block and its first lines, its
    last lines in the next chunk (`recursive` and `markdown` never did)."""
    doc = Document(SMALL_BLOCKS, metadata={"format": "markdown"})
    chunker = _chunker(strategy, max_size=max_size)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    assert _blocks_cut(SMALL_BLOCKS, chunks, max_size) == []
    assert len(fenced_blocks(SMALL_BLOCKS)) == 2


LEAD_INS = """\
## 起動

アプリは二つの方法で起動できる。どちらでも設定ファイルは同じものを読む。開発中は一つ目を使う。

<!--
Start the server in watch mode:
-->

監視モードで起動するには次のようにします：

```sh
npm run dev -- --port 3000 --open
```

本番では、ビルドしてから起動する。ビルドには数分かかることがある。キャッシュがあれば速い。

ファイル名: scripts/start.sh

```sh
npm run build && npm start -- --port 8080
```
"""


@pytest.mark.parametrize("strategy", ["sentence", "paragraph", "semantic"])
@pytest.mark.parametrize("max_size", [110, 130, 150, 180, 240])
def test_a_code_block_keeps_the_line_that_introduces_it(strategy: str, max_size: int) -> None:
    """A block that fits is kept whole with its lead-in line (a colon at its end, or a label) where the
    two fit together, and a one-line lead-in with the comment right above it (a translation's original):
    the chunk before ended with the line, the block it introduces in the next."""
    doc = Document(LEAD_INS, metadata={"format": "markdown"})
    chunker = _chunker(strategy, max_size=max_size)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    for lead in ("<!--\nStart the server", "ファイル名: scripts/start.sh"):
        start = LEAD_INS.index(lead)
        block = next(b for b in fenced_blocks(LEAD_INS) if b.start > start)
        assert any(c.start <= start and block.end <= c.end for c in chunks), (max_size, lead)


@pytest.mark.parametrize("strategy", ["sentence", "paragraph"])
def test_a_line_of_code_is_kept_whole_in_tokens_too(strategy: str) -> None:
    doc = Document(FORM, metadata={"format": "markdown"})
    chunker = _chunker(strategy, max_size=40, unit="tokens")
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=40, chunker=chunker)
    measure = chunker.measure
    lines = [(a, b) for a, b in _code_lines(FORM) if measure(FORM[a:b]) <= 40]
    edges = {c.end for c in chunks}
    assert not [
        FORM[a:b]
        for a, b in lines
        if any(a + len(FORM[a:b]) - len(FORM[a:b].lstrip()) < e < b for e in edges)
    ]


@pytest.mark.parametrize("strategy", ["sentence", "paragraph", "semantic"])
def test_a_fence_goes_alone_rather_than_cut_the_first_line_under_it(strategy: str) -> None:
    """The opening fence with the first line is over the budget, the line alone fits: the fence line (no
    chunk ends with it while anything fits after it) took the line's first 32 characters with it."""
    line = "aaaaaaaaaaaaaaaaaaaaaaaaaaa_head: 1"
    text = f"設定は次のとおり。\n\n```yaml\n{line}\nsettings: 2\n```\n\nおわり。"
    doc = Document(text, metadata={"format": "markdown"})
    chunker = _chunker(strategy, max_size=40)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=40, chunker=chunker)
    assert line in [c.text for c in chunks]


def test_a_line_longer_than_a_chunk_is_still_cut_within_max_size() -> None:
    line = "const message = { subject: '準備はいいですか？', body: 'Ready. Set. Go!', retries: 3 };"
    text = f"説明。\n\n```js\n{line}\n```\n"
    doc = Document(text, metadata={"format": "markdown"})
    chunker = make_chunker("sentence", max_size=40)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=40, chunker=chunker)
    assert not any(c.text == line for c in chunks)
    assert "".join(c.text for c in chunks if text.index(line) <= c.start < text.index(line) + len(line))


def test_code_lines_are_the_lines_without_their_line_break() -> None:
    text = "x\n  a, b\r\n\n   \n\tc.\nd"
    assert [text[a:b] for a, b in code_lines(text, 2, len(text))] == ["  a, b", "", "   ", "\tc.", "d"]
    assert [text[a:b] for a, b in code_lines(text, 2, text.index("d"))] == ["  a, b", "", "   ", "\tc."]
    assert code_lines(text, 2, 2) == []


def test_only_a_closed_fence_protects_its_lines() -> None:
    """Indented code (often wrapped prose: a licence) and an unclosed fence are read as before."""
    chunker = make_chunker("sentence", max_size=60)
    closed = Document("前置き。\n\n```\nalpha, beta\n```\n", metadata={"format": "markdown"})
    assert chunker.lines_kept_whole(closed) is not None
    for text in ("前置き。\n\n    alpha, beta\n", "前置き。\n\n```\nalpha, beta\n"):
        assert chunker.lines_kept_whole(Document(text, metadata={"format": "markdown"})) is None
    assert chunker.lines_kept_whole(Document("```\nalpha, beta\n```\n")) is None  # plain text: no fences


_WORDS = ["alpha", "beta", "設定", "値", "x", "person.profile", "onChange", "'準備？'", "Go!"]
_MARKS = [", ", ": ", ". ", "。", "、", "? ", " ", " = ", "({ ", " })", "; "]


@st.composite
def _code_line(draw: st.DrawFn) -> str:
    parts = draw(
        st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_MARKS)), min_size=1, max_size=8)
    )
    indent = " " * draw(st.sampled_from([0, 2, 4, 8]))
    return indent + "".join(w + m for w, m in parts).rstrip()


@st.composite
def _markdown_with_code(draw: st.DrawFn) -> str:
    blocks = []
    for _ in range(draw(st.integers(1, 4))):
        prose = draw(
            st.sampled_from(["登録は次の手順で行う。", "The form saves, then closes.", "設定：", "## 手順"])
        )
        lines = draw(
            st.lists(st.one_of(_code_line(), st.just(""), st.just("<label>")), min_size=1, max_size=12)
        )
        newline = draw(st.sampled_from(["\n", "\r\n"]))
        blocks.append(prose + "\n\n```js" + newline + newline.join(lines) + newline + "```\n")
    return "\n".join(blocks)


@settings(max_examples=60, deadline=None)
@given(text=_markdown_with_code(), max_size=st.integers(30, 160), strategy=st.sampled_from(STRATEGIES))
@example(text="設定：\n\n```js\n" + "a" * 27 + "_head: 1\nx, y\n```\n", max_size=35, strategy="sentence")
@example(text="登録は次の手順で行う。\n\n```js\nperson.profile,\n```\n", max_size=20, strategy="recursive")
@example(
    text="登録は次の手順で行う。\n\n```js\r\nalpha,\r\n\r\nalpha,\r\n```\n", max_size=20, strategy="sentence"
)
def test_no_chunk_edge_inside_a_code_line_that_fits(text: str, max_size: int, strategy: str) -> None:
    doc = Document(text, metadata={"format": "markdown"})
    chunker = _chunker(strategy, max_size=max_size)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    assert _cut_inside(text, chunks, _code_lines(text), max_size) == []
    assert _blocks_cut(text, chunks, max_size) == []


@settings(max_examples=150, deadline=None)
@given(text=markdown_texts, data=st.data())
@example(
    text="説明：\n\n```js\nx, y\n```\n\nファイル名: a.rs\n\n<Sandpack>\n\n```rs\nfn a() {}\n```\n", data=None
)
def test_lead_ins_of_chosen_blocks_are_those_of_the_whole_search(text: str, data) -> None:
    """`lead_ins(..., only=)` (what `lines_kept_whole` asks, without searching the whole text) gives the
    same lead-ins for the blocks asked about as the search of the whole text."""
    outline = markdown_outline(text, warn=False)
    tops = {outline.opened_from(b.start) for b in outline.code_blocks} | {t.start for t in outline.tables}
    others = set(outline.block_starts)
    if data is not None:
        others = set(data.draw(st.lists(st.sampled_from(sorted(others)), max_size=5))) if others else set()
    for only in (tops, others, tops | others):
        found = lead_ins(text, outline, only)
        assert sorted(found) == sorted(p for p in lead_ins(text, outline) if p[1] in only)


CONTACTS = (
    "# 連絡先の一覧を表示するコンポーネントの作り方\n\n## リデューサーで選択中の連絡先を更新する手順の詳細\n\n"
    "一覧は次のファイルにあります。選択中の連絡先は、リデューサーが持つ状態から読み取ります。\n\n"
    "```js src/PeoplePicker.tsx readonly\nexport default function PeoplePicker({people, activeId, onPick}) {\n"
    "  return (\n    <ul>\n"
    + "\n".join(f"      <li key={{item{i}.id}}>{{item{i}.name}}</li>" for i in range(8))
    + "\n    </ul>\n  );\n}\n```\n"
)


@pytest.mark.parametrize("max_size", [120, 150, 180, 200, 230])
def test_markdown_keeps_the_first_line_of_a_large_block_with_its_fence(max_size: int) -> None:
    """`markdown` holds an opening fence with the code line under it: a block's pieces had the budget of
    its widest line, so a long fence line (``src/PeoplePicker.tsx readonly``) with the first line did not fit,
    and the line was cut where the room ran out (``PeoplePicker({people,`` | ``activeId, …``)."""
    doc = Document(CONTACTS, metadata={"format": "markdown"})
    chunker = make_chunker("markdown", max_size=max_size)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    first = "export default function PeoplePicker({people, activeId, onPick}) {"
    start = CONTACTS.index(first)
    assert any(c.start <= start and start + len(first) <= c.end for c in chunks)
    assert _cut_inside(CONTACTS, chunks, _code_lines(CONTACTS), max_size) == []


# a state table in JavaScript: one object per place, nested objects and arrays, no blank line (a real
# page's `places.js` is 3,400 characters of these)
PLACES = (
    "# 旅行先の一覧\n\n旅行先の木構造を一つのオブジェクトにまとめる。\n\n```js\nexport const initialTravelPlan = {\n"
    + "".join(
        f"  {i}: {{\n    id: {i},\n    title: '{name}',\n    childIds: [{i * 10}, {i * 10 + 1}]\n  }},\n"
        for i, name in enumerate(
            ["地球", "アフリカ", "ボツワナ", "エジプト", "ケニア", "マダガスカル", "モロッコ", "ナイジェリア"]
        )
    )
    + "};\n```\n"
)


def _code_chunks(text: str, chunks) -> list:
    body = text.index("```js\n") + len("```js\n")
    end = text.index("\n```", body)
    return [c for c in chunks if body < c.start < end or body < c.end < end]


@pytest.mark.parametrize("strategy", ["markdown", "recursive"])
@pytest.mark.parametrize("max_size", [100, 120, 150, 200, 250])
def test_markdown_cuts_a_large_code_block_between_brackets(strategy: str, max_size: int) -> None:
    """A code block larger than a chunk was cut at any line (`markdown`, and `recursive`'s markdown preset):
    chunks opened with ``},`` (the close of the object before) and ended with ``  3: {`` (an object's first
    line, its fields in the next chunk). Now a cut falls before a line that opens or holds something, after
    one that closes it."""
    doc = Document(PLACES, metadata={"format": "markdown"})
    chunker = make_chunker(strategy, max_size=max_size)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    inside = _code_chunks(PLACES, chunks)
    assert len(inside) >= 2  # the block (about 600 characters) was cut
    for c in inside:
        assert not c.text.lstrip().startswith(("}", "]", ")")), c.text[:40]
        assert not c.text.rstrip().endswith(("{", "[", "(")), c.text[-40:]


def test_code_lines_between_brackets_leave_out_closing_lines_and_lines_after_an_opening_one() -> None:
    from kireme.boundaries.levels import CodeLinesBetweenBrackets
    from kireme.structure.layout import code_line_cuts

    text = (
        "```js\nconst a = {\n  b: [\n    1,\n  ],\n  c: 2,\n};\nrender(\n  <App />\n);\n</div>\nok();\n```\n"
    )
    outline = markdown_outline(text, warn=False)
    _, lines = code_line_cuts(text, outline)
    level = CodeLinesBetweenBrackets(lines, [b.body for b in outline.code_blocks])
    kept = level.cuts(text, 0, len(text))
    starts = {text[at : text.index("\n", at)] for at in kept}
    # not after `const a = {`, `  b: [`, `render(` (so not before `  b: [`, `    1,`, `  <App />`); not before
    # `  ],`, `};`, `);`, `</div>`
    assert starts == {"  c: 2,", "render(", "ok();"}
    assert level.cuts(text, kept[0], len(text)) == kept[1:]  # a window: the same cuts in it
