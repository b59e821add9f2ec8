"""Code presets: cuts at declarations, with the comments and decorators directly above them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st
from tests.invariants import check_invariants

from kireme import Chunk, Chunker, chunk, make_chunker
from kireme.boundaries.presets import PRESETS, preset_levels

TYPESCRIPT = """\
/**
 * Order service: loads, prices and archives orders.
 */
import { Injectable } from "@angular/core";
import type { Observable } from "rxjs";
import {
  map,
  filter,
} from "rxjs/operators";

// How often a failed request is tried again.
export const MAX_RETRIES = 3;

/**
 * One order as the API returns it.
 * @public
 */
export interface Order {
  /** Unique id. */
  id: string;
  /** Customer name, if the customer gave one. */
  customer?: string;
  lines: OrderLine[];
  total(currency: string): number;
}

export type Currency = "JPY" | "USD" | "EUR";

export enum Status {
  Open = "open",
  Shipped = "shipped",
  Cancelled = "cancelled",
}

@Injectable({
  providedIn: "root",
  deps: [HttpClient, Logger],
})
export class OrderService {
  private readonly cache = new Map<string, Order>();

  constructor(private http: HttpClient, private log: Logger) {}

  /**
   * Loads one order, from the cache when it can.
   */
  async load(id: string): Promise<Order> {
    const hit = this.cache.get(id);
    if (hit) {
      return hit;
    }
    const order = await this.http.get<Order>(`/api/orders/${id}`);
    this.cache.set(id, order);
    return order;
  }

  @Memoize()
  get size(): number {
    return this.cache.size;
  }

  // Orders older than a year go to the archive.
  static isStale(order: Order, now: Date): boolean {
    return now.getTime() - order.created.getTime() > YEAR_MS;
  }

  handleError = (error: unknown) => {
    this.log.error("order request failed", error);
  };
}

/** Formats an order total for display. */
export function formatTotal(order: Order, currency: Currency): string {
  return `${order.total(currency).toFixed(2)} ${currency}`;
}

// Sorts orders by customer name.
// Orders without a customer come last.
export async function sortOrders(orders: Order[]): Promise<Order[]> {
  return [...orders].sort((a, b) => (a.customer ?? "~").localeCompare(b.customer ?? "~"));
}

export default OrderService;
"""

# (attached lines, the declaration they belong to): a chunk never separates the two.
TS_ATTACHED = [
    ("/**\n * One order", "export interface Order"),
    ("// How often", "export const MAX_RETRIES"),
    ("@Injectable({", "export class OrderService"),
    ("  /**\n   * Loads one order", "  async load("),
    ("  @Memoize()", "  get size()"),
    ("  // Orders older", "  static isStale("),
    ("  /** Unique id. */", "  id: string;"),
    ("  /** Customer name", "  customer?: string;"),
    ("/** Formats an order", "export function formatTotal"),
    ("// Sorts orders", "export async function sortOrders"),
]

PYTHON = '''\
"""Order pricing."""

import functools
from dataclasses import dataclass

# Currency of new orders.
CURRENCY = "JPY"


# One order line; prices are in the smallest unit.
@dataclass(frozen=True)
class Line:
    sku: str
    qty: int

    # Price of the whole line.
    @property
    def total(self) -> int:
        return self.qty * price_list("today")[self.sku]

    def describe(self) -> str:
        return f"{self.qty} x {self.sku}"


# Cached: prices change once a day.
@functools.lru_cache(maxsize=None)
def price_list(day: str) -> dict[str, int]:
    return {"apple": 120, "pear": 180}


@pytest.mark.parametrize(
    ("qty", "total"),
    [(1, 120), (2, 240), (3, 360)],
)
def test_total(qty: int, total: int) -> None:
    assert Line("apple", qty).total == total


async def fetch(day: str) -> dict[str, int]:
    # not a comment above a declaration
    return price_list(day)
'''

PY_ATTACHED = [
    ("# One order line", "class Line:"),
    ("@dataclass(frozen=True)", "class Line:"),
    ("    # Price of the whole line.", "    def total("),
    ("    @property", "    def total("),
    ("# Cached: prices", "def price_list("),
    ("@pytest.mark.parametrize(", "def test_total("),
]

PLSQL = """\
-- Shop schema, version 2.
-- Run with SQL*Plus.

