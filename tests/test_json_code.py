"""The ``json`` and ``code`` strategies: records and definitions whole when they fit, cut between
elements, members, methods and statements when not, JSONPaths and signatures as heading paths, exact
offsets (every chunk a slice of the file as written), and the command line around them."""

from __future__ import annotations

import itertools
import json
import logging
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.invariants import check_invariants

from kireme import Document, iter_chunks, make_chunker
from kireme.cli import cli
from kireme.errors import ConfigError, MissingExtraError
from kireme.load import iter_paths, load
from kireme.load.registry import format_of, walked_suffixes
from kireme.strategies import chunker_from_options
from kireme.text.jsontree import JsonTree, member_step, parse_json
from kireme.text.languages import check_language, language_of

# ----------------------------------------------------------------------------------------------- JSON

ORDERS = r"""{
  "shop": "茶舗みどり 本店",
  "currency": "JPY",
  "orders": [
    {
      "id": "A-1001",
      "customer": "山田 花子",
      "items": [{"name": "玉露「八女」", "qty": 2, "price": 3240}],
      "note": "のし紙\"御礼\"付き \\ 至急 \u3042 \ud83c\udf75"
    },
    {
      "id": "A-1002",
      "customer": "Smith, John",
      "items": [
        {"name": "抹茶 宇治", "qty": 1, "price": 4860},
        {"name": "ほうじ茶", "qty": 3, "price": -1.5e3}
      ],
      "gift": true,
      "coupon": null
    },
    {
      "id": "A-1003",
      "customer": "佐藤 一郎",
      "items": [],
      "address": {"zip": "100-0001", "pref": "東京都", "city": "千代田区"}
    }
  ],
  "tags": [],
  "meta": {}
}
"""

CONFIG = """{
  "service": "注文受付",
  "database": {
    "primary": {"host": "db1.internal", "port": 5432},
    "replicas": [
      {"host": "db2.internal", "port": 5432, "weight": 0.5},
      {"host": "db3.internal", "port": 5432, "weight": 0.5}
    ]
  },
  "retry policy": {"max": 3, "backoff ms": [100, 400, 1600]},
  "features": {"ギフト包装": true, "it's": false}
}
"""


def json_doc(text: str, name: str = "orders.json") -> Document:
    return Document(text, id=name, metadata={"source": name, "format": format_of(name)})


def element_spans(text: str, path: str) -> list[tuple[int, int]]:
    """The spans of the elements of the array at ``path`` (from the scanner, for the assertions)."""
    tree = parse_json(text)
    assert isinstance(tree, JsonTree)
    return [
        (tree.start[v], tree.end[v])
        for v in range(len(tree.kind))
        if tree.parent[v] >= 0 and tree.path(tree.parent[v]) == path
    ]


def test_the_whole_document_when_it_fits_and_each_order_whole_when_it_does() -> None:
    doc = json_doc(ORDERS)
    whole = make_chunker("json", max_size=2000).chunk(doc)
    assert [(c.text, c.headings) for c in whole] == [(ORDERS.strip(), ("$",))]

    chunker = make_chunker("json", max_size=300)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=300, chunker=chunker)
    for start, end in element_spans(ORDERS, "$.orders"):  # every order is inside one chunk
        assert any(c.start <= start and end <= c.end for c in chunks)
    # the members around the orders share the document's path; each order has its own
    assert [c.headings for c in chunks] == [
        ("$",),
        ("$.orders[0]",),
        ("$.orders[1]",),
        ("$.orders[2]",),
        ("$",),
    ]
    # a chunk is the text as written: an order's chunk (its trailing comma aside) is that order's JSON
    first = next(c for c in chunks if c.headings == ("$.orders[0]",))
    order = json.loads(first.text.removeprefix('"orders": [').strip().rstrip(","))
    assert order["customer"] == "山田 花子" and order["note"].endswith("至急 あ 🍵")
    assert '"note": "のし紙\\"御礼\\"付き \\\\ 至急 \\u3042 \\ud83c\\udf75"' in first.text  # nothing decoded


