"""Every code block in README.md and docs/ runs, and the output a page shows is what the code prints.

The rules (also in docs/contributing.md):

- Each page runs top to bottom in a fresh scratch directory holding a copy of ``examples/`` and a ``.venv``
  link to this environment; this environment's ``bin`` is first on ``PATH``.
- ``python`` blocks share one namespace per page; a following block fenced ``text title="Output"`` is
  the stdout it must print.
- ``console`` blocks: ``$ command`` lines (``\\`` continues), then the expected output (stdout and stderr
  merged); exit 0 unless the command ends with ``# exit: N``; no lines after a command = not checked.
- ``bash``/``sh`` blocks run as one script that must exit 0.
- A line ``...`` in expected output matches any number of lines; trailing spaces are ignored.
- ``<!-- skip: REASON -->`` on the line before a block skips it; the reason is required.
- ``<!-- needs: EXTRA, ... -->`` on the line before a block runs it only where those optional extras are
  installed (``make test`` leaves some out on a small disk: scripts/install-dev.sh).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]) if (ROOT / "docs").is_dir() else []
RUN = {"python", "console", "bash", "sh", "shell"}
SKIP = re.compile(r"^<!--\s*skip:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)(.*)$")
EXIT = re.compile(r"#\s*exit:\s*(\d+)\s*$")
NEEDS = re.compile(r"^<!--\s*needs:\s*(.*?)\s*-->$")
# an optional extra: a module it installs (a block marked ``needs: EXTRA`` runs where that imports)
EXTRA_MODULES = {
    "chroma": "chromadb",
    "code": "tree_sitter_language_pack",
    "ja": "sudachipy",
    "milvus": "pymilvus",
    "qdrant": "qdrant_client",
    "ray": "ray",
    "st": "sentence_transformers",
}


@dataclass(frozen=True)
class Block:
    lang: str
    info: str
    code: str
    line: int
    skip: str | None
    output: str | None = None  # the ``text title="Output"`` block that follows a python block
    needs: tuple[str, ...] = ()  # the optional extras it runs with (``<!-- needs: ... -->``)


def parse_blocks(markdown: str) -> list[Block]:
    """The fenced blocks of a page, with the skip marker before each and the output block after it."""
    lines = markdown.splitlines()
    raw: list[tuple[str, str, str, int, str | None, int, tuple[str, ...]]] = []
    # lang, info, code, line, skip, end line, extras needed
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang, info = m.group(1), m.group(2), m.group(3).lower(), m.group(4).strip()
        j = i + 1
        body: list[str] = []
        while j < len(lines) and not (
            lines[j].strip().startswith(fence[0] * len(fence)) and lines[j].strip().strip(fence[0]) == ""
        ):
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        marker = SKIP.match(lines[k].strip()) if k >= 0 else None
        needs = NEEDS.match(lines[k].strip()) if k >= 0 else None
        extras = tuple(e.strip() for e in needs.group(1).split(",") if e.strip()) if needs else ()
        raw.append(
            (lang, info, "\n".join(body) + "\n", i + 1, marker.group(1) if marker else None, j, extras)
        )
        i = j + 1
    blocks: list[Block] = []
    for n, (lang, info, code, line, skip, end, extras) in enumerate(raw):
        output = None
        if lang == "python" and n + 1 < len(raw):
            nlang, ninfo, ncode, nline, _, _, _ = raw[n + 1]
            between = lines[end + 1 : nline - 1]
            if nlang == "text" and 'title="Output"' in ninfo and not any(s.strip() for s in between):
                output = ncode
        blocks.append(Block(lang, info, code, line, skip, output, extras))
    return blocks


# A score printed with four decimals (a search hit's, a similarity): the embedder's 4-bit kernels round
# differently on different CPUs (AVX2 or AVX-512), so such a number matches within `SCORE_TOLERANCE`.
SCORE = re.compile(r"-?[0-9]+\.[0-9]{4}(?![0-9])")
SCORE_TOLERANCE = 0.005


def matches(expected: str, actual: str) -> bool:
    """Line-by-line equality, trailing spaces ignored; an expected line ``...`` matches any lines; a score
    of four decimals matches one within `SCORE_TOLERANCE` of it."""
    want = [s.rstrip() for s in expected.rstrip("\n").splitlines()]
    got = [s.rstrip() for s in actual.rstrip("\n").splitlines()]
    scores: list[float] = []

    def line_pattern(line: str) -> str:
        parts = SCORE.split(line)
        scores.extend(float(m) for m in SCORE.findall(line))
        return r"(-?[0-9]+\.[0-9]{4})".join(re.escape(p) for p in parts)

    pattern = "\n".join(".*?" if w == "..." else line_pattern(w) for w in want)
    pattern = pattern.replace("\n.*?\n", "(?:\n.*?)?\n")
    if pattern.startswith(".*?\n"):
        pattern = "(?:.*?\n)?" + pattern[4:]
    if pattern.endswith("\n.*?"):
        pattern = pattern[:-4] + "(?:\n.*)?"
    found = re.fullmatch(pattern, "\n".join(got), flags=re.DOTALL)
    if found is None:
        return False
    return all(abs(float(g) - w) <= SCORE_TOLERANCE for g, w in zip(found.groups(), scores, strict=True))


def test_matches_takes_a_score_within_the_tolerance() -> None:
    page = "── 1. 1.6991  examples/a.md [160:462]\n..."
    assert matches(page, "── 1. 1.6975  examples/a.md [160:462]\nmore")
    assert not matches(page, "── 1. 1.7100  examples/a.md [160:462]\nmore")
    assert not matches(page, "── 1. 1.6991  examples/b.md [160:462]\nmore")
    assert matches("a 12 b", "a 12 b") and not matches("a 12 b", "a 13 b")


def console_commands(code: str) -> list[tuple[str, str | None, int]]:
    """``(command, expected output or None, expected exit status)`` for each ``$`` line of a block."""
    commands: list[tuple[str, list[str], int]] = []
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1].rstrip() + " " + lines[i].strip()
            m = EXIT.search(cmd)
            commands.append((cmd, [], int(m.group(1)) if m else 0))
        elif commands:
            commands[-1][1].append(line)
        elif line.strip():
            raise AssertionError(f"console block text before the first `$ ` command: {line!r}")
        i += 1
    return [
        (cmd, "\n".join(out) if any(s.strip() for s in out) else None, code_) for cmd, out, code_ in commands
    ]


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("KIREME_EMBED_URL", raising=False)
    return tmp_path


def run_shell(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", script],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
        check=False,
    )


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_page_code_blocks_run(page: Path, scratch: Path) -> None:
    blocks = parse_blocks(page.read_text(encoding="utf-8"))
    namespace: dict[str, object] = {"__name__": "__main__"}
    where = page_id(page)
    for block in blocks:
        if block.lang not in RUN:
            continue
        if block.skip is not None:
            assert block.skip, f"{where}:{block.line}: a skipped block must say why"
            continue
        unknown = [e for e in block.needs if e not in EXTRA_MODULES]
        assert not unknown, (
            f"{where}:{block.line}: needs unknown extras {unknown} (known: {sorted(EXTRA_MODULES)})"
        )
        if any(find_spec(EXTRA_MODULES[e]) is None for e in block.needs):
            continue  # an extra it needs is not installed here
        if block.lang == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block.code, f"{where}:{block.line}", "exec"), namespace)
            if block.output is not None:
                assert matches(block.output, out.getvalue()), (
                    f"{where}:{block.line}: printed\n{out.getvalue()}\nthe page shows\n{block.output}"
                )
        elif block.lang == "console":
            for cmd, expected, status in console_commands(block.code):
                done = run_shell(cmd, scratch)
                assert done.returncode == status, (
                    f"{where}:{block.line}: `{cmd}` exited {done.returncode}\n{done.stdout}"
                )
                if expected is not None:
                    assert matches(expected, done.stdout), (
                        f"{where}:{block.line}: `{cmd}` printed\n{done.stdout}\nthe page shows\n{expected}"
                    )
        else:
            done = run_shell(block.code, scratch)
            assert done.returncode == 0, (
                f"{where}:{block.line}: script exited {done.returncode}\n{done.stdout}"
            )


# what a block's code says that only an optional extra can run (a block saying it is marked ``needs``)
EXTRA_USES = {
    "chroma": re.compile(r"--store[ =]chroma|store=\"chroma\"|import chromadb"),
    "code": re.compile(r"--strategy[ =]code|make_chunker\(\"code\""),
    "ja": re.compile(r"--keywords[ =]sudachi|import sudachipy"),
    "milvus": re.compile(r"--store[ =]milvus|store=\"milvus\"|import pymilvus"),
    "qdrant": re.compile(r"--store[ =]qdrant|store=\"qdrant\"|import qdrant_client"),
    "ray": re.compile(r"--engine[ =]ray|import ray\b|from kireme\.ray"),
    "st": re.compile(r"--embedder[ =]st:|import sentence_transformers|--late-chunking"),
}


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_blocks_that_use_an_optional_extra_say_so(page: Path) -> None:
    """A block that runs an extra's feature is skipped or marked ``needs``: `make test` on a small disk
    leaves extras out, and an unmarked block then fails (two pages did, in a run with the core alone)."""
    where = page_id(page)
    for block in parse_blocks(page.read_text(encoding="utf-8")):
        if block.lang not in RUN or block.skip is not None:
            continue
        used = sorted(extra for extra, pattern in EXTRA_USES.items() if pattern.search(block.code))
        missing = [extra for extra in used if extra not in block.needs]
        assert not missing, f"{where}:{block.line}: uses {missing}: mark it <!-- needs: {', '.join(used)} -->"


def test_the_extras_docs_blocks_name_are_those_the_project_has() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert set(EXTRA_MODULES) == set(EXTRA_USES)
    assert set(EXTRA_MODULES) <= set(extras)


# ------------------------------------------------------------------------------------ the runner itself

PAGE = """\
Intro.