CREATE TABLE customers (
    id      NUMBER PRIMARY KEY,
    name    VARCHAR2(100) NOT NULL
);

/* Orders placed by customers,
   one row per order. */
CREATE TABLE orders (
    id          NUMBER PRIMARY KEY,
    customer_id NUMBER REFERENCES customers(id) ON DELETE CASCADE,
    placed_at   DATE DEFAULT SYSDATE
);

-- Moves one order to the archive.
CREATE OR REPLACE PROCEDURE archive_order(p_id IN NUMBER) IS
    v_count NUMBER;
BEGIN
    -- copy before deleting
    INSERT INTO orders_archive SELECT * FROM orders WHERE id = p_id;
    DELETE FROM orders WHERE id = p_id;
    COMMIT;
END;
/
-- Seed data
INSERT INTO customers VALUES (1, 'Sato');
INSERT INTO customers VALUES (2, 'Suzuki');
UPDATE customers SET name = 'Tanaka' WHERE id = 2;
"""

SQL_ATTACHED = [
    ("/* Orders placed", "CREATE TABLE orders"),
    ("-- Moves one order", "CREATE OR REPLACE PROCEDURE"),
    ("-- Seed data", "INSERT INTO customers VALUES (1"),
    ("    -- copy before deleting", "    INSERT INTO orders_archive"),
]

# Where a chunk may start in each sample once every member fits in a chunk (after the packer's trim).
TS_STARTS = regex.compile(
    r"(?:/\*\*|//|@|export |import |constructor\(|private |static |async |get |handleError |"
    r"id: |customer\?: |lines: |total\()"
)
PY_STARTS = regex.compile(r'(?:"""|#|@|class |def |async def |import |from |CURRENCY)')
SQL_STARTS = regex.compile(r"(?:--|/\*|CREATE |INSERT |DELETE |UPDATE |BEGIN)")

CASES = {
    "typescript": (TYPESCRIPT, TS_ATTACHED, TS_STARTS),
    "python": (PYTHON, PY_ATTACHED, PY_STARTS),
    "sql": (PLSQL, SQL_ATTACHED, SQL_STARTS),
}


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def check_chunks(text: str, chunks: list[Chunk], max_size: int, chunker: Chunker | None = None) -> None:
    """DESIGN's invariants (`tests.invariants`), and code chunks carry no surrounding whitespace."""
    check_invariants(text, chunks, max_size=max_size, unit="chars", chunker=chunker)
    assert all(c.text == c.text.strip() for c in chunks)


def attached_spans(text: str, attached: list[tuple[str, str]]) -> list[tuple[str, int, int, int]]:
    """(declaration, start of its first attached line, start of the declaration, size the two need)."""
    firsts: dict[int, tuple[str, int]] = {}
    for comment, decl in attached:
        p = text.index(comment)
        p += len(comment) - len(comment.lstrip())
        d = text.index(decl, p)
        d += len(decl) - len(decl.lstrip())
        firsts[d] = (decl, min(p, firsts.get(d, (decl, p))[1]))
    out = []
    for d, (decl, p) in firsts.items():
        line_end = text.find("\n", d)
        out.append((decl, p, d, len(text[p:line_end].strip())))
    return out


@pytest.mark.parametrize("newline", ["lf", "crlf"])
@pytest.mark.parametrize("preset", sorted(CASES))
@pytest.mark.parametrize("max_size", [60, 90, 120, 160, 200, 250, 320, 400, 600])
def test_comments_and_decorators_stay_with_their_declaration(
    preset: str, newline: str, max_size: int
) -> None:
    text, attached, _ = CASES[preset]
    if newline == "crlf":
        text = crlf(text)
        attached = [(crlf(c), crlf(d)) for c, d in attached]
    chunks = chunk(text, strategy="recursive", preset=preset, max_size=max_size)
    check_chunks(text, chunks, max_size)
    checked = 0
    for decl, p, d, need in attached_spans(text, attached):
        if need <= max_size:  # the attached lines and the declaration's first line fit in one chunk
            holder = next(c for c in chunks if c.start <= d < c.end)
            assert holder.start <= p, (decl, max_size, holder.text[:80])
            checked += 1
    assert checked or max_size < 100