def test_a_big_array_is_cut_between_its_elements_with_their_paths() -> None:
    names = ["緑茶", "煎茶", "玉露", "抹茶", "番茶", "ほうじ茶", "玄米茶", "麦茶"]
    rows = ",\n".join(
        f'    {{"sku": "T-{i:03d}", "name": "{names[i % len(names)]} {i}号", "price": {500 + 37 * i}}}'
        for i in range(40)
    )
    text = '{\n  "catalog": "2025年 秋",\n  "products": [\n' + rows + "\n  ]\n}\n"
    doc = json_doc(text, "catalog.json")
    chunker = make_chunker("json", max_size=200)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=200, chunker=chunker)
    spans = element_spans(text, "$.products")
    assert len(spans) == 40
    for start, end in spans:  # no product is cut: each lies in one chunk
        assert sum(1 for c in chunks if c.start < end and start < c.end) == 1
    paths = [c.headings[0] for c in chunks]
    assert len(chunks) > 5
    slices = [
        tuple(map(int, m.groups())) for p in paths if (m := re.fullmatch(r"\$\.products\[(\d+):(\d+)\]", p))
    ]
    assert slices and slices[0][0] in (0, 1)
    for (a, b), (c, _) in itertools.pairwise(slices):  # consecutive, none missing
        assert b == c and a < b
    for c in chunks:  # a slice's chunk holds exactly those products
        m = re.fullmatch(r"\$\.products\[(\d+):(\d+)\]", c.headings[0])
        if m:
            held = [i for i, (s, e) in enumerate(spans) if c.start <= s and e <= c.end]
            assert held == list(range(int(m.group(1)), int(m.group(2))))


def test_paths_of_a_config_file_and_member_names_that_need_brackets() -> None:
    doc = json_doc(CONFIG, "settings.json")
    chunker = make_chunker("json", max_size=70)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=70, chunker=chunker)
    by_path = {c.headings[0]: c.text for c in chunks}
    assert by_path["$.database.replicas[1]"].startswith('{"host": "db3.internal"')
    assert "$['retry policy']" in by_path
    assert any(p.startswith("$.features") for p in by_path)
    assert member_step("ギフト包装") == ".ギフト包装"
    assert member_step("backoff ms") == "['backoff ms']"
    assert member_step("it's") == "['it\\'s']"
    assert member_step("1st") == "['1st']" and member_step("a\nb") == "['a\\nb']"


def test_a_value_larger_than_the_limit_is_cut_like_text_never_inside_an_escape() -> None:
    note = "お茶は八十八夜に摘んだ新芽から作られます。" * 4 + '\\u3042\\u3044\\u3046\\ud83c\\udf75\\n\\"' * 3
    text = '{"id": 7, "note": "' + note + '"}'
    doc = json_doc(text, "note.json")
    assert json.loads(text)["id"] == 7
    for max_size in (14, 25, 40):
        chunker = make_chunker("json", max_size=max_size)
        chunks = chunker.chunk(doc)
        check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
        escapes = [m.span() for m in re.finditer(r"\\u[dD][89abAB]\w{2}\\u\w{4}|\\u\w{4}|\\.", text)]
        for c in chunks:
            for cut in (c.start, c.end):
                assert not any(s < cut < e for s, e in escapes), (max_size, cut)
        assert {c.headings for c in chunks if "八十八夜" in c.text} == {("$.note",)}


def test_numbers_literals_and_empty_containers() -> None:
    text = '[0, -0.5, 1e-7, 12345678901234567890, true, false, null, [], {}, [[]], {"": {}}, "", "\\u0000"]'
    doc = json_doc(text, "values.json")
    for max_size in (1, 3, 8, 30, 200):
        chunker = make_chunker("json", max_size=max_size)
        check_invariants(doc, chunker.chunk(doc), max_size=max_size, chunker=chunker)
    chunks = make_chunker("json", max_size=8).chunk(doc)
    assert ("$[1]",) in [c.headings for c in chunks] or ("$[0:2]",) in [c.headings for c in chunks]
    assert any(c.headings[0] == "$[10]['']" or c.headings[0] == "$[10]" for c in chunks)