```python
x = 2
print(x * 3)
```

```text title="Output"
6
```

<!-- skip: needs a server -->
```console
$ kireme ask "x"
```

```console
$ echo one && echo two \\
  three
one
...
$ false  # exit: 1
```

```json
{"not": "run"}
```

<!-- needs: milvus, qdrant -->
```console
$ kireme index examples --store milvus
```
"""


def test_parse_blocks_reads_languages_outputs_and_skips() -> None:
    blocks = parse_blocks(PAGE)
    assert [b.lang for b in blocks] == ["python", "text", "console", "console", "json", "console"]
    assert blocks[0].output == "6\n"
    assert blocks[2].skip == "needs a server"
    assert blocks[3].skip is None
    assert blocks[5].needs == ("milvus", "qdrant") and blocks[5].skip is None
    assert [b.needs for b in blocks[:5]] == [()] * 5
    assert console_commands(blocks[3].code) == [
        ("echo one && echo two three", "one\n...", 0),
        ("false  # exit: 1", None, 1),
    ]


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        ("a\nb", "a\nb\n", True),
        ("a  \nb", "a\nb", True),
        ("a\n...", "a\nb\nc", True),
        ("a\n...\nd", "a\nd", True),
        ("a\n...\nd", "a\nb\nc\nd", True),
        ("...\nd", "a\nd", True),
        ("...\nd", "d", True),
        ("a\nb", "a\nc", False),
        ("a", "a\nb", False),
        ("a\n...\nd", "a\nb\nc", False),
        ("a.b", "axb", False),
    ],
)
def test_output_matching(expected: str, actual: str, ok: bool) -> None:
    assert matches(expected, actual) is ok