@pytest.mark.parametrize("newline", ["lf", "crlf"])
@pytest.mark.parametrize("preset", sorted(CASES))
@pytest.mark.parametrize("max_size", [320, 400, 600, 800])  # every member fits: chunks start at one
def test_chunks_start_at_declarations_or_the_comments_above_them(
    preset: str, newline: str, max_size: int
) -> None:
    text, _, starts = CASES[preset]
    if newline == "crlf":
        text = crlf(text)
    chunks = chunk(text, strategy="recursive", preset=preset, max_size=max_size)
    check_chunks(text, chunks, max_size)
    assert len(chunks) > 1 or len(text) <= max_size
    for c in chunks:
        assert starts.match(c.text), (max_size, c.text[:60])


def test_typescript_chunks_follow_the_module_structure() -> None:
    chunks = chunk(TYPESCRIPT, strategy="recursive", preset="typescript", max_size=400)
    assert [c.text.split("\n")[0] for c in chunks] == [
        "/**",  # the file header, the imports and the first constant
        "/**",  # interface Order with its JSDoc, the type and the enum
        "@Injectable({",  # the class with its decorator, up to the constructor
        "/**",  # load() with its JSDoc, and the decorated getter
        "// Orders older than a year go to the archive.",  # the static method and the arrow field
        "/** Formats an order total for display. */",
        "// Sorts orders by customer name.",
    ]
    assert chunks[1].text.startswith("/**\n * One order as the API returns it.")
    assert "export enum Status" in chunks[1].text
    assert "export class OrderService {" in chunks[2].text
    assert "  async load(id: string): Promise<Order> {" in chunks[3].text
    assert chunks[3].text.endswith("    return this.cache.size;\n  }")
    assert chunks[-1].text.endswith("export default OrderService;")


def test_python_comment_and_decorators_stay_with_the_function() -> None:
    chunks = chunk(PYTHON, strategy="recursive", preset="python", max_size=200)
    by_start = {c.text.split("\n")[0]: c.text for c in chunks}
    assert by_start["# Cached: prices change once a day."].split("\n")[1:3] == [
        "@functools.lru_cache(maxsize=None)",
        "def price_list(day: str) -> dict[str, int]:",
    ]
    assert "def test_total(" in by_start["@pytest.mark.parametrize("]
    assert by_start["# One order line; prices are in the smallest unit."].split("\n")[1:3] == [
        "@dataclass(frozen=True)",
        "class Line:",
    ]


def test_python_indented_comment_before_a_top_level_def_is_not_attached() -> None:
    code = "def a():\n    return 1\n    # the end of a\ndef b():\n    return 2\n"
    def_level = preset_levels("python")[1]
    assert def_level.cuts(code, 0, len(code)) == [code.index("\ndef b")]


def test_sql_slash_terminator_is_a_top_level_cut() -> None:
    ddl_level = preset_levels("sql")[0]
    slash_end = PLSQL.index("END;\n/") + len("END;\n/")
    assert slash_end in ddl_level.cuts(PLSQL, 0, len(PLSQL))
    for max_size in (300, 350, 400):
        chunks = chunk(PLSQL, strategy="recursive", preset="sql", max_size=max_size)
        procedure = next(c for c in chunks if "CREATE OR REPLACE PROCEDURE" in c.text)
        assert procedure.text.startswith("-- Moves one order to the archive.")
        assert procedure.text.endswith("END;\n/")
        assert chunks[chunks.index(procedure) + 1].text.startswith("-- Seed data\nINSERT")


def test_sql_end_stays_with_its_slash_and_go_ends_a_batch() -> None:
    statement_end = preset_levels("sql")[4]
    assert statement_end.name == "statement end"
    assert statement_end.cuts("BEGIN\n  x := 1;\nEND;\n/\n", 0, 22) == [len("BEGIN\n  x := 1;")]
    tsql = "CREATE TABLE a (id int)\nGO\n-- b\nSELECT * FROM a\nGO\nDROP TABLE a"
    ddl = preset_levels("sql")[0]
    assert ddl.cuts(tsql, 0, len(tsql)) == [tsql.index("\n-- b"), tsql.index("\nDROP")]


def test_sql_existing_comment_above_statement_rule() -> None:
    sql = "SELECT 1;\n-- users\nCREATE TABLE users (id int);\n-- more users\nINSERT INTO users VALUES (1);\n"
    chunks = chunk(sql, strategy="recursive", preset="sql", max_size=45)
    assert [c.text for c in chunks] == [
        "SELECT 1;",
        "-- users\nCREATE TABLE users (id int);",
        "-- more users\nINSERT INTO users VALUES (1);",
    ]