def test_json_lines_records_and_a_broken_one_kept_as_text(caplog: pytest.LogCaptureFixture) -> None:
    lines = [
        '{"event": "注文", "order": "A-1001", "total": 6480}',
        '{"event": "発送", "order": "A-1001", "carrier": "ヤマト"}',
        '{"event": "返品", "order": "A-1002", reason: 破損}',
        '{"event": "入金", "order": "A-1002", "amount": 4860}',
    ]
    text = "\r\n".join(lines) + "\r\n"
    doc = json_doc(text, "events.jsonl")
    assert doc.format == "jsonl"
    chunker = make_chunker("json", max_size=60)
    with caplog.at_level(logging.WARNING):
        chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=60, chunker=chunker)
    assert [(c.text, c.headings) for c in chunks] == [(line, (f"$[{i}]",)) for i, line in enumerate(lines)]
    assert "events.jsonl: 1 record(s) are not valid JSON (first: line 3" in caplog.text
    together = make_chunker("json", max_size=130).chunk(doc)
    assert [c.headings for c in together] == [("$[0:2]",), ("$[2:4]",)]


def test_a_record_cut_short_at_its_line_end_does_not_swallow_the_next_records(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``{"event": "返品", "order":`` reads on into the next line, where the parser noticed the error: the
    next records were kept as its text and every later record took the wrong path (``$[3]`` for the 5th),
    and the warning named the line where it was noticed."""
    lines = [
        '{"event": "注文", "order": "A-1001"}',
        '{"event": "返品", "order":',
        '{"event": "入金", "order": "A-1002"}',
        '{"event": "発送", "order": "A-1003"}',
        '{"event": "完了", "order": "A-1004"}',
    ]
    doc = json_doc("\n".join(lines) + "\n", "events.jsonl")
    with caplog.at_level(logging.WARNING):
        chunks = make_chunker("json", max_size=40).chunk(doc)
    assert [(c.text, c.headings) for c in chunks] == [(line, (f"$[{i}]",)) for i, line in enumerate(lines)]
    assert "1 record(s) are not valid JSON (first: line 2" in caplog.text


def test_text_that_is_not_json_is_cut_as_recursive_cuts_it(caplog: pytest.LogCaptureFixture) -> None:
    text = "注文一覧\n\n{'id': 1} これは JSON ではありません。行が続きます。\n" * 6
    doc = json_doc(text, "broken.json")
    chunker = make_chunker("json", max_size=50)
    with caplog.at_level(logging.WARNING):
        chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=50, chunker=chunker)
    assert "broken.json: not valid JSON (unexpected '注' at line 1 column 1)" in caplog.text
    recursive = make_chunker("recursive", max_size=50).chunk(doc)
    assert [(c.start, c.end) for c in chunks] == [(c.start, c.end) for c in recursive]
    assert all(c.headings == () for c in chunks)
    assert chunks[0].id != recursive[0].id  # the strategy is part of every id


def test_concatenated_json_values_are_records_and_deep_nesting_stays_linear() -> None:
    doc = json_doc('{"a": 1}\n\n[2, 3]\n"四"\n', "stream.json")
    assert [c.headings for c in make_chunker("json", max_size=8).chunk(doc)] == [
        ("$[0]",),
        ("$[1]",),
        ("$[2]",),
    ]
    deep = "[" * 20000 + '"底"' + "]" * 20000
    started = time.perf_counter()
    chunks = make_chunker("json", max_size=300).chunk(json_doc(deep, "deep.json"))
    assert time.perf_counter() - started < 20
    assert "…" in chunks[-1].headings[0] and chunks[-1].headings[0].startswith("$[0][0]")


def test_json_context_puts_the_path_in_front_of_embed_text_within_the_limit() -> None:
    doc = json_doc(CONFIG, "settings.json")
    chunker = make_chunker("json", max_size=90, context="headings")
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=90, chunker=chunker)
    for c in chunks:
        assert c.embed_text.endswith(c.text) and len(c.embed_text) <= 90
        assert c.embed_text.startswith(c.headings[0]) or c.embed_text.startswith("settings\n")


# ----------------------------------------------------------------------------------------------- code

pytest.importorskip("tree_sitter_language_pack", reason="the code extra is not installed")

PYTHON = '''"""請求書の計算。"""

import math


class Invoice:
    """請求書: 明細の金額から税込み合計を出す。"""

    TAX = 0.1

    def __init__(self, lines: list[int]) -> None:
        self.lines = lines

    # 税込みの合計（端数は切り上げ）
    @property
    def total(self) -> int:
        subtotal = sum(self.lines)
        return math.ceil(subtotal * (1 + self.TAX))

    def describe(self) -> str:
        return f"合計 {self.total} 円"


def merge(
    first: Invoice,
    second: Invoice,
) -> Invoice:
    return Invoice(first.lines + second.lines)
'''

GO = """package billing

import "fmt"

// Order is one customer's order.
type Order struct {
	Lines []int
}

// Total returns the sum of the order lines.
// It never fails.
func (o *Order) Total() int {
	sum := 0
	for _, line := range o.Lines {
		sum += line
	}
	return sum
}

func main() {
	fmt.Println((&Order{Lines: []int{1, 2}}).Total())
}
"""

RUST = """use std::fmt;

/// 請求書
#[derive(Debug, Clone)]
pub struct Invoice {
    lines: Vec<u32>,
}

impl Invoice {
    /// 合計を返す
    #[must_use]
    pub fn total(&self) -> u32 {
        self.lines.iter().sum()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

impl fmt::Display for Invoice {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} 円", self.total())
    }
}
"""

TYPESCRIPT = """import { Injectable } from "./di";

/** 買い物かご */
@Injectable()
export class Cart {
  private items: string[] = [];

  /** 商品を追加する */
  add(item: string): void {
    this.items.push(item);
  }

  get size(): number {
    return this.items.length;
  }
}

export const emptyCart = (): Cart => new Cart();
"""

# One small file per other language, with the signatures its outline must find.
OTHERS: dict[str, tuple[str, list[str]]] = {
    "Ledger.java": (
        "package shop;\n\n/** 台帳 */\n@Entity\npublic class Ledger {\n    // 残高\n    @Override\n"
        "    public int balance(int start) {\n        return start;\n    }\n}\n",
        ["public class Ledger", "public int balance(int start)"],
    ),
    "ledger.c": (
        "#include <stdio.h>\n\n/* 点 */\nstruct point { int x; int y; };\n\nstatic int add(int a,\n"
        "               int b) {\n    return a + b;\n}\n",
        ["struct point", "static int add(int a, int b)"],
    ),
    "ledger.cpp": (
        "namespace shop {\ntemplate <typename T>\nclass Box {\n public:\n  // 中身\n"
        "  T get() const { return value; }\n private:\n  T value;\n};\n}\n",
        ["namespace shop", "template <typename T> class Box", "T get() const"],
    ),
    "ledger.rb": (
        "# 台帳\nclass Ledger\n  # 残高\n  def balance(start)\n    start\n  end\nend\n",
        ["class Ledger", "def balance(start)"],
    ),
    "ledger.php": (
        "<?php\nnamespace Shop;\n/** 台帳 */\nclass Ledger {\n    #[Pure]\n"
        "    public function balance(int $start): int {\n        return $start;\n    }\n}\n",
        ["class Ledger", "public function balance(int $start): int"],
    ),
    "Ledger.cs": (
        "namespace Shop {\n    /// <summary>台帳</summary>\n    public class Ledger {\n        [Pure]\n"
        "        public int Balance(int start) { return start; }\n    }\n}\n",
        ["namespace Shop", "public class Ledger", "public int Balance(int start)"],
    ),
    "Ledger.kt": (
        "/** 台帳 */\ndata class Ledger(val start: Int) {\n    // 残高\n    fun balance(): Int {\n"
        "        return start\n    }\n}\n",
        ["data class Ledger(val start: Int)", "fun balance(): Int"],
    ),
    "Ledger.swift": (
        "/// 台帳\nstruct Ledger {\n    var start: Int\n    // 残高\n    func balance() -> Int {\n"
        "        return start\n    }\n}\n",
        ["struct Ledger", "func balance() -> Int"],
    ),
    "backup.sh": (
        '#!/bin/bash\n# 日次バックアップ\nbackup() {\n  tar czf /tmp/b.tgz "$1"\n}\n\nbackup /srv\n',
        ["backup()"],
    ),
    "schema.sql": (
        "-- 注文\nCREATE TABLE orders (\n  id INT PRIMARY KEY,\n  total INT\n);\n\n"
        "INSERT INTO orders VALUES (1, 6480);\nCREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 5000;\n",
        ["CREATE TABLE orders", "CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 5000"],
    ),
    "cart.js": (
        "// かご\nclass Cart {\n  add(item) {\n    this.items.push(item);\n  }\n}\n\n"
        "function total(cart) {\n  return cart.items.length;\n}\n",
        ["class Cart", "add(item)", "function total(cart)"],
    ),
}


def code_doc(text: str, name: str) -> Document:
    return Document(text, id=name, metadata={"source": name, "format": "code", "language": language_of(name)})


def chunk_code(text: str, name: str, max_size: int, **options: object) -> list:
    doc = code_doc(text, name)
    chunker = make_chunker("code", max_size=max_size, **options)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    return chunks


def with_heading(chunks: list, *path: str):
    found = [c for c in chunks if c.headings == path]
    assert found, (path, [c.headings for c in chunks])
    return found[0]


def test_a_decorated_method_keeps_its_comment_and_its_signatures_are_the_path() -> None:
    chunks = chunk_code(PYTHON, "invoice.py", 150)
    total = with_heading(chunks, "class Invoice", "def total(self) -> int")
    assert total.text.startswith("# 税込みの合計（端数は切り上げ）\n    @property\n    def total(self)")
    assert total.text.endswith("return math.ceil(subtotal * (1 + self.TAX))")
    # parameters over several lines: the signature reads to the body, whitespace collapsed
    merge = with_heading(chunks, "def merge(first: Invoice, second: Invoice) -> Invoice")
    assert merge.text.startswith("def merge(\n    first: Invoice,")
    # neighbours packed together share the class's path and list the methods they hold
    packed = next(c for c in chunk_code(PYTHON, "invoice.py", 260) if "def total" in c.text)
    assert packed.headings == ("class Invoice",) and packed.text.startswith("# 税込みの合計")
    assert packed.metadata["subheadings"] == ["def total(self) -> int", "def describe(self) -> str"]
    # the class whole, packed with the imports before it: no path they share, the class held
    first = chunk_code(PYTHON, "invoice.py", 420)[0]
    assert first.headings == () and first.metadata["subheadings"] == ["class Invoice"]
    assert first.text.startswith('"""請求書の計算。"""') and first.text.endswith(
        'return f"合計 {self.total} 円"'
    )


def test_a_go_func_with_its_doc_comment() -> None:
    chunks = chunk_code(GO, "order.go", 170)
    total = with_heading(chunks, "func (o *Order) Total() int")
    assert total.text.startswith(
        "// Total returns the sum of the order lines.\n// It never fails.\nfunc (o *Order)"
    )
    assert total.text.endswith("return sum\n}")
    assert with_heading(chunks, "func main()").text.startswith("func main() {")
    assert chunks[0].text.endswith(
        "type Order struct {\n\tLines []int\n}"
    )  # with its comment, after the imports
    assert chunks[0].metadata["subheadings"] == ["type Order struct"]
    # a function larger than the limit is cut between its statements, each piece under its signature
    pieces = [c for c in chunk_code(GO, "order.go", 100) if c.headings == ("func (o *Order) Total() int",)]
    assert [p.text.splitlines()[-1] for p in pieces] == ["func (o *Order) Total() int {", "}"]
    assert pieces[1].text.startswith("sum := 0\n\tfor _, line := range o.Lines {")


def test_a_rust_impl_block_whole_or_cut_between_its_methods() -> None:
    impl = with_heading(chunk_code(RUST, "invoice.rs", 200), "impl Invoice")
    assert impl.text.startswith("impl Invoice {") and impl.text.endswith("self.lines.is_empty()\n    }\n}")
    cut = chunk_code(RUST, "invoice.rs", 100)
    total = with_heading(cut, "impl Invoice", "pub fn total(&self) -> u32")
    assert total.text.startswith("/// 合計を返す\n    #[must_use]\n    pub fn total")
    assert with_heading(cut, "impl Invoice", "pub fn is_empty(&self) -> bool")
    assert with_heading(
        cut, "impl fmt::Display for Invoice", "fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result"
    )
    assert cut[0].text.endswith(
        "/// 請求書\n#[derive(Debug, Clone)]\npub struct Invoice {\n    lines: Vec<u32>,\n}"
    )


def test_a_typescript_class_its_decorator_jsdoc_and_methods() -> None:
    chunks = chunk_code(TYPESCRIPT, "cart.ts", 100)
    add = with_heading(chunks, "export class Cart", "add(item: string): void")
    assert add.text.startswith("/** 商品を追加する */\n  add(item: string)")
    assert with_heading(chunks, "export class Cart", "get size(): number").text.startswith("get size()")
    assert (
        with_heading(chunks, "export const emptyCart = (): Cart").text
        == "export const emptyCart = (): Cart => new Cart();"
    )
    head = with_heading(chunks, "export class Cart")
    assert head.text.startswith("/** 買い物かご */\n@Injectable()\nexport class Cart {")


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_every_language_finds_its_definitions(name: str) -> None:
    from kireme.structure.code import code_outline

    text, expected = OTHERS[name]
    outline = code_outline(text, language_of(name) or "")

    def signatures(sections: list) -> list[str]:
        return [s for section in sections for s in (section.signature, *signatures(section.children))]

    found = signatures(outline.sections)
    for signature in expected:
        assert signature in found, (name, found)
    for max_size in (1, 17, 60, 1000):
        chunks = chunk_code(text, name, max_size)
        assert chunks


def test_comments_above_a_definition_are_never_cut_from_it() -> None:
    """Whenever a definition's comments, decorators and first line fit in a chunk, one chunk holds
    them all together."""
    from kireme.structure.code import Section, code_outline

    def sections(found: list[Section]) -> list[Section]:
        return [s for section in found for s in (section, *sections(section.children))]

    for name, text in [
        ("invoice.py", PYTHON),
        ("order.go", GO),
        ("invoice.rs", RUST),
        ("cart.ts", TYPESCRIPT),
    ]:
        outline = code_outline(text, language_of(name) or "")
        for max_size in (40, 60, 90, 140, 220):
            chunks = chunk_code(text, name, max_size)
            for section in sections(outline.sections):
                head_end = text.find("\n", section.head)
                if head_end - section.start <= max_size:
                    assert any(c.start <= section.start and head_end <= c.end for c in chunks), (
                        name,
                        max_size,
                        section.signature,
                    )


def test_the_language_option_aliases_and_unknown_languages() -> None:
    assert make_chunker("code", language="TS").language == "typescript"
    assert check_language("c++") == "cpp" and check_language("C#") == "csharp"
    with pytest.raises(ConfigError, match="unknown language 'cobol': choose one of python, javascript"):
        make_chunker("code", language="cobol")
    chunks = make_chunker("code", language="python", max_size=200).chunk(PYTHON)  # a plain string
    assert chunks[1].headings[0] == "class Invoice"
    with pytest.raises(ConfigError, match="cannot tell the programming language"):
        make_chunker("code").chunk(Document("x = 1\n", id="notes.txt"))
    with pytest.raises(ConfigError, match="--language applies to --strategy code"):
        chunker_from_options("recursive", language="python")
    assert chunker_from_options("code", language="go").config["language"] == "go"
    assert make_chunker("code").config_hash != make_chunker("code", language="python").config_hash


def test_without_the_code_extra_the_strategy_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kireme.structure.code.find_spec", lambda name: None)
    with pytest.raises(MissingExtraError, match=r"pip install 'kireme\[code\]'"):
        make_chunker("code")
    result = CliRunner().invoke(cli, ["chunk", "-", "--strategy", "code"], input="x = 1\n")
    assert result.exit_code == 2
    assert "pip install 'kireme[code]'" in result.stderr and "Traceback" not in result.stderr


def test_the_grammars_are_in_the_wheel_nothing_is_downloaded() -> None:
    """tree-sitter-language-pack 1.x fetches each grammar from the network on first use; the extra pins
    the 0.x line, whose wheel holds them all (this test runs offline, as every test does)."""
    import tree_sitter_language_pack as pack

    assert not hasattr(pack, "download")
    from kireme.structure.code import GRAMMARS, code_outline

    for language in GRAMMARS:
        assert code_outline("", language).sections == []


# ----------------------------------------------------------------------------------------- files, CLI


def run(*args: str, input: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=input)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "invoice.py").write_text(PYTHON, encoding="utf-8")
    (root / "src" / "order.go").write_text(GO, encoding="utf-8")
    (root / "data").mkdir()
    (root / "data" / "orders.json").write_text(ORDERS, encoding="utf-8")
    (root / "data" / "events.jsonl").write_text('{"a": 1}\n{"b": 2}\n', encoding="utf-8")
    (root / "README.md").write_text("# 請求\n\n請求書の計算をする。\n", encoding="utf-8")
    (root / "notes.txt").write_text("メモ\n", encoding="utf-8")
    return root


def test_cli_round_trip_code_to_jsonl(project: Path) -> None:
    path = project / "src" / "invoice.py"
    code, out, err = run("chunk", str(path), "--strategy", "code", "--format", "jsonl", "--max-size", "150")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    doc = load(path)
    assert doc.format == "code" and doc.metadata["language"] == "python"
    check_invariants(doc, rows, max_size=150, unit="chars")
    assert ["class Invoice", "def total(self) -> int"] in [r["headings"] for r in rows]
    library = make_chunker("code", max_size=150).chunk(doc)
    assert [r["id"] for r in rows] == [c.id for c in library]
    code, out, _ = run("chunk", str(path), "--strategy", "code", "--format", "text", "--max-size", "150")
    assert code == 0 and "· class Invoice > def total(self) -> int " in out


def test_cli_json_and_what_a_directory_gives_each_strategy(project: Path) -> None:
    code, out, err = run(
        "chunk", str(project / "data" / "orders.json"), "--strategy", "json", "--max-size", "300"
    )
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    check_invariants(load(project / "data" / "orders.json"), rows, max_size=300, unit="chars")
    assert rows[1]["headings"] == ["$.orders[0]"]

    def sources(*options: str) -> set[str]:
        code, out, err = run("chunk", str(project), "--format", "jsonl", *options)
        assert code == 0, err
        return {Path(json.loads(line)["doc_id"]).name for line in out.splitlines()}

    assert sources("--strategy", "code") == {"invoice.py", "order.go"}
    assert sources("--strategy", "code", "--language", "go") == {"order.go"}
    assert sources("--strategy", "json") == {"orders.json", "events.jsonl"}
    assert sources() == {"README.md", "notes.txt"}  # documents only: data and source files are not walked
    assert {p.name for p in iter_paths(project)} == {"README.md", "notes.txt"}
    assert {p.name for p in iter_paths(project, walked_suffixes("json"))} == {"orders.json", "events.jsonl"}
    assert {Path(c.doc_id).name for c in iter_chunks(project, "code", max_size=400)} == {
        "invoice.py",
        "order.go",
    }


def test_cli_errors_are_one_line_and_exit_2(project: Path) -> None:
    code, _, err = run("chunk", str(project / "notes.txt"), "--strategy", "code")
    assert code == 2 and "cannot tell the programming language" in err and "Traceback" not in err
    assert err.count("notes.txt") == 1, err  # the file named once, not "notes.txt: notes.txt: ..."
    code, _, err = run(
        "chunk", str(project / "src" / "invoice.py"), "--strategy", "code", "--language", "cobol"
    )
    assert code == 2 and "unknown language 'cobol': choose one of python" in err
    code, _, err = run("chunk", str(project / "src" / "invoice.py"), "--language", "python")
    assert code == 2 and "--language applies to --strategy code" in err
    code, out, err = run(
        "chunk",
        "-",
        "--strategy",
        "code",
        "--language",
        "py",
        "--max-size",
        "150",
        "--format",
        "jsonl",
        input=PYTHON,
    )
    assert code == 0, err
    assert ["class Invoice", "def total(self) -> int"] in [
        json.loads(line)["headings"] for line in out.splitlines()
    ]


def test_load_reads_json_and_code_as_text(project: Path) -> None:
    code, out, _ = run("load", str(project / "src" / "order.go"))
    assert code == 0 and out.rstrip("\n") == GO.rstrip("\n")
    assert load(project / "data" / "events.jsonl").format == "jsonl"
    assert load(project / "data" / "orders.json").text == ORDERS
    assert format_of("x.tsx") == "code" and language_of("x.tsx") == "tsx" and format_of("x.unknown") == "text"


def test_an_overlap_of_code_starts_at_a_line_never_inside_one() -> None:
    """With ``--overlap`` a code chunk began at a word inside a line (``helper.\"\"\"``, ``deco(fn):``, and
    ``deco`` of the previous function glued in front of the next one's ``def``)."""
    source = (
        "def outer(times):\n"
        '    """Retry helper."""\n'
        "    def deco(fn):\n"
        "        def wrapper(*args):\n"
        "            return fn(*args)\n"
        "        return wrapper\n"
        "    return deco\n\n\n"
        "def other():\n"
        "    return 1\n"
    )
    overlapped = 0
    for max_size, overlap in ((80, 20), (80, 40), (120, 40), (100, 50)):
        doc = code_doc(source, "ov.py")
        chunker = make_chunker("code", max_size=max_size, overlap=overlap)
        chunks = chunker.chunk(doc)
        check_invariants(doc, chunks, max_size=max_size, overlap=overlap, chunker=chunker)
        for c in chunks:
            line_start = source.rfind("\n", 0, c.start) + 1
            assert not source[line_start : c.start].strip(), (max_size, overlap, c.text)  # indentation only
        overlapped += sum(c.start < p.end for p, c in itertools.pairwise(chunks))
    assert overlapped  # whole lines still overlap where they fit


def test_a_line_too_long_for_a_chunk_is_cut_after_its_items_not_between_a_key_and_its_value() -> None:
    """A literal of a hundred pairs on one line was cut at any space: chunks ended with ``"key_10":``
    and the next began with its ``"value_10",``."""
    source = "CONFIG = {" + ", ".join(f'"key_{i}": "value_{i}"' for i in range(1, 101)) + "}\n"
    chunks = chunk_code(source, "cfg.py", 200)
    assert len(chunks) > 5
    for c in chunks[:-1]:
        assert c.text.endswith(","), c.text[-30:]


_BRANCHES = """def fee(kind: str, nights: int) -> int:
    rate = 12000
    if kind == "manager":
        rate = 15000
        print("manager rate applied to the stay")
    elif kind == "director":
        rate = 18000
        print("director rate applied to the stay")
    else:
        raise ValueError(f"unknown kind of employee: {kind}")
    return rate * nights
"""

_BRACES = """export function fee(kind: string, nights: number): number {
  let rate = 12000;
  if (kind === "manager") {
    rate = 15000;
    console.log("manager rate applied to the stay");
  } else {
    throw new Error(`unknown kind of employee: ${kind}`);
  }
  return rate * nights;
}
"""


@pytest.mark.parametrize(("text", "name"), [(_BRANCHES, "fees.py"), (_BRACES, "fees.ts")])
def test_a_line_that_opens_a_block_goes_with_its_body(text: str, name: str) -> None:
    """A chunk ended with ``else:`` and the next began with its ``raise``: a line that opens a block
    (``else:``, ``elif …:``, ``} else {``) is kept with its body when a statement is cut at its lines."""
    for max_size in range(90, 200, 10):  # where an opener and the first line of its body fit together
        for c in chunk_code(text, name, max_size):
            last = c.text.rstrip().rsplit("\n", 1)[-1].strip()
            if c.end < len(text.rstrip()) and text[c.end] == "\n":  # a chunk ending at a line's end
                assert not last.endswith((":", "{")) or last.startswith(("def ", "export function")), (
                    max_size,
                    c.text,
                )
