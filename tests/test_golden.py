"""Golden snapshots: every file in ``examples/``, cut by every strategy in chars and in tokens.

Each case (example x strategy x unit) is stored as plain JSON in ``tests/golden/`` (one file per case,
``<example>.<strategy>.<unit>.json``): the settings, and each chunk's ``start``, ``end``, ``text``,
``headings``, ``id`` and ``embed_text``. The test chunks again and compares, so any change in where kireme
cuts, in the heading paths, in the context put into ``embed_text`` or in the chunk ids shows up as a
failing test with the first differing chunk, and as a reviewable diff of the JSON once regenerated.
Ids are pinned too: the same input and settings must give the same ids across runs and processes.
Every snapshot is also checked against DESIGN's invariants (`tests.invariants`).

Strategies: ``fixed``, ``recursive``, ``sentence``, ``paragraph``, ``markdown`` and ``semantic`` with the
model-free ``bigram`` similarity (no model download, no cache).

When a change of output is intended, regenerate the snapshots and review the diff before committing::

    KIREME_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden.py
    git diff --stat tests/golden/

With ``KIREME_UPDATE_GOLDEN=1`` every case rewrites its file (and files of cases that no longer exist are
deleted) instead of comparing. A new example in ``examples/`` only needs a regeneration.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.invariants import check_invariants

from kireme import Chunk, Document, make_chunker
from kireme.load import iter_paths, load

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("KIREME_UPDATE_GOLDEN", "") not in ("", "0")

STRATEGIES: dict[str, dict[str, Any]] = {
    "fixed": {},
    "recursive": {},
    "sentence": {},
    "paragraph": {},
    "markdown": {},
    "semantic": {"similarity": "bigram", "cache_dir": False},
}
MAX_SIZE = {"chars": 120, "tokens": 64}
FIELDS = ("start", "end", "text", "headings", "id", "embed_text")

# the documents of examples/ (what `kireme chunk examples/` reads): not examples/questions.jsonl
EXAMPLE_NAMES = sorted(p.name for p in iter_paths(EXAMPLES) if p.parent == EXAMPLES)
CASES = [(e, s, u) for e in EXAMPLE_NAMES for s in STRATEGIES for u in MAX_SIZE]


def golden_path(example: str, strategy: str, unit: str) -> Path:
    return GOLDEN / f"{example}.{strategy}.{unit}.json"


def load_example(name: str, monkeypatch: pytest.MonkeyPatch) -> Document:
    """The example as `kireme.load.load` reads it, with the id and source ``examples/NAME`` wherever
    the tests run from (the document id goes into every chunk id)."""
    with monkeypatch.context() as m:
        m.chdir(REPO)
        return load(Path("examples") / name)


def snapshot(example: str, strategy: str, unit: str, chunks: list[Chunk]) -> dict[str, Any]:
    return {
        "example": f"examples/{example}",
        "strategy": strategy,
        "unit": unit,
        "max_size": MAX_SIZE[unit],
        "options": {k: v for k, v in STRATEGIES[strategy].items() if k != "cache_dir"},
        "chunks": [{k: row[k] for k in FIELDS} for row in (c.to_dict() for c in chunks)],
    }


def first_difference(want: list[dict[str, Any]], got: list[dict[str, Any]]) -> str:
    for i, (w, g) in enumerate(zip(want, got, strict=False)):
        if w != g:
            fields = [k for k in FIELDS if w.get(k) != g.get(k)]
            return f"chunk {i} differs in {', '.join(fields)}:\n  golden: {w}\n  now:    {g}"
    return f"{len(want)} chunks in the golden file, {len(got)} now"


@pytest.mark.parametrize(("example", "strategy", "unit"), CASES)
def test_golden(example: str, strategy: str, unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = load_example(example, monkeypatch)
    chunker = make_chunker(strategy, max_size=MAX_SIZE[unit], unit=unit, **STRATEGIES[strategy])
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=MAX_SIZE[unit], chunker=chunker)
    got = snapshot(example, strategy, unit, chunks)
    path = golden_path(example, strategy, unit)
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(got, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        return
    assert path.is_file(), (
        f"no golden file {path.name}: run KIREME_UPDATE_GOLDEN=1 pytest tests/test_golden.py"
    )
    want = json.loads(path.read_text(encoding="utf-8"))
    assert {k: v for k, v in want.items() if k != "chunks"} == {k: v for k, v in got.items() if k != "chunks"}
    if want["chunks"] != got["chunks"]:
        pytest.fail(
            f"{path.name}: the chunks changed; {first_difference(want['chunks'], got['chunks'])}\n"
            "If the change is intended: KIREME_UPDATE_GOLDEN=1 pytest tests/test_golden.py, then review "
            "`git diff tests/golden/`.",
            pytrace=False,
        )


def test_no_stale_golden_files() -> None:
    """Every file in tests/golden/ belongs to a case (a removed example or strategy leaves none behind)."""
    expected = {golden_path(*case).name for case in CASES}
    stale = sorted(p.name for p in GOLDEN.glob("*.json") if p.name not in expected)
    if UPDATE:
        for name in stale:
            (GOLDEN / name).unlink()
        return
    assert not stale, f"golden files without a case (regenerate to delete them): {stale}"