@pytest.mark.parametrize("alias", ["js", "ts", "typescript"])
@pytest.mark.parametrize("max_size", [80, 200, 400])
def test_aliases_cut_like_javascript(alias: str, max_size: int) -> None:
    assert PRESETS[alias] is PRESETS["javascript"]

    def spans(preset: str) -> list[tuple[int, int, str]]:
        return [
            (c.start, c.end, c.text)
            for c in chunk(TYPESCRIPT, strategy="recursive", preset=preset, max_size=max_size)
        ]

    assert spans(alias) == spans("javascript")


def test_cli_preset_typescript(tmp_path: Path) -> None:
    path = tmp_path / "orders.ts"
    path.write_bytes(crlf(TYPESCRIPT).encode("utf-8"))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kireme.cli",
            "chunk",
            str(path),
            "--preset",
            "typescript",
            "--max-size",
            "400",
        ],
        capture_output=True,
    )
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]
    text = crlf(TYPESCRIPT)
    expected = chunk(text, strategy="recursive", preset="typescript", max_size=400)
    assert [(r["start"], r["end"]) for r in rows] == [(c.start, c.end) for c in expected]
    for row in rows:
        assert text[row["start"] : row["end"]] == row["text"]
        assert row["size"] <= 400
    (klass,) = [r["text"] for r in rows if "export class OrderService" in r["text"]]
    assert klass.startswith("@Injectable({\r\n")


def test_cli_lists_the_aliases() -> None:
    result = subprocess.run([sys.executable, "-m", "kireme.cli", "chunk", "--help"], capture_output=True)
    assert result.returncode == 0
    choices = regex.search(r"--preset \[([^\]]*)\]", result.stdout.decode("utf-8"))
    assert choices is not None
    assert {"javascript", "typescript", "js", "ts"} <= set(choices.group(1).split("|"))


# Code-like text: the pieces the code presets look at, in any order.
_CODE_ATOMS = [
    "\n", "\r\n", "\n\n", "  ", "\t", " ", "foo", "x;", "(", ")", "{", "}", "})", "=>", ":", ";",
    "/**", "*/", " * ", "//", "/*", "@Dec(", "@Input() ", "export ", "class ", "function ", "async ",
    "const ", "import ", "interface ", "static ", "get ", "constructor(", "#", "def ", "@property",
    "--", "CREATE ", "BEGIN", "END;", "/", "GO", "INSERT ", "'", '"', "`", "今日は", "é", "👍🏽",
]  # fmt: skip
code_texts = st.lists(st.sampled_from(_CODE_ATOMS), max_size=60).map("".join)


@pytest.mark.parametrize("preset", ["javascript", "python", "sql"])
@given(text=code_texts, max_size=st.integers(2, 80))  # no grapheme here is longer than 2 characters
def test_invariants_on_code_like_text(preset: str, text: str, max_size: int) -> None:
    chunker = make_chunker("recursive", preset=preset, max_size=max_size)
    check_chunks(text, chunker.chunk(text), max_size, chunker)


def test_recursive_auto_reads_a_source_file_with_its_languages_preset(tmp_path) -> None:
    """`kireme chunk models.py` (no strategy, preset auto) cut Python with the prose rules: a class's
    docstring cut in the middle, ``class LineItem:`` left with the first line of it."""
    from kireme import load, make_chunker

    source = tmp_path / "models.py"
    source.write_text(
        "import decimal\n\n\n"
        "class LineItem:\n"
        '    """注文の明細行。\n\n    Attributes:\n        sku: 商品コード。\n        quantity: 数量。\n    """\n\n'
        "    sku: str\n    quantity: int\n\n"
        "    def subtotal(self, price: decimal.Decimal) -> decimal.Decimal:\n"
        "        return price * self.quantity\n",
        encoding="utf-8",
    )
    doc = load(source)
    auto = make_chunker("recursive", max_size=120)
    python = make_chunker("recursive", max_size=120, preset="python")
    assert [c.text for c in auto.chunk(doc)] == [c.text for c in python.chunk(doc)]
    assert auto.for_document(doc).preset == "python"
    text_doc = load(source, format="text")  # read as text: the prose rules, as before
    assert auto.for_document(text_doc).preset == "default"
